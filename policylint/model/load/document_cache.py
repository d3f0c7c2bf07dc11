"""The document cache: a YAML file's parsed documents and their position index, kept between runs.

A warm run neither composes nor schema-checks a file whose bytes it has seen
before. The key (:func:`document_key`) is a SHA-256 over the file's bytes (read
anyway: the loader's size and type checks come first), the load limits, the
bundled JSON Schemas and the code fingerprint. Hashing the bytes of a YAML file
costs less than the stat record the trace digests use, so no stat short-cut is
taken: an entry is never used without its bytes' digest matching. Only files
that loaded without a finding and whose policylint documents all passed schema
validation are stored (the caller decides), so every finding of a YAML file is
always computed afresh and a hit skips validation without hiding anything.

The cache sits below the loader: it takes and gives plain data - the file's text
and, per document, its index, its data and its
:class:`~policylint.model.load.positions.PositionIndex` - and the loader
(:func:`policylint.model.load.files.load_file`) builds its ``SourceFile`` from a hit.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policylint.cache.store import (
    MAX_ENTRY_BYTES, Uncacheable, atomic_write, code_fingerprint, read_sealed, seal_json,
)
from policylint.model.load.limits import LoadLimits
from policylint.model.load.positions import PositionIndex, Span
from policylint.resources import schemas_dir

#: entry layout of the document cache; part of every key
DOCUMENT_FORMAT = 4


@dataclass(frozen=True)
class StoredDocument:
    """One parsed YAML document as the cache keeps it: its place in the file, its data, its positions."""

    index: int
    data: Any
    positions: PositionIndex


@dataclass(frozen=True)
class StoredSource:
    """A file's text and its parsed documents, every policylint document among them known schema-valid."""

    text: str
    documents: list[StoredDocument]
    #: the stored form this was read from (see :func:`encode_source`), kept to be stored again as it is
    payload: dict[str, Any] | None = dataclasses.field(default=None, compare=False, repr=False)


@functools.lru_cache(maxsize=1)
def schemas_fingerprint() -> str:
    """A hash of every bundled JSON Schema: a changed schema never reuses a validated document."""
    digest = hashlib.sha256()
    folder = schemas_dir()
    for path in sorted(folder.rglob("*.json")):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def document_key(raw: bytes, limits: LoadLimits, purpose: str = "documents") -> str:
    """The cache key of a YAML file's parsed documents: its bytes, the load limits, schemas and code.

    ``purpose`` keeps apart files read as something else than repository documents: a
    configuration file's parse (``"settings"``) was never schema-checked as documents, so
    its entry must never pass for the same bytes found in the repository.
    """
    digest = hashlib.sha256(f"{purpose}/{DOCUMENT_FORMAT}/{code_fingerprint()}/{schemas_fingerprint()}".encode())
    digest.update(_limits_text(limits))
    digest.update(b"\0")
    digest.update(raw)
    return digest.hexdigest()


@functools.lru_cache(maxsize=8)
def _limits_text(limits: LoadLimits) -> bytes:
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


def encode_source(source: StoredSource) -> dict[str, Any] | None:
    """A loaded, schema-valid file's text and documents as an entry holds them; None for anything unusual."""
    kept: dict[str, Any] | None = getattr(source, "payload", None)
    if kept is not None:
        return kept  # read from an entry: stored as it was
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
        payload = {"validated": True, "text": source.text, "documents": documents}
    except (Uncacheable, ValueError, TypeError, RecursionError):
        return None
    return payload


def store_source(folder: Path, key: str, source: StoredSource) -> dict[str, Any] | None:
    """Keep a loaded, schema-valid file's text and documents under ``key``; anything unusual is not stored.

    Returns the stored form (see :func:`encode_source`), for the repository's document
    pack (:mod:`policylint.model.load.document_pack_cache`), or None.
    """
    payload = encode_source(source)
    if payload is None:
        return None
    try:
        data = json.dumps({"key": key, **payload}, separators=(",", ":"), ensure_ascii=False, allow_nan=True).encode("utf-8")
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError):
        return None  # a value JSON cannot hold: neither stored nor packed
    sealed = seal_json(folder, "documents", data)
    if sealed is not None and len(sealed) <= MAX_ENTRY_BYTES["documents"]:
        atomic_write(_document_path(folder, key), sealed, folder)
    return payload


def load_source(folder: Path, key: str) -> StoredSource | None:
    """The text and documents stored under ``key`` (every policylint document known schema-valid), or None.

    The entry is read as a user file is (regular file, size limit) and used only
    when its HMAC matches (see :func:`policylint.cache.store.unseal_json`): its
    parsed data and the fact that it passed validation are then exactly what this
    user's policylint stored for these bytes, these limits, these schemas and this
    code. Each document's position index is decoded only when first asked for.
    """
    try:
        # joined as text: a warm run opens a thousand of these, and a Path costs more than the read
        entry = os.path.join(folder, f"documents-v{DOCUMENT_FORMAT}", key[:2], f"{key}.json")
        body = read_sealed(entry, folder, "documents", MAX_ENTRY_BYTES["documents"])
        if body is None:
            return None
        payload = json.loads(body.decode("utf-8"))
        if payload.pop("key") != key:
            return None
    except Exception:  # noqa: BLE001 - a missing, damaged or foreign entry is a miss, never a failure
        return None
    return decode_source(payload)


def decode_source(payload: Any) -> StoredSource | None:
    """The source an entry's stored form (:func:`encode_source`) describes; None when anything is off."""
    try:
        if payload["validated"] is not True or not isinstance(payload["text"], str) or len(payload) != 3:
            return None
        documents: list[StoredDocument] = []
        for stored in payload["documents"]:
            text = stored["positions"]
            # a damaged index is a miss now, not a wrong position later
            if not isinstance(text, str) or zlib.crc32(text.encode("ascii")) != stored["crc"]:
                return None
            positions = deferred_positions(text)
            index = stored["index"]
            if type(index) is not int:
                return None
            documents.append(StoredDocument(index, stored["data"], positions))
    except Exception:  # noqa: BLE001 - a damaged or foreign form is a miss, never a failure
        return None
    return StoredSource(payload["text"], documents, payload)


def deferred_positions(text: str) -> PositionIndex:
    """The position index a stored form holds as ``text``, decoded when first read (see :func:`_fill_positions`)."""
    return PositionIndex.deferred(functools.partial(_fill_positions, text))


#: how many times its compressed size a stored position index may expand to
_MAX_EXPANSION = 200


def _fill_positions(text: str, index: PositionIndex) -> None:
    """Decode a stored position index (see :func:`store_source`) into ``index``."""
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
