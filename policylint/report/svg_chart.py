"""Static SVG charts of a pool's pooled GPU demand, for the HTML report.

One chart per pool: the pooled demand series with the baseline, daily and peak
bands shaded behind it, and horizontal lines for the capacity the pool has
(reserved, reserved + elastic), would have with its proposals, and is justified
by its bands. No script, no external font: the SVG is drawn once, as text.

A 92-day trace at one-minute steps has 132,480 samples and a laptop screen a few
hundred pixels of width, so the series is downsampled by pixel column. Each
column spans the lowest to the highest sample it covers (numpy ``reduceat`` over
the whole array), so a one-minute spike is still drawn as tall as it was;
columns without a usable sample (gaps, exclusions) stay empty.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape as _html_escape

import numpy as np

from policylint.report.safe_text import escape_controls


def escape(text: str) -> str:
    """SVG text: control characters as visible escapes, then the XML specials."""
    return _html_escape(escape_controls(text))

__all__ = ["Line", "PlotSize", "Downsampled", "downsample", "highest", "pool_chart"]


@dataclass(frozen=True)
class PlotSize:
    """Pixel geometry of one chart (the SVG scales with the page; these are its units)."""

    width: int = 1000
    height: int = 330
    left: int = 52  # room for the GPU axis labels
    right: int = 250  # room for the line labels
    top: int = 14
    bottom: int = 40  # room for the time axis labels

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> int:
        return self.height - self.top - self.bottom


@dataclass(frozen=True)
class Line:
    """A horizontal capacity line: its label, value in GPUs, CSS class and dash style."""

    label: str
    value: float
    css: str


@dataclass(frozen=True)
class Downsampled:
    """The series reduced to pixel columns: per column the lowest and highest usable sample."""

    low: np.ndarray  # NaN where a column has no usable sample
    high: np.ndarray
    samples_per_column: float


def downsample(values: np.ndarray, columns: int) -> Downsampled:
    """Min and max of ``values`` per column, over ``columns`` equal shares of the samples.

    NaN samples are skipped (``fmin``/``fmax``); a column whose samples are all NaN
    stays NaN. With fewer samples than columns every sample gets its own column.
    """
    v = np.asarray(values, dtype=np.float64)
    n = int(v.size)
    if n == 0:
        empty = np.empty(0)
        return Downsampled(empty, empty, 0.0)
    k = max(1, min(columns, n))
    edges = np.linspace(0, n, k + 1).astype(np.int64)[:-1]
    return Downsampled(np.fmin.reduceat(v, edges), np.fmax.reduceat(v, edges), n / k)


def _nice_step(span: float, target: int = 5) -> float:
    """A 1-2-5 step that divides ``span`` into about ``target`` intervals (at least one GPU)."""
    raw = max(span / target, 1.0)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power  # pragma: no cover - the loop always returns


#: time-axis steps to choose from, seconds, with the label format each uses
_TIME_STEPS: tuple[tuple[int, str], ...] = (
    (3_600, "%d %b %H:%M"),
    (3 * 3_600, "%d %b %H:%M"),
    (6 * 3_600, "%d %b %H:%M"),
    (12 * 3_600, "%d %b %H:%M"),
    (86_400, "%d %b"),
    (2 * 86_400, "%d %b"),
    (7 * 86_400, "%d %b"),
    (14 * 86_400, "%d %b"),
    (28 * 86_400, "%d %b"),
    (91 * 86_400, "%d %b %Y"),
    (364 * 86_400, "%d %b %Y"),
)


def _time_ticks(first: float, last: float, most: int = 8) -> list[tuple[float, str]]:
    """Round UTC instants between ``first`` and ``last`` (at most ``most``), with labels."""
    span = max(last - first, 1.0)
    step, fmt = next(((s, f) for s, f in _TIME_STEPS if span / s <= most), _TIME_STEPS[-1])
    start = math.ceil(first / step) * step
    ticks = []
    t = float(start)
    while t <= last:
        label = dt.datetime.fromtimestamp(t, tz=dt.timezone.utc).strftime(fmt)
        ticks.append((t, label))
        t += step
    return ticks


def _n(x: float) -> str:
    """A coordinate with two decimals at most (deterministic, compact)."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _gpus(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:.3g}"


def highest(values: np.ndarray, bands: dict[str, float], lines: Sequence[Line]) -> float:
    """The highest value a chart of these must show (at least one GPU)."""
    v = np.asarray(values, dtype=np.float64)
    finite = v[np.isfinite(v)]
    return max([float(finite.max()) if finite.size else 0.0, *bands.values(), *(ln.value for ln in lines), 1.0])


