"""The cache folder and the one entry format every cache writes: sealed, size-limited, atomic.

Everything a cache keeps goes through this module, which knows nothing of what
the entries hold:

- the folder (:func:`default_dir`) and its secret (:func:`_secret`: 32 random
  bytes in a file of mode 0600 that must belong to the user running policylint);
- the seals: an HMAC-SHA256 per entry, keyed by a secret derived from the
  folder's for each kind of entry, either at the end of a JSON entry
  (:func:`seal_json`, :func:`unseal_json`), after an entry of frames
  (:func:`write_sealed_frames`, :func:`read_sealed_frames`) or in the header of a binary one;
- reading an entry as a user file is read (:func:`read_limited`: regular files
  only, within a size limit per kind) and writing one through
  :func:`policylint.writer.write_file` (:func:`atomic_write`: a unique
  temporary file, then a rename; a link at the entry's name is replaced, never
  followed);
- the binary entry (:func:`write_entry`, :func:`load_entry`): a header with the
  HMAC, a JSON document, then arrays of a fixed set of dtypes as raw bytes, one
  blob per dtype, and the :class:`Budget` that bounds how far the compact forms
  in an entry may expand when :mod:`policylint.measure.cache_encoding` rebuilds them;
- the code fingerprint (:func:`code_fingerprint`) that every cache key holds, so
  an upgrade or an edited calculator never reuses an entry.

An entry that fails any check is a miss for the caller; nothing here raises for
a damaged or foreign entry except :func:`load_entry`, whose ``ValueError`` the
caches turn into a miss.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from policylint import __version__
from policylint.errors import PolicylintError
from policylint.safeio import read_bytes
from policylint.writer import WriteRefused, write_file

#: bumped whenever the entry layout changes; part of every key
FORMAT_VERSION = 4
#: environment variable naming the cache folder (overrides the user cache folder)
ENV_VAR = "POLICYLINT_CACHE_DIR"


class Uncacheable(Exception):
    """A value the entry format cannot represent faithfully: the facts are not stored."""


def default_dir() -> Path:
    """The cache folder: ``$POLICYLINT_CACHE_DIR``, else the user cache folder."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    import platformdirs  # only needed when the cache is used

    return Path(platformdirs.user_cache_dir("policylint", appauthor=False))


# --------------------------------------------------------------------------- trust
#
# Every entry is sealed with an HMAC-SHA256 keyed by a secret of the cache folder, so
# an entry is used only when this user's policylint wrote it, for this key and kind.
# One secret per folder (not per user): a folder can be deleted or moved as a whole.

#: the file in the cache folder that holds its secret
SECRET_FILE = "secret-v1"
_SECRET_BYTES = 32
#: largest entry read back, by kind of entry; a larger entry is neither written nor read
MAX_ENTRY_BYTES = {"documents": 64 << 20, "rules": 16 << 20, "stattable": 64 << 20}
#: largest measurement, series or pooled entry (a series of 10 million float64 samples is 80 MB)
_MAX_MEASURE_BYTES = 1 << 30

#: folder -> (identity of its secret file, secret), re-read when the file changes
_SECRETS: dict[str, tuple[tuple[int, ...], bytes]] = {}


