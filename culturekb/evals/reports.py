"""Report writers: one call writes `<name>.json` (machines), `<name>.md` (people) and PNG plots.

    write_report(out_dir, "cedar", data=results,
                 tables={"accuracy": Table.from_nested("Accuracy per language", acc_by_setting, row_label="setting")},
                 plots=[BarPlot.from_nested("accuracy", "Accuracy per language", acc_by_setting),
                        HeatmapPlot.from_confusion("confusion-know", "Confusion (know)", cm)])

JSON keeps full precision with NaN/inf written as ``null``; Markdown rounds floats to each table's
`precision` and shows missing values as ``n/a``. Plots need the ``reports`` extra (matplotlib); they are drawn
on an explicit Agg canvas, so the caller's pyplot backend and global state are never touched. Every file is
written atomically (temporary file + rename).

The plot types and their one renderer live in `culturekb.evals.plots` (re-exported here).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb._io import atomic_write_bytes, atomic_write_json, atomic_write_text
from culturekb._tables import MISSING, WIDE_COLUMNS, format_cell, markdown_table
from culturekb.errors import ConfigError, require
from culturekb.evals.plots import (
    FONT_DIR,
    FONT_FAMILIES,
    BarPlot,
    HeatmapPlot,
    IntervalPlot,
    MissingGlyphWarning,
    Plot,
    ReliabilityPlot,
    check_plot_name,
    plot_fonts,
    plot_style,
    render_png,
)

__all__ = [
    "WIDE_COLUMNS",
    "FONT_DIR",
    "FONT_FAMILIES",
    "RUN_FIELDS",
    "BarPlot",
    "Cell",
    "HeatmapPlot",
    "IntervalPlot",
    "MissingGlyphWarning",
    "ReliabilityPlot",
    "Plot",
    "ReportFiles",
    "Table",
    "base_run_header",
    "calibration_text",
    "check_run_header",
    "interval_text",
    "plot_fonts",
    "plot_style",
    "render_markdown_table",
    "to_jsonable",
    "valid_accuracy_text",
    "write_report",
]

logger = logging.getLogger(__name__)

Cell = str | int | float | bool | None
"""A table cell: text or a number; None and NaN render as 'n/a'."""

_MISSING = MISSING


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
    return format_cell(value, precision)


def render_markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table (no title); numbers right-aligned, '|' in text escaped. A table wider than
    `WIDE_COLUMNS` with fewer rows than columns is transposed (its first column's cells become the headers): the
    one renderer, `culturekb._tables.markdown_table`."""
    return markdown_table(table.columns, table.rows, table.precision)


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


RUN_FIELDS = ("model", "judge", "baseline", "KB", "KB calibration", "prompt languages", "images sent",
              "unread answers")
"""What every run report opens with ("What was run"), in this order; a runner may add fields after them."""


def check_run_header(header: Mapping[str, Any]) -> dict[str, str]:
    """The "What was run" fields as text, `RUN_FIELDS` first; refuses a missing or empty field, so a report never
    leaves out what was run (a field that does not apply says so and why: "none (the offline run calls no model)")."""
    missing = [f for f in RUN_FIELDS if f not in header or header[f] is None or not str(header[f]).strip()]
    if missing:
        raise ConfigError(f"the report's 'What was run' header lacks {missing}; give each field a value, or 'none "
                          "(why)' when it does not apply")
    out = {f: str(header[f]) for f in RUN_FIELDS}
    out.update({str(k): str(v) for k, v in header.items() if k not in out and v is not None})
    return out


def base_run_header(runner: Any) -> dict[str, str]:
    """The "What was run" fields any runner can give from its attributes (`Runner.run_header` starts from these):
    the model (its client's id, else its predictor's), the KB and the retriever's concept filter, the prompt
    languages and unread answers of its predictions; judge, baseline and images say that the runner does not
    record them until the runner fills them in."""
    client, predictor = getattr(runner, "client", None), getattr(runner, "predictor", None)
    model = getattr(client, "id", None) or getattr(predictor, "id", None)
    retriever = getattr(runner, "retriever", None)
    kb = getattr(retriever, "kb", None) or getattr(runner, "kb", None)
    kb_version = getattr(runner, "kb_version", None) or getattr(kb, "version", None)
    kb_path = getattr(kb, "path", None)
    tf = getattr(retriever, "tuple_filter", None)
    unread = getattr(runner, "unread_answers", None) or {}
    answers: dict[str, int] = {}
    for row in unread.get("by_setting", []):
        lang = row.get("prompt_language") or "each item's own"
        answers[lang] = answers.get(lang, 0) + int(row.get("answers", 0))
    return {
        "model": str(model) if model else "none (no model or predictor was given)",
        "judge": "none (answers are compared with the gold answer)",
        "baseline": "none (this runner draws no baseline)",
        "KB": f"{kb_version}" + (f" ({kb_path})" if kb_path else "") if kb_version else "none (the run used no KB)",
        "KB calibration": (f"concept filter min_support={tf.min_support}, min_informativeness="
                           f"{tf.min_informativeness:g}, status={tf.status} (the KB's calibration.json when it has "
                           "one)") if tf is not None else
                          ("none (no retriever: the run looked nothing up)" if not kb_version else
                           "not recorded by this runner"),
        "prompt languages": ", ".join(f"{k} ({n} answers)" for k, n in answers.items()) or
                            "none recorded (no answers)",
        "images sent": "not recorded by this runner",
        "unread answers": (f"{unread.get('unread', 0)} of {unread.get('answers', 0)} answers unread (the parser "
                           f"read no label); {unread.get('failed', 0)} calls failed") if unread else
                          "none recorded (the run kept no answers)",
    }


