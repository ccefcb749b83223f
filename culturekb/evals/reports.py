"""Report writers: one call writes `<name>.json` (machines), `<name>.md` (people) and PNG plots.

    write_report(out_dir, "cedar", data=results,
                 tables={"accuracy": Table.from_nested("Accuracy per language", acc_by_setting, row_label="setting")},
                 plots=[BarPlot.from_nested("accuracy", "Accuracy per language", acc_by_setting),
                        HeatmapPlot.from_confusion("confusion-know", "Confusion (know)", cm)])

JSON keeps full precision with NaN/inf written as ``null``; Markdown rounds floats to each table's
`precision` and shows missing values as ``n/a``. Plots need the ``reports`` extra (matplotlib); they are drawn
on an explicit Agg canvas, so the caller's pyplot backend and global state are never touched. Every file is
written atomically (temporary file + rename).

(Why one module over 500 lines: every plot type is a small frozen record plus its drawing function, and the
report writer dispatches on them; keeping the types beside the one renderer keeps a report's look in one place.)
"""

from __future__ import annotations

import dataclasses
import io
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb._io import atomic_write_bytes, atomic_write_json, atomic_write_text
from culturekb.errors import ConfigError, require
from culturekb.evals.metrics import ConfusionMatrix

__all__ = [
    "BarPlot",
    "Cell",
    "HeatmapPlot",
    "IntervalPlot",
    "ReliabilityPlot",
    "Plot",
    "ReportFiles",
    "Table",
    "render_markdown_table",
    "to_jsonable",
    "write_report",
]

logger = logging.getLogger(__name__)

Cell = str | int | float | bool | None
"""A table cell: text or a number; None and NaN render as 'n/a'."""

_MISSING = "n/a"


def _as_tuple(value: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(value)


@dataclass(frozen=True)
class Table:
    """A titled table: column names and rows of cells (each row as long as `columns`)."""

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[Cell]]
    precision: int = 4
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _as_tuple(self.columns))
        object.__setattr__(self, "rows", tuple(_as_tuple(r) for r in self.rows))
        if not self.columns:
            raise ConfigError(f"table {self.title!r} has no columns; give at least one column name")
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ConfigError(
                    f"table {self.title!r}: row {i} has {len(row)} cells but there are {len(self.columns)} columns "
                    f"{list(self.columns)}"
                )

    @classmethod
    def from_nested(
        cls,
        title: str,
        nested: Mapping[Any, Mapping[Any, Cell]],
        *,
        row_label: str = "",
        columns: Sequence[Any] | None = None,
        precision: int = 4,
        note: str = "",
    ) -> Table:
        """Rows from the outer keys, columns from the inner keys (first-seen order unless `columns` is given).

        A missing cell is None ('n/a'). Suits the outputs of `accuracy_grid` and the `*_by_group` metrics.
        """
        if columns is None:
            seen: dict[Any, None] = {}
            for inner in nested.values():
                seen.update(dict.fromkeys(inner))
            columns = list(seen)
        rows = [[str(r), *(inner.get(c) for c in columns)] for r, inner in nested.items()]
        return cls(title, [row_label, *(str(c) for c in columns)], rows, precision=precision, note=note)

    @classmethod
    def from_mapping(
        cls, title: str, mapping: Mapping[Any, Cell], *, key: str = "", value: str = "value", precision: int = 4,
        note: str = "",
    ) -> Table:
        """A two-column table from a flat mapping (e.g. accuracy per culture)."""
        return cls(title, [key, value], [[str(k), v] for k, v in mapping.items()], precision=precision, note=note)

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the table."""
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows],
                "note": self.note}


def _format_cell(value: Cell, precision: int) -> str:
    if value is None:
        return _MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return _MISSING
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{precision}f}"
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.splitlines())


WIDE_COLUMNS = 16
"""A table with more columns than this (a wide label set: one column per label) is written turned on its side:
one row per column, so its width is that of its rows, never that of the scheme."""


def render_markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table (no title); numbers right-aligned, '|' in text escaped. A table wider than
    `WIDE_COLUMNS` with fewer rows than columns is transposed (its first column's cells become the headers)."""
    if len(table.columns) > WIDE_COLUMNS and len(table.rows) < len(table.columns) - 1:
        table = Table(table.title, [table.columns[0], *(str(r[0]) for r in table.rows)],
                      [[col, *(r[j] for r in table.rows)] for j, col in enumerate(table.columns) if j > 0],
                      table.precision, table.note)
    numeric = [
        bool(table.rows) and all(isinstance(r[j], int | float) and not isinstance(r[j], bool) or r[j] is None
                                 for r in table.rows)
        for j in range(len(table.columns))
    ]
    header = "| " + " | ".join(_format_cell(c, table.precision) for c in table.columns) + " |"
    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
    body = ["| " + " | ".join(_format_cell(c, table.precision) for c in row) + " |" for row in table.rows]
    return "\n".join([header, rule, *body]) + "\n"


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(str(c) for c in self.categories))
        object.__setattr__(self, "series", {str(k): tuple(float("nan") if v is None else float(v) for v in vals)
                                            for k, vals in self.series.items()})
        _check_plot_name(self.name)
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_labels", tuple(str(r) for r in self.row_labels))
        object.__setattr__(self, "col_labels", tuple(str(c) for c in self.col_labels))
        object.__setattr__(self, "values", tuple(tuple(_nan_if_none(v) for v in row) for row in self.values))
        if self.colour_values is not None:
            object.__setattr__(self, "colour_values",
                               tuple(tuple(_nan_if_none(v) for v in row) for row in self.colour_values))
        _check_plot_name(self.name)
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(str(c) for c in self.categories))
        for attr in ("series", "low", "high"):
            object.__setattr__(self, attr, {str(k): tuple(_nan_if_none(v) for v in vals)
                                            for k, vals in getattr(self, attr).items()})
        _check_plot_name(self.name)
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
        _check_plot_name(self.name)
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


