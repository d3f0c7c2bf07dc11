"""Every file policylint writes goes through the safe writer: no other module opens a file for writing.

Read from the installed package's source with ``ast``: a call to ``Path.write_text`` or
``Path.write_bytes``, ``open()``/``io.open()``/``os.fdopen()`` with a mode that writes,
or ``os.open`` with a flag that writes, anywhere outside the writer's own modules fails
the test and names the line. Folder operations (``mkdir``, ``unlink``, ``rename``) are
not writes of a file's content and are not looked at.
"""

from __future__ import annotations

import ast
from pathlib import Path

import policylint

PACKAGE = Path(policylint.__file__).resolve().parent
#: modules allowed to open files for writing: the writer itself
WRITER = ("writer",)
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _mode(call: ast.Call, position: int) -> str | None:
    node = call.args[position] if len(call.args) > position else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if node is None:
        return "r"
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _writes(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name in ("write_text", "write_bytes"):
        return True
    if name == "open" and isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "os":
        flags = {n.attr for arg in call.args[1:2] for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
        return bool(flags & _WRITE_FLAGS)
    if name in ("open", "fdopen"):
        method = isinstance(func, ast.Attribute) and func.attr == "open" and not (isinstance(func.value, ast.Name) and func.value.id in ("io", "builtins"))
        mode = _mode(call, 0 if method else 1)
        if method and mode is None:
            return False  # ``x.open(request, ...)`` of another API (urllib's opener): Path.open's mode is a string
        return mode is None or any(c in mode for c in "wax+")
    return False


def _offenders() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "_data" or rel.stem.startswith(WRITER) and len(rel.parts) == 1:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _writes(node):
                found.append(f"{rel.as_posix()}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_only_the_writer_opens_files_for_writing() -> None:
    assert _offenders() == []


def test_the_scan_sees_a_write(tmp_path: Path) -> None:
    """The detector itself: each form of write is seen, reads are not."""
    writes = ["p.write_text('x')", "p.write_bytes(b'x')", "open(p, 'w')", "open(p, mode='ab')", "os.open(p, os.O_WRONLY | os.O_CREAT)", "os.fdopen(fd, 'wb')", "p.open('w')", "open(p, mode)"]
    reads = ["open(p)", "open(p, 'rb')", "os.open(p, os.O_RDONLY)", "p.open()", "p.read_text()", "opener.open(request, timeout=3)"]
    assert all(_writes(ast.parse(src).body[0].value) for src in writes)  # type: ignore[attr-defined]
    assert not any(_writes(ast.parse(src).body[0].value) for src in reads)  # type: ignore[attr-defined]
