"""The repository index's storage: what one record holds, how files are identified, and the sealed entry.

:mod:`policylint.engine.repo_index` decides when a narrowed run may use a record
and builds views from it; this module only keeps records: the stat identity of a
workload's files (device, inode, size, mtime, ctime - not the path's spelling),
a hash of its pool's declaration, and one sealed, size-limited cache entry per
repository (:mod:`policylint.cache.store`), checked field by field when read.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
import os
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policylint.cache.exact import is_plain
from policylint.cache.decoded import python_tag, read_sealed_values
from policylint.cache.store import (
    FORMAT_VERSION, code_fingerprint, settings_digest, stat_identity, frame, write_sealed_frames,
)
from policylint.engine.lite_sheet import LITE
from policylint.safeio import stat_once

if TYPE_CHECKING:
    from policylint.engine.sheets import WorkloadFactSheet
    from policylint.model import Pool, Workload
    from policylint.readers.limits import TraceLimits

INDEX_FORMAT = 7  # 7: samples_fingerprint; 6: lite values as values, packed sketches; 5: marshal frames; 4: part_fingerprints; 3: the lite text
KIND = "repoindex"
#: largest index read back or written (a record is a few kB: 10,000 workloads take about 30 MB)
MAX_BYTES = 256 << 20
#: a file whose modification or status-change time is this close to the moment a record is made
#: is not recorded (it may change again in the same timestamp tick)
CLOCK_KEYS = ("first_time", "last_time", "step_seconds", "vram_last_time", "jobs_last_time")

def same_value(a: Any, b: Any) -> bool:
    """Equal values of the same types all the way down (dict key order and NaN included).

    Two plain containers (:func:`policylint.cache.exact.is_plain`) are compared in C: equal
    ``marshal`` bytes (format 2, which shares nothing between equal parts: every value is
    written out by its type and bits) are the same value; otherwise their exact texts
    decide (NaNs of other bits are one NaN here); anything else value by value.
    """
    t = type(a)
    if t is not type(b):
        return False
    if t is dict or t is list or t is tuple:
        try:
            if is_plain(a):
                # marshal writes only exact types (a subclass is refused) and gives each kind of value a
                # code of its own, so bytes equal to a plain value's are only ever a plain value's:
                # ``b`` need not be walked for that
                try:
                    if marshal.dumps(b, 2) == marshal.dumps(a, 2):
                        return True
                except ValueError:
                    pass  # ``b`` holds something marshal refuses: not plain
                if is_plain(b):
                    return repr(a) == repr(b)
        except (RecursionError, ValueError):  # a container holding itself, an int too long for its text
            pass
    return same_by_value(a, b, same_value)


def same_by_value(a: Any, b: Any, inner: Callable[[Any, Any], bool] | None = None) -> bool:
    """:func:`same_value` value by value, the parts compared by ``inner`` (default: this function all the way down)."""
    if type(a) is not type(b):
        return False
    inner = inner or same_by_value
    if isinstance(a, float):
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, dict):
        return list(a) == list(b) and all(inner(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(inner(x, y) for x, y in zip(a, b))
    return bool(a == b)


def json_text(value: Any) -> str | None:
    """``value`` as JSON text when reading it back gives exactly ``value``; else None."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return text if same_value(json.loads(text), value) else None


def json_exact_places(paths: Any) -> bool:
    """Whether fact places read back from JSON exactly: text keys, each place a list of texts and ints.

    What :func:`json_text` would confirm for such a value, without writing and reading it:
    JSON keeps every ``str`` (lone surrogates escaped) and every ``int`` exactly. Anything
    else (a float, a bool, a tuple) answers False and the workload is not recorded.
    """
    if type(paths) is not dict:
        return False
    for name, place in paths.items():
        if type(name) is not str or type(place) is not list or not set(map(type, place)) <= _PLACE_PARTS:
            return False
    return True


_PLACE_PARTS = frozenset((str, int))