def _check_plot_name(name: str) -> None:
    if not name or any(ch in name for ch in "/\\:*?\"<>| ") or name.startswith("."):
        raise ConfigError(f"plot name {name!r} is not a safe file stem; use letters, digits, '-', '_' or '.'")


def _grouped(n_categories: int, n_series: int) -> tuple[float, list[list[float]]]:
    """Bar width and, per series, the x position of each category's bar in a grouped bar chart."""
    width = 0.8 / n_series
    return width, [[x - 0.4 + width * (k + 0.5) for x in range(n_categories)] for k in range(n_series)]


def _draw_bars(fig: Any, plot: BarPlot) -> None:
    ax = fig.add_subplot(1, 1, 1)
    n_series = len(plot.series)
    width, positions = _grouped(len(plot.categories), n_series)
    for k, (label, vals) in enumerate(plot.series.items()):
        offsets = positions[k]
        heights = [0.0 if math.isnan(v) else v for v in vals]
        if plot.diverging:
            colours = ["#c0392b" if v < 0 else "#2e86c1" for v in heights]
            ax.bar(offsets, heights, width=width, label=label, color=colours if n_series == 1 else None)
        else:
            ax.bar(offsets, heights, width=width, label=label)
        for x, v in zip(offsets, vals, strict=True):
            if math.isnan(v):
                ax.text(x, 0, _MISSING, ha="center", va="bottom", fontsize=7, rotation=90)
    if plot.diverging:
        ax.axhline(0.0, color="black", linewidth=0.8)
    _finish_category_axes(ax, plot.categories, len(plot.categories) > 6, plot.ylabel, plot.title, plot.ylim, n_series)


def _finish_category_axes(ax: Any, categories: Sequence[str], crowded: bool, ylabel: str, title: str,
                          ylim: tuple[float, float] | None, n_series: int) -> None:
    """Category ticks (slanted when `crowded`), labels, limits, a legend for several series, a light grid."""
    ax.set_xticks(list(range(len(categories))))
    ax.set_xticklabels(categories, rotation=30 if crowded else 0, ha="right" if crowded else "center")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if n_series > 1:
        ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _draw_heatmap(fig: Any, plot: HeatmapPlot) -> None:
    import numpy as np

    ax = fig.add_subplot(1, 1, 1)
    colours = np.array(plot.colour_values if plot.colour_values is not None else plot.values, dtype=float)
    masked = np.ma.masked_invalid(colours)
    image = ax.imshow(masked, cmap="Blues", aspect="auto")
    fig.colorbar(image, ax=ax)
    finite = colours[np.isfinite(colours)]
    mid = (float(finite.min()) + float(finite.max())) / 2 if finite.size else 0.0
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
    ax = fig.add_subplot(1, 1, 1)
    n_series = len(plot.series)
    width, positions = _grouped(len(plot.categories), n_series)
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
            ax.bar(xs_shown, ys, width=width, label=label, yerr=err, capsize=3, ecolor="black", color=colour)
        else:
            ax.errorbar(xs_shown, ys, yerr=err, fmt="o", capsize=4, label=label, color=colour)
        for i, v in enumerate(vals):
            if math.isnan(v):
                ax.text(offsets[i], plot.reference or 0.0, _MISSING, ha="center", va="bottom", fontsize=7,
                        rotation=90)
    if plot.reference is not None:
        ax.axhline(plot.reference, color="black", linewidth=0.8, linestyle="--")
    crowded = len(plot.categories) > 5 or sum(len(c) for c in plot.categories) > 8 * len(plot.categories)
    _finish_category_axes(ax, plot.categories, crowded, plot.ylabel, plot.title, plot.ylim, n_series)


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
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    ax.tick_params(labelbottom=False)
    counts_ax.set_xlabel("confidence of the predicted label")
    counts_ax.set_ylabel("items")
    counts_ax.grid(axis="y", alpha=0.3)


