"""Step 1: find files, read them safely and parse YAML with a position index.

Bad input never raises: every problem becomes a :class:`~policylint.finding.Finding`.
The step is split along its seams:

* :mod:`~policylint.model.load.files` - discovery of YAML files, safe reading and
  decoding, and whether a walked file holds anything policylint reads;
* :mod:`~policylint.model.load.limits` - the safety limits (:class:`LoadLimits`);
* :mod:`~policylint.model.load.compose` - the YAML composer (libyaml or pure Python,
  with the same results) and :mod:`~policylint.model.load.build`, which builds plain
  data and positions from its node graph;
* :mod:`~policylint.model.load.documents` - :class:`SourceFile` and :class:`Document`,
  and the checks made on a document as soon as it is built;
* :mod:`~policylint.model.load.positions` - document paths and the position index;
* :mod:`~policylint.model.load.comments` - where the YAML comments are (outside every
  scalar), for suppression comments.

Other modules import from ``policylint.model.load``; the names below are that surface.
A test that switches the parser patches :data:`policylint.model.load.compose.LIBYAML`,
where the parser looks it up.
"""

from typing import TYPE_CHECKING, Any

from policylint import API_VERSION
from policylint.model.load.comments import Comment, source_comments
from policylint.model.load.documents import Definitions, Document, SourceFile, api_version_near_miss, is_scheduler_doc
from policylint.model.load.files import (
    YAML_SUFFIXES,
    RealPaths,
    cache_source,
    dangling,
    discover,
    discover_real,
    display_path,
    display_real,
    load_file,
    looks_relevant,
    read_settings_yaml,
    within,
)
from policylint.model.load.limits import MAX_DEPTH, MAX_DOCUMENTS, MAX_FILE_BYTES, MAX_NODES, LoadLimits
from policylint.model.load.positions import DocPath, PositionIndex, Span, parse_pointer, pointer

if TYPE_CHECKING:  # imported on first use (see __getattr__ below)
    from policylint.model.load.build import MAX_NUMBER_CHARS
    from policylint.model.load.compose import parse_text

__all__ = [
    "API_VERSION",
    "Comment",
    "MAX_DEPTH",
    "MAX_DOCUMENTS",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_NUMBER_CHARS",
    "YAML_SUFFIXES",
    "Definitions",
    "DocPath",
    "Document",
    "LoadLimits",
    "PositionIndex",
    "RealPaths",
    "SourceFile",
    "Span",
    "api_version_near_miss",
    "cache_source",
    "dangling",
    "discover",
    "discover_real",
    "display_path",
    "display_real",
    "is_scheduler_doc",
    "load_file",
    "looks_relevant",
    "parse_pointer",
    "parse_text",
    "pointer",
    "read_settings_yaml",
    "source_comments",
    "within",
]


def __getattr__(name: str) -> Any:
    # the parser's names are looked up when first asked for: a run whose files all come from
    # the cache never imports PyYAML (about 16 ms)
    if name == "parse_text":
        from policylint.model.load.compose import parse_text

        return parse_text
    if name == "MAX_NUMBER_CHARS":
        from policylint.model.load.build import MAX_NUMBER_CHARS

        return MAX_NUMBER_CHARS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