def fact_values(sheet: Any) -> list[Any]:
    """The values of ``sheet``'s facts in its order (``list(dict(sheet).values())``, by its getters when it has them)."""
    from policylint.facts import Facts

    if isinstance(sheet, Facts) and type(sheet).get is Facts.get and type(sheet).__getitem__ is Facts.__getitem__:
        return [getter(sheet) for getter in sheet._fact_getters.values()]
    return [sheet[name] for name in sheet]


#: per list of fact names: the maker of a workload sheet from values in its order (None: not the
#: sheet's facts in order) and each name's place. By value: a record made this run holds a list of
#: its own, equal to the others (the index's records share one, found by identity in the hash table).
_SHAPES: dict[tuple[str, ...], tuple[Callable[[list[Any]], WorkloadFactSheet] | None, dict[str, int]]] = {}
#: bound of the table (a run sees one list of names, or a few after an upgrade)
_MAX_SHAPES = 1024


def shape_of(shape: tuple[str, ...]) -> tuple[Callable[[list[Any]], WorkloadFactSheet] | None, dict[str, int]]:
    """(the maker of a workload sheet from values in ``shape``'s order or None, each name's place), made once per list."""
    found = _SHAPES.get(shape)
    if found is None:
        from policylint.engine.sheets import WorkloadFactSheet
        from policylint.facts import builder

        if len(_SHAPES) >= _MAX_SHAPES:
            _SHAPES.clear()
        found = _SHAPES[shape] = (builder(WorkloadFactSheet, shape), {name: i for i, name in enumerate(shape)})
    return found


# --------------------------------------------------------------------------- identities


def file_ident(path: str, *, fresh: bool = False) -> list[int] | None:
    """The stat identity of ``path``: as the run first saw it (:func:`policylint.safeio.stat_once`), or
    ``fresh`` from the system (what a record is written under: a file changed during the run is refused)."""
    try:
        st = os.stat(path) if fresh else stat_once(path)
    except (OSError, ValueError):
        return None
    return stat_identity(st)


def no_record(path: str, *, fresh: bool = False) -> bool:
    try:
        os.stat(path) if fresh else stat_once(path)
    except FileNotFoundError:
        return True
    except (OSError, ValueError):
        return False
    return False


def pool_hash(pool: Pool | None) -> str:
    """What a workload's view and key read of its pool, hashed (its name and declaration)."""
    if pool is None:
        return ""
    return settings_digest([pool.qualified, pool.spec])


def recorded_files(rec: Record, w: Workload) -> list[tuple[str, str]] | None:
    """:func:`files_of` for ``w``, taking the provenance paths from ``rec`` when it names the same measured files.

    A provenance record's path is a function of its measured file's path alone.
    """
    measured = []
    for role in sorted(w.measurements):
        path = w.measurements[role].path
        if path is None:
            return None
        measured.append(os.fspath(path))
    files = rec.files
    if files is not None and len(files) == len(measured) and all(f[0] == m for f, m in zip(files, measured)):
        return [(m, f[1]) for f, m in zip(files, measured)]
    return files_of(w)


def files_of(w: Workload) -> list[tuple[str, str]] | None:
    """(measured file, its provenance record's path) per measurement; None when one has no file."""
    from policylint.measure.sources.provenance import sidecar

    out = []
    for role in sorted(w.measurements):
        ref = w.measurements[role]
        if ref.path is None:
            return None
        out.append((os.fspath(ref.path), os.fspath(sidecar(ref.path))))
    return out


# --------------------------------------------------------------------------- the entry


