"""The report plots: each plot type is a small frozen record (`BarPlot`, `HeatmapPlot`, `IntervalPlot`,
`ReliabilityPlot`) plus its drawing function, in one style for every runner (values on bars, 95% intervals,
baselines as labelled lines, scales that fit the data, legends outside the data) and one set of fonts that draw
every script the packaged data has (`plot_fonts`). `render_png` draws a plot on a private Agg canvas;
`culturekb.evals.reports.write_report` writes the PNGs beside a report's JSON and Markdown.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, require
from culturekb.evals.metrics import ConfusionMatrix

__all__ = ["FONT_DIR", "FONT_FAMILIES", "BarPlot", "HeatmapPlot", "IntervalPlot", "MissingGlyphWarning", "Plot",
           "ReliabilityPlot", "check_plot_name", "plot_fonts", "plot_style", "render_png"]

_MISSING = "n/a"


# -- plots --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BarPlot:
    """Bars per category, one colour per series: grouped bars (accuracy per culture per mode), single-series
    bars (per-language accuracy) or, with `diverging`, signed bars around zero (Russell quadrant bias)."""

    name: str
    title: str
    categories: Sequence[str]
    series: Mapping[str, Sequence[float]]
    ylabel: str = ""
    diverging: bool = False
    ylim: tuple[float, float] | None = None
    baselines: Mapping[str, float] = field(default_factory=dict)
    """Reference levels drawn as labelled horizontal lines across the chart (a majority baseline, human accuracy)."""
    value_format: str = "{:.2f}"
    """How the value written on each bar reads."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(str(c) for c in self.categories))
        object.__setattr__(self, "series", {str(k): tuple(float("nan") if v is None else float(v) for v in vals)
                                            for k, vals in self.series.items()})
        object.__setattr__(self, "baselines", _check_baselines(self.name, self.baselines))
        check_plot_name(self.name)
        if not self.series:
            raise ConfigError(f"bar plot {self.name!r} has no series; give at least one")
        for label, vals in self.series.items():
            if len(vals) != len(self.categories):
                raise ConfigError(
                    f"bar plot {self.name!r}: series {label!r} has {len(vals)} values for "
                    f"{len(self.categories)} categories; give one value per category"
                )

    @classmethod
    def from_nested(
        cls, name: str, title: str, nested: Mapping[Any, Mapping[Any, float | None]], **kw: Any
    ) -> BarPlot:
        """Series from the outer keys, categories from the inner keys (first-seen order); missing -> NaN."""
        seen: dict[Any, None] = {}
        for inner in nested.values():
            seen.update(dict.fromkeys(inner))
        cats = list(seen)
        series = {str(s): [_nan_if_none(inner.get(c)) for c in cats] for s, inner in nested.items()}
        return cls(name, title, [str(c) for c in cats], series, **kw)