def calibration_text(calibration: Mapping[str, Any] | None, what: str = "the kb-prior") -> str:
    """One line for a calibration record (`culturekb.kb.calibration.Calibration` as a dict): where it was chosen
    and its weights; 'none (why)' without one."""
    if not calibration:
        return f"none ({what} ran with its default weights: no calibration.json and no valid split to fit one)"
    weights = ", ".join(f"{k}={calibration[k]}" for k in ("min_support", "min_informativeness", "alpha", "beta",
                                                            "gamma", "pool") if k in calibration)
    source = str(calibration.get("source") or "calibration.json")
    return f"{source}" + (f" ({calibration['method']})" if calibration.get("method") else "") + f": {weights}"


def valid_accuracy_text(calibration: Mapping[str, Any], key: str = "accuracy") -> str:
    """A calibration's valid-split accuracy (`key` of its ``valid`` record: ``accuracy`` or ``prior_accuracy``)
    with its 95% Wilson interval and n, the valid samples it was measured on (``fitted_on.samples``)."""
    value = (calibration.get("valid") or {}).get(key)
    n = int((calibration.get("fitted_on") or {}).get("samples") or 0)
    if value is None:
        return f"{_MISSING} (no valid split)" if not n else f"{_MISSING} (not recorded)"
    if not n:
        return f"{float(value):.3f} (n not recorded)"
    return interval_text(float(value), n)


def interval_text(estimate: float | None, n: int, low: float | None = None, high: float | None = None,
                  precision: int = 3) -> str:
    """An estimate with its 95% interval and n, for a Markdown cell: ``0.250 [0.112, 0.469] n=20``. Without bounds
    the interval is Wilson's for a proportion (`metrics.wilson_interval`, from estimate x n); with n = 0 or no
    estimate, ``n/a (no items)``."""
    from culturekb.evals.metrics import wilson_interval

    if estimate is None or not math.isfinite(estimate) or n <= 0:
        return f"{_MISSING} (no items)" if n <= 0 else f"{_MISSING} (n={n})"
    if low is None or high is None:
        low, high = wilson_interval(max(0, min(n, round(estimate * n))), n)
    return f"{estimate:.{precision}f} [{low:.{precision}f}, {high:.{precision}f}] n={n}"


def _summary_lines(data: Mapping[str, Any]) -> list[str]:
    lines = []
    for key, value in data.items():  # None: a section this run did not compute (the JSON keeps it as null)
        if isinstance(value, str | int | float | bool):
            lines.append(f"- **{key}**: {_format_cell(value, 4)}")
    return lines


def _report_json(data: Mapping[str, Any], run: Mapping[str, str] | None) -> dict[str, Any]:
    """The report's JSON object: ``run`` first with its fields in `RUN_FIELDS` order (as `check_run_header` gives
    them), then the data with every mapping's keys sorted, so equal results give identical files."""
    body = json.loads(json.dumps(to_jsonable(data), sort_keys=True, allow_nan=False))
    return {"run": dict(run), **body} if run is not None else body


def write_report(
    out_dir: str | Path,
    name: str,
    data: Mapping[str, Any],
    tables: Mapping[str, Table] | None = None,
    plots: Sequence[Plot] | None = None,
    header: Mapping[str, Any] | None = None,
) -> ReportFiles:
    """Write `<name>.json` (the data), `<name>.md` (what was run, scalar summary, tables, links to plots) and
    `<name>-<plot.name>.png` per plot into `out_dir`; return the paths.

    `header`: what was run (`RUN_FIELDS`, checked by `check_run_header`); both files open with it (the JSON's first
    key ``run``, the Markdown's first section "What was run"). The matplotlib check runs first, so a missing
    ``reports`` extra fails before any file is written.
    """
    check_plot_name(name)
    run = check_run_header(header) if header is not None else None
    if run is not None and "run" in data:
        raise ConfigError(f"report {name!r}: the data has a key 'run', which the 'What was run' header takes; "
                          "rename it")
    tables = dict(tables or {})
    plots = list(plots or [])
    names = [p.name for p in plots]
    if len(set(names)) != len(names):
        raise ConfigError(f"report {name!r}: plot names repeat ({names}); give each plot its own name")
    if plots:
        require("matplotlib", "reports", "PNG report plots")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    payload = _report_json(data, run)

    images: list[Path] = []
    for plot in plots:
        path = out / f"{name}-{plot.name}.png"
        atomic_write_bytes(path, render_png(plot))
        images.append(path)

    md = [f"# {name}", ""]
    if run is not None:
        md += ["## What was run", "", render_markdown_table(Table("What was run", ["", "value"],
                                                                   [[k, v] for k, v in run.items()]))]
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
    atomic_write_json(json_path, payload, sort_keys=False)
    atomic_write_text(md_path, "\n".join(md).rstrip("\n") + "\n")
    logger.info("wrote report %s (%d tables, %d plots) to %s", name, len(tables), len(plots), out)
    return ReportFiles(json_path, md_path, tuple(images))
