"""Where a key of a configuration, rule or baseline file is written: its line and column.

A setup error (:class:`~policylint.errors.PolicylintError`) names its file and the key
in it (``rules.PL101.headroom``, ``exclude.0``, ``rules[ACME001].require``,
``per-file-ignores.clusters/*.yaml``). :func:`place` finds that key in the file, so the
one line the CLI prints points at it as a finding does (``file:line:col``). It reads
the file again only when a run stops on such an error; a file it cannot read or parse,
a TOML file, or a key it cannot follow leaves the message as it was.
"""

from __future__ import annotations

import os
import re
from typing import Any

from policylint.errors import PolicylintError

#: the largest file searched (configuration and rule files are small; a baseline may be larger)
MAX_BYTES = 8 << 20
_INDEX = re.compile(r"\[([^\]]*)\]")


def place(exc: PolicylintError) -> None:
    """Set ``exc.line`` and ``exc.column`` (1-based) to where its key is written, when that can be found."""
    if not exc.source or not exc.key or exc.line is not None or exc.key.startswith("("):
        return
    try:
        found = locate(exc.source, exc.key)
    except Exception:  # noqa: BLE001 - a position is a courtesy: the message stands without it
        return
    if found is not None:
        exc.line, exc.column = found


def locate(path: str, key: str) -> tuple[int, int] | None:
    """The (line, column) of ``key`` in the YAML or JSON file at ``path``, or None."""
    if path.endswith(".toml") or not os.path.isfile(path) or os.path.getsize(path) > MAX_BYTES:
        return None
    import yaml

    with open(path, "rb") as handle:
        node = yaml.compose(handle.read(MAX_BYTES + 1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if node is None:
        return None
    mark = _follow(node, key)
    return None if mark is None else (mark.line + 1, mark.column + 1)


def _follow(node: Any, rest: str) -> Any:
    """The start mark of what ``rest`` names below ``node``: a mapping key, or a sequence item."""
    import yaml

    mark = None
    while rest:
        rest = rest.removeprefix(".")
        if isinstance(node, yaml.MappingNode):
            # the longest key that the path continues from (keys may hold dots: file patterns)
            best = None
            for k, v in node.value:
                name = k.value if isinstance(k, yaml.ScalarNode) else None
                if name is None or not (rest == name or rest.startswith((name + ".", name + "["))):
                    continue
                if best is None or len(name) > len(best[0]):
                    best = (name, k, v)
            if best is None:
                return mark
            rest, mark, node = rest[len(best[0]) :], best[1].start_mark, best[2]
        elif isinstance(node, yaml.SequenceNode):
            bracket = _INDEX.match(rest)
            plain = re.match(r"\d+", rest)
            if bracket is not None:
                wanted, rest = bracket.group(1), rest[bracket.end() :]
            elif plain is not None:
                wanted, rest = plain.group(), rest[plain.end() :]
            else:
                return mark
            item = _item(node, wanted)
            if item is None:
                return mark
            mark, node = item.start_mark, item
        else:
            return mark
    return mark


def _item(node: Any, wanted: str) -> Any:
    """The item of a sequence named by ``wanted``: its position, or the mapping holding ``wanted`` as a value (a rule's code)."""
    import yaml

    if wanted.isdigit():
        at = int(wanted)
        return node.value[at] if at < len(node.value) else None
    for item in node.value:
        if isinstance(item, yaml.MappingNode) and any(
            isinstance(v, yaml.ScalarNode) and v.value == wanted for _, v in item.value
        ):
            return item
    return None