@dataclass(frozen=True)
class HeatmapPlot:
    """A matrix drawn as colours with the values written in the cells (confusion matrices, language grids)."""

    name: str
    title: str
    row_labels: Sequence[str]
    col_labels: Sequence[str]
    values: Sequence[Sequence[float]]
    colour_values: Sequence[Sequence[float]] | None = None
    """What sets the colours when it differs from the annotated values (e.g. row fractions of counts)."""
    xlabel: str = ""
    ylabel: str = ""
    value_format: str = "{:.2f}"
    scale: tuple[float, float] | None = None
    """The colour bar's range; default: 0..1 when every colour value lies in it (accuracies, shares), else the
    values' own range (widened by 1 either side when they are all equal)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_labels", tuple(str(r) for r in self.row_labels))
        object.__setattr__(self, "col_labels", tuple(str(c) for c in self.col_labels))
        object.__setattr__(self, "values", tuple(tuple(_nan_if_none(v) for v in row) for row in self.values))
        if self.colour_values is not None:
            object.__setattr__(self, "colour_values",
                               tuple(tuple(_nan_if_none(v) for v in row) for row in self.colour_values))
        check_plot_name(self.name)
        for what, matrix in (("values", self.values), ("colour_values", self.colour_values)):
            if matrix is None:
                continue
            if len(matrix) != len(self.row_labels) or any(len(r) != len(self.col_labels) for r in matrix):
                raise ConfigError(
                    f"heatmap {self.name!r}: {what} must be {len(self.row_labels)} rows x {len(self.col_labels)} "
                    "columns, one per row and column label"
                )

    @classmethod
    def from_confusion(cls, name: str, title: str, cm: ConfusionMatrix) -> HeatmapPlot:
        """Counts annotated, colours by row fraction (so rare gold labels stay readable)."""
        return cls(name, title, cm.labels, cm.columns, [[float(c) for c in r] for r in cm.counts],
                   colour_values=cm.row_fractions(), xlabel="predicted", ylabel="gold", value_format="{:.0f}")

    @classmethod
    def from_nested(cls, name: str, title: str, nested: Mapping[Any, Mapping[Any, float | None]],
                    **kw: Any) -> HeatmapPlot:
        """Rows from the outer keys, columns from the inner keys; e.g. an `accuracy_grid` result."""
        seen: dict[Any, None] = {}
        for inner in nested.values():
            seen.update(dict.fromkeys(inner))
        cols = list(seen)
        values = [[_nan_if_none(inner.get(c)) for c in cols] for inner in nested.values()]
        return cls(name, title, [str(r) for r in nested], [str(c) for c in cols], values, **kw)


@dataclass(frozen=True)
class IntervalPlot:
    """Estimates with their intervals, per category and series: bars with error bars (accuracy per mode with its
    bootstrap interval) or, with ``style="point"``, points with error bars around a `reference` line (paired
    differences around 0). `low` and `high` hold the interval bounds, not the error lengths."""

    name: str
    title: str
    categories: Sequence[str]
    series: Mapping[str, Sequence[float]]
    low: Mapping[str, Sequence[float]]
    high: Mapping[str, Sequence[float]]
    ylabel: str = ""
    style: str = "bar"
    reference: float | None = None
    ylim: tuple[float, float] | None = None
    baselines: Mapping[str, float] = field(default_factory=dict)
    """Reference levels drawn as labelled horizontal lines across the chart (a majority baseline, human accuracy)."""
    value_format: str = "{:.2f}"
    """How the value written on each bar or point reads."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(str(c) for c in self.categories))
        object.__setattr__(self, "baselines", _check_baselines(self.name, self.baselines))
        for attr in ("series", "low", "high"):
            object.__setattr__(self, attr, {str(k): tuple(_nan_if_none(v) for v in vals)
                                            for k, vals in getattr(self, attr).items()})
        check_plot_name(self.name)
        if self.style not in ("bar", "point"):
            raise ConfigError(f"interval plot {self.name!r}: style {self.style!r} is not 'bar' or 'point'")
        if not self.series:
            raise ConfigError(f"interval plot {self.name!r} has no series; give at least one")
        for label, vals in self.series.items():
            for what, bounds in (("low", self.low), ("high", self.high)):
                if label not in bounds or len(bounds[label]) != len(vals):
                    raise ConfigError(f"interval plot {self.name!r}: series {label!r} needs one {what} bound per "
                                      "value")
            if len(vals) != len(self.categories):
                raise ConfigError(f"interval plot {self.name!r}: series {label!r} has {len(vals)} values for "
                                  f"{len(self.categories)} categories; give one value per category")


@dataclass(frozen=True)
class ReliabilityPlot:
    """A reliability diagram: per confidence bin, the accuracy of the items against their mean confidence (points on
    the diagonal are calibrated), one line per series, with the items per bin drawn below. Each series maps to
    `ReliabilityBin`-like dicts (``mean_confidence``, ``accuracy``, ``count``, ``low``, ``high``); empty bins are
    skipped."""

    name: str
    title: str
    series: Mapping[str, Sequence[Mapping[str, Any]]]

    def __post_init__(self) -> None:
        object.__setattr__(self, "series", {str(k): tuple(dict(b) for b in bins) for k, bins in self.series.items()})
        check_plot_name(self.name)
        if not self.series:
            raise ConfigError(f"reliability plot {self.name!r} has no series; give at least one")
        for label, bins in self.series.items():
            missing = [k for k in ("mean_confidence", "accuracy", "count", "low", "high") for b in bins if k not in b]
            if missing:
                raise ConfigError(f"reliability plot {self.name!r}: bins of series {label!r} lack "
                                  f"{sorted(set(missing))}; pass metrics.reliability_bins(...) as dicts")