def _read_secret(path: str) -> tuple[tuple[int, ...], bytes] | None:
    """The secret at ``path`` with its file identity, when it can be trusted; else None.

    Trusted means: a regular file (a link is not followed), of exactly the secret's
    size, owned by the user running policylint and readable by nobody else.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != _SECRET_BYTES:
            return None
        if os.name == "posix" and (info.st_uid != os.geteuid() or info.st_mode & 0o077):
            return None
        value = os.read(fd, _SECRET_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(value) != _SECRET_BYTES:
        return None
    return _secret_id(info), value


def _secret_id(info: os.stat_result) -> tuple[int, ...]:
    # a chmod or chown moves the status-change time: the file is examined again
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode, info.st_uid)


def _secret(folder: Path | str) -> bytes | None:
    """The cache folder's secret, created on first use; None when the folder cannot hold one.

    A secret file that cannot be trusted (a link, another owner, readable by others,
    the wrong size) is replaced by a new one, which turns every entry into a miss.
    None turns the cache off for the run: nothing is read, nothing is written.
    """
    root = os.fspath(folder)
    path = os.path.join(root, SECRET_FILE)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except (OSError, ValueError):
        return None
    if info is not None:
        known = _SECRETS.get(root)
        if known is not None and known[0] == _secret_id(info):
            return known[1]
        found = _read_secret(path)
        if found is not None:
            _SECRETS[root] = found
            return found[1]
        try:
            os.unlink(path)  # not one this user made, or damaged: start again
        except OSError:
            return None
    return _create_secret(root, path)


def _create_secret(root: str, path: str) -> bytes | None:
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
        write_file(path, secrets.token_bytes(_SECRET_BYTES), root=root, overwrite=False, links="refuse", mode=0o600, what="cache secret")
    except WriteRefused:
        pass  # another run made one meanwhile: use that
    except (PolicylintError, OSError, ValueError):
        return None
    found = _read_secret(path)
    if found is None:
        return None
    _SECRETS[root] = found
    return found[1]


def _kind_key(folder: Path | str, kind: str) -> bytes | None:
    """The HMAC key of one kind of entry (a secret per kind, derived from the folder's)."""
    secret = _secret(folder)
    if secret is None:
        return None
    return _derive(secret, kind)


@functools.lru_cache(maxsize=64)
def _derive(secret: bytes, kind: str) -> bytes:
    # an entry of one kind never passes for another, even with the same bytes
    return hmac.digest(secret, f"policylint-cache/{kind}".encode(), "sha256")


#: how a sealed JSON entry ends: ``,"mac":"<64 hex digits>"}``
_MAC_HEAD = b',"mac":"'
_MAC_TAIL = len(_MAC_HEAD) + 64 + 2


def _sealed_parts(key: bytes, parts: Iterable[bytes], max_bytes: int | None) -> Iterator[bytes | memoryview]:
    """``parts`` (together a JSON object) with its HMAC as a last member, part by part: the seal.

    The HMAC is of the whole body; the body's closing brace gives way to
    ``,"mac":"<hex>"}``. Raises ``ValueError`` when the sealed entry would exceed
    ``max_bytes`` (None: no bound) or the parts are no object's text as far as the
    seal tells (ending in ``}``, three bytes at least).
    """
    mac = hmac.new(key, digestmod="sha256")
    held = b""
    size = 0
    for part in parts:
        if not part:
            continue
        mac.update(part)
        size += len(part)
        if max_bytes is not None and size - 1 + _MAC_TAIL > max_bytes:
            raise ValueError("entry too large")
        if held:
            yield held
        held = part
    if size < 3 or not held.endswith(b"}"):
        raise ValueError("not a JSON object")
    yield memoryview(held)[:-1]
    yield b"".join((_MAC_HEAD, mac.hexdigest().encode("ascii"), b'"}'))


def seal_json(folder: Path | str, kind: str, body: bytes) -> bytes | None:
    """``body`` (a JSON object) with its HMAC as a last member; None without a secret."""
    key = _kind_key(folder, kind)
    if key is None:
        return None
    try:
        return b"".join(_sealed_parts(key, (body,), None))  # one copy of a large entry, not four
    except ValueError:
        return None


def unseal_json(folder: Path | str, kind: str, data: bytes) -> bytes | None:
    """The JSON object a sealed entry holds, when its HMAC matches; else None."""
    if len(data) < _MAC_TAIL + 2 or not data.endswith(b'"}') or data[-_MAC_TAIL : -_MAC_TAIL + len(_MAC_HEAD)] != _MAC_HEAD:
        return None
    key = _kind_key(folder, kind)
    if key is None:
        return None
    body = b"".join((memoryview(data)[:-_MAC_TAIL], b"}"))  # one copy of a large entry, not two
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    return body if hmac.compare_digest(mac, data[-66:-2]) else None


#: how a sealed entry of frames ends: a newline and the 64 hex digits of its HMAC
_FRAMES_TAIL = 65
#: each frame's length, before it: 8 bytes, little-endian
_FRAME_HEAD = 8


def frame(data: bytes) -> bytes:
    """``data`` with its length before it: one frame of a sealed entry of frames (:func:`write_sealed_frames`)."""
    return len(data).to_bytes(_FRAME_HEAD, "little") + data


def write_sealed_frames(path: Path, folder: Path, kind: str, frames: Iterable[bytes], max_bytes: int) -> bool:
    """Write ``frames`` (each made by :func:`frame`) with the HMAC of them all after them, as they come.

    False, and nothing written, without a secret or when the entry would exceed ``max_bytes``
    (a large entry is never held whole here). The counterpart of :func:`read_sealed_frames`.
    """
    key = _kind_key(folder, kind)
    if key is None:
        return False

    def parts() -> Iterator[bytes]:
        mac = hmac.new(key, digestmod="sha256")
        size = _FRAMES_TAIL
        for part in frames:
            size += len(part)
            if size > max_bytes:
                raise ValueError("entry too large")
            mac.update(part)
            yield part
        yield b"\n" + mac.hexdigest().encode("ascii")

    return atomic_write(path, parts(), folder)


def read_sealed_frames(path: Path | str, folder: Path, kind: str, max_bytes: int) -> tuple[bytes, list[memoryview]] | None:
    """(the bytes of the ``kind`` entry at ``path``, its frames) when its HMAC holds and they fill it exactly; else None."""
    data = read_limited(path, max_bytes)
    if data is None or len(data) < _FRAMES_TAIL or data[-_FRAMES_TAIL] != 0x0A:
        return None
    key = _kind_key(folder, kind)
    if key is None:
        return None
    body = memoryview(data)[:-_FRAMES_TAIL]
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    if not hmac.compare_digest(mac, data[-64:]):
        return None
    out: list[memoryview] = []
    at, end = 0, len(body)
    while at < end:
        size = int.from_bytes(body[at:at + _FRAME_HEAD], "little")
        at += _FRAME_HEAD
        if at + size > end:
            return None
        out.append(body[at:at + size])
        at += size
    return data, out


def read_limited(path: Path | str, limit: int) -> bytes | None:
    """An entry's bytes, read as user files are (regular files only, at most ``limit``); None if not."""
    try:
        return read_bytes(Path(path), limit=limit, what="cache entry")
    except (PolicylintError, OSError, ValueError):
        return None


# --------------------------------------------------------------------------- code fingerprint


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Version plus a hash of the package source: edited code never reads old facts."""
    digest = hashlib.sha256(f"{__version__}/{FORMAT_VERSION}".encode())
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the whole policylint package
    # every module by its path in the package, in the order of those paths; os.walk rather than
    # Path.rglob, which took most of this function's time (it runs in every warm run)
    found: list[str] = []
    for folder, dirs, files in os.walk(package):
        dirs.sort()
        relative = os.path.relpath(folder, package)
        prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
        found.extend(prefix + name for name in files if name.endswith(".py"))
    for name in sorted(found):
        digest.update(name.encode())
        with open(os.path.join(package, *name.split("/")), "rb") as file:
            digest.update(file.read())
    return digest.hexdigest()


def settings_digest(settings: Any, prefix: str = "") -> str:
    """The SHA-256 of ``prefix`` and ``settings`` as canonical JSON: a cache key from the settings it covers.

    Keys sorted, no spaces, ``repr`` for anything JSON lacks (a YAML date): the same
    settings give the same key in every process, and a change still changes it.
    """
    text = json.dumps(settings, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(f"{prefix}{text}".encode()).hexdigest()


def stat_identity(st: os.stat_result) -> list[int]:
    """A file's identity as git's index keeps it: device, inode, size, modification and status-change times (ns).

    Any write moves the status-change time, which no ordinary program can set back;
    every cache that trusts a file by its ``stat`` compares these five numbers.
    """
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def library_identity(name: str) -> str | None:
    """Which installed copy of the library ``name`` would be imported, without importing it; None if none.

    Its module file's path, size and modification time: installing another
    release (or editing it) rewrites the file. A key made with it changes with
    the library, at the cost of a ``stat`` rather than an import (jsonschema's
    and cerberus' imports take tens of milliseconds each, and a warm run may
    need neither).
    """
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        st = os.stat(origin)
    except (ImportError, OSError, ValueError):
        return None
    return f"{name}\0{origin}\0{st.st_size}\0{st.st_mtime_ns}"


# --------------------------------------------------------------------------- binary entries


#: the array types an entry may hold (little-endian or byte-sized numbers and booleans)
DTYPES = frozenset({"|b1", "|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8"})
#: an entry may expand to at most this many elements beyond what it stores (or 16 per byte of it)
_EXPAND_FLOOR = 1 << 20
_EXPAND_PER_BYTE = 16


class Budget:
    """How many elements the compact forms of one entry may still expand to."""

    def __init__(self, size: int) -> None:
        self.left = max(_EXPAND_FLOOR, _EXPAND_PER_BYTE * size)

    def take(self, n: int) -> None:
        if n < 0 or n > self.left:
            raise ValueError("an entry expands past its bound")
        self.left -= n


#: first bytes of every entry file, with the layout version
_MAGIC = b"PLCACHE3"
#: magic, two little-endian uint64 (JSON length, blob-table offset), then the HMAC-SHA256 of the rest
_HEADER = 56
_ALIGN = 64


def _entry_folder(path: Path) -> Path:
    """The cache folder of an entry at ``<folder>/<kind>-v<N>/<xx>/<key>.<ext>`` (else the entry's own folder)."""
    if path.parent.parent.name.endswith(f"-v{FORMAT_VERSION}"):
        return path.parents[2]
    return path.parent


def write_entry(
    path: Path, document: dict[str, Any], blobs: dict[str, Any], *, kind: str = "entry", folder: Path | None = None
) -> None:
    """One file: header, JSON document, then the arrays raw and aligned (written atomically).

    The document gains a ``blobs`` table (dtype, byte offset, length per blob). An
    HMAC-SHA256 over everything after the header, keyed by the cache folder's
    secret for ``kind``, proves on reading that this user's policylint wrote it:
    reading it back is one ``read``, one HMAC and no archive parsing. Without a
    secret (a folder that cannot hold one) nothing is written.
    """
    folder = folder if folder is not None else _entry_folder(path)
    key = _kind_key(folder, kind)
    if key is None:
        return
    table: dict[str, list[Any]] = {}
    chunks: list[bytes] = []
    offset = 0
    for name, arr in blobs.items():
        raw = arr.tobytes()
        table[name] = [arr.dtype.str, offset, int(arr.size)]
        pad = -len(raw) % _ALIGN
        chunks.append(raw + b"\0" * pad)
        offset += len(raw) + pad
    text = json.dumps({**document, "blobs": table}, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(_HEADER + len(text)) % _ALIGN)  # blobs start aligned
    body = text + b"".join(chunks)
    if _HEADER + len(body) > _MAX_MEASURE_BYTES:
        return  # it would be refused on reading
    header = _MAGIC + len(text).to_bytes(8, "little") + (_HEADER + len(text)).to_bytes(8, "little")
    header += hmac.digest(key, body, "sha256")
    atomic_write(path, header + body, folder)


def load_entry(path: Path, *, kind: str = "entry", folder: Path | None = None) -> tuple[dict[str, Any], dict[str, Any], Budget]:
    """The document, the named arrays and the expansion budget of one entry; ValueError when not usable.

    The file is read as user files are (regular file, size limit), and nothing of
    it is parsed before its HMAC matches.
    """
    import numpy as np

    folder = folder if folder is not None else _entry_folder(path)
    raw = read_limited(path, _MAX_MEASURE_BYTES)
    if raw is None:
        raise ValueError("no readable entry")
    if len(raw) < _HEADER or raw[:8] != _MAGIC:
        raise ValueError("not an entry")
    key = _kind_key(folder, kind)
    if key is None:
        raise ValueError("no cache secret")
    if not hmac.compare_digest(hmac.digest(key, memoryview(raw)[_HEADER:], "sha256"), raw[24:_HEADER]):
        raise ValueError("checksum mismatch")
    data = bytearray(raw)  # writable, so the arrays are too (as np.load gave)
    size = int.from_bytes(data[8:16], "little")
    start = int.from_bytes(data[16:24], "little")
    if start != _HEADER + size or start > len(data):
        raise ValueError("bad header")
    document = json.loads(bytes(data[_HEADER:start]).decode("utf-8"))
    if not isinstance(document, dict):
        raise ValueError("bad document")
    arrays: dict[str, Any] = {}
    for name, (dtype, offset, count) in document.get("blobs", {}).items():
        if dtype not in DTYPES or type(offset) is not int or type(count) is not int or offset < 0 or count < 0:
            raise ValueError("bad blob")
        kind_ = np.dtype(dtype)
        if start + offset + count * kind_.itemsize > len(data):
            raise ValueError("blob outside the entry")
        arrays[name] = np.frombuffer(data, dtype=kind_, count=count, offset=start + offset)
    return document, arrays, Budget(len(data))


def read_entry(path: Path, *, kind: str = "entry", folder: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document and the named arrays of one entry file; ValueError when damaged."""
    document, arrays, _ = load_entry(path, kind=kind, folder=folder)
    return document, arrays


def read_sealed(path: Path | str, folder: Path, kind: str, max_bytes: int) -> bytes | None:
    """The body of the ``kind`` entry at ``path``, read as :func:`read_limited` does and its seal checked.

    None when it is missing, unreadable, over ``max_bytes`` or its seal does not hold:
    the counterpart of :func:`write_sealed`.
    """
    data = read_limited(path, max_bytes)
    return unseal_json(folder, kind, data) if data is not None else None


def write_sealed(path: Path, folder: Path, kind: str, body: bytes, max_bytes: int) -> bool:
    """Seal ``body`` (a JSON object) for ``kind`` and write it to ``path`` when it fits in ``max_bytes``.

    False, and nothing written, without a secret or when the sealed entry is too large:
    the entry then stays a miss, as an unreadable one would.
    """
    sealed = seal_json(folder, kind, body)
    if sealed is None or len(sealed) > max_bytes:
        return False
    atomic_write(path, sealed, folder)
    return True


def atomic_write(path: Path, data: bytes | Iterable[bytes | memoryview], folder: Path | None = None) -> bool:
    """Write an entry through :func:`policylint.writer.write_file`; a disk or folder that refuses is skipped.

    The entry must lie in the cache folder ``folder`` (by default the folder of its
    kind, two levels up); a link planted at its name is replaced, never followed,
    and a pipe, device or folder there is left alone (the entry stays a miss).
    ``data`` may come in parts (an iterable of bytes; one raising ``ValueError``
    leaves nothing written). True when the entry was written.
    """
    root = folder if folder is not None else _entry_folder(path)
    try:
        # not fsynced: an entry lost or torn by a crash fails its HMAC and is a miss
        write_file(path, data, root=root, links="replace", parents=True, mode=0o600, what="cache entry", durable=False,
                   in_place=True)
    except (PolicylintError, OSError, ValueError):
        return False
    return True
