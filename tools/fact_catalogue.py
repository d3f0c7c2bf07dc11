"""Write docs/facts.md: every fact rules can name, per subject kind, from the fact sheets.

    python tools/fact_catalogue.py > docs/facts.md

The sheets (``policylint/engine/sheets.py`` and the parts they hold) are the one
declaration of the facts; this prints them as Markdown tables. ``tests/test_facts.py``
fails when docs/facts.md differs from what this prints. Not shipped: a development
tool of the checkout.
"""

from __future__ import annotations

from policylint.engine.sheets import SHEETS
from policylint.facts import declarations

HEADER = """# Facts

Every fact a rule can name in `needs`, `when`, `require`, `at` and its message, per
subject kind, with its type, unit and the fact sheet that declares it. Generated from
the sheets in [`policylint/engine/sheets.py`](../policylint/engine/sheets.py) (and the
parts they hold) by `python tools/fact_catalogue.py`; a test keeps this page equal to it.
A fact is `None` (`unknown` in messages) when it cannot be told.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown() -> str:
    """The whole page."""
    parts = [HEADER]
    for subject, sheet in SHEETS.items():
        found = declarations(sheet)
        parts.append(f"\n## {subject} ({len(found)} facts)\n")
        parts.append("| fact | type | unit | description | declared by |")
        parts.append("|---|---|---|---|---|")
        for d in found:
            where = f"`{d.sheet.__module__}.{d.sheet.__name__}`"
            parts.append(
                f"| `{d.name}` | `{_cell(d.written_type)}` | {d.unit or ''} | {_cell(d.description)} | {where} |"
            )
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