Plot = BarPlot | HeatmapPlot | IntervalPlot | ReliabilityPlot


def _nan_if_none(v: float | None) -> float:
    return float("nan") if v is None else float(v)


def _check_baselines(name: str, baselines: Mapping[str, float]) -> dict[str, float]:
    out = {str(k): float(v) for k, v in baselines.items() if v is not None}
    bad = [k for k, v in out.items() if not math.isfinite(v)]
    if bad:
        raise ConfigError(f"plot {name!r}: baselines {bad} are not finite numbers; leave out a baseline with no value")
    return out


def check_plot_name(name: str) -> None:
    """A ConfigError unless `name` is a safe file stem (it names the PNG and a report)."""
    if not name or any(ch in name for ch in "/\\:*?\"<>| ") or name.startswith("."):
        raise ConfigError(f"plot name {name!r} is not a safe file stem; use letters, digits, '-', '_' or '.'")


def _grouped_axes(fig: Any, plot: BarPlot | IntervalPlot) -> tuple[Any, float, list[list[float]]]:
    """The axes of a grouped chart (one group per category, one bar or point per series in it), the bar width and,
    per series, the x position of each category's bar."""
    n_categories, n_series = len(plot.categories), len(plot.series)
    width = 0.8 / n_series
    positions = [[x - 0.4 + width * (k + 0.5) for x in range(n_categories)] for k in range(n_series)]
    return fig.add_subplot(1, 1, 1), width, positions


_BASELINE_STYLES = ((0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))


def _finite(values: Any) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _value_fontsize(n_bars: int) -> tuple[float, int]:
    """Font size and rotation of the values written on bars: smaller and upright-turned when bars are many."""
    if n_bars > 24:
        return 6.0, 90
    return (7.0 if n_bars > 10 else 8.0), 0


def _clear_of_lines(ax: Any, anchor: float, below: bool, label_pt: float, lines: Sequence[float]) -> float:
    """Where a value label `label_pt` points tall goes so that no baseline line runs through its text: `anchor`
    unless a line crosses the band the label takes above it (below it for a negative value); then on the far side
    of that line. Call it once the y limits are set."""
    lo, hi = ax.get_ylim()
    axes_pt = ax.bbox.height * 72.0 / ax.figure.dpi
    if axes_pt <= 0 or hi <= lo or not lines:
        return anchor
    band = 1.5 * (label_pt + 2.0) * (hi - lo) / axes_pt  # in data units, with room for the layout to shrink the axes
    for line in sorted(lines, reverse=below):
        low, high = (anchor - band, anchor + 0.1 * band) if below else (anchor - 0.1 * band, anchor + band)
        if low <= line <= high:
            anchor = line
    return anchor


def _write_values(ax: Any, xs: Sequence[float], ys: Sequence[float], tops: Sequence[float], fmt: str,
                  n_bars: int, lines: Sequence[float] = ()) -> None:
    """Each finite value written just above its bar (below a negative one), above its error bar when it has one,
    and past any baseline `lines` that would run through it. Call it once the y limits are set."""
    size, rotation = _value_fontsize(n_bars)
    for x, y, top in zip(xs, ys, tops, strict=True):
        if not math.isfinite(y):
            continue
        below = y < 0
        label_pt = size * 1.3 if rotation == 0 else size * 0.62 * len(fmt.format(y))
        anchor = _clear_of_lines(ax, top if math.isfinite(top) else y, below, label_pt, lines)
        ax.annotate(fmt.format(y), (x, anchor), xytext=(0, -2 if below else 2), textcoords="offset points",
                    ha="center", va="top" if below else "bottom", fontsize=size, rotation=rotation, zorder=5,
                    bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.75})


def _draw_missing(ax: Any, xs: Sequence[float], ys: Sequence[float], at: float) -> None:
    for x, y in zip(xs, ys, strict=True):
        if math.isnan(y):
            ax.text(x, at, _MISSING, ha="center", va="bottom", fontsize=7, rotation=90, color="0.35")


