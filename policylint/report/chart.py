"""Drawing a concurrency series with its three band lines.

``draw`` lays out a character grid (pure numpy + strings, no terminal
knowledge); ``to_plain`` and ``to_rich`` turn it into text for a pipe or a rich
console. ``save_plot`` writes a PNG/SVG with matplotlib, an optional extra.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from policylint.errors import PolicylintError

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["BAND_MARKS", "Chart", "draw", "save_plot", "to_plain", "to_rich"]

# Distinct characters so the lines can be told apart without colour.
BAND_MARKS: dict[str, str] = {"baseline": "-", "daily": "=", "peak": "~"}
BAND_STYLES: dict[str, str] = {"baseline": "green", "daily": "yellow", "peak": "red"}
SERIES_MARK = "┃"
SERIES_STYLE = "cyan"
AXIS_WIDTH = 9


@dataclass(frozen=True)
class Chart:
    """A laid-out chart: ``cells[row][col]`` is ``(char, style)``, row 0 at the top."""

    cells: tuple[tuple[tuple[str, str], ...], ...]
    axis: tuple[str, ...]  # left labels, one per row, AXIS_WIDTH wide
    footer: tuple[str, ...]  # time axis and legend lines


def _fmt(value: float) -> str:
    if abs(value) >= 1e5:
        return f"{value:.3g}"
    return f"{value:.1f}" if value != int(value) else f"{int(value)}"


def draw(
    values: np.ndarray,
    bands: Mapping[str, float],
    *,
    first_label: str = "",
    last_label: str = "",
    width: int = 72,
    height: int = 16,
    series_label: str = "concurrency (column range)",
) -> Chart:
    """Lay out ``values`` (NaN = excluded) over ``width`` x ``height`` cells.

    Each column covers an equal share of the samples and shows the range
    (min..max) of the valid samples in it, so a one-minute spike stays visible
    after downsampling. Band lines are drawn in the empty cells of their row.
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    width = max(1, min(width, n))
    height = max(4, height)
    edges = np.linspace(0, n, width + 1).astype(np.int64)[:-1]
    hi = np.fmax.reduceat(v, edges)  # fmax skips NaN unless the whole column is NaN
    lo = np.fmin.reduceat(v, edges)
    top = max(float(np.nanmax(v)) if np.isfinite(v).any() else 1.0, *bands.values(), 1e-9)
    scale = (height - 1) / top

    def level(x: np.ndarray | float) -> np.ndarray:
        return np.rint(np.asarray(x) * scale).astype(np.int64)

    grid = [[(" ", "") for _ in range(width)] for _ in range(height)]
    ok = ~np.isnan(hi)
    lo_level = np.where(ok, level(np.nan_to_num(lo)), -1)
    hi_level = np.where(ok, level(np.nan_to_num(hi)), -1)
    rows = np.arange(height)[:, None]  # 0 = bottom
    covered = (rows >= lo_level[None, :]) & (rows <= hi_level[None, :])
    for r, c in zip(*np.nonzero(covered), strict=True):
        grid[height - 1 - r][c] = (SERIES_MARK, SERIES_STYLE)

    axis = [" " * (AXIS_WIDTH - 1) + "│" for _ in range(height)]
    axis[height - 1] = f"{'0':>{AXIS_WIDTH - 2}} ┤"
    # Highest band first; a lower band whose row is taken moves one row down so
    # every line stays visible (its label still gives the exact value).
    taken: set[int] = set()
    for name, value in sorted(bands.items(), key=lambda kv: -kv[1]):
        row = height - 1 - int(level(value))
        while row in taken and row < height - 2:
            row += 1
        taken.add(row)
        mark = BAND_MARKS.get(name, "-")
        style = BAND_STYLES.get(name, "")
        grid[row] = [cell if cell[0] == SERIES_MARK else (mark, style) for cell in grid[row]]
        axis[row] = f"{_fmt(value):>{AXIS_WIDTH - 2}} ┤"

    span = width - len(first_label) - len(last_label)
    times = " " * AXIS_WIDTH + first_label + " " * max(1, span) + last_label
    legend = " " * AXIS_WIDTH + "  ".join(
        [f"{BAND_MARKS.get(k, '-')} {k} {_fmt(val)}" for k, val in bands.items()]
        + [f"{SERIES_MARK} {series_label}"]
    )
    return Chart(
        cells=tuple(tuple(row) for row in grid), axis=tuple(axis), footer=(times, legend)
    )


def to_plain(chart: Chart) -> str:
    """The chart as plain text (no colour)."""
    lines = [a + "".join(ch for ch, _ in row) for a, row in zip(chart.axis, chart.cells, strict=True)]
    return "\n".join(line.rstrip() for line in [*lines, *chart.footer])


def to_rich(chart: Chart) -> Text:
    """The chart as a rich ``Text`` with one colour per band and for the series."""
    from rich.text import Text

    text = Text(no_wrap=True, overflow="crop")
    for axis, row in zip(chart.axis, chart.cells, strict=True):
        text.append(axis, style="dim")
        for ch, style in row:
            text.append(ch, style=style or None)
        text.append("\n")
    text.append("\n".join(chart.footer), style="dim")
    return text


def save_plot(
    path: str | Path,
    times: np.ndarray,
    values: np.ndarray,
    bands: Mapping[str, float],
    *,
    title: str = "",
    spans: Sequence[tuple[float, float]] = (),
    ylabel: str = "concurrency",
) -> None:
    """Write the series and band lines to a PNG or SVG file (needs matplotlib).

    ``spans`` are (start, end) unix-second ranges to shade (exclusions, gaps).
    """
    target = Path(path)
    if target.suffix.lower() not in (".png", ".svg"):
        raise PolicylintError(f"--plot file must end in .png or .svg, got '{target.name}'")
    try:
        import matplotlib

        matplotlib.use("Agg")  # never open a window; we only write files
        import matplotlib.pyplot as plt
    except ImportError:
        raise PolicylintError("--plot needs matplotlib: pip install 'policylint[plot]'") from None

    stamps = np.asarray(times, dtype=np.float64).astype("datetime64[s]")
    fig: Any
    fig, ax = plt.subplots(figsize=(11, 4.5))
    try:
        ax.plot(stamps, values, color="tab:blue", linewidth=0.7, label=ylabel)
        colours = {"baseline": "tab:green", "daily": "tab:orange", "peak": "tab:red"}
        for name, value in bands.items():
            ax.axhline(value, color=colours.get(name, "grey"), linestyle="--", linewidth=1.2,
                       label=f"{name} {_fmt(value)}")
        for start, end in spans:
            # matplotlib's date converter takes datetime64; its stubs only say float.
            ax.axvspan(np.datetime64(int(start), "s"), np.datetime64(int(math.ceil(end)), "s"),  # type: ignore[arg-type]
                       color="grey", alpha=0.2)
        ax.set_ylabel(ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize="small")
        fig.autofmt_xdate()
        fig.tight_layout()
        fig.savefig(target)
    except OSError as exc:
        raise PolicylintError(f"cannot write plot: {exc}", source=str(target)) from None
    finally:
        plt.close(fig)
