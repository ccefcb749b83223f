"""Markdown tables, the one renderer of every report (run reports, the build report, `culturekb inspect`).

`markdown_table` writes a GitHub-flavoured table: numbers right-aligned, ``|`` in text escaped, None and NaN as
``n/a``. A table wider than `WIDE_COLUMNS` with fewer rows than columns (a wide label set: one column per label of a
323-label scheme) is written on its side, one row per column, so that its width is that of its rows, never that of
the scheme.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

__all__ = ["MISSING", "WIDE_COLUMNS", "format_cell", "markdown_table"]

MISSING = "n/a"
WIDE_COLUMNS = 16
"""A table with more columns than this (a wide label set: one column per label) is written turned on its side:
one row per column, so its width is that of its rows, never that of the scheme."""


def format_cell(value: Any, precision: int = 4) -> str:
    """A cell as text: None and NaN as ``n/a``, booleans as yes/no, floats to `precision` places, ``|`` escaped and
    line breaks made spaces."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return MISSING
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{precision}f}"
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.splitlines())


def markdown_table(columns: Sequence[Any], rows: Sequence[Sequence[Any]], precision: int = 4) -> str:
    """The table as Markdown lines ending in a newline; transposed when wider than `WIDE_COLUMNS` with fewer rows
    than columns (its first column's cells become the headers)."""
    if len(columns) > WIDE_COLUMNS and len(rows) < len(columns) - 1:
        columns, rows = ([columns[0], *(str(r[0]) for r in rows)],
                         [[col, *(r[j] for r in rows)] for j, col in enumerate(columns) if j > 0])
    numeric = [
        bool(rows) and all(isinstance(r[j], int | float) and not isinstance(r[j], bool) or r[j] is None for r in rows)
        for j in range(len(columns))
    ]
    header = "| " + " | ".join(format_cell(c, precision) for c in columns) + " |"
    rule = "|" + "|".join("---:" if n else "---" for n in numeric) + "|"
    body = ["| " + " | ".join(format_cell(c, precision) for c in row) + " |" for row in rows]
    return "\n".join([header, rule, *body]) + "\n"
