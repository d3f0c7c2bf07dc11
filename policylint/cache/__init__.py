"""The caches: measured facts, parsed documents and rule sets kept between runs, outside the repository.

Measuring (reading traces, computing bands) is most of what ``check`` costs, and
a pre-commit run on one changed file would otherwise re-read every trace of the
repository. An entry is keyed by a SHA-256 over

- the bytes of every measurement file the workload reads,
- every setting that shapes the result: the workload's spec (measurement blocks,
  cold start, share, exclusions, per-GPU figure, GPUs per replica, VRAM), the
  pool's elastic and GPU sections, the trace limits, the names files are shown
  under (they appear in the facts),
- the policylint version, a hash of the package's own source and the entry
  format version, so an upgrade or an edited calculator never reuses old facts.

The date of the run is not part of the key: measuring does not use it (staleness
is judged by the rules, from the last sample), and a test holds that.

**A cache can make a run faster, never different.** The cache folder is input
policylint did not write in this run, so every entry is treated as untrusted:

- every entry carries an HMAC-SHA256 over its whole payload (parsed data,
  arrays, the key it was stored under and its kind), keyed by a secret of the
  cache folder (:func:`_secret`: 32 random bytes in a file of mode 0600 that
  must belong to the user running policylint). An entry copied from elsewhere,
  edited, truncated or planted by someone who cannot read that file is a miss;
- entries are read through :func:`policylint.safeio.read_bytes`, like user
  files: a pipe, a device or a file over the entry size limit is refused unread;
- an entry holds plain data only (numbers, text, arrays of a fixed set of
  dtypes), and the dataclasses it describes are rebuilt from a closed table of
  tags (:func:`_types`), never from a class name found in the entry; the
  expanded size of compact arrays (a regular time axis stored as start and step)
  is bounded before anything is allocated;
- a trace is checked (regular file, within the size limit) before it is hashed,
  and rule files are read with the same checks as without the cache;
- anything doubtful - a bad checksum, a foreign key, an unknown tag, a
  mismatching field - is a miss: the value is computed afresh, exactly as with
  ``--no-cache``. The cache never makes a run fail.

The secret keeps out an attacker who can write into the cache folder but not
read the user's files (a shared or group-writable folder, entries copied in from
another machine). It cannot keep out one who runs code as the same user, nor a
cache folder restored whole (secret included) from a less trusted source, such
as a CI cache a pull request could write: see docs/performance.md, "Caches".

An entry is one file: a small header (with the HMAC), a JSON document that
describes the values, then the arrays as raw bytes (one blob per dtype; a
regular time axis is stored as its start and step, a validity mask one bit per
sample). Nothing is pickled. Entries are written through
:func:`policylint.writer.write_file` (a unique temporary file, then an atomic
rename), so concurrent runs and crashes never leave half an entry; an entry
that cannot be used is ignored and rewritten.

A workload's GPU demand series, which only its pool's sum reads, is a second entry
next to its facts, and each pool's sum and bands have their own entry keyed by the
pool's spec and its members' keys (:func:`pool_key`): a warm run whose pools are
cached reads no series at all. A pool's sum is also kept in a form that one changed
member can be taken out of and put back into (:mod:`policylint.cache.pooled`), and the
trace digests of one folder are read and written as one table (:class:`_DigestTable`).

Only measurements that succeeded without findings are stored, so findings at
file positions (which depend on the YAML, not on the trace) are always computed
afresh and come out identical with and without the cache.

Rule sets are cached too (:func:`load_rules_cached`): the rules as loaded and
configured, as a JSON document keyed by the rule folders, the rule files' bytes,
the configuration file and its per-rule overrides and the code fingerprint, plus
the fact that every condition compiled, so a run neither re-parses nor re-checks
the rule files.

The folder is ``POLICYLINT_CACHE_DIR`` when set, else the user cache folder
(``platformdirs``); ``check --no-cache`` turns the cache off.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.measure import WorkloadFacts
    from policylint.engine.ruleset import RuleSet
    from policylint.model import Workload
    from policylint.readers.limits import TraceLimits

#: bumped whenever the entry layout changes; part of every key
FORMAT_VERSION = 4
#: environment variable naming the cache folder (overrides the user cache folder)
ENV_VAR = "POLICYLINT_CACHE_DIR"
#: a tuple of at least this many same-class dataclasses is stored column by column
_COLUMNAR_MIN = 8


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
_MAX_ENTRY_BYTES = {"documents": 64 << 20, "rules": 16 << 20, "stat": 64 << 10, "stattable": 64 << 20}
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
    from policylint.errors import PolicylintError
    from policylint.writer import WriteRefused, write_file

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


def _seal_json(folder: Path | str, kind: str, body: bytes) -> bytes | None:
    """``body`` (a JSON object) with its HMAC as a last member; None without a secret."""
    key = _kind_key(folder, kind)
    if key is None or not body.endswith(b"}") or len(body) < 3:
        return None
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    return body[:-1] + _MAC_HEAD + mac + b'"}'


def _unseal_json(folder: Path | str, kind: str, data: bytes) -> bytes | None:
    """The JSON object a sealed entry holds, when its HMAC matches; else None."""
    if len(data) < _MAC_TAIL + 2 or not data.endswith(b'"}') or data[-_MAC_TAIL : -_MAC_TAIL + len(_MAC_HEAD)] != _MAC_HEAD:
        return None
    key = _kind_key(folder, kind)
    if key is None:
        return None
    body = data[:-_MAC_TAIL] + b"}"
    mac = hmac.digest(key, body, "sha256").hex().encode("ascii")
    return body if hmac.compare_digest(mac, data[-66:-2]) else None


def _read_limited(path: Path | str, limit: int) -> bytes | None:
    """An entry's bytes, read as user files are (regular files only, at most ``limit``); None if not."""
    from policylint.errors import PolicylintError
    from policylint.safeio import read_bytes

    try:
        return read_bytes(Path(path), limit=limit, what="cache entry")
    except (PolicylintError, OSError, ValueError):
        return None


# --------------------------------------------------------------------------- keys


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Version plus a hash of the package source: edited code never reads old facts."""
    from policylint import __version__

    digest = hashlib.sha256(f"{__version__}/{FORMAT_VERSION}".encode())
    package = Path(__file__).resolve().parent.parent  # the whole policylint package
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _file_digest(path: Path) -> str:
    """The SHA-256 of a regular file's bytes (a pipe or device is refused on the open descriptor)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Refused(str(path))
        digest = hashlib.sha256()
        while block := os.read(fd, 1 << 20):
            digest.update(block)
    finally:
        os.close(fd)
    return digest.hexdigest()


class _Refused(OSError):
    """A trace that is not hashed: not a regular file, or larger than any reader accepts."""


#: a file changed less than this long before it was hashed is hashed again next time
_RACY_SECONDS = 2.0


