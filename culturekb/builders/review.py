"""The human review queue as files: export flagged tuples (CSV, JSONL or Label Studio JSON tasks) and read the
reviewers' decisions back as checked ledger records (`culturekb.kb.ledger`).

Every row is checked before anything is written: an unknown tuple, an edited concept/culture/label cell, an
unknown label or a decision on a tuple whose evidence changed since the export is refused with the file, the row
and the fix (all problems at once). The decisions themselves go to the ledger beside the KB
(`culturekb.workflows.review.import_review`), never into the rebuilt files.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturekb._io import atomic_write_text, read_json, read_jsonl, read_text_utf8
from culturekb.errors import DataError
from culturekb.kb.ledger import (
    DECISIONS,
    Decision,
    DecisionError,
    apply_ledger,
    evidence_of,
    latest_decisions,
    make_decision,
)
from culturekb.kb.loaders import csv_error_message
from culturekb.kb.schema import KnowledgeTuple

if TYPE_CHECKING:
    from culturekb.kb.store import KnowledgeBase

__all__ = ["DECISIONS", "FIELDS", "export_review_queue", "read_review_decisions", "import_review_decisions",
           "export_label_studio", "label_studio_config", "ReviewSummary", "csv_safe", "csv_unsafe", "queue_tuples"]

FIELDS = ["tuple_id", "concept", "culture", "label", "support", "distribution", "rationales", "verdicts",
          "status", "evidence", "decision", "corrected_label", "reviewer", "note"]
_MAX_PROBLEMS = 20


def queue_tuples(kb: KnowledgeBase, include_all_flagged: bool = False) -> list[KnowledgeTuple]:
    """The tuples a queue holds: the pending ones (or every flagged one)."""
    return [t for t in kb.tuples if t.status == "pending" or (include_all_flagged and t.flagged)]


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
        "evidence": evidence_of(t),
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
    """Write the pending tuples (or every flagged one) for review; the format follows the suffix (.csv, .jsonl,
    or .json for Label Studio tasks, `export_label_studio`)."""
    path = Path(path)
    tuples = queue_tuples(kb, include_all_flagged)
    if path.suffix == ".json":
        return export_label_studio(kb, path, tuples)
    rows = [_row(t) for t in tuples]
    if path.suffix == ".jsonl":
        atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif path.suffix == ".csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS)
        w.writeheader()
        w.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)
        atomic_write_text(path, buf.getvalue())
    else:
        raise DataError(f"{path}: a review queue ends in .csv, .jsonl or .json (Label Studio tasks)")
    return len(rows)


class ReviewSummary(dict[str, int]):
    """Counts of approved, rejected, relabelled and undecided rows (and decisions already in the ledger)."""


def _read_rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    if not path.is_file():
        raise DataError(f"review file {path} does not exist")
    if path.suffix == ".jsonl":
        return list(enumerate(read_jsonl(path), start=1))
    if path.suffix != ".csv":
        raise DataError(f"{path}: review decisions must be a .csv, .jsonl or Label Studio .json file")
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


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _decide(kb: KnowledgeBase, row: Mapping[str, Any], reviewer: str | None, source: str,
            time: str | None = None) -> Decision | None:
    decision = _text(row.get("decision")).strip().lower()
    if not decision:
        return None
    return make_decision(
        kb, _text(row.get("tuple_id")).strip(), decision, reviewer=_text(row.get("reviewer")).strip() or reviewer or "",
        label=_text(row.get("corrected_label")).strip() or None, note=_text(row.get("note")),
        source=source, evidence=_text(row.get("evidence")).strip() or None, time=time,
        shown={k: _text(row[k]) for k in ("concept", "culture", "label") if k in row},
    )


def read_review_decisions(kb: KnowledgeBase, path: str | Path, reviewer: str | None = None,
                          ledger: Sequence[Decision] = ()) -> tuple[list[Decision], ReviewSummary]:
    """The checked decisions of a reviewed queue (CSV, JSONL or Label Studio JSON) and their counts. Every row is
    checked first; any bad row raises one DataError listing each (file, row, fix). `reviewer` names rows without
    a reviewer cell; a decision already in `ledger` (a Label Studio round trip) is counted, not repeated."""
    path = Path(path)
    if path.suffix == ".json":
        rows = _label_studio_rows(path)
    else:
        rows = [(f"row {n}", row, None) for n, row in _read_rows(path)]
    known = {_key(d) for d in ledger}
    out: list[Decision] = []
    problems: list[str] = []
    seen: dict[tuple[str, str], str] = {}
    summary = ReviewSummary(approved=0, rejected=0, relabelled=0, undecided=0, already_in_ledger=0)
    for where, row, time in rows:
        try:
            d = _decide(kb, row, reviewer, f"import:{path.name}", time)
        except DecisionError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if d is None:
            summary["undecided"] += 1
            continue
        if (d.tuple_id, d.reviewer) in seen:
            also = seen[(d.tuple_id, d.reviewer)]
            problems.append(f"{where}: tuple {d.tuple_id} decided twice by {d.reviewer!r} (also {also}); keep one "
                            "decision per tuple and reviewer")
            continue
        seen[(d.tuple_id, d.reviewer)] = where
        if _key(d) in known:
            summary["already_in_ledger"] += 1
            continue
        summary[{"approve": "approved", "reject": "rejected", "relabel": "relabelled"}[d.decision]] += 1
        out.append(d)
    if problems:
        more = f"\n  ... and {len(problems) - _MAX_PROBLEMS} more" if len(problems) > _MAX_PROBLEMS else ""
        raise DataError(f"{path}: {len(problems)} row(s) refused, nothing was written:\n  "
                        + "\n  ".join(problems[:_MAX_PROBLEMS]) + more)
    return out, summary


def _key(d: Decision) -> tuple[str, ...]:
    return (d.tuple_id, d.reviewer, d.decision, d.label or "", d.evidence, d.time)


def import_review_decisions(kb: KnowledgeBase, path: str | Path,
                            reviewer: str | None = None) -> tuple[KnowledgeBase, ReviewSummary]:
    """Apply a reviewed queue to a KB in memory (no ledger): all rows are checked first (all or nothing)."""
    decisions, summary = read_review_decisions(kb, path, reviewer or "unnamed")
    new, _ = apply_ledger(kb, decisions)
    return new, summary


# -- Label Studio ---------------------------------------------------------------------------------------------------
def label_studio_config(kb: KnowledgeBase) -> str:
    """The labeling interface (Label Studio XML) for the exported tasks: the tuple, its evidence, the decision, the
    corrected label (the KB's scheme) and a note."""
    from xml.sax.saxutils import quoteattr

    labels = "\n".join(f"    <Choice value={quoteattr(lab)}/>" for lab in kb.scheme.labels)
    return f"""<View>
  <Header value="$concept ($culture): $label"/>
  <Text name="evidence" value="$text"/>
  <Choices name="decision" toName="evidence" choice="single" required="true">
    <Choice value="approve"/>
    <Choice value="reject"/>
    <Choice value="relabel"/>
  </Choices>
  <Choices name="corrected_label" toName="evidence" choice="single">
{labels}
  </Choices>
  <TextArea name="note" toName="evidence" maxSubmissions="1"/>
</View>
"""


def _task_text(t: KnowledgeTuple) -> str:
    dist = ", ".join(f"{k} {v:.0%}" for k, v in sorted(t.distribution.items(), key=lambda x: -x[1]) if v > 0)
    verdicts = "; ".join(f"{v.judge}: {v.label} ({'agrees' if v.agrees else 'disagrees'})" for v in t.verdicts)
    rationales = "\n".join(f"- {r}" for r in t.rationales)
    return (f"{t.concept} in culture {t.culture}: label {t.label}, support {t.support}\nDistribution: {dist}\n"
            f"Judges: {verdicts or 'none'}\nRationales:\n{rationales}")


def export_label_studio(kb: KnowledgeBase, path: str | Path, tuples: Sequence[KnowledgeTuple],
                        ledger: Sequence[Decision] = ()) -> int:
    """Write Label Studio JSON tasks (one per tuple; the decisions already in `ledger` on the tuple's current
    evidence as annotations, one per reviewer) and the labeling config beside them (``<name>.xml``)."""
    path = Path(path)
    by_reviewer: dict[str, dict[str, Decision]] = {}
    for d in ledger:
        by_reviewer.setdefault(d.reviewer, {})
    for name in by_reviewer:
        by_reviewer[name] = latest_decisions(ledger, name)
    tasks = []
    for n, t in enumerate(tuples, start=1):
        ev = evidence_of(t)
        row = {k: v for k, v in _row(t).items() if k not in ("decision", "corrected_label", "reviewer", "note")}
        annotations = []
        for name, mine in sorted(by_reviewer.items()):
            found = mine.get(t.id)
            if found is None or found.evidence != ev:
                continue
            d = found
            result: list[dict[str, Any]] = [{"from_name": "decision", "to_name": "evidence", "type": "choices",
                                             "value": {"choices": [d.decision]}}]
            if d.label:
                result.append({"from_name": "corrected_label", "to_name": "evidence", "type": "choices",
                               "value": {"choices": [d.label]}})
            if d.note:
                result.append({"from_name": "note", "to_name": "evidence", "type": "textarea",
                               "value": {"text": [d.note]}})
            annotations.append({"completed_by": {"email": name}, "created_at": d.time, "result": result})
        tasks.append({"id": n, "data": {**row, "text": _task_text(t)}, "annotations": annotations})
    atomic_write_text(path, json.dumps(tasks, ensure_ascii=False, indent=1) + "\n")
    atomic_write_text(path.with_suffix(".xml"), label_studio_config(kb))
    return len(tasks)


def _annotator(raw: Any) -> str:
    if isinstance(raw, Mapping):
        return str(raw.get("email") or " ".join(filter(None, [raw.get("first_name"), raw.get("last_name")]))
                   or raw.get("id") or "")
    return f"user{raw}" if isinstance(raw, int) else _text(raw)


def _label_studio_rows(path: Path) -> list[tuple[str, dict[str, Any], str | None]]:
    """(where, row, time) per annotation of a Label Studio export (JSON list of tasks)."""
    tasks = read_json(path)
    if not isinstance(tasks, list):
        raise DataError(f"{path}: not a Label Studio export (a JSON list of tasks); export JSON from Label Studio")
    rows: list[tuple[str, dict[str, Any], str | None]] = []
    for i, task in enumerate(tasks, start=1):
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise DataError(f"{path}, task {i}: no 'data' object; export tasks with `culturekb review export "
                            "--out tasks.json` and import Label Studio's JSON export")
        data = task["data"]
        for j, ann in enumerate(task.get("annotations") or [], start=1):
            if not isinstance(ann, dict) or ann.get("was_cancelled"):
                continue
            row: dict[str, Any] = {k: data.get(k) for k in ("tuple_id", "concept", "culture", "label", "evidence")}
            for item in ann.get("result") or []:
                if not isinstance(item, dict):
                    continue
                value = item.get("value") or {}
                got = (value.get("choices") or value.get("text") or [""]) if isinstance(value, dict) else [""]
                key = {"corrected_label": "corrected_label", "decision": "decision", "note": "note"}.get(
                    str(item.get("from_name")))
                if key:
                    row[key] = "\n".join(map(str, got)) if key == "note" else str(got[0]) if got else ""
            row["reviewer"] = _annotator(ann.get("completed_by"))
            created = ann.get("created_at")
            rows.append((f"task {i} (id {task.get('id')}), annotation {j}", row,
                         str(created) if isinstance(created, str) and created else None))
    return rows
