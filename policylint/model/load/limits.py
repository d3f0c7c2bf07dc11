"""The safety limits of loading a YAML file: size, nodes, nesting, documents, number length.

Defaults for every limit, and :class:`LoadLimits`, which the configuration
(``limits:``) may change. The composer (:mod:`policylint.model.load.compose`)
and the builder (:mod:`policylint.model.load.build`) apply them.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Defaults for the safety limits; all can be changed through :class:`LoadLimits`.
MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_NODES = 100_000
MAX_DEPTH = 100
MAX_DOCUMENTS = 1_000
#: Longest number read (Python's own guard against quadratic int conversion is 4,300
#: digits; sexagesimal YAML 1.1 integers such as ``1:30:00`` are as costly).
MAX_NUMBER_CHARS = 4_300


@dataclass(frozen=True)
class LoadLimits:
    """Bounds that keep a hostile or accidental file from exhausting the run."""

    max_file_bytes: int = MAX_FILE_BYTES
    max_nodes: int = MAX_NODES  # per file: composed nodes, and nodes built after alias expansion
    max_depth: int = MAX_DEPTH
    max_documents: int = MAX_DOCUMENTS  # per file