def _render_png(plot: Plot) -> bytes:
    """Draw one plot on a private Agg canvas and return the PNG bytes."""
    require("matplotlib", "reports", "PNG report plots")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if isinstance(plot, IntervalPlot):
        width = max(6.0, 0.5 * len(plot.categories) * max(1, len(plot.series)) + 2)
        fig = Figure(figsize=(min(width, 20.0), 4.5), dpi=100)
        FigureCanvasAgg(fig)
        _draw_intervals(fig, plot)
    elif isinstance(plot, ReliabilityPlot):
        fig = Figure(figsize=(6.0, 6.5), dpi=100)
        FigureCanvasAgg(fig)
        _draw_reliability(fig, plot)
    elif isinstance(plot, BarPlot):
        width = max(6.0, 0.5 * len(plot.categories) * max(1, len(plot.series)) + 2)
        fig = Figure(figsize=(min(width, 20.0), 4.5), dpi=100)
        FigureCanvasAgg(fig)
        _draw_bars(fig, plot)
    else:
        side = max(5.0, 0.45 * max(len(plot.col_labels), len(plot.row_labels)) + 2.5)
        fig = Figure(figsize=(min(side + 1, 20.0), min(side, 20.0)), dpi=100)
        FigureCanvasAgg(fig)
        _draw_heatmap(fig, plot)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


# -- JSON and the report --------------------------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """A JSON-safe copy: NaN/inf -> None, tuples/sets -> lists, non-str keys -> str, dataclasses and pydantic
    models -> dicts, paths -> str."""
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, set | frozenset):
        return [to_jsonable(v) for v in sorted(obj, key=str)]
    if isinstance(obj, Path):
        return str(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        to_dict = getattr(obj, "to_dict", None)
        return to_jsonable(to_dict() if callable(to_dict) else dataclasses.asdict(obj))
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        return to_jsonable(model_dump(mode="json"))
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return to_jsonable(obj.item())
    if hasattr(obj, "tolist") and callable(obj.tolist):  # numpy arrays
        return to_jsonable(obj.tolist())
    raise ConfigError(f"report data holds a {type(obj).__name__} ({obj!r:.80}), which cannot be written as JSON; "
                      "convert it to numbers, strings, lists or dicts")


@dataclass(frozen=True)
class ReportFiles:
    """The paths `write_report` wrote."""

    json: Path
    markdown: Path
    images: tuple[Path, ...] = field(default_factory=tuple)

    def all(self) -> list[Path]:
        """Every written file: the JSON, the Markdown and the images."""
        return [self.json, self.markdown, *self.images]


def _summary_lines(data: Mapping[str, Any]) -> list[str]:
    lines = []
    for key, value in data.items():
        if isinstance(value, str | int | float | bool) or value is None:
            lines.append(f"- **{key}**: {_format_cell(value, 4)}")
    return lines


def write_report(
    out_dir: str | Path,
    name: str,
    data: Mapping[str, Any],
    tables: Mapping[str, Table] | None = None,
    plots: Sequence[Plot] | None = None,
) -> ReportFiles:
    """Write `<name>.json` (the data), `<name>.md` (scalar summary, tables, links to plots) and
    `<name>-<plot.name>.png` per plot into `out_dir`; return the paths.

    The matplotlib check runs first, so a missing ``reports`` extra fails before any file is written.
    """
    _check_plot_name(name)
    tables = dict(tables or {})
    plots = list(plots or [])
    names = [p.name for p in plots]
    if len(set(names)) != len(names):
        raise ConfigError(f"report {name!r}: plot names repeat ({names}); give each plot its own name")
    if plots:
        require("matplotlib", "reports", "PNG report plots")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = to_jsonable(data)

    images: list[Path] = []
    for plot in plots:
        path = out / f"{name}-{plot.name}.png"
        atomic_write_bytes(path, _render_png(plot))
        images.append(path)

    md = [f"# {name}", ""]
    summary = _summary_lines(data)
    if summary:
        md += [*summary, ""]
    for key, table in tables.items():
        md += [f"## {table.title or key}", "", render_markdown_table(table)]
        if table.note:
            md += [table.note, ""]
    if plots:
        md += ["## Plots", ""]
        for plot, path in zip(plots, images, strict=True):
            md += [f"![{plot.title}]({path.name})", ""]
    json_path, md_path = out / f"{name}.json", out / f"{name}.md"
    atomic_write_json(json_path, payload)
    atomic_write_text(md_path, "\n".join(md).rstrip("\n") + "\n")
    logger.info("wrote report %s (%d tables, %d plots) to %s", name, len(tables), len(plots), out)
    return ReportFiles(json_path, md_path, tuple(images))
