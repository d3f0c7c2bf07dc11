"""Reading and sealing large entries with fewer copies gives the bytes of the plain computations.

* :func:`~policylint.safeio.read_bytes` reads a file in one call when ``fstat``
  says how large it is: the same bytes, and the same refusals at the limit, as
  the 1 MiB reads it made before;
* :func:`~policylint.cache.store.seal_json` and
  :func:`~policylint.cache.store.unseal_json` join their parts once: the same
  sealed entry and the same body as the concatenations they replace.
"""

from __future__ import annotations

import hmac
import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policylint.cache import store
from policylint.safeio import RefusedFile, read_bytes

MIB = 1 << 20


def _plain_read(path: Path, limit: int) -> bytes:
    """read_bytes as it was: 1 MiB reads until the end or one byte over the limit."""
    chunks: list[bytes] = []
    remaining = limit + 1
    with open(path, "rb", buffering=0) as f:
        while remaining > 0:
            chunk = f.read(min(remaining, MIB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    return b"".join(chunks)


@pytest.mark.parametrize("size", [0, 1, MIB - 1, MIB, MIB + 1, 3 * MIB + 17])
@pytest.mark.parametrize("slack", [-1, 0, 1, MIB])
def test_one_read_gives_the_bytes_and_refusals_of_many(tmp_path: Path, size: int, slack: int) -> None:
    path = tmp_path / "f.bin"
    data = os.urandom(size)
    path.write_bytes(data)
    limit = size + slack
    if limit < 0:
        return
    if size > limit:
        with pytest.raises(RefusedFile):
            read_bytes(path, limit=limit)
        return
    got = read_bytes(path, limit=limit)
    assert got == data == _plain_read(path, limit) and type(got) is bytes


def _plain_seal(key: bytes, body: bytes) -> bytes:
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    return body[:-1] + b',"mac":"' + mac + b'"}'


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_sealing_and_unsealing_equal_the_concatenations(tmp_path_factory: pytest.TempPathFactory, inner: bytes) -> None:
    folder = tmp_path_factory.getbasetemp() / "seal"
    folder.mkdir(exist_ok=True)
    body = b'{"k":' + inner + b"}"
    sealed = store.seal_json(folder, "documents", body)
    key = store._kind_key(folder, "documents")
    assert key is not None and sealed is not None
    assert sealed == _plain_seal(key, body) and type(sealed) is bytes
    opened = store.unseal_json(folder, "documents", sealed)
    assert opened == sealed[: -store._MAC_TAIL] + b"}" == body and type(opened) is bytes


# --------------------------------------------------------------------------- packed files made in one pass

_YAML = [
    "apiVersion: policylint/v1\nkind: Workload\nmetadata: {name: w}\nspec: {pool: p, gpusPerReplica: 1}\n",
    "a: 1\n---\n- x\n- {y: [1, 2]}\n---\nplain\n",
    "k: 'text'\n",
]


def _payloads() -> list[dict[str, object]]:
    from policylint.model.load import SourceFile, parse_text
    from policylint.model.load.document_cache import StoredDocument, StoredSource, encode_source

    out = []
    for text in _YAML:
        parsed = SourceFile(path=Path("x.yaml"), display="x.yaml", text=text)
        parse_text(parsed)
        stored = StoredSource(text, [StoredDocument(d.index, d.data, d.positions) for d in parsed.documents])
        payload = encode_source(stored)
        assert payload is not None
        out.append(payload)
    return out


_PAYLOADS = _payloads()

#: ways to damage a stored form: each leaves a payload decode_source may refuse or take
_DAMAGE = [
    lambda p: p,
    lambda p: {**p, "validated": False},
    lambda p: {**p, "validated": 1},
    lambda p: {**p, "text": 3},
    lambda p: {**p, "extra": 1},
    lambda p: {k: v for k, v in p.items() if k != "text"},
    lambda p: {**p, "documents": {}},
    lambda p: {**p, "documents": "ab"},
    lambda p: {**p, "documents": [{**d, "crc": d["crc"] + 1} for d in p["documents"]]},
    lambda p: {**p, "documents": [{**d, "index": True} for d in p["documents"]]},
    lambda p: {**p, "documents": [{**d, "index": 2.0} for d in p["documents"]]},
    lambda p: {**p, "documents": [{**d, "positions": "é" + d["positions"]} for d in p["documents"]]},
    lambda p: {**p, "documents": [{k: v for k, v in d.items() if k != "data"} for d in p["documents"]]},
    lambda p: {**p, "documents": p["documents"][::-1]},
    lambda p: [],
    lambda p: None,
]


def _state(source: object) -> object:
    from policylint.model.load import SourceFile

    if source is None:
        return None
    assert isinstance(source, SourceFile)
    docs = [(d.source is source, d.index, d.data, d.positions.entries()) for d in source.documents]
    return (source.path, source.display, source.text, source.findings, source.refused, source.validated,
            source.cache_key, source.stored, source.scalars, docs)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(range(len(_PAYLOADS))), st.sampled_from(range(len(_DAMAGE))), st.sampled_from(["a.yaml", "d/b.yml"]))
def test_a_packed_file_made_in_one_pass_equals_the_decoded_one(which: int, damage: int, name: str) -> None:
    from policylint.model.load import SourceFile
    from policylint.model.load.document_cache import decode_source
    from policylint.model.load.document_pack_cache import source_from

    payload = _DAMAGE[damage](json.loads(json.dumps(_PAYLOADS[which])))
    stored = decode_source(payload)
    plain = SourceFile.from_stored(Path(name), name, stored) if stored is not None else None
    made = source_from(payload, Path(name), name)
    assert _state(made) == _state(plain)
    assert (made is None) == (damage not in (0, 6, 13)), damage  # an empty mapping of documents holds none


def _plain_valid(record: object) -> bool:
    """document_pack_cache._valid_record as it was."""
    if not isinstance(record, list) or len(record) != 2 or not isinstance(record[1], dict):
        return False
    ident = record[0]
    return isinstance(ident, list) and len(ident) == 5 and all(type(x) is int for x in ident)


_numbers = st.one_of(st.integers(-3, 2**63), st.booleans(), st.floats(allow_nan=False), st.text(max_size=2), st.none())


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.lists(_numbers, max_size=7),
        st.tuples(*[st.integers(0, 2**63)] * 5).map(list),
        _numbers,
        st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    ),
    st.one_of(st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.lists(st.integers(), max_size=2), st.none()),
    st.integers(0, 3),
)
def test_a_pack_record_is_checked_as_before(ident: object, stored: object, length: int) -> None:
    from policylint.model.load.document_pack_cache import _valid_record

    for record in ([ident, stored], [ident, stored, 1][:length], ident, (ident, stored)):
        assert _valid_record(record) == _plain_valid(record), record