def _draw_baselines(ax: Any, baselines: Mapping[str, float], fmt: str) -> list[Any]:
    """Each baseline as a labelled horizontal line over the whole chart; returns the legend handles."""
    handles = []
    for i, (label, value) in enumerate(baselines.items()):
        line = ax.axhline(value, color="0.25", linewidth=1.3, linestyle=_BASELINE_STYLES[i % len(_BASELINE_STYLES)],
                          label=f"{label} ({fmt.format(value)})", zorder=3)
        handles.append(line)
    return handles


def _fit_ylim(ax: Any, values: Sequence[float], ylim: tuple[float, float] | None, diverging: bool) -> None:
    """Limits that fit the data with room for the values written on the bars: `ylim` when given (its top raised
    by 8% for the labels), symmetric about 0 for signed bars, 0..1 when there is nothing above 0."""
    finite = _finite(values)
    if ylim is not None:
        lo, hi = ylim
        ax.set_ylim(lo, hi + 0.08 * (hi - lo))
        return
    if diverging:
        m = max((abs(v) for v in finite), default=0.0) or 1.0
        ax.set_ylim(-1.18 * m, 1.18 * m)
        return
    hi = max(finite, default=0.0)
    lo = min(0.0, min(finite, default=0.0))
    if hi <= 0 and lo >= 0:
        hi = 1.0
    ax.set_ylim(lo * 1.18 if lo < 0 else 0.0, hi * 1.18 if hi > 0 else 0.1 * (hi - lo) or 1.0)


def _draw_bars(fig: Any, plot: BarPlot) -> None:
    from matplotlib.patches import Patch

    ax, width, positions = _grouped_axes(fig, plot)
    handles: list[Any] = []
    n_bars = len(plot.series) * len(plot.categories)
    for k, (label, vals) in enumerate(plot.series.items()):
        offsets = positions[k]
        heights = [0.0 if math.isnan(v) else v for v in vals]
        colour = f"C{k % 10}"
        if plot.diverging and len(plot.series) == 1:
            colours: Any = ["#c0392b" if v < 0 else "#2e86c1" for v in heights]
        else:
            colours = colour
        ax.bar(offsets, heights, width=width, color=colours, edgecolor="white", linewidth=0.5, zorder=2)
        handles.append(Patch(facecolor=colour, label=label))
        _draw_missing(ax, offsets, vals, 0.0)
    if plot.diverging:
        ax.axhline(0.0, color="black", linewidth=0.8)
    all_values = [v for vals in plot.series.values() for v in vals] + list(plot.baselines.values())
    _fit_ylim(ax, all_values, plot.ylim, plot.diverging)
    for k, vals in enumerate(plot.series.values()):
        _write_values(ax, positions[k], vals, vals, plot.value_format, n_bars, list(plot.baselines.values()))
    _finish_grouped(ax, plot, handles)


def _crowded(categories: Sequence[str]) -> bool:
    return len(categories) > 6 or (len(categories) > 1 and sum(len(c) for c in categories) > 12 * len(categories))


