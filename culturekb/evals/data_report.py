"""The "Data read" table of a run report: what loading the data did (files, field map, defaults, skipped rows)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from culturekb.evals.reports import Table

__all__ = ["data_tables"]


def data_tables(load: Mapping[str, Any] | None) -> dict[str, Table]:
    """The data a run read, as a table: files, field map, items, defaults filled, rows skipped, rows aggregated,
    notes (`culturekb._records.LoadReport`); none without a load report."""
    if not load:
        return {}
    files = load.get("files") or []
    rows: list[list[Any]] = [
        ["files", f"{len(files)}: " + ", ".join(Path(f).name for f in files[:5]) + (" ..." if len(files) > 5 else "")],
        ["records read", load.get("items", 0)],
        ["field map", f"{load['field_map']} ({load.get('release', '')})" if load.get("field_map") else "none"],
        ["defaults filled", ", ".join(f"{k}: {v}" for k, v in sorted(load.get("defaults_filled", {}).items()))
         or "none"],
        ["rows skipped (--on-bad-row skip)", len(load.get("skipped_rows") or [])],
        ["rows aggregated", load.get("aggregated_rows", 0)],
    ]
    rows += [["skipped", f"{s['where']}: {s['problem']}"] for s in (load.get("skipped_rows") or [])[:10]]
    rows += [["note", n] for n in (load.get("notes") or [])[:10]]
    return {"data": Table("Data read", ["what", "value"], rows)}
