"""The document pack: every cached YAML file of a repository in one entry, found by its stat identity.

A warm run in a repository of 10,000 workload files read each file, hashed it
and opened its own document-cache entry (:mod:`policylint.model.load.document_cache`):
three system calls, an HMAC and a JSON parse per file, most of a one-file
pre-commit run's loading. The pack holds, for each file of the repository that
loaded cleanly and passed validation, what its document-cache entry holds (its
text and parsed documents, position indexes still compressed) under its real
path, with the file's stat identity when it was read: device, inode, size,
modification and status-change times in nanoseconds, as git's index keeps them.

A file is taken from the pack when a ``stat`` gives the same identity (and it is
still a regular file within the size limit). That is the repository index's
rule (:mod:`policylint.engine.index_store`), and git's: a write to a file
changes its status-change time, which no ordinary program can set back, and a
file is packed only when both its times are settled - older than two seconds
when it is packed, and unchanged between the ``stat`` taken before it was read
and the one taken when it is packed - so that a write in the same timestamp
tick as the read cannot go unseen. Anything else is read as before: a file
whose identity moved, a new file, a pack that is missing, foreign, damaged
(HMAC, every record checked) or written by other code, schemas or limits.

The pack is one sealed entry per repository (and code, schemas, limits). It is
written again only when a run read more than a few files outside it, so a
one-file pre-commit run after an edit reads the edited file as before and
leaves the pack alone.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import stat
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from policylint.cache import store
from policylint.cache.decoded import python_tag, read_sealed_values
from policylint.cache.store import FORMAT_VERSION, frame, stat_identity, write_sealed_frames
from policylint.model.load import document_cache
from policylint.model.load.documents import Document, SourceFile
from policylint.model.load.limits import LoadLimits
from policylint.safeio import stat_once

KIND = "docpack"
PACK_FORMAT = 3  # 2: walked JSON files screened as foreign ("screened"); 3: frames of marshal, not JSON
#: the largest pack read back or written (10,000 workload files take about 31 MB)
MAX_BYTES = 512 << 20
#: a file whose modification or status-change time is this close to the packing is not packed
RACY_SECONDS = 2.0
#: with more files than this read outside the pack (and more than a quarter of the repository's),
#: the run writes the pack again
MAX_UNPACKED = 16
#: files per frame of the pack
_FILES_PER_FRAME = 256


def file_ident(path: str) -> list[int] | None:
    """The stat identity of the regular file at ``path`` (symlinks followed), or None."""
    try:
        st = stat_once(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return stat_identity(st)


def _header(root: Path, limits: LoadLimits) -> dict[str, Any]:
    import dataclasses

    return {
        "format": PACK_FORMAT,
        "documents": document_cache.DOCUMENT_FORMAT,
        "cache": FORMAT_VERSION,
        "code": store.code_fingerprint(),
        "schemas": document_cache.schemas_fingerprint(),
        "root": os.path.realpath(root),
        "limits": dataclasses.asdict(limits),
        "python": python_tag(),
    }


def _entry_path(folder: Path, header: dict[str, Any]) -> Path:
    text = json.dumps(header, sort_keys=True, separators=(",", ":"))
    loc = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    return folder / f"{KIND}-v{FORMAT_VERSION}" / loc[:2] / f"{loc}.bin"


@dataclass
class Pack:
    """A repository's document pack for one run: looked up while loading, written back when worth it."""

    folder: Path
    path: Path
    header: dict[str, Any]
    limits: LoadLimits
    #: real path -> [stat identity, stored form] as read
    records: dict[str, list[Any]] = field(default_factory=dict)
    #: files taken from the pack this run (real path -> record)
    used: dict[str, list[Any]] = field(default_factory=dict)
    #: files read outside the pack this run: real path -> (identity before reading, the source)
    read: dict[str, tuple[list[int] | None, SourceFile]] = field(default_factory=dict)
    #: walked JSON files found to hold nothing policylint reads (:mod:`policylint.model.load.manifests`):
    #: real path -> stat identity when screened, as read
    screened: dict[str, list[int]] = field(default_factory=dict)
    #: screened files confirmed this run (from the pack, or screened now with a settled identity)
    kept_screened: dict[str, list[int]] = field(default_factory=dict)
    #: JSON files screened now, outside the pack: real path -> identity before the screen
    new_screened: dict[str, list[int]] = field(default_factory=dict)

    def foreign(self, real: str) -> bool:
        """True when the JSON file at ``real`` was screened as foreign with the identity it has now."""
        ident = self.screened.get(real)
        if ident is None or file_ident(real) != ident:
            return False
        self.kept_screened[real] = ident
        return True

    def note_screened(self, real: str, ident: list[int] | None) -> None:
        """Note a JSON file screened as foreign now, with its identity taken before it was read."""
        if ident is not None:
            self.new_screened[real] = ident

    def take(self, real: str, path: Path, display: str) -> SourceFile | None:
        """The source of the file at ``real`` from the pack when its identity is the packed one; else None."""
        record = self.records.get(real)
        if record is None:
            return None
        ident = file_ident(real)
        if ident is None or ident != record[0] or ident[2] > self.limits.max_file_bytes:
            return None
        source = source_from(record[1], path, display)
        if source is not None:
            self.used[real] = record
        return source

    def note_read(self, real: str, ident: list[int] | None, source: SourceFile) -> None:
        """Note a file read outside the pack, with its identity taken before it was read (see :meth:`write_back`)."""
        self.read[real] = (ident, source)

    def write_back(self, now_ns: int | None = None) -> None:
        """Write the pack again when this run read more than a few packable files outside it.

        A file is packable when it was read cleanly (its stored form set: loaded
        without a finding, validated, stored in the document cache) and its identity
        is settled (as of ``now_ns``, by default this instant) and unchanged since
        before it was read. The pack then holds every such file and every file this
        run took from it: files gone from the repository drop out.
        """
        settled_before = (time.time_ns() if now_ns is None else now_ns) - int(RACY_SECONDS * 1e9)
        fresh: dict[str, list[Any]] = {}
        for real, (ident, source) in self.read.items():
            if ident is None or source.stored is None or source.findings:
                continue
            if max(ident[3], ident[4]) >= settled_before or file_ident(real) != ident:
                continue
            fresh[real] = [ident, source.stored]
        screened = {real: ident for real, ident in self.new_screened.items()
                    if max(ident[3], ident[4]) < settled_before and file_ident(real) == ident}
        new = len(fresh) + len(screened)
        kept = len(self.used) + len(self.kept_screened)
        if not new or ((self.records or self.screened) and new <= max(MAX_UNPACKED, (new + kept) // 4)):
            return
        records = {**self.used, **fresh}
        foreign = {**self.kept_screened, **screened}
        head = {"header": self.header, "screened": {k: foreign[k] for k in sorted(foreign)}}
        names = sorted(records)

        def frames() -> Iterator[bytes]:
            yield frame(marshal.dumps(head))
            for at in range(0, len(names), _FILES_PER_FRAME):
                part = [[k, records[k]] for k in names[at:at + _FILES_PER_FRAME]]
                yield frame(marshal.dumps(_keys_interned(part)))

        try:
            write_sealed_frames(self.path, self.folder, KIND, frames(), MAX_BYTES)
        except ValueError:
            return  # a value marshal cannot hold: the pack stays as it was


def _keys_interned(value: Any) -> Any:
    """``value`` with every mapping's keys interned (a copy): ``marshal`` then writes each key once per
    frame and reads it back interned, so the documents' keys (``apiVersion``, ``metadata``, ...) are
    shared again, as ``json.loads`` shares them (10,000 workload files: 17 MB less)."""
    if isinstance(value, dict):
        return {sys.intern(k) if type(k) is str else k: _keys_interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_keys_interned(v) for v in value]
    return value


def source_from(payload: Any, path: Path, display: str) -> SourceFile | None:
    """``SourceFile.from_stored(path, display, document_cache.decode_source(payload))``, or None where that is None.

    Made in one pass, without the intermediate ``StoredSource``: the pack hands a
    run 10,000 of these.
    """
    try:
        if payload["validated"] is not True or not isinstance(payload["text"], str) or len(payload) != 3:
            return None
        source = SourceFile(path=path, display=display, text=payload["text"], validated=True, stored=payload)
        documents = source.documents
        crc32, deferred = zlib.crc32, document_cache.deferred_positions
        for stored in payload["documents"]:
            text = stored["positions"]
            # a damaged index is a miss now, not a wrong position later
            if not isinstance(text, str) or crc32(text.encode("ascii")) != stored["crc"]:
                return None
            positions = deferred(text)
            index = stored["index"]
            if type(index) is not int:
                return None
            documents.append(Document(source, index, stored["data"], positions))
    except Exception:  # noqa: BLE001 - a damaged or foreign form is a miss, never a failure
        return None
    return source


#: the types of a stat identity's five numbers
_IDENT_TYPES = [int] * 5


def _is_text(key: Any) -> bool:
    return isinstance(key, str)


def _valid_record(record: Any) -> bool:
    if not isinstance(record, list) or len(record) != 2 or not isinstance(record[1], dict):
        return False
    ident = record[0]
    # five numbers of exactly int, told without a generator per record
    return isinstance(ident, list) and list(map(type, ident)) == _IDENT_TYPES


def open_pack(folder: Path, root: Path, limits: LoadLimits) -> Pack:
    """The document pack of the repository at ``root`` (empty when missing, foreign or damaged)."""
    header = _header(root, limits)
    pack = Pack(folder, _entry_path(folder, header), header, limits)
    try:
        found = read_sealed_values(pack.path, folder, KIND, MAX_BYTES)
        if not found:
            return pack
        stored = found[0]
        files: dict[str, Any] = {}
        if not isinstance(stored, dict) or stored.get("header") != header:
            return pack
        for part in found[1:]:
            if not isinstance(part, list) or not all(isinstance(pair, list) and len(pair) == 2 for pair in part):
                return pack
            files.update(part)
        screened = stored.get("screened")
        # keys and records checked by map, not by a generator over the items (10,000 of them)
        if not all(map(_is_text, files)) or not all(map(_valid_record, files.values())):
            return pack
        if not isinstance(screened, dict) or not all(map(_is_text, screened)) or not all(
            isinstance(i, list) and list(map(type, i)) == _IDENT_TYPES for i in screened.values()
        ):
            return pack
        pack.records = files
        pack.screened = screened
    except Exception:  # noqa: BLE001 - a damaged pack is an empty one: every file is read
        pack.records = {}
        pack.screened = {}
    return pack
