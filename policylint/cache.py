"""The measurement cache: a workload's facts kept between runs, outside the repository.

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

An entry is one file: a small header, a JSON document that describes the
dataclasses, then the arrays as raw bytes (one blob per dtype; a regular time
axis is stored as its start and step, a validity mask one bit per sample), with a
CRC-32 over everything after the header. Nothing is pickled - a cache file is untrusted
input - and only dataclasses of this package whose fields match the code that
reads them are rebuilt. Entries are written to a temporary file and moved into
place with :func:`os.replace`, so concurrent runs and crashes never leave half an
entry; an entry that cannot be read, or whose recorded key does not match, is
ignored and rewritten. The cache never makes a run fail.

A workload's GPU demand series, which only its pool's sum reads, is a second entry
next to its facts, and each pool's sum and bands have their own entry keyed by the
pool's spec and its members' keys (:func:`pool_key`): a warm run whose pools are
cached reads no series at all.

Only measurements that succeeded without findings are stored, so findings at
file positions (which depend on the YAML, not on the trace) are always computed
afresh and come out identical with and without the cache.

Rule sets are cached too (:func:`load_rules_cached`): the rules as loaded and
configured, as a JSON document keyed by the rule files' bytes, the per-rule
overrides of the configuration and the code fingerprint, plus the fact that every
condition compiled, so a run neither re-parses nor re-checks the rule files.

The folder is ``POLICYLINT_CACHE_DIR`` when set, else the user cache folder
(``platformdirs``); ``check --no-cache`` turns the cache off.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import hashlib
import importlib
import json
import math
import os
import tempfile
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from policylint.measure import WorkloadFacts
    from policylint.ruleset import RuleSet
    from policylint.model import Workload
    from policylint.readers.limits import TraceLimits

#: bumped whenever the entry layout changes; part of every key
FORMAT_VERSION = 3
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


# --------------------------------------------------------------------------- keys


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """Version plus a hash of the package source: edited code never reads old facts."""
    from policylint import __version__

    digest = hashlib.sha256(f"{__version__}/{FORMAT_VERSION}".encode())
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: a file changed less than this long before it was hashed is hashed again next time
_RACY_SECONDS = 2.0


def _stat_id(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class _Unhashed(Exception):
    """A file's digest is not recorded, and the caller asked not to hash it here."""