def _locator(root: Path, header: Mapping[str, Any]) -> str:
    real = os.path.realpath(root)
    text = json.dumps([real, header], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _entry_path(folder: Path, loc: str) -> Path:
    return folder / f"repoindex-v{FORMAT_VERSION}" / loc[:2] / f"{loc}.bin"


def _header(root: Path, limits: TraceLimits | None, gpu_resources: Sequence[str]) -> dict[str, Any]:
    import dataclasses

    return {
        "format": INDEX_FORMAT,
        "cache": FORMAT_VERSION,
        "code": code_fingerprint(),
        "root": os.path.realpath(root),
        "limits": dataclasses.asdict(limits) if limits is not None else None,
        "gpu": list(gpu_resources),
        "lite": list(LITE),
        "python": python_tag(),
    }


@dataclass
class Record:
    """One workload's row of the index (see the module's description)."""

    ident: list[int]  # its document file's stat identity: device and inode say which file it is
    pool: str  # pool_hash of its pool
    key: str  # its measurement key
    measured: list[list[Any]]  # [stat identity] per measured file, in the order of its measurement roles
    shape: tuple[str, ...]  # its view's fact names, in order
    #: JSON of [its view's fact values in ``shape``'s order (clock facts left as None), None]
    text: str
    paths: dict[str, list[Any]]  # its view's fact places
    report: bool  # a band report exists
    daily: float | None  # the report's daily band
    usable_max: float | None
    last_sample: str | None  # ISO text of the last sample (the age of the measurement)
    integrity: bool  # integrity facts were stored (the time facts are computed then)
    clock: dict[str, Any]  # the integrity facts the time facts are computed from
    #: (measured file, its provenance record's path) per measurement as :func:`files_of` gave them when recorded
    files: list[list[str]] | None = None
    #: ``paths`` with tuples for places, shared by the records of one index that have the same (copied per view)
    tpaths: dict[str, tuple[Any, ...]] | None = None
    #: [the values of :data:`policylint.engine.lite_sheet.LITE` in its view, as JSON gives them back, its run
    #: sketch as :func:`packed_run_sketch` keeps it]: held as values in the marshal frames, no text to parse per row
    lite: list[Any] = field(default_factory=list)

    def lite_values(self, packed: bool = False) -> tuple[list[Any], Any] | None:
        """(the stored values of the stand-in's facts, the run sketch), or None when the lite row is not such.

        With ``packed``, a sketch kept as bytes (:func:`packed_run_sketch`) comes back as those bytes,
        which :mod:`policylint.measure.integrity.copies` reads as it reads the list: a one-file run
        holds the sketches of thousands of neighbours, a kilobyte each instead of four as lists.
        The facts come back as a fresh list: a stand-in's steps may set facts, never the row's.
        """
        values = self.lite
        if type(values) is not list or len(values) != 2 or type(values[0]) is not list:
            return None
        facts, sketch = values
        if len(facts) != len(LITE):
            return None
        if type(sketch) is bytes:
            if not sketch or len(sketch) % 8:
                return None
            if not packed:
                sketch = list(struct.unpack(f"<{len(sketch) // 8}q", sketch))
        elif sketch is not None and (type(sketch) is not list or not set(map(type, sketch)) <= {int}):
            return None
        elif sketch is not None:
            sketch = list(sketch)
        return list(facts), sketch

    def values(self) -> tuple[list[Any], list[int] | None] | None:
        """(a fresh list of the stored fact values in ``shape``'s order, the run sketch), or None when the text does not fit the shape.

        The run sketch is kept in the lite text (:meth:`lite_values`), which a stand-in reads alone.
        """
        values = json.loads(self.text)
        if not isinstance(values, list) or len(values) != 2 or not isinstance(values[0], list) or values[1] is not None:
            return None
        facts = values[0]
        if len(facts) != len(self.shape):
            return None
        lite = self.lite_values()
        if lite is None:
            return None
        return facts, lite[1]

    def decode(self) -> tuple[dict[str, Any], list[int] | None] | None:
        """(a fresh dict of the stored facts, the run sketch), or None when the text does not fit the shape."""
        found = self.values()
        return None if found is None else (dict(zip(self.shape, found[0])), found[1])


def lite_form(values: list[Any], sketch: list[int] | None) -> list[Any] | None:
    """A record's lite row: ``values`` as JSON gives them back (None when it would not give them exactly), and the
    run sketch as :func:`packed_run_sketch` keeps it."""
    text = json_text(values)
    if text is None:
        return None
    return [json.loads(text), packed_run_sketch(sketch)]


def packed_run_sketch(sketch: list[int] | None) -> bytes | list[int] | None:
    """A run sketch as a record keeps it: its numbers as 8-byte little-endian signed integers (read by
    :mod:`policylint.measure.integrity.copies` as it reads the list, a kilobyte instead of four), or the sketch
    itself when it is empty or holds a number that has no such form."""
    if not sketch:
        return sketch
    try:
        return struct.pack(f"<{len(sketch)}q", *sketch)
    except (struct.error, TypeError):
        return sketch


def _record_from(
    row: Any, shapes: list[tuple[str, ...]], places: list[dict[str, list[Any]]], tplaces: list[dict[str, tuple[Any, ...]]]
) -> Record | None:
    """A record from its stored row, every field checked; None when anything is off."""
    if not isinstance(row, list) or len(row) != 14:
        return None
    ident, pool, key, measured, shape, text, paths, report, daily, usable, last, rest, files, lite = row
    if not (isinstance(files, list) and len(files) == len(measured)
            and all(isinstance(f, list) and len(f) == 2 and all(type(x) is str for x in f) for f in files)):
        return None
    if not (isinstance(pool, str) and isinstance(key, str) and isinstance(text, str) and type(lite) is list):
        return None
    if not _ints(ident, 5) or not isinstance(measured, list) or not all(_ints(m, 5) for m in measured):
        return None
    if type(shape) is not int or not 0 <= shape < len(shapes) or type(paths) is not int or not 0 <= paths < len(places):
        return None
    if type(report) is not bool or not (isinstance(rest, list) and len(rest) == 2):
        return None
    integrity, clock = rest
    if type(integrity) is not bool or not isinstance(clock, dict):
        return None
    if not (daily is None or type(daily) is float) or not (usable is None or type(usable) is float):
        return None
    if not (last is None or isinstance(last, str)):
        return None
    if any(k not in CLOCK_KEYS or not (v is None or type(v) in (int, float)) for k, v in clock.items()):
        return None
    return Record(ident, pool, key, measured, shapes[shape], text, places[paths], report, daily, usable, last,
                  integrity, clock, files, tplaces[paths], lite)


def _ints(value: Any, n: int) -> bool:
    return isinstance(value, list) and len(value) == n and all(type(x) is int for x in value)


@dataclass
class Index:
    """The repository's index for one run: read once, written back when it gained records.

    Stored as one sealed JSON object: the header (code, trace limits, GPU
    resources, repository), a table of fact-name lists and one of fact-place
    maps (the same for nearly every workload), and per workload one row of
    identities, file paths and figures whose view values are one JSON text (parsed
    only when the workload's view is rebuilt; its run sketch as :func:`packed_run_sketch`).
    """

    folder: Path
    path: Path
    header: dict[str, Any]
    limits: TraceLimits | None = None
    records: dict[str, Record] = field(default_factory=dict)
    #: rows as stored, decoded into records when first asked for
    rows: dict[str, Any] = field(default_factory=dict)
    shapes: list[tuple[str, ...]] = field(default_factory=list)
    places: list[dict[str, list[Any]]] = field(default_factory=list)
    tplaces: list[dict[str, tuple[Any, ...]]] = field(default_factory=list)
    dirty: bool = False

    def get(self, name: str) -> Record | None:
        if name in self.records:
            return self.records[name]
        row = self.rows.pop(name, None)
        if row is None:
            return None
        rec = _record_from(row, self.shapes, self.places, self.tplaces)
        if rec is not None:
            self.records[name] = rec
        return rec

    def put(self, name: str, rec: Record) -> None:
        self.rows.pop(name, None)
        self.records[name] = rec
        self.dirty = True

    def write(self) -> None:
        if not self.dirty:
            return
        shapes: dict[tuple[str, ...], int] = {}
        places: dict[str, int] = {}
        place_list: list[Any] = []
        rows: dict[str, Any] = {}
        #: the place table's entry per places dict: the records read from one index share a few of them,
        #: told apart by their JSON text once each, not once per record (0.2 s at 10,000 workloads)
        known: dict[int, int] = {}
        for name in sorted({*self.rows, *self.records}):
            rec = self.get(name)
            if rec is None:
                continue
            shape = shapes.setdefault(rec.shape, len(shapes))
            at = known.get(id(rec.paths))
            if at is None:
                text = json.dumps(rec.paths, separators=(",", ":"))
                if text not in places:
                    places[text] = len(place_list)
                    place_list.append(rec.paths)
                at = known[id(rec.paths)] = places[text]
            if rec.files is None:
                continue  # recorded without its files' paths: measured again
            rows[name] = [rec.ident, rec.pool, rec.key, rec.measured, shape, rec.text, at, rec.report,
                          rec.daily, rec.usable_max, rec.last_sample, [rec.integrity, rec.clock], rec.files, rec.lite]
        head = {"header": self.header, "shapes": [list(s) for s in shapes], "places": place_list}
        try:
            write_sealed_frames(self.path, self.folder, KIND, _index_frames(head, rows), MAX_BYTES)
        except ValueError:
            pass  # a value marshal cannot hold: not written, the index stays as it was
        self.dirty = False


#: rows encoded per frame of the index
_ROWS_PER_PART = 256


def _index_frames(head: dict[str, Any], rows: dict[str, Any]) -> Iterator[bytes]:
    """The index as frames (:func:`policylint.cache.store.frame`): ``head``, then the rows, ``_ROWS_PER_PART``
    ``[name, row]`` pairs a frame, each frame ``marshal.dumps`` of its value.

    At 10,000 workloads the index is about 40 MB; made whole, it was held several times over
    at the peak of a one-file run that edited a workload. Raises ``ValueError`` (nothing is
    written) for a value ``marshal`` cannot hold, or one it would not give back as written
    (a tuple where the rows hold lists: :func:`_record_from` reads lists).
    """
    def dump(value: Any) -> bytes:
        return frame(marshal.dumps(value))

    yield dump(head)
    part: list[list[Any]] = []
    for name, row in rows.items():
        part.append([name, row])
        if len(part) >= _ROWS_PER_PART:
            yield dump(part)
            part = []
    if part:
        yield dump(part)


def open_index(folder: Path, root: Path, limits: TraceLimits | None, gpu_resources: Sequence[str]) -> Index:
    """The index of the repository at ``root`` in the cache ``folder`` (empty when missing, foreign or damaged)."""
    header = _header(root, limits, gpu_resources)
    index = Index(folder, _entry_path(folder, _locator(root, header)), header, limits)
    try:
        frames = read_sealed_values(index.path, folder, KIND, MAX_BYTES)
        if not frames:
            return index
        stored = frames[0]
        if not isinstance(stored, dict) or stored.get("header") != header:
            return index
        rows = {}
        for part in frames[1:]:
            if not isinstance(part, list):
                return index
            for pair in part:
                if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                    return index
                rows[pair[0]] = pair[1]
        shapes, places = stored.get("shapes"), stored.get("places")
        if not (isinstance(shapes, list) and isinstance(places, list) and isinstance(rows, dict)):
            return index
        for shape in shapes:
            if not isinstance(shape, list) or not all(isinstance(k, str) for k in shape) or len(set(shape)) != len(shape):
                return index
        for paths in places:
            if not isinstance(paths, dict) or not all(
                isinstance(p, list) and all(type(x) in (str, int) for x in p) for p in paths.values()
            ):
                return index
        index.shapes = [tuple(s) for s in shapes]
        index.places = places
        index.tplaces = [{k: tuple(v) for k, v in paths.items()} for paths in places]
        index.rows = rows
    except Exception:  # noqa: BLE001 - a damaged index is an empty one: every workload is measured
        index.rows = {}
    return index