def pool_chart(
    times: np.ndarray,
    values: np.ndarray,
    bands: dict[str, float],
    lines: Sequence[Line],
    *,
    title: str,
    size: PlotSize | None = None,
    y_top: float | None = None,
) -> tuple[str, Downsampled]:
    """The SVG of one pool's pooled demand (``times`` unix seconds, ``values`` GPUs, NaN = not usable).

    ``bands`` holds ``baseline``, ``daily`` and ``peak`` (GPUs); they are shaded as
    zones. ``lines`` are drawn across the plot and labelled on the right. ``y_top``
    raises the GPU axis to at least that value, so that two charts drawn for
    comparison (a pool before and after a change) share one scale. Returns the
    SVG text and the downsampled series it draws.
    """
    size = size or PlotSize()
    pw, ph = size.plot_width, size.plot_height
    x0, y0 = size.left, size.top
    v = np.asarray(values, dtype=np.float64)
    t = np.asarray(times, dtype=np.float64)
    top_value = max(highest(v, bands, lines), y_top or 0.0)
    step = _nice_step(top_value * 1.05)
    y_max = math.ceil(top_value * 1.05 / step) * step
    scale = ph / y_max

    def y(value: float) -> float:
        return y0 + ph - value * scale

    first = float(t[0]) if t.size else 0.0
    last = float(t[-1]) if t.size else 1.0
    span = max(last - first, 1.0)

    def x(when: float) -> float:
        return x0 + (when - first) / span * pw

    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size.width} {size.height}" '
        f'role="img" aria-label="{escape(title)}" class="chart">',
        f"<title>{escape(title)}</title>",
    ]
    # Band zones behind everything: 0..baseline, baseline..daily, daily..peak.
    lower = 0.0
    for name in ("baseline", "daily", "peak"):
        upper = bands.get(name)
        if upper is None:
            continue
        if upper > lower:
            parts.append(
                f'<rect class="band-{name}" x="{x0}" y="{_n(y(upper))}" width="{pw}" '
                f'height="{_n((upper - lower) * scale)}"/>'
            )
        lower = max(lower, upper)
    # Axes and grid.
    tick = 0.0
    while tick <= y_max + 1e-9:
        yy = _n(y(tick))
        parts.append(f'<line class="grid" x1="{x0}" x2="{x0 + pw}" y1="{yy}" y2="{yy}"/>')
        parts.append(f'<text class="axis" x="{x0 - 6}" y="{yy}" text-anchor="end" dy="0.32em">{_gpus(tick)}</text>')
        tick += step
    for when, label in _time_ticks(first, last):
        xx = _n(x(when))
        parts.append(f'<line class="grid" x1="{xx}" x2="{xx}" y1="{y0}" y2="{y0 + ph}"/>')
        parts.append(f'<text class="axis" x="{xx}" y="{y0 + ph + 16}" text-anchor="middle">{escape(label)}</text>')
    parts.append(
        f'<text class="axis" x="{x0 + pw / 2:.0f}" y="{size.height - 4}" text-anchor="middle">time (UTC)</text>'
    )
    parts.append(
        f'<text class="axis" x="12" y="{y0 + ph / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {y0 + ph / 2:.0f})">GPUs</text>'
    )
    # The series: one rectangle per pixel column from its lowest to its highest sample.
    down = downsample(v, pw)
    k = down.low.size
    if k:
        col = pw / k
        ok = np.isfinite(down.low)
        xs = x0 + np.arange(k, dtype=np.float64) * col
        y_hi = y0 + ph - down.high * scale
        # at least one pixel tall, so a flat stretch is still drawn
        y_lo = np.maximum(y0 + ph - down.low * scale, y_hi + 1.0)
        w = max(col, 1.0)
        segments = [
            f"M{_n(a)} {_n(b)}h{_n(w)}V{_n(c)}h{_n(-w)}z"
            for a, b, c in zip(xs[ok].tolist(), y_hi[ok].tolist(), y_lo[ok].tolist(), strict=True)
        ]
        parts.append(f'<path class="series" d="{"".join(segments)}"/>')
    parts.append(f'<rect class="frame" x="{x0}" y="{y0}" width="{pw}" height="{ph}"/>')
    # Capacity lines, labelled on the right; labels pushed apart so none overlaps.
    placed: list[tuple[float, Line]] = sorted(((y(ln.value), ln) for ln in lines), key=lambda p: (-p[0], p[1].label))
    label_y: list[float] = []
    for line_y, _ in placed:  # bottom to top
        wanted = min(line_y, label_y[-1] - 13.0) if label_y else line_y
        label_y.append(wanted)
    shift = max(0.0, y0 + 6 - label_y[-1]) if label_y else 0.0
    for (line_y, ln), ly in zip(placed, label_y, strict=True):
        ly += shift
        parts.append(f'<line class="cap {ln.css}" x1="{x0}" x2="{x0 + pw}" y1="{_n(line_y)}" y2="{_n(line_y)}"/>')
        parts.append(
            f'<path class="leader {ln.css}" d="M{x0 + pw} {_n(line_y)}L{x0 + pw + 8} {_n(ly)}"/>'
            f'<text class="cap-label {ln.css}" x="{x0 + pw + 11}" y="{_n(ly)}" dy="0.32em">'
            f"{escape(ln.label)} {_gpus(ln.value)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts), down