def _known_digest(path: Path, folder: Path | None, *, hash_files: bool = True) -> str:
    """The SHA-256 of a file's bytes, reusing the one recorded for an unchanged file.

    A record maps a file (by real path) to its identity - device, inode, size,
    modification and status-change times in nanoseconds - and the digest of its
    bytes. Any write moves the status-change time (ctime) to the clock's current
    time, and no ordinary program can set it back, so a file whose identity is
    unchanged has unchanged bytes - except for a write in the same timestamp tick
    as the hashing. To exclude that, a digest is only recorded for a file whose
    times are at least two seconds older than the moment it was hashed, and only
    when the file's identity is the same before and after hashing. Everything
    else is hashed again. A damaged record is ignored. The digest still goes into
    the entry's key, so an entry is only ever used for the bytes it was built from.

    Without ``hash_files`` a file with no usable record raises :class:`_Unhashed`
    instead of being read (the caller hashes it elsewhere, in a worker).
    """
    if folder is None:
        if not hash_files:
            raise _Unhashed(str(path))
        return _file_digest(path)
    import time

    real = os.path.realpath(path)
    name = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()
    record = folder / f"stat-v{FORMAT_VERSION}" / name[:2] / f"{name}.json"
    before = os.stat(real)
    ident = _stat_id(before)
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
        if known["path"] == real and known["stat"] == ident and isinstance(known["sha256"], str):
            return str(known["sha256"])
    except Exception:  # noqa: BLE001 - no record, or a damaged one: hash the file
        pass
    if not hash_files:
        raise _Unhashed(real)
    hashed_at = time.time_ns()
    digest = _file_digest(Path(real))
    after = _stat_id(os.stat(real))
    settled = max(before.st_mtime_ns, before.st_ctime_ns) < hashed_at - int(_RACY_SECONDS * 1e9)
    if after == ident and settled:
        document = {"path": real, "stat": ident, "sha256": digest}
        _atomic_write(record, json.dumps(document, separators=(",", ":")).encode("utf-8"))
    return digest


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
            content = _known_digest(ref.path, folder, hash_files=hash_files)
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
        if arr.dtype.hasobject:
            raise Uncacheable("object array")
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
            cls = type(value)
            fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
            return {"$class": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
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
        return {"$columns": f"{cls.__module__}:{cls.__qualname__}", "n": len(items), "fields": columns}


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


def _resolve_class(name: str, stored: set[str]) -> Any:
    """A dataclass of this package named by an entry, only if its fields are exactly ``stored``."""
    return _resolve_class_cached(name, frozenset(stored))


@functools.lru_cache(maxsize=256)
def _resolve_class_cached(name: str, stored: frozenset[str]) -> Any:
    # an entry names the same dozen classes thousands of times: look each up once
    module, _, qualname = name.partition(":")
    if not module.startswith("policylint.") or "." in qualname or not qualname.isidentifier():
        raise ValueError(f"unexpected class {name}")
    cls = getattr(importlib.import_module(module), qualname)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise ValueError(f"not a dataclass: {name}")
    if {f.name for f in dataclasses.fields(cls) if f.init} != stored:
        raise ValueError(f"fields of {name} changed")
    return cls


def _slice(arrays: dict[str, Any], ref: list[Any]) -> Any:
    """The array a reference [member, offset, shape] (or a compact form) points at."""
    if ref and ref[0] == "=range":
        n = int(ref[3])
        if n < 0 or n > 1 << 40:
            raise ValueError("bad range")
        return _range_of(float(ref[1]), float(ref[2]), n)
    if ref and ref[0] == "=bits":
        import numpy as np

        n = int(ref[2])
        packed = _slice(arrays, ref[1])
        if packed.dtype != np.uint8 or packed.ndim != 1 or packed.size != (n + 7) // 8:
            raise ValueError("bad bit mask")
        return np.unpackbits(packed, count=n).astype(np.bool_)
    blob, offset, shape = arrays[ref[0]], int(ref[1]), tuple(int(n) for n in ref[2])
    size = 1
    for n in shape:
        size *= n
    if offset < 0 or offset + size > blob.size:
        raise ValueError("reference outside its blob")
    return blob[offset : offset + size].reshape(shape)


def _decode(value: Any, arrays: dict[str, Any]) -> Any:
    if not isinstance(value, dict):
        if isinstance(value, list):
            raise ValueError("bare list")
        return value
    if "$scalar" in value:
        return _slice(arrays, value["$scalar"])[()]
    if "$array" in value:
        return _slice(arrays, value["$array"])
    if "$datetime" in value:
        return dt.datetime.fromisoformat(value["$datetime"])
    if "$tuple" in value:
        return tuple(_decode(v, arrays) for v in value["$tuple"])
    if "$list" in value:
        return [_decode(v, arrays) for v in value["$list"]]
    if "$dict" in value:
        return {k: _decode(v, arrays) for k, v in value["$dict"].items()}
    if "$class" in value:
        fields = value["fields"]
        cls = _resolve_class(value["$class"], set(fields))
        return cls(**{k: _decode(v, arrays) for k, v in fields.items()})
    if "$columns" in value:
        fields = value["fields"]
        cls = _resolve_class(value["$columns"], set(fields))
        # positional, in the dataclass's own field order: thousands of spikes per trace
        columns = [_slice(arrays, fields[f.name]).tolist() for f in dataclasses.fields(cls) if f.init]
        if any(len(col) != value["n"] for col in columns):
            raise ValueError("column lengths differ")
        return tuple(map(cls, *columns))
    raise ValueError("unknown tag")


# --------------------------------------------------------------------------- entries


#: first bytes of every entry file, with the layout version
_MAGIC = b"PLCACHE2"
#: magic, then three little-endian uint64: JSON length, blob-table offset, CRC-32 of the rest
_HEADER = 32
_ALIGN = 64


def _write_entry(path: Path, document: dict[str, Any], blobs: dict[str, Any]) -> None:
    """One file: header, JSON document, then the arrays raw and aligned (written atomically).

    The document gains a ``blobs`` table (dtype, byte offset, length per blob). A
    CRC-32 over everything after the header catches a damaged or truncated file:
    reading it back is one ``read`` and no archive parsing.
    """
    import zlib

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
    header = _MAGIC + len(text).to_bytes(8, "little") + (_HEADER + len(text)).to_bytes(8, "little")
    header += zlib.crc32(body).to_bytes(8, "little")
    _atomic_write(path, header + body)


def _read_entry(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The document and the named arrays of one entry file; ValueError when damaged."""
    import zlib

    import numpy as np

    with path.open("rb") as fh:
        data = bytearray(fh.read())  # writable, so the arrays are too (as np.load gave)
    if len(data) < _HEADER or bytes(data[:8]) != _MAGIC:
        raise ValueError("not an entry")
    size = int.from_bytes(data[8:16], "little")
    start = int.from_bytes(data[16:24], "little")
    if start != _HEADER + size or start > len(data):
        raise ValueError("bad header")
    if zlib.crc32(memoryview(data)[_HEADER:]) != int.from_bytes(data[24:32], "little"):
        raise ValueError("checksum mismatch")
    document = json.loads(bytes(data[_HEADER:start]).decode("utf-8"))
    if not isinstance(document, dict):
        raise ValueError("bad document")
    arrays: dict[str, Any] = {}
    for name, (dtype, offset, count) in document.get("blobs", {}).items():
        kind = np.dtype(dtype)
        if kind.hasobject or int(offset) < 0 or start + int(offset) + int(count) * kind.itemsize > len(data):
            raise ValueError("blob outside the entry")
        arrays[name] = np.frombuffer(data, dtype=kind, count=int(count), offset=start + int(offset))
    return document, arrays


def _series_path(folder: Path, key: str) -> Path:
    return folder / f"series-v{FORMAT_VERSION}" / key[:2] / f"{key}.series"


def _load_value(path: Path, key: str, field: str) -> Any:
    """The decoded ``field`` of the entry at ``path`` recorded under ``key``; ValueError/OSError when not."""
    meta, arrays = _read_entry(path)
    if meta.get("format") != FORMAT_VERSION or meta.get("key") != key:
        raise ValueError("not this entry")
    return _decode(meta[field], arrays)


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
        meta, arrays = _read_entry(_entry_path(folder, key))
        if meta.get("format") != FORMAT_VERSION or meta.get("key") != key:
            return None
        facts = _decode(meta["facts"], arrays)
        if not isinstance(facts, WorkloadFacts) or not isinstance(meta.get("series"), bool):
            return None
        if demand and meta["series"]:
            series = _load_value(_series_path(folder, key), key, "demand")
            if not isinstance(series, GpuDemand):
                return None
            facts.demand = series
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001 - any damage to an entry means "not cached", never an error
        return None
    return facts


def store(folder: Path, key: str, facts: WorkloadFacts) -> None:
    """Write ``facts`` under ``key`` atomically (the GPU demand series as its own entry, written first).

    A value or folder that cannot be stored is skipped.
    """
    encoder = _Encoder()
    try:
        small = dataclasses.replace(facts, demand=None)
        document = {"format": FORMAT_VERSION, "key": key, "facts": encoder.encode(small)}
        document["series"] = facts.demand is not None
        if facts.demand is not None:
            series = _Encoder()
            series_document = {"format": FORMAT_VERSION, "key": key, "demand": series.encode(facts.demand)}
    except Uncacheable:
        return
    if facts.demand is not None:
        # The series first: a run that finds the facts finds their series too (or a miss).
        _write_entry(_series_path(folder, key), series_document, series.blobs())
    _write_entry(_entry_path(folder, key), document, encoder.blobs())


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
        pooled = _load_value(_pool_path(folder, key), key, "pool")
    except Exception:  # noqa: BLE001 - a missing or damaged entry is a miss, never an error
        return None
    return pooled if isinstance(pooled, PoolFacts) else None


def store_pool(folder: Path, key: str, pooled: Any) -> None:
    """Keep one pool's pooled demand under ``key``; a value that cannot be stored is skipped."""
    encoder = _Encoder()
    try:
        document = {"format": FORMAT_VERSION, "key": key, "pool": encoder.encode(pooled)}
    except Uncacheable:
        return
    _write_entry(_pool_path(folder, key), document, encoder.blobs())


# --------------------------------------------------------------------------- rules


#: bumped whenever the layout of a cached rule set changes; part of every rule key
RULES_FORMAT_VERSION = 1


def rules_key(dirs: Sequence[Path], overrides: Mapping[str, Any]) -> str | None:
    """The cache key of a configured rule set; None when a rule file cannot be read.

    A SHA-256 over the code fingerprint (policylint version and package source),
    the cerberus version (it judges the conditions), every rule file's name and
    bytes in loading order, and the configuration's per-rule overrides. Any edit
    to a rule file, a new file in a rule folder, or a changed option or severity
    gives another key.
    """
    try:
        import cerberus

        checker = str(getattr(cerberus, "__version__", "?"))
    except ImportError:  # pragma: no cover - cerberus is a dependency
        checker = "none"
    digest = hashlib.sha256(f"rules/{RULES_FORMAT_VERSION}/{_code_fingerprint()}/{checker}".encode())
    for folder in dirs:
        digest.update(b"\0dir\0" + str(folder).encode())
        if not folder.is_dir():
            return None  # the loader reports a missing folder; nothing to cache
        for path in sorted(folder.glob("*.y*ml")):
            try:
                data = path.read_bytes()
            except OSError:
                return None
            digest.update(b"\0file\0" + path.name.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
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
            }
        )
    return {"rules": rules, "params": ruleset.params}


def _decode_ruleset(document: Mapping[str, Any]) -> RuleSet:
    from policylint.finding import Severity
    from policylint.rule import Param, Rule
    from policylint.ruleset import RuleSet

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

    from policylint.evaluate import _substitute, _validator_class

    validator = _validator_class()
    types = mapping_hash(validator.types_mapping)
    for schema, params in conditions:
        expanded = DefinitionSchema.expand(_substitute(schema, params))
        validator._valid_schemas.add((mapping_hash(expanded), types))


def load_rules_cached(
    dirs: Sequence[Path], overrides: Mapping[str, Mapping[str, Any]], source: str, folder: Path | None
) -> RuleSet:
    """:func:`~policylint.ruleset.load_rules` then ``configure_rules``, reused between runs.

    With ``folder`` None (``--no-cache``) this is exactly the two calls. Otherwise a
    rule set stored under :func:`rules_key` is read back instead of parsing,
    schema-checking and compiling the rule files again; a missing, damaged or
    mismatching entry is ignored and rewritten. Rule files that do not load raise
    exactly as without the cache (nothing is stored for them). An entry is only
    written when it reads back equal to what was loaded, so JSON never changes a
    value's type, and when every condition compiled with the configured options.
    """
    from policylint.ruleset import configure_rules, load_rules

    key = rules_key(dirs, overrides) if folder is not None else None
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
        document = json.loads(_rules_path(folder, key).read_text(encoding="utf-8"))
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
    from policylint.evaluate import compile_schema

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
    _atomic_write(_rules_path(folder, key), json.dumps(document, sort_keys=True, allow_nan=False).encode("utf-8"))


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
DOCUMENT_FORMAT = 3


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
        payload = {"key": key, "text": source.text, "documents": documents}
        data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (Uncacheable, ValueError, TypeError, RecursionError):
        return
    _atomic_write(_document_path(folder, key), data)


def load_source(folder: Path, key: str, path: Path, display: str) -> Any:
    """The cached :class:`~policylint.load.SourceFile` of ``key`` (documents known schema-valid), or None."""
    from policylint.load import Document, PositionIndex, SourceFile

    try:
        # joined as text: a warm run opens a thousand of these, and a Path costs more than the read
        entry = os.path.join(folder, f"documents-v{DOCUMENT_FORMAT}", key[:2], f"{key}.json")
        with open(entry, "rb") as fh:
            payload = json.loads(fh.read().decode("utf-8"))
        if payload["key"] != key or not isinstance(payload["text"], str):
            return None
        source = SourceFile(path=path, display=display, text=payload["text"])
        for stored in payload["documents"]:
            text = stored["positions"]
            # a damaged index is a miss now, not a wrong position later
            if not isinstance(text, str) or zlib.crc32(text.encode("ascii")) != stored["crc"]:
                return None
            positions = PositionIndex.deferred(functools.partial(_fill_positions, text))
            index = stored["index"]
            if not isinstance(index, int):
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
    from policylint.load import Span

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


#: folders this process has made (or found) for cache entries
_MADE: set[str] = set()


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file; a disk that refuses is skipped."""
    tmp: str | None = None
    try:
        folder = str(path.parent)
        if folder not in _MADE:  # one mkdir per folder and process, not one per entry written
            os.makedirs(folder, exist_ok=True)
            _MADE.add(folder)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        except FileNotFoundError:  # removed since (a cache cleared while a long-lived process runs)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
