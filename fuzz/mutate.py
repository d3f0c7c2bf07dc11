"""Structure-aware mutations of seed files, as hypothesis strategies.

A mutated input starts from a real seed (a file from ``examples/`` or
``fuzz/corpus/``) and receives a few edits: byte flips, deleted, duplicated or
spliced ranges, whole lines repeated, and - most useful - values replaced by
tokens known to hurt parsers (``.nan``, 5,000-digit integers, explicit tags
with wrong values, control characters, deep brackets, alias bombs, huge
timestamps). Hypothesis drives the choices, so a failure shrinks to a small
list of edits that can be replayed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

#: Tokens that broke (or could break) a reader; spliced in at line starts, after ``: `` or anywhere.
NASTY: tuple[bytes, ...] = (
    b".nan", b".inf", b"-.inf", b"NaN", b"+Inf", b"-Inf", b"nan", b"inf", b"1e999999999", b"-1e999999999",
    b"1e308", b"1e-400", b"0", b"-1", b"-0", b"0.0001", b"1e11", b"9" * 5000, b"9" * 401, b"2" * 20,
    b"9223372036854775807", b"18446744073709551616", b"1764547200000", b"99999999999999", b"0x", b"0b", b"1:30:00",
    b"!!float abc", b"!!bool maybe", b"!!int abc", b"!!binary !!", b"!!python/object:os.system", b"!foo bar",
    b"!!timestamp x", b"!!set {a}", b"!!omap [a]", b"\x00", b"\x07", b"\x1b", b"\x7f", b"\xc3\x28", b"\xef\xbb\xbf",
    b"\xe2\x80\xa8", b"\t", b"\r", b"\r\n", b"\n---\n", b"\n...\n", b"---", b"? ", b": ", b"- ", b"&a ", b"*a", b"<<: *a",
    b"&a [*a]", b"[" * 200, b"{" * 200, b"]" * 3, b"'", b'"', b"\\", b"~", b"null", b"[]", b"{}", b"''", b'""',
    b"2026-13-45", b"2026-02-30T25:61:61Z", b"9999-12-31T23:59:59Z", b"0001-01-01", b"1970-01-01T00:00:00Z",
    b"apiversion", b"apiVersion: policylint/v2", b"apiVersion: policylint.dev/v1", b"kind: Workload", b"kind: Cluster",
    b"# policylint: disable=" + b" " * 2000 + b"#", b"# policylint: disable=PL101 until=2027-01-01 -- why",
    b"# policylint: disable-file=PL1 --", b"# policylint: disable=" + b"PL1," * 200,
    b"/dev/zero", b"../../../../etc/passwd", b"a" * 300, b"/", b"./", b"\xf0\x9f\x92\xa5", b"\xc3\xb6",
    b",", b",,,,", b"\"a,b\"", b"timestamp", b"start,end", b"duration", b"gpus",
)


_SPOT = re.compile(rb"\n|: |,")


def _positions(data: bytes) -> list[int]:
    """Offsets worth editing at: line starts and just after ``: `` or ``,``."""
    return [0, *(m.end() for m in _SPOT.finditer(data))]


Draw = Callable[..., object]


def _mutate_once(draw: Draw, data: bytearray, seeds: Sequence[bytes]) -> bytearray:
    op = draw(st.integers(0, 8))
    n = len(data)
    if op == 0 and n:  # flip one byte
        i = draw(st.integers(0, n - 1))
        data[i] = draw(st.integers(0, 255))
    elif op in (1, 2):  # a nasty token at a structural place (most of the time) or anywhere
        spots = _positions(bytes(data))
        at = draw(st.sampled_from(spots)) if op == 1 else draw(st.integers(0, n))
        token = draw(st.sampled_from(NASTY))
        if op == 1 and draw(st.booleans()):
            # replace the rest of the value up to the end of the line
            end = data.find(b"\n", at)
            data[at : end if end >= 0 else n] = token
        else:
            data[at:at] = token
    elif op == 3 and n:  # delete a range
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(i, min(n, i + 400)))
        del data[i:j]
    elif op == 4 and n:  # duplicate a range (repeated keys, documents, rows)
        i = draw(st.integers(0, n - 1))
        j = draw(st.integers(i, min(n, i + 400)))
        times = draw(st.integers(1, 50))
        data[j:j] = data[i:j] * times
    elif op == 5:  # splice in part of another seed
        other = draw(st.sampled_from(list(seeds)))
        if other:
            i = draw(st.integers(0, len(other) - 1))
            j = draw(st.integers(i, min(len(other), i + 800)))
            at = draw(st.integers(0, n))
            data[at:at] = other[i:j]
    elif op == 6 and n:  # truncate
        data = data[: draw(st.integers(0, n))]
    elif op == 7:  # deep nesting or many nodes, kept under a few hundred KB
        depth = draw(st.sampled_from([50, 101, 1000, 5000]))
        shape = draw(st.sampled_from([b"[", b"{a: ", b"- "]))
        at = draw(st.sampled_from(_positions(bytes(data))))
        if shape == b"- ":
            block = b"".join(b"  " * k + b"- \n" for k in range(min(depth, 300)))
        else:
            block = shape * depth
        data[at:at] = block
    elif op == 8:  # an alias bomb
        levels = draw(st.integers(2, 9))
        bomb = [b"b0: &b0 [x, x, x, x, x, x, x, x, x, x]"]
        for k in range(1, levels + 1):
            bomb.append(b"b%d: &b%d [" % (k, k) + b", ".join([b"*b%d" % (k - 1)] * 10) + b"]")
        at = draw(st.sampled_from(_positions(bytes(data))))
        data[at:at] = b"\n".join(bomb) + b"\n"
    return data


@st.composite
def mutated(draw: Draw, seeds: Sequence[bytes], max_edits: int = 6) -> bytes:
    """A seed with between zero and ``max_edits`` edits (zero keeps the seeds themselves covered)."""
    data = bytearray(draw(st.sampled_from(list(seeds))))
    for _ in range(draw(st.integers(0, max_edits))):
        data = _mutate_once(draw, data, seeds)
        if len(data) > 4_000_000:  # stay well under the default file limit's worth of work
            data = data[:4_000_000]
    return bytes(data)