def _finish_grouped(ax: Any, plot: BarPlot | IntervalPlot, handles: list[Any]) -> None:
    """The baselines, category ticks (slanted when crowded), labels, a legend outside the data (right of the axes:
    the series' `handles` when there is more than one series or any baseline, then the baselines), a light grid
    behind the bars."""
    lines = _draw_baselines(ax, plot.baselines, plot.value_format)
    legend = (handles if len(plot.series) > 1 or lines else []) + lines
    categories = plot.categories
    crowded = _crowded(categories)
    ax.set_xticks(list(range(len(categories))))
    ax.set_xticklabels(categories, rotation=30 if crowded else 0, ha="right" if crowded else "center")
    ax.set_xlim(-0.6, len(categories) - 0.4)
    ax.set_ylabel(plot.ylabel)
    ax.set_title(plot.title)
    if legend:
        ax.legend(handles=legend, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(axis="y", alpha=0.3, zorder=0)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _heatmap_scale(plot: HeatmapPlot, colours: Any) -> tuple[float, float]:
    import numpy as np

    if plot.scale is not None:
        return plot.scale
    finite = colours[np.isfinite(colours)]
    if not finite.size:
        return 0.0, 1.0
    lo, hi = float(finite.min()), float(finite.max())
    if lo >= 0.0 and hi <= 1.0:
        return 0.0, 1.0
    return (lo - 1.0, hi + 1.0) if lo == hi else (lo, hi)


def _draw_heatmap(fig: Any, plot: HeatmapPlot) -> None:
    import numpy as np

    ax = fig.add_subplot(1, 1, 1)
    colours = np.array(plot.colour_values if plot.colour_values is not None else plot.values, dtype=float)
    masked = np.ma.masked_invalid(colours)
    vmin, vmax = _heatmap_scale(plot, colours)
    image = ax.imshow(masked, cmap="Blues", aspect="auto", vmin=vmin, vmax=vmax)
    fig.colorbar(image, ax=ax)
    mid = (vmin + vmax) / 2
    fontsize = 9 if len(plot.col_labels) <= 8 else 7
    for i, row in enumerate(plot.values):
        for j, v in enumerate(row):
            text = _MISSING if math.isnan(v) else plot.value_format.format(v)
            dark = math.isfinite(colours[i, j]) and colours[i, j] > mid
            ax.text(j, i, text, ha="center", va="center", fontsize=fontsize, color="white" if dark else "black")
    ax.set_xticks(range(len(plot.col_labels)))
    ax.set_xticklabels(plot.col_labels, rotation=45, ha="right")
    ax.set_yticks(range(len(plot.row_labels)))
    ax.set_yticklabels(plot.row_labels)
    ax.set_xlabel(plot.xlabel)
    ax.set_ylabel(plot.ylabel)
    ax.set_title(plot.title)


def _draw_intervals(fig: Any, plot: IntervalPlot) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    ax, width, positions = _grouped_axes(fig, plot)
    handles: list[Any] = []
    labels: list[tuple[list[float], list[float], list[float]]] = []  # written once the y limits are set
    n_bars = len(plot.series) * len(plot.categories)
    for k, (label, vals) in enumerate(plot.series.items()):
        offsets = positions[k]
        lows, highs = plot.low[label], plot.high[label]
        shown = [i for i, v in enumerate(vals) if not math.isnan(v)]
        ys = [vals[i] for i in shown]
        err = [[max(0.0, vals[i] - lows[i]) if not math.isnan(lows[i]) else 0.0 for i in shown],
               [max(0.0, highs[i] - vals[i]) if not math.isnan(highs[i]) else 0.0 for i in shown]]
        xs_shown = [offsets[i] for i in shown]
        colour = f"C{k % 10}"  # fixed per series, also when a series has nothing to draw
        if plot.style == "bar":
            ax.bar(xs_shown, ys, width=width, yerr=err, capsize=3, ecolor="black", color=colour, edgecolor="white",
                   linewidth=0.5, zorder=2, error_kw={"zorder": 4, "linewidth": 1})
            handles.append(Patch(facecolor=colour, label=label))
        else:
            ax.errorbar(xs_shown, ys, yerr=err, fmt="o", capsize=4, color=colour, zorder=4)
            handles.append(Line2D([], [], marker="o", linestyle="none", color=colour, label=label))
        tops = [highs[i] if not math.isnan(highs[i]) else vals[i] for i in shown]
        bottoms = [lows[i] if not math.isnan(lows[i]) else vals[i] for i in shown]
        labels.append((xs_shown, ys, [b if y < 0 else t for y, t, b in zip(ys, tops, bottoms, strict=True)]))
        _draw_missing(ax, offsets, vals, plot.reference or 0.0)
    if plot.reference is not None:
        ax.axhline(plot.reference, color="black", linewidth=0.8)
    bounds = [v for d in (plot.series, plot.low, plot.high) for vals in d.values() for v in vals]
    _fit_ylim(ax, [*bounds, *plot.baselines.values()], plot.ylim, plot.style == "point" and plot.reference == 0.0)
    for xs_shown, ys, anchors in labels:
        _write_values(ax, xs_shown, ys, anchors, plot.value_format, n_bars, list(plot.baselines.values()))
    _finish_grouped(ax, plot, handles)


def _draw_reliability(fig: Any, plot: ReliabilityPlot) -> None:
    ax, counts_ax = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8, label="calibrated")
    n_series = len(plot.series)
    for k, (label, bins) in enumerate(plot.series.items()):
        full = [b for b in bins if b["count"]]
        colour = f"C{k % 10}"
        ax.plot([b["mean_confidence"] for b in full], [b["accuracy"] for b in full], marker="o", label=label,
                color=colour)
        width = 1.0 / max(1, len(bins)) / n_series
        counts_ax.bar([b["low"] + width * (k + 0.5) for b in bins], [b["count"] for b in bins], width=width,
                      label=label, color=colour)
    ax.set_xlim(0.0, 1.0)
    ax.set_ylim(0.0, 1.0)
    ax.set_ylabel("accuracy")
    ax.set_title(plot.title)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.grid(alpha=0.3)
    ax.tick_params(labelbottom=False)
    counts_ax.set_xlabel("confidence of the predicted label")
    counts_ax.set_ylabel("items")
    counts_ax.grid(axis="y", alpha=0.3)


