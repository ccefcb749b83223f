"""The human review queue: export flagged tuples (CSV or JSONL), import the reviewers' decisions."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from culturekb._io import atomic_write_text, read_jsonl, read_text_utf8
from culturekb.errors import DataError
from culturekb.kb.loaders import csv_error_message
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.store import KnowledgeBase

__all__ = ["DECISIONS", "export_review_queue", "import_review_decisions", "ReviewSummary"]

DECISIONS = ("approve", "reject", "relabel", "")
"""approve: keep as is; reject: remove from the KB; relabel: set `corrected_label`; empty: still undecided."""

FIELDS = ["tuple_id", "concept", "culture", "label", "support", "distribution", "rationales", "verdicts",
          "status", "decision", "corrected_label", "reviewer", "note"]


def _row(t: KnowledgeTuple) -> dict[str, Any]:
    return {
        "tuple_id": t.id,
        "concept": t.concept,
        "culture": t.culture,
        "label": t.label,
        "support": t.support,
        "distribution": json.dumps({k: round(v, 4) for k, v in t.distribution.items() if v > 0}, ensure_ascii=False),
        "rationales": json.dumps(t.rationales, ensure_ascii=False),
        "verdicts": json.dumps([f"{v.judge}: {v.label} ({'agrees' if v.agrees else 'disagrees'})" for v in t.verdicts],
                               ensure_ascii=False),
        "status": t.status,
        "decision": "",
        "corrected_label": "",
        "reviewer": "",
        "note": "",
    }


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""Leading characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection)."""


def csv_safe(value: Any) -> Any:
    """A CSV cell that a spreadsheet shows as text: a string starting with = + - @ tab or CR gets a leading ``'``
    (OWASP's advice against CSV formula injection); other values are returned as they are."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_unsafe(value: str) -> str:
    """The cell `csv_safe` was given: the ``'`` it added before a formula character removed."""
    if value.startswith("'") and value[1:].startswith(_FORMULA_START):
        return value[1:]
    return value


def export_review_queue(kb: KnowledgeBase, path: str | Path, include_all_flagged: bool = False) -> int:
    """Write the pending tuples (or every flagged one) for review; the format follows the suffix (.csv/.jsonl)."""
    path = Path(path)
    rows = [_row(t) for t in kb.tuples if t.status == "pending" or (include_all_flagged and t.flagged)]
    if path.suffix == ".jsonl":
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif path.suffix == ".csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS)
        w.writeheader()
        w.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)
        atomic_write_text(path, buf.getvalue())
    else:
        raise DataError(f"{path}: review queue must end in .csv or .jsonl")
    return len(rows)


class ReviewSummary(dict[str, int]):
    """Counts of approved, rejected, relabelled and undecided rows."""


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DataError(f"review file {path} does not exist")
    if path.suffix == ".jsonl":
        return list(enumerate(read_jsonl(path), start=1))
    if path.suffix != ".csv":
        raise DataError(f"{path}: review decisions must be a .csv or .jsonl file")
    text = read_text_utf8(path)
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, dict[str, Any]]] = []
    start = 1
    try:
        missing = {"tuple_id", "decision"} - set(reader.fieldnames or [])
        if missing:
            raise DataError(f"{path}: missing column(s) {sorted(missing)}; export a queue with "
                            "`culturekb review export`")
        start = reader.line_num + 1
        for row in reader:
            rows.append((start, {k: csv_unsafe(v) if isinstance(v, str) else v for k, v in row.items()}))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DataError(csv_error_message(path, exc, start, reader.line_num)) from exc
    return rows


def import_review_decisions(kb: KnowledgeBase, path: str | Path) -> tuple[KnowledgeBase, ReviewSummary]:
    """Apply human decisions; every row is checked before anything changes (all or nothing)."""
    path = Path(path)
    by_id = {t.id: t for t in kb.tuples}
    updates: dict[str, KnowledgeTuple | None] = {}
    summary = ReviewSummary(approved=0, rejected=0, relabelled=0, undecided=0)
    for line, row in _read_rows(path):
        tid = str(row.get("tuple_id", "")).strip()
        decision = str(row.get("decision", "") or "").strip().lower()
        where = f"{path}, row {line}"
        if tid not in by_id:
            raise DataError(f"{where}: tuple_id {tid!r} is not in the KB {kb.version}; was the queue exported from it?")
        if decision not in DECISIONS:
            raise DataError(f"{where}: decision {decision!r} is not one of {[d for d in DECISIONS if d]} (or empty)")
        if tid in updates:
            raise DataError(f"{where}: tuple_id {tid!r} appears twice; keep one decision per tuple")
        t = by_id[tid]
        meta = {"reviewer": str(row.get("reviewer", "") or ""), "note": str(row.get("note", "") or "")}
        if decision == "":
            summary["undecided"] += 1
            continue
        if decision == "reject":
            updates[tid] = None
            summary["rejected"] += 1
            continue
        label = t.label
        if decision == "relabel":
            raw = str(row.get("corrected_label", "") or "").strip()
            if not raw:
                raise DataError(f"{where}: decision 'relabel' needs a corrected_label")
            label = kb.scheme.canonical(raw)
            summary["relabelled"] += 1
        else:
            summary["approved"] += 1
        prov = {**t.provenance, "review": {"decision": decision, **meta}}
        updates[tid] = t.model_copy(update={"status": "approved", "label": label, "provenance": prov})
    new = [updates[t.id] if t.id in updates else t for t in kb.tuples]
    kept = [t for t in new if t is not None]
    out = kb.replace(kept)
    out.extra_counts = {**kb.extra_counts, "rejected_by_review": kb.extra_counts.get("rejected_by_review", 0)
                        + summary["rejected"]}
    return out, summary
