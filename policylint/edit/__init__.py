"""Edits: byte-preserving changes to YAML files.

:mod:`policylint.edit.scalars` rewrites single scalar values in place, keeping
every other byte of a file (comments, key order, quoting, anchors, line
endings). :mod:`policylint.edit.fixes` decides which numbers ``check --fix``
rewrites, from the facts the rules judged: each fix a rule file declares
(``fix: rewrites:``) is a function of :mod:`policylint.edit.rewrites`, and each
planned change a :class:`~policylint.edit.fix.Fix`.
"""

from __future__ import annotations

from policylint.edit.scalars import EditResult, ScalarEdit, apply_edits, unified_diff

__all__ = ["EditResult", "ScalarEdit", "apply_edits", "unified_diff"]