# -- fonts: every script the data has -------------------------------------------------------------------------------

FONT_DIR = Path(__file__).resolve().parents[1] / "data" / "fonts"
"""The packaged fonts (Noto Sans CJK SC subset, Devanagari, Arabic, Thai, Khmer, Ethiopic, Vai; SIL OFL 1.1, see
NOTICE.md)."""

FONT_FAMILIES = ("DejaVu Sans", "Noto Sans CJK SC", "Noto Sans Devanagari", "Noto Sans Arabic", "Noto Sans Thai",
                 "Noto Sans Khmer", "Noto Sans Ethiopic", "Noto Sans Vai")
"""matplotlib's font.family for every plot: DejaVu Sans first, then the packaged fonts it falls back on, glyph by
glyph, for the scripts DejaVu Sans lacks."""

_fonts_added: set[str] = set()


class MissingGlyphWarning(UserWarning):
    """A plot drew a character that no font of `FONT_FAMILIES` has (it shows as a box)."""


def plot_fonts() -> list[str]:
    """Register the packaged fonts with matplotlib (once per process) and return the font family list to draw with
    (``matplotlib.rcParams["font.family"]``); the notebook's plots use it too."""
    from matplotlib import font_manager

    for path in sorted(FONT_DIR.glob("*.[ot]tf")):
        if str(path) not in _fonts_added:
            font_manager.fontManager.addfont(str(path))
            _fonts_added.add(str(path))
    return list(FONT_FAMILIES)


def plot_style() -> Any:
    """A context manager that draws with the reports' fonts (`plot_fonts`), e.g. around a notebook's pyplot
    calls: ``with plot_style(): plt.bar(...)``. The previous settings come back on exit."""
    import matplotlib

    return matplotlib.rc_context({"font.family": plot_fonts(), "axes.unicode_minus": False})


def render_png(plot: Plot) -> bytes:
    """Draw one plot on a private Agg canvas and return the PNG bytes.

    A character no packaged font has is reported once per plot as a `MissingGlyphWarning` naming the plot (the
    plot tests turn it into a failure)."""
    require("matplotlib", "reports", "PNG report plots")
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with plot_style(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if isinstance(plot, IntervalPlot | BarPlot):
            legend = 2.2 if len(plot.series) > 1 or plot.baselines else 0.0
            width = max(6.0, 0.32 * len(plot.categories) * max(1, len(plot.series)) + 2.5) + legend
            fig = Figure(figsize=(min(width, 22.0), 4.8), dpi=100)
            FigureCanvasAgg(fig)
            if isinstance(plot, IntervalPlot):
                _draw_intervals(fig, plot)
            else:
                _draw_bars(fig, plot)
        elif isinstance(plot, ReliabilityPlot):
            fig = Figure(figsize=(8.0, 6.5), dpi=100)
            FigureCanvasAgg(fig)
            _draw_reliability(fig, plot)
        else:
            side = max(5.0, 0.45 * max(len(plot.col_labels), len(plot.row_labels)) + 2.5)
            fig = Figure(figsize=(min(side + 1, 20.0), min(side, 20.0)), dpi=100)
            FigureCanvasAgg(fig)
            _draw_heatmap(fig, plot)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight", pad_inches=0.15)
    missing = sorted({str(w.message) for w in caught if "missing from font" in str(w.message)})
    for w in caught:
        if "missing from font" not in str(w.message) and "tight_layout" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if missing:
        warnings.warn(f"plot {plot.name!r}: {len(missing)} characters have no glyph in the packaged fonts "
                      f"(they show as boxes): {'; '.join(missing[:5])}", MissingGlyphWarning, stacklevel=2)
    return buf.getvalue()
