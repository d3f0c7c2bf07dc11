"""Row numbers for messages: which row of the user's file a data row came from.

The readers of columns (:mod:`policylint.readers.csv_columns`,
:mod:`policylint.readers.arrow_columns`) know how rows map to lines;
the converters and filters that report a bad cell (:mod:`policylint.readers.convert`,
:mod:`policylint.readers.filters`) only ask. This base sits below all of them, so
none of those modules imports another to name a row.
"""

from __future__ import annotations


class Rows:
    """Maps a data row's index (0-based) to the row number shown in messages."""

    def row(self, index: int) -> int:
        """The 1-based row (CSV: line of the file) of data row ``index``."""
        return index + 1