def _stat_id(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class _Unhashed(Exception):
    """A file's digest is not recorded, and the caller asked not to hash it here."""


def _hash_limit(limits: TraceLimits | None) -> int:
    """The largest trace any reader accepts under ``limits``: larger files are never hashed."""
    from policylint.readers.limits import TraceLimits

    chosen = limits if limits is not None else TraceLimits()
    return max(chosen.max_file_bytes, chosen.max_json_bytes)


def _known_digest(path: Path, folder: Path | None, *, hash_files: bool = True, limit: int | None = None) -> str:
    """The SHA-256 of a file's bytes, reusing the one recorded for an unchanged file.

    The file is checked first, as the readers check it: anything but a regular
    file, or a file over ``limit`` bytes (default: the default trace limits),
    raises :class:`_Refused` (an ``OSError``) before a byte is read or hashed -
    the readers then report it.

    A record maps a file (by real path) to its identity - device, inode, size,
    modification and status-change times in nanoseconds - and the digest of its
    bytes. Any write moves the status-change time (ctime) to the clock's current
    time, and no ordinary program can set it back, so a file whose identity is
    unchanged has unchanged bytes - except for a write in the same timestamp tick
    as the hashing. To exclude that, a digest is only recorded for a file whose
    times are at least two seconds older than the moment it was hashed, and only
    when the file's identity is the same before and after hashing. Everything
    else is hashed again. A record is sealed like every entry (see :func:`_seal_json`);
    a damaged or foreign one is ignored. The digest still goes into the entry's
    key, so an entry is only ever used for the bytes it was built from.

    Without ``hash_files`` a file with no usable record raises :class:`_Unhashed`
    instead of being read (the caller hashes it elsewhere, in a worker).
    """
    if limit is None:
        limit = _hash_limit(None)
    real = os.path.realpath(path)
    before = os.stat(real)
    if not stat.S_ISREG(before.st_mode) or before.st_size > limit:
        raise _Refused(real)
    if folder is None:
        if not hash_files:
            raise _Unhashed(str(path))
        return _file_digest(path)
    import time

    ident = _stat_id(before)
    table = _digest_table(folder, os.path.dirname(real))
    found = table.get(real, ident)
    if found is not None:
        return found
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()
    record = folder / f"stat-v{FORMAT_VERSION}" / name[:2] / f"{name}.json"
    try:
        data = _read_limited(record, _MAX_ENTRY_BYTES["stat"])
        body = _unseal_json(folder, "stat", data) if data is not None else None
        if body is not None:
            known = json.loads(body)
            if known["path"] == real and known["stat"] == ident and _is_digest(known["sha256"]):
                table.add(real, ident, known["sha256"])
                return str(known["sha256"])
    except Exception:  # noqa: BLE001 - a damaged record: hash the file
        pass
    if not hash_files:
        raise _Unhashed(real)
    hashed_at = time.time_ns()
    digest = _file_digest(Path(real))
    after = _stat_id(os.stat(real))
    settled = max(before.st_mtime_ns, before.st_ctime_ns) < hashed_at - int(_RACY_SECONDS * 1e9)
    if after == ident and settled:
        document = {"path": real, "stat": ident, "sha256": digest}
        sealed = _seal_json(folder, "stat", json.dumps(document, separators=(",", ":")).encode("utf-8"))
        if sealed is not None:
            _atomic_write(record, sealed, folder)
            table.add(real, ident, digest)
    return digest


def _is_digest(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


class _DigestTable:
    """The recorded digests of one folder's files, read and written as one entry.

    A warm run over a thousand traces in one folder reads one entry here instead
    of a thousand records (:func:`_known_digest`). Each row is exactly what a record
    holds - the file's real path, its identity and its digest - and is added only
    from a record or a settled hashing, so a row is as trustworthy as a record.
    The entry is sealed like the records (kind ``stattable``) and read as user
    files are; a damaged, foreign or mismatching entry is an empty table.
    """

    #: a table never grows past this many rows (files deleted since stay in it until then)
    MAX_ROWS = 200_000

    def __init__(self, folder: Path, directory: str) -> None:
        self.folder = folder
        self.directory = directory
        name = hashlib.sha256(directory.encode("utf-8", "surrogateescape")).hexdigest()
        self.path = folder / f"stattable-v{FORMAT_VERSION}" / name[:2] / f"{name}.json"
        self.rows: dict[str, tuple[list[int], str]] = {}
        self.dirty = False
        try:
            data = _read_limited(self.path, _MAX_ENTRY_BYTES["stattable"])
            body = _unseal_json(folder, "stattable", data) if data is not None else None
            if body is None:
                return
            stored = json.loads(body)
            if stored.get("dir") != directory or not isinstance(stored.get("files"), dict):
                return
            rows: dict[str, tuple[list[int], str]] = {}
            for real, (ident, digest) in stored["files"].items():
                if os.path.dirname(real) != directory or not _is_digest(digest):
                    return
                if not isinstance(ident, list) or len(ident) != 5 or any(type(x) is not int for x in ident):
                    return
                rows[real] = (ident, digest)
            self.rows = rows
        except Exception:  # noqa: BLE001 - a damaged table is an empty one: the records and hashing remain
            self.rows = {}

    def get(self, real: str, ident: list[int]) -> str | None:
        row = self.rows.get(real)
        return row[1] if row is not None and row[0] == ident else None

    def add(self, real: str, ident: list[int], digest: str) -> None:
        if self.rows.get(real) == (ident, digest):
            return
        if len(self.rows) >= self.MAX_ROWS:
            self.rows.clear()
        self.rows[real] = (list(ident), digest)
        self.dirty = True

    def write(self) -> None:
        if not self.dirty:
            return
        document = {"dir": self.directory, "files": {k: [v[0], v[1]] for k, v in sorted(self.rows.items())}}
        sealed = _seal_json(self.folder, "stattable", json.dumps(document, separators=(",", ":")).encode("utf-8"))
        if sealed is not None and len(sealed) <= _MAX_ENTRY_BYTES["stattable"]:
            _atomic_write(self.path, sealed, self.folder)
        self.dirty = False


#: (cache folder, folder of the files) -> its table, for the length of a run
_TABLES: dict[tuple[str, str], _DigestTable] = {}


def _digest_table(folder: Path, directory: str) -> _DigestTable:
    key = (os.fspath(folder), directory)
    table = _TABLES.get(key)
    if table is None:
        table = _TABLES[key] = _DigestTable(folder, directory)
    return table


def flush_digests(folder: Path | None) -> None:
    """Write the digest tables of ``folder`` that gained rows in this run (see :class:`_DigestTable`).

    They are then forgotten: the next run in this process reads them afresh, as a new process would.
    """
    if folder is None:
        return
    for key, table in list(_TABLES.items()):
        if key[0] == os.fspath(folder):
            table.write()
            del _TABLES[key]


#: what :func:`workload_key` gives, without ``hash_files``, for a workload with a file to hash
UNHASHED = "unhashed"


def workload_key(
    workload: Workload, limits: TraceLimits | None, folder: Path | None = None, *, hash_files: bool = True
) -> str | None:
    """The cache key of one workload's facts; None when it reads no file (or one is unreadable).

    Untraced workloads cost nothing to measure, and a file that cannot be read
    is reported by the measuring step, so neither is worth an entry. With the
    cache ``folder``, the digests of files unchanged since an earlier run are
    reused (see :func:`_known_digest`) instead of reading every trace again.
    Without ``hash_files`` a workload with a file whose digest is not recorded
    gets :data:`UNHASHED` instead of a key: a parallel run hashes those files in
    its workers, beside the measuring.
    """
    files = []
    for role in sorted(workload.measurements):
        ref = workload.measurements[role]
        if ref.path is None:
            continue
        try:
            # checked (regular file, size) before hashing: a pipe or an 8 GiB file is the readers' to refuse
            content = _known_digest(ref.path, folder, hash_files=hash_files, limit=_hash_limit(limits))
        except _Unhashed:
            return UNHASHED
        except OSError:
            return None
        # The file by its bytes, its name as written and its real suffix (which picks the
        # reader) - not by where the repository lies: a moved or freshly cloned repository,
        # or a CI workspace with a new folder on every run, still finds its entries.
        files.append([role, ref.display, ref.path.suffix.lower(), ref.spec, content])
    if not files:
        return None
    pool = workload.pool.spec if workload.pool is not None else {}
    settings = {
        "code": _code_fingerprint(),
        "workload": workload.name,
        "spec": workload.spec,
        "pool": {"elastic": pool.get("elastic"), "gpu": pool.get("gpu")},
        "limits": dataclasses.asdict(limits) if limits is not None else None,
        "files": files,
    }
    # repr for anything JSON lacks (YAML dates): deterministic, and a change still changes the key
    text = json.dumps(settings, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _entry_path(folder: Path, key: str) -> Path:
    return folder / f"measure-v{FORMAT_VERSION}" / key[:2] / f"{key}.entry"


# --------------------------------------------------------------------------- encoding


class _Encoder:
    """Turn dataclasses, tuples and arrays into JSON plus named arrays."""

    def __init__(self) -> None:
        # Arrays of one dtype are laid end to end in one blob: an archive member costs
        # a header parse on load, and an entry holds a dozen small arrays.
        self._parts: dict[str, list[Any]] = {}
        self._sizes: dict[str, int] = {}
        self._names: dict[str, str] = {}  # dtype -> archive member
        self._seen: dict[int, list[Any]] = {}  # one array shared by two fields is stored once

    def _array(self, value: Any) -> list[Any]:
        """Add an array (or numpy scalar); return its reference: [blob, offset, shape]."""
        import numpy as np

        if isinstance(value, np.ndarray) and id(value) in self._seen:
            return self._seen[id(value)]
        arr = np.asarray(value)
        if arr.dtype.str not in _DTYPES:
            raise Uncacheable(f"array of {arr.dtype}")
        compact = _compact(arr)
        if compact is None and arr.dtype == np.bool_ and arr.ndim == 1 and arr.size >= 64:
            # a validity mask: one bit per sample instead of one byte
            compact = ["=bits", self._array(np.packbits(arr)), int(arr.size)]
        if compact is not None:
            if isinstance(value, np.ndarray):
                self._seen[id(value)] = compact
            return compact
        blob = self._names.setdefault(arr.dtype.str, f"b{len(self._names)}")
        offset = self._sizes.get(blob, 0)
        self._parts.setdefault(blob, []).append(arr.ravel())
        self._sizes[blob] = offset + arr.size
        ref = [blob, offset, list(arr.shape)]
        if isinstance(value, np.ndarray):
            self._seen[id(value)] = ref
        return ref

    def blobs(self) -> dict[str, Any]:
        """The archive members: one flat array per dtype."""
        import numpy as np

        return {blob: np.concatenate(parts) for blob, parts in self._parts.items()}

    def encode(self, value: Any) -> Any:
        import numpy as np

        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, np.generic):  # before float: np.float64 is a float
            return {"$scalar": self._array(value)}
        if type(value) in (int, float):
            return value
        if isinstance(value, np.ndarray):
            return {"$array": self._array(value)}
        if isinstance(value, dt.datetime):
            return {"$datetime": value.isoformat()}
        if isinstance(value, (tuple, list)):
            columns = self._columnar(value)
            if columns is not None:
                return columns
            items = [self.encode(v) for v in value]
            return {"$tuple": items} if isinstance(value, tuple) else {"$list": items}
        if isinstance(value, dict):
            if not all(isinstance(k, str) for k in value):
                raise Uncacheable("dict with non-text keys")
            return {"$dict": {k: self.encode(v) for k, v in value.items()}}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            tag = _tag_of(type(value))
            fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return {"$type": tag, "fields": fields}
        raise Uncacheable(type(value).__name__)

    def _columnar(self, items: tuple[Any, ...] | list[Any]) -> Any:
        """Many same-class dataclasses of plain numbers become one array per field."""
        import numpy as np

        if len(items) < _COLUMNAR_MIN or not isinstance(items, tuple):
            return None
        cls = type(items[0])
        if not dataclasses.is_dataclass(cls) or any(type(x) is not cls for x in items):
            return None
        fields = [f.name for f in dataclasses.fields(cls) if f.init]
        columns = {}
        for name in fields:
            values = [getattr(x, name) for x in items]
            kind = type(values[0])
            # one exact Python type per field, so tolist() gives back the same objects
            if kind not in (int, float, bool) or any(type(v) is not kind for v in values):
                return None
            columns[name] = self._array(np.array(values, dtype={int: np.int64, float: np.float64, bool: np.bool_}[kind]))
        return {"$columns": _tag_of(cls), "n": len(items), "fields": columns}


def _range_of(start: float, step: float, n: int) -> Any:
    """The grid ``start + i x step``: how a regular time axis is rebuilt, bit for bit."""
    import numpy as np

    return start + np.arange(n, dtype=np.float64) * step


def _compact(arr: Any) -> list[Any] | None:
    """A short reference for arrays that need not be stored sample by sample, else None.

    A regular float grid (a trace's time axis) becomes its start and step, but only
    when rebuilding it gives exactly the same bits (boolean masks are packed to one
    bit per element by the encoder). Both are most of an entry's bytes.
    """
    import numpy as np

    if arr.ndim != 1 or arr.size < 3:
        return None
    if arr.dtype == np.float64:
        start = float(arr[0])
        step = float(arr[1] - arr[0])
        # compared bit for bit: array_equal would take -0.0 for 0.0
        rebuilt = _range_of(start, step, arr.size)
        if math.isfinite(start) and math.isfinite(step) and np.array_equal(rebuilt.view(np.int64), arr.view(np.int64)):
            return ["=range", start, step, int(arr.size)]
        return None
    return None


# The closed table of what an entry can rebuild. An entry names a type by one of these
# tags, never by a module or class name; any other tag, or fields that differ from the
# dataclass's own, make the entry a miss. The table holds exactly the dataclasses that
# WorkloadFacts, GpuDemand and PoolFacts are made of (a test walks their annotations).


@functools.lru_cache(maxsize=1)
def _types() -> dict[str, tuple[type, dict[str, Callable[[Any], bool]]]]:
    """Tag -> (dataclass, a type check per init field): everything an entry may rebuild."""
    from policylint.bands import BandReport, QueueStats, SpikeTable
    from policylint.measure import GpuDemand, PoolFacts, WorkloadFacts
    from policylint.measure.pooled import PooledGrid, PooledReport
    from policylint.readers.series import Exclusion, Gap, Series

    table: dict[str, type] = {
        "WorkloadFacts": WorkloadFacts,
        "GpuDemand": GpuDemand,
        "PoolFacts": PoolFacts,
        "BandReport": BandReport,
        "QueueStats": QueueStats,
        "SpikeTable": SpikeTable,
        "Series": Series,
        "Gap": Gap,
        "Exclusion": Exclusion,
        "PooledReport": PooledReport,
        "PooledGrid": PooledGrid,
    }
    return {tag: (cls, _field_checks(cls)) for tag, cls in table.items()}


def _field_checks(cls: type) -> dict[str, Callable[[Any], bool]]:
    """A check per init field of ``cls``, from its annotations: a value of another type is a miss."""
    import sys
    import typing

    import numpy as np

    # the annotations are strings naming types their module imports only for mypy
    names: dict[str, Any] = {"np": np, "dt": dt}
    for module in ("policylint.readers.series", "policylint.bands", "policylint.measure.pooled", "policylint.measure"):
        names.update(vars(sys.modules[module]))
    names.update(vars(sys.modules[cls.__module__]))
    hints = typing.get_type_hints(cls, globalns=names)
    return {f.name: _check_for(hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _check_for(kind: Any) -> Callable[[Any], bool]:
    """A predicate that holds for values of the annotation ``kind`` (numpy scalars count as numbers)."""
    import types
    import typing

    import numpy as np

    if kind is type(None):
        return lambda v: v is None
    if kind is bool:
        return lambda v: isinstance(v, (bool, np.bool_))
    if kind is int:
        return lambda v: isinstance(v, (int, np.integer))
    if kind is float:
        return lambda v: isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    if kind is str:
        return lambda v: isinstance(v, str)
    if kind is np.ndarray:
        return lambda v: isinstance(v, np.ndarray)
    if kind is dt.datetime:
        return lambda v: isinstance(v, dt.datetime)
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return lambda v: isinstance(v, kind)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return _union_check(args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _check_for(args[0])
        return lambda v: isinstance(v, tuple) and all(item(x) for x in v)
    if origin is tuple:
        items = [_check_for(a) for a in args]
        return lambda v: isinstance(v, tuple) and len(v) == len(items) and all(ok(x) for ok, x in zip(items, v))
    if origin is list:
        item = _check_for(args[0]) if args else (lambda v: True)
        return lambda v: isinstance(v, list) and all(item(x) for x in v)
    if origin is dict:
        value = _check_for(args[1]) if len(args) == 2 else (lambda v: True)
        return lambda v: isinstance(v, dict) and all(isinstance(k, str) and value(x) for k, x in v.items())
    # an annotation this table does not know: the value is plain data (the decoder builds nothing else)
    return lambda v: True


def _simple(kind: Any) -> tuple[tuple[type, ...], bool] | None:
    """The types :func:`_check_for` accepts for ``kind`` by one isinstance test, and whether it refuses bools."""
    import numpy as np

    if kind is type(None):
        return (type(None),), False
    if kind is bool:
        return (bool, np.bool_), False
    if kind is int:
        return (int, np.integer), False
    if kind is float:
        return (int, float, np.integer, np.floating), True
    if kind in (str, np.ndarray, dt.datetime) or (isinstance(kind, type) and dataclasses.is_dataclass(kind)):
        return (kind,), False
    return None


def _union_check(args: tuple[Any, ...]) -> Callable[[Any], bool]:
    """:func:`_check_for` of a union: one isinstance test for its plain options (a warm run checks
    hundreds of thousands of values), the others one by one. Accepts exactly what any option accepts.
    """
    plain: list[type] = []
    numbers: tuple[type, ...] = ()  # a float option: numbers but not bools
    rest: list[Callable[[Any], bool]] = []
    for arg in args:
        simple = _simple(arg)
        if simple is None:
            rest.append(_check_for(arg))
        elif simple[1]:
            numbers = simple[0]
        else:
            plain.extend(simple[0])
    if numbers and any(issubclass(bool, t) for t in plain):
        plain.extend(numbers)  # bools are accepted anyway: the float option's exception is moot
        numbers = ()
    accepted = tuple(dict.fromkeys(plain))
    if not numbers and not rest:
        return lambda v: isinstance(v, accepted)

    def check(v: Any) -> bool:
        if isinstance(v, accepted) or (numbers and isinstance(v, numbers) and not isinstance(v, bool)):
            return True
        return any(ok(v) for ok in rest)

    return check


@functools.lru_cache(maxsize=1)
def _tags() -> dict[type, str]:
    return {cls: tag for tag, (cls, _) in _types().items()}


def _tag_of(cls: type) -> str:
    """The tag an entry stores for ``cls``; :class:`Uncacheable` for a type outside the table."""
    tag = _tags().get(cls)
    if tag is None:
        raise Uncacheable(f"{cls.__qualname__} is not in the entry type table")
    return tag


def _resolve_tag(tag: Any, stored: Any) -> tuple[Any, dict[str, Callable[[Any], bool]]]:
    """The dataclass of ``tag`` and its field checks, only if its init fields are exactly ``stored``."""
    found = _types().get(tag) if isinstance(tag, str) else None
    if found is None:
        raise ValueError("unknown type tag")
    cls, checks = found
    if not isinstance(stored, dict) or checks.keys() != stored.keys():
        raise ValueError(f"fields of {tag} differ")
    return cls, checks


#: the array types an entry may hold (little-endian or byte-sized numbers and booleans)
_DTYPES = frozenset({"|b1", "|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8"})
#: an entry may expand to at most this many elements beyond what it stores (or 16 per byte of it)
_EXPAND_FLOOR = 1 << 20
_EXPAND_PER_BYTE = 16


class _Budget:
    """How many elements the compact forms of one entry may still expand to."""

    def __init__(self, size: int) -> None:
        self.left = max(_EXPAND_FLOOR, _EXPAND_PER_BYTE * size)

    def take(self, n: int) -> None:
        if n < 0 or n > self.left:
            raise ValueError("an entry expands past its bound")
        self.left -= n


def _slice(arrays: dict[str, Any], ref: list[Any], budget: _Budget | None = None) -> Any:
    """The array a reference [member, offset, shape] (or a compact form) points at.

    A compact form's declared size is charged to ``budget`` before anything is
    allocated (a range of 3e8 samples would otherwise cost gigabytes).
    """
    if budget is None:
        budget = _Budget(0)
    if not isinstance(ref, list) or not ref:
        raise ValueError("bad reference")
    if ref[0] == "=range":
        _, start, step, n = ref
        if type(n) is not int or not isinstance(start, float) or not isinstance(step, float):
            raise ValueError("bad range")
        if not (math.isfinite(start) and math.isfinite(step)):
            raise ValueError("bad range")
        budget.take(n)
        return _range_of(start, step, n)
    if ref[0] == "=bits":
        import numpy as np

        _, inner, n = ref
        if type(n) is not int or n < 0:
            raise ValueError("bad bit mask")
        packed = _slice(arrays, inner, budget)
        if packed.dtype != np.uint8 or packed.ndim != 1 or packed.size != (n + 7) // 8:
            raise ValueError("bad bit mask")
        return np.unpackbits(packed, count=n).astype(np.bool_)
    name, offset, shape = ref
    blob = arrays[name]
    if type(offset) is not int or not isinstance(shape, list) or any(type(n) is not int or n < 0 for n in shape):
        raise ValueError("bad reference")
    size = 1
    for n in shape:
        size *= n
    if offset < 0 or offset + size > blob.size:
        raise ValueError("reference outside its blob")
    return blob[offset : offset + size].reshape(shape)


#: the values JSON gives that :func:`_decode` returns as they are
_SCALARS = frozenset({int, float, str, bool, type(None)})


def _decode(value: Any, arrays: dict[str, Any], budget: _Budget | None = None) -> Any:
    """Rebuild a value the encoder wrote: plain data, arrays and dataclasses of the table only."""
    if budget is None:
        budget = _Budget(0)
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise ValueError("bare list")
        return value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        if tag == "$scalar":
            return _slice(arrays, inner, budget)[()]
        if tag == "$array":
            return _slice(arrays, inner, budget)
        if tag == "$datetime" and isinstance(inner, str):
            return dt.datetime.fromisoformat(inner)
        # (a plain JSON scalar decodes to itself: taken without a call, as _decode would return it)
        if tag == "$tuple" and isinstance(inner, list):
            return tuple(v if type(v) in _SCALARS else _decode(v, arrays, budget) for v in inner)
        if tag == "$list" and isinstance(inner, list):
            return [v if type(v) in _SCALARS else _decode(v, arrays, budget) for v in inner]
        if tag == "$dict" and isinstance(inner, dict):
            return {k: v if type(v) in _SCALARS else _decode(v, arrays, budget) for k, v in inner.items()}
        raise ValueError("unknown tag")
    if "$type" in value and len(value) == 2:
        fields = value["fields"]
        cls, checks = _resolve_tag(value["$type"], fields)
        decoded = {k: v if type(v) in _SCALARS else _decode(v, arrays, budget) for k, v in fields.items()}
        for name, item in decoded.items():
            if not checks[name](item):
                raise ValueError(f"{value['$type']}.{name} has the wrong type")
        return cls(**decoded)
    if "$columns" in value and len(value) == 3:
        fields = value["fields"]
        cls, checks = _resolve_tag(value["$columns"], fields)
        # positional, in the dataclass's own field order: thousands of spikes per trace
        names = [f.name for f in dataclasses.fields(cls) if f.init]
        columns = [_slice(arrays, fields[name], budget).tolist() for name in names]
        if any(len(col) != value["n"] for col in columns):
            raise ValueError("column lengths differ")
        # one array per column, so one Python type per column: its first value speaks for all
        if any(col and not checks[name](col[0]) for name, col in zip(names, columns)):
            raise ValueError("a column has the wrong type")
        return tuple(map(cls, *columns))
    raise ValueError("unknown tag")


# --------------------------------------------------------------------------- entries


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


def _write_entry(
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
    _atomic_write(path, header + body, folder)


def _load_entry(path: Path, *, kind: str = "entry", folder: Path | None = None) -> tuple[dict[str, Any], dict[str, Any], _Budget]:
    """The document, the named arrays and the expansion budget of one entry; ValueError when not usable.

    The file is read as user files are (regular file, size limit), and nothing of
    it is parsed before its HMAC matches.
    """
    import numpy as np

    folder = folder if folder is not None else _entry_folder(path)
    raw = _read_limited(path, _MAX_MEASURE_BYTES)
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
        if dtype not in _DTYPES or type(offset) is not int or type(count) is not int or offset < 0 or count < 0:
            raise ValueError("bad blob")
        kind_ = np.dtype(dtype)
        if start + offset + count * kind_.itemsize > len(data):
            raise ValueError("blob outside the entry")
        arrays[name] = np.frombuffer(data, dtype=kind_, count=count, offset=start + offset)
    return document, arrays, _Budget(len(data))


def _read_entry(path: Path, *, kind: str = "entry", folder: Path | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document and the named arrays of one entry file; ValueError when damaged."""
    document, arrays, _ = _load_entry(path, kind=kind, folder=folder)
    return document, arrays


def _series_path(folder: Path, key: str) -> Path:
    return folder / f"series-v{FORMAT_VERSION}" / key[:2] / f"{key}.series"


def _load_value(folder: Path, path: Path, kind: str, key: str, field: str) -> Any:
    """The decoded ``field`` of the ``kind`` entry at ``path`` recorded under ``key``; ValueError/OSError when not."""
    meta, arrays, budget = _load_entry(path, kind=kind, folder=folder)
    if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != kind:
        raise ValueError("not this entry")
    return _decode(meta[field], arrays, budget)


def load(folder: Path, key: str, *, demand: bool = True) -> WorkloadFacts | None:
    """The facts stored under ``key``, or None when absent, unreadable or not matching.

    The facts are one small entry; the workload's GPU demand series, which only its
    pool's sum reads, is a second one (``series-v*``), read only with ``demand``. Without
    it the facts come back with ``demand`` None - for a caller that has the pool's sum
    from :func:`load_pool` already. A damaged or missing series entry makes the whole
    measurement a miss, so it is measured and both entries are written again.
    """
    from policylint.measure import GpuDemand, WorkloadFacts

    try:
        meta, arrays, budget = _load_entry(_entry_path(folder, key), kind="measure", folder=folder)
        if meta.get("format") != FORMAT_VERSION or meta.get("key") != key or meta.get("kind") != "measure":
            return None
        facts = _decode(meta["facts"], arrays, budget)
        if not isinstance(facts, WorkloadFacts) or not isinstance(meta.get("series"), bool):
            return None
        if demand and meta["series"]:
            series = _load_value(folder, _series_path(folder, key), "series", key, "demand")
            if not isinstance(series, GpuDemand):
                return None
            facts.demand = series
    except Exception:  # noqa: BLE001 - any damage to an entry means "not cached", never an error
        return None
    return facts


def load_demand(folder: Path, key: str) -> Any:
    """The GPU demand series (:class:`~policylint.measure.GpuDemand`) stored under ``key``, or None.

    Read alone, without the facts: the pooled-sum cache takes an old series out of a
    pool's sum by the key it was added under (:mod:`policylint.cache.pooled`).
    """
    from policylint.measure import GpuDemand

    try:
        series = _load_value(folder, _series_path(folder, key), "series", key, "demand")
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None
    return series if isinstance(series, GpuDemand) else None


def store(folder: Path, key: str, facts: WorkloadFacts) -> None:
    """Write ``facts`` under ``key`` atomically (the GPU demand series as its own entry, written first).

    A value or folder that cannot be stored is skipped.
    """
    encoder = _Encoder()
    try:
        small = dataclasses.replace(facts, demand=None)
        document = {"format": FORMAT_VERSION, "kind": "measure", "key": key, "facts": encoder.encode(small)}
        document["series"] = facts.demand is not None
        if facts.demand is not None:
            series = _Encoder()
            series_document = {"format": FORMAT_VERSION, "kind": "series", "key": key, "demand": series.encode(facts.demand)}
    except Uncacheable:
        return
    try:
        if facts.demand is not None:
            # The series first: a run that finds the facts finds their series too (or a miss).
            _write_entry(_series_path(folder, key), series_document, series.blobs(), kind="series", folder=folder)
        _write_entry(_entry_path(folder, key), document, encoder.blobs(), kind="measure", folder=folder)
    except ValueError:
        return  # a value JSON cannot spell exactly (NaN in a figure): measured afresh next time


# --------------------------------------------------------------------------- pooled demand
#
# A pool's summed series, bands and queue figures, keyed by everything they are
# computed from: the code, the pool's own spec (reserved and elastic GPUs, cold start,
# queue), and each member's name and measurement key in name order - a member's key
# already covers its trace bytes, its spec and the pool sections its facts depend on.
# Any change to a member changes its key and so the pool's. A warm run whose pools
# all hit reads one small entry per workload and one entry per pool, instead of every
# member's series followed by the sum.


def pool_key(pool: Any, member_keys: Sequence[tuple[str, str]]) -> str:
    """The cache key of one pool's pooled demand: the code, the pool's spec and its members' keys."""
    settings = {
        "code": _code_fingerprint(),
        "pool": pool.qualified,
        "spec": pool.spec,
        "members": [list(m) for m in sorted(member_keys)],
    }
    text = json.dumps(settings, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(f"pooled/{FORMAT_VERSION}/{text}".encode()).hexdigest()


def _pool_path(folder: Path, key: str) -> Path:
    return folder / f"pooled-v{FORMAT_VERSION}" / key[:2] / f"{key}.pool"


def load_pool(folder: Path, key: str) -> Any:
    """The :class:`~policylint.measure.PoolFacts` stored under ``key``, or None (absent or damaged)."""
    from policylint.measure import PoolFacts

    try:
        pooled = _load_value(folder, _pool_path(folder, key), "pooled", key, "pool")
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None
    return pooled if isinstance(pooled, PoolFacts) else None


def store_pool(folder: Path, key: str, pooled: Any) -> None:
    """Keep one pool's pooled demand under ``key``; a value that cannot be stored is skipped."""
    encoder = _Encoder()
    try:
        document = {"format": FORMAT_VERSION, "kind": "pooled", "key": key, "pool": encoder.encode(pooled)}
    except Uncacheable:
        return
    try:
        _write_entry(_pool_path(folder, key), document, encoder.blobs(), kind="pooled", folder=folder)
    except ValueError:
        return  # a value JSON cannot spell exactly: summed afresh next time


# --------------------------------------------------------------------------- rules


#: bumped whenever the layout of a cached rule set changes; part of every rule key
RULES_FORMAT_VERSION = 2


def rules_key(dirs: Sequence[Path], overrides: Mapping[str, Any], source: str = "") -> str | None:
    """The cache key of a configured rule set; None when a rule file cannot be read.

    A SHA-256 over the code fingerprint (policylint version and package source),
    the cerberus version (it judges the conditions), every rule folder (as named
    and as its real path: the repository's own folders identify it), every rule
    file's name and bytes in loading order, the configuration file (``source``)
    and its per-rule overrides. Any edit to a rule file, a new file in a rule
    folder, or a changed option or severity gives another key.

    Rule files are read exactly as the loader reads them (a regular file within
    the load size limit): a pipe, a device or an oversized file gives None, and
    the loader then reports it as it does without the cache.
    """
    from policylint.errors import PolicylintError
    from policylint.model.load import LoadLimits
    from policylint.safeio import read_bytes

    try:
        import cerberus

        checker = str(getattr(cerberus, "__version__", "?"))
    except ImportError:  # pragma: no cover - cerberus is a dependency
        checker = "none"
    digest = hashlib.sha256(f"rules/{RULES_FORMAT_VERSION}/{_code_fingerprint()}/{checker}".encode())
    digest.update(b"\0source\0" + source.encode("utf-8", "surrogateescape"))
    limit = LoadLimits().max_file_bytes
    for folder in dirs:
        if not folder.is_dir():
            return None  # the loader reports a missing folder; nothing to cache
        real = os.path.realpath(folder)
        digest.update(b"\0dir\0" + str(folder).encode("utf-8", "surrogateescape") + b"\0" + real.encode("utf-8", "surrogateescape"))
        for path in sorted(folder.glob("*.y*ml")):
            try:
                data = read_bytes(path, limit=limit, what="rule file")
            except (PolicylintError, OSError):
                return None  # refused or unreadable: the loader says so, nothing is cached
            digest.update(b"\0file\0" + path.name.encode("utf-8", "surrogateescape") + b"\0" + str(len(data)).encode() + b"\0" + data)
    try:
        text = json.dumps(overrides, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None  # an override JSON cannot spell (a YAML date): load afresh every time
    digest.update(b"\0overrides\0" + text.encode())
    return digest.hexdigest()


def _rules_path(folder: Path, key: str) -> Path:
    return folder / f"rules-v{RULES_FORMAT_VERSION}" / f"{key}.json"


def _encode_ruleset(ruleset: RuleSet) -> dict[str, Any]:
    rules = []
    for rule in ruleset.rules.values():
        rules.append(
            {
                "code": rule.code,
                "name": rule.name,
                "severity": rule.severity.name,
                "section": rule.section,
                "subject": rule.subject,
                "summary": rule.summary,
                "message": rule.message,
                "hint": rule.hint,
                "docs": rule.docs,
                "source": str(rule.source),
                "params": [
                    [p.name, p.type, p.default, p.description, p.minimum, p.maximum] for p in rule.params.values()
                ],
                "at": rule.at,
                "needs": list(rule.needs),
                "when": rule.when,
                "require": rule.require,
                "check": rule.check,
                "builtin": rule.builtin,
                "fix": rule.fix,
            }
        )
    return {"rules": rules, "params": ruleset.params}


def _decode_ruleset(document: Mapping[str, Any]) -> RuleSet:
    from policylint.finding import Severity
    from policylint.engine.rule import Param, Rule
    from policylint.engine.ruleset import RuleSet

    ruleset = RuleSet()
    for raw in document["rules"]:
        params = {p[0]: Param(*p) for p in raw["params"]}
        rule = Rule(
            code=raw["code"],
            name=raw["name"],
            severity=Severity[raw["severity"]],
            section=raw["section"],
            subject=raw["subject"],
            summary=raw["summary"],
            message=raw["message"],
            hint=raw["hint"],
            docs=raw["docs"],
            source=Path(raw["source"]),
            params=params,
            at=raw["at"],
            needs=tuple(raw["needs"]),
            when=raw["when"],
            require=raw["require"],
            check=raw["check"],
            builtin=raw["builtin"],
            fix=raw["fix"],
        )
        ruleset.rules[rule.code] = rule
    options: Any = document["params"]
    if not isinstance(options, dict) or set(options) != set(ruleset.rules):
        raise ValueError("parameters do not match the rules")
    ruleset.params = {code: dict(values) for code, values in options.items()}
    return ruleset


def _conditions(ruleset: RuleSet) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Every (schema, parameters) pair the evaluator compiles for this rule set."""
    return [
        (schema, ruleset.params[code])
        for code, rule in ruleset.rules.items()
        for schema in (rule.when, rule.require)
        if schema and not rule.builtin
    ]


def _trust_conditions(conditions: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
    """Tell cerberus that these conditions were already judged valid.

    cerberus checks every schema against its own meta-schema before use and
    remembers, per process, the hashes of schemas that passed. The hashes are of
    Python objects (not stable across processes), so the cache stores the fact
    "every condition of this rule set compiled" and this marks the conditions
    again here: the validators are then built without the check. Only called for
    an entry whose key (same code, same cerberus, same rule files and overrides)
    proves that this exact set compiled before.
    """
    from cerberus.schema import DefinitionSchema
    from cerberus.utils import mapping_hash

    from policylint.engine.conditions import _substitute, _validator_class

    validator = _validator_class()
    types = mapping_hash(validator.types_mapping)
    for schema, params in conditions:
        expanded = DefinitionSchema.expand(_substitute(schema, params))
        validator._valid_schemas.add((mapping_hash(expanded), types))


def load_rules_cached(
    dirs: Sequence[Path], overrides: Mapping[str, Mapping[str, Any]], source: str, folder: Path | None
) -> RuleSet:
    """:func:`~policylint.engine.ruleset.load_rules` then ``configure_rules``, reused between runs.

    With ``folder`` None (``--no-cache``) this is exactly the two calls. Otherwise a
    rule set stored under :func:`rules_key` is read back instead of parsing,
    schema-checking and compiling the rule files again; a missing, damaged or
    mismatching entry is ignored and rewritten. Rule files that do not load raise
    exactly as without the cache (nothing is stored for them). An entry is only
    written when it reads back equal to what was loaded, so JSON never changes a
    value's type, and when every condition compiled with the configured options.
    """
    from policylint.engine.ruleset import configure_rules, load_rules

    key = rules_key(dirs, overrides, source) if folder is not None else None
    if key is not None and folder is not None:
        cached = _read_rules(folder, key)
        if cached is not None:
            return cached
    ruleset = load_rules(dirs)
    configure_rules(ruleset, overrides, source)
    if key is not None and folder is not None:
        _write_rules(folder, key, ruleset)
    return ruleset


def _read_rules(folder: Path, key: str) -> RuleSet | None:
    try:
        data = _read_limited(_rules_path(folder, key), _MAX_ENTRY_BYTES["rules"])
        body = _unseal_json(folder, "rules", data) if data is not None else None
        if body is None:
            return None
        document = json.loads(body.decode("utf-8"))
        if document.get("format") != RULES_FORMAT_VERSION or document.get("key") != key:
            return None
        ruleset = _decode_ruleset(document["ruleset"])
        if document.get("compiled") is True:
            _trust_conditions(_conditions(ruleset))
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - a damaged entry means "not cached", never an error
        return None
    return ruleset


def _write_rules(folder: Path, key: str, ruleset: RuleSet) -> None:
    from policylint.engine.conditions import compile_schema

    try:
        body = _encode_ruleset(ruleset)
        text = json.dumps(body, sort_keys=True, allow_nan=False)
        back = _decode_ruleset(json.loads(text))
    except (TypeError, ValueError, KeyError):
        return  # a value JSON cannot carry faithfully: load afresh next time
    if back.rules != ruleset.rules or back.params != ruleset.params:
        return
    compiled = True
    for schema, params in _conditions(ruleset):
        try:
            compile_schema(schema, params)
        except (ValueError, KeyError):
            compiled = False  # reported when evaluated; never marked as checked
    document = {"format": RULES_FORMAT_VERSION, "key": key, "compiled": compiled, "ruleset": body}
    sealed = _seal_json(folder, "rules", json.dumps(document, sort_keys=True, allow_nan=False).encode("utf-8"))
    if sealed is not None and len(sealed) <= _MAX_ENTRY_BYTES["rules"]:
        _atomic_write(_rules_path(folder, key), sealed, folder)


# --------------------------------------------------------------------------- documents
#
# A YAML file's parsed documents - plain data, the position index of every key
# and value - kept between runs, so a warm run neither composes nor schema-checks
# a file whose bytes it has seen before. The key is a SHA-256 over the file's
# bytes (read anyway: the loader's size and type checks come first), the load
# limits, the bundled JSON Schemas and the code fingerprint. Hashing the bytes of
# a YAML file costs less than the stat record the trace digests use, so no stat
# short-cut is taken: an entry is never used without its bytes' digest matching.
# Only files that loaded without a finding and whose policylint documents all
# passed schema validation are stored, so every finding of a YAML file is always
# computed afresh and a hit skips validation without hiding anything.

#: entry layout of the document cache; part of every key
DOCUMENT_FORMAT = 4


@functools.lru_cache(maxsize=1)
def _schemas_fingerprint() -> str:
    """A hash of every bundled JSON Schema: a changed schema never reuses a validated document."""
    from policylint.resources import schemas_dir

    digest = hashlib.sha256()
    folder = schemas_dir()
    for path in sorted(folder.rglob("*.json")):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def document_key(raw: bytes, limits: Any) -> str:
    """The cache key of a YAML file's parsed documents: its bytes, the load limits, schemas and code."""
    digest = hashlib.sha256(f"documents/{DOCUMENT_FORMAT}/{_code_fingerprint()}/{_schemas_fingerprint()}".encode())
    digest.update(_limits_text(limits))
    digest.update(b"\0")
    digest.update(raw)
    return digest.hexdigest()


@functools.lru_cache(maxsize=8)
def _limits_text(limits: Any) -> bytes:
    """The load limits as the document key holds them (once per run, not once per file)."""
    return json.dumps(dataclasses.asdict(limits), sort_keys=True).encode()


def _document_path(folder: Path, key: str) -> Path:
    return folder / f"documents-v{DOCUMENT_FORMAT}" / key[:2] / f"{key}.json"


def _plain(value: Any) -> None:
    """Raise :class:`Uncacheable` unless ``value`` survives a JSON round trip unchanged."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return
    if isinstance(value, list):
        for item in value:
            _plain(item)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):  # JSON would turn 1: or true: into strings
                raise Uncacheable(f"mapping key {k!r}")
            _plain(item)
        return
    raise Uncacheable(type(value).__name__)


def _path_list(path: tuple[Any, ...]) -> list[Any]:
    for part in path:
        # a path part is a key (str) or an index (int); anything else cannot be told apart after JSON
        if not isinstance(part, (str, int)) or isinstance(part, bool):
            raise Uncacheable(f"path part {part!r}")
    return list(path)


def store_source(folder: Path, key: str, source: Any) -> None:
    """Keep a loaded, schema-valid file's documents under ``key``; anything unusual is not stored."""
    try:
        documents = []
        for doc in source.documents:
            _plain(doc.data)
            keys, values, spans = doc.positions.entries()
            for path in (*keys, *values, *spans):
                _path_list(path)
            # The index is stored as compressed JSON (base64 text, with its CRC) inside the
            # entry: most of an entry, read as one opaque string and decoded only for the
            # documents a warm run reports on (see PositionIndex.deferred). Tuples (paths,
            # marks, spans) are written as JSON arrays by the encoder itself.
            index = json.dumps(
                {"keys": list(keys.items()), "values": list(values.items()), "spans": list(spans.items())},
                separators=(",", ":"),
                ensure_ascii=False,
            )
            positions = base64.b64encode(zlib.compress(index.encode("utf-8"), 1)).decode("ascii")
            documents.append(
                {"index": doc.index, "data": doc.data, "positions": positions, "crc": zlib.crc32(positions.encode("ascii"))}
            )
        # "validated": stored only for files whose documents all passed the schemas named by
        # the key; the HMAC holds that result with the data, so a hit need not validate again
        payload = {"key": key, "validated": True, "text": source.text, "documents": documents}
        data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (Uncacheable, ValueError, TypeError, RecursionError):
        return
    sealed = _seal_json(folder, "documents", data)
    if sealed is not None and len(sealed) <= _MAX_ENTRY_BYTES["documents"]:
        _atomic_write(_document_path(folder, key), sealed, folder)


def load_source(folder: Path, key: str, path: Path, display: str) -> Any:
    """The cached :class:`~policylint.model.load.SourceFile` of ``key`` (documents known schema-valid), or None.

    The entry is read as a user file is (regular file, size limit) and used only
    when its HMAC matches (see :func:`_unseal_json`): its parsed data and the
    fact that it passed validation are then exactly what this user's policylint
    stored for these bytes, these limits, these schemas and this code.
    """
    from policylint.model.load import Document, PositionIndex, SourceFile

    try:
        # joined as text: a warm run opens a thousand of these, and a Path costs more than the read
        entry = os.path.join(folder, f"documents-v{DOCUMENT_FORMAT}", key[:2], f"{key}.json")
        raw = _read_limited(entry, _MAX_ENTRY_BYTES["documents"])
        body = _unseal_json(folder, "documents", raw) if raw is not None else None
        if body is None:
            return None
        payload = json.loads(body.decode("utf-8"))
        if payload["key"] != key or payload["validated"] is not True or not isinstance(payload["text"], str):
            return None
        source = SourceFile(path=path, display=display, text=payload["text"])
        for stored in payload["documents"]:
            text = stored["positions"]
            # a damaged index is a miss now, not a wrong position later
            if not isinstance(text, str) or zlib.crc32(text.encode("ascii")) != stored["crc"]:
                return None
            positions = PositionIndex.deferred(functools.partial(_fill_positions, text))
            index = stored["index"]
            if type(index) is not int:
                return None
            source.documents.append(Document(source=source, index=index, data=stored["data"], positions=positions))
    except Exception:  # noqa: BLE001 - a missing, damaged or foreign entry is a miss, never a failure
        return None
    source.validated = True
    return source


#: how many times its compressed size a stored position index may expand to
_MAX_EXPANSION = 200


def _fill_positions(text: str, index: Any) -> None:
    """Decode a stored position index (see :func:`store_source`) into ``index``."""
    from policylint.model.load import Span

    try:
        packed = base64.b64decode(text, validate=True)
        # A stored index expands a few times over; a stream that would expand far more is not
        # one policylint wrote (a crafted entry with a matching CRC), and is not expanded.
        unpack = zlib.decompressobj()
        raw = unpack.decompress(packed, _MAX_EXPANSION * len(packed) + 65_536)
        if unpack.unconsumed_tail or not unpack.eof:
            return
        stored = json.loads(raw.decode("utf-8"))
        # paths were lists of str/int; the index looks them up as tuples
        keys = {tuple(p): (int(v[0]), int(v[1])) for p, v in stored["keys"]}
        values = {tuple(p): (int(v[0]), int(v[1])) for p, v in stored["values"]}
        spans = {tuple(p): Span(*s) for p, s in stored["spans"]}
    except Exception:  # noqa: BLE001 - unreachable with a matching CRC; positions fall back to the top
        return
    index._keys, index._values, index._spans = keys, values, spans


def _atomic_write(path: Path, data: bytes, folder: Path | None = None) -> None:
    """Write an entry through :func:`policylint.writer.write_file`; a disk or folder that refuses is skipped.

    The entry must lie in the cache folder ``folder`` (by default the folder of its
    kind, two levels up); a link planted at its name is replaced, never followed,
    and a pipe, device or folder there is left alone (the entry stays a miss).
    """
    from policylint.errors import PolicylintError
    from policylint.writer import write_file

    root = folder if folder is not None else _entry_folder(path)
    try:
        # not fsynced: an entry lost or torn by a crash fails its HMAC and is a miss
        write_file(path, data, root=root, links="replace", parents=True, mode=0o600, what="cache entry", durable=False)
    except (PolicylintError, OSError, ValueError):
        pass
