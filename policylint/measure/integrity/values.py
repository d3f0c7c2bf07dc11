"""The value of one integrity fact as the parts compute it: plain data (JSON as it is cached).

Below every other part of the stage, which all return their facts as ``dict[str, Fact]``;
the engine's typed view of them is :mod:`policylint.measure.integrity_facts`.
"""

from __future__ import annotations

#: One fact's value: a number, a name, a flag, a list of them (a run sketch, sentences), or None.
Fact = float | int | str | bool | list[int] | list[str] | list[list[int] | None] | None
