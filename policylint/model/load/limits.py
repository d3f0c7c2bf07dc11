"""The load limits: how large a YAML file, how many nodes and documents, how deep, before it is refused.

Plain data that imports nothing: the loader reads files within these bounds,
and the caches that must read a file exactly as the loader would (the document
and rule caches) take the same bounds from here.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Defaults for the safety limits; all can be changed through :class:`LoadLimits`.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 100
MAX_DOCUMENTS = 1_000
#: files and folders one run's walk of the repository may list (a link to a data folder of millions of files)
MAX_WALKED_ENTRIES = 2_000_000


@dataclass(frozen=True)
class LoadLimits:
    """Bounds that keep a hostile or accidental file from exhausting the run."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_nodes: int = MAX_NODES  # per file: composed nodes, and nodes built after alias expansion
    max_depth: int = MAX_DEPTH
    max_documents: int = MAX_DOCUMENTS  # per file
    max_walked_entries: int = MAX_WALKED_ENTRIES  # per run: entries of the folders walked
