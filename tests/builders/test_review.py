import csv
import json

import pytest

from culturekb.builders.review import export_review_queue, import_review_decisions
from culturekb.errors import DataError
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple
from culturekb.kb.store import KnowledgeBase


@pytest.fixture
def kb():
    def t(concept, status, flagged):
        return KnowledgeTuple(concept=concept, culture="zh", label="awe", distribution={"awe": 0.6, "fear": 0.4},
                              support=5, rationales=["壮丽的山峰"], status=status, flagged=flagged,
                              verdicts=[JudgeVerdict(judge="lexicon", label="fear", agrees=False)])
    return KnowledgeBase([t("mountain", "pending", True), t("crane", "pending", True), t("moon", "accepted", False)])


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_export_then_import_roundtrip(kb, tmp_path, suffix):
    queue = tmp_path / f"queue{suffix}"
    assert export_review_queue(kb, queue) == 2
    if suffix == ".csv":
        rows = list(csv.DictReader(queue.open(encoding="utf-8")))
        rows[0]["decision"], rows[1]["decision"] = "approve", "reject"
        with queue.open("w", encoding="utf-8", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    else:
        rows = [json.loads(x) for x in queue.read_text(encoding="utf-8").splitlines()]
        rows[0].update(decision="relabel", corrected_label="恐惧")  # Chinese translation of 'fear'
        rows[1].update(decision="reject")
        queue.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    new, summary = import_review_decisions(kb, queue)
    assert summary["rejected"] == 1
    assert len(new) == 3 and sum(t.status == "rejected" for t in new.tuples) == 1  # kept, never served
    first = new.get(rows[0]["concept"], "zh")
    assert first is not None and first.status == "approved"
    if suffix == ".jsonl":
        assert first.label == "fear" and summary["relabelled"] == 1
    moon = new.get("moon", "zh")
    assert moon is not None and moon.status == "accepted"


def test_bad_decisions_change_nothing(kb, tmp_path):
    queue = tmp_path / "q.jsonl"
    queue.write_text(json.dumps({"tuple_id": "zh::mountain", "decision": "approve"}) + "\n"
                     + json.dumps({"tuple_id": "zh::crane", "decision": "maybe"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2.*'maybe'"):
        import_review_decisions(kb, queue)
    queue.write_text(json.dumps({"tuple_id": "zh::nothing", "decision": "approve"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="not in the KB"):
        import_review_decisions(kb, queue)
    queue.write_text(json.dumps({"tuple_id": "zh::crane", "decision": "relabel"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="corrected_label"):
        import_review_decisions(kb, queue)
    queue.write_text(json.dumps({"tuple_id": "zh::crane", "decision": "relabel", "corrected_label": "joy?"}) + "\n",
                     encoding="utf-8")
    with pytest.raises(DataError, match="unknown label"):
        import_review_decisions(kb, queue)
    bad = tmp_path / "q.csv"
    bad.write_text("concept,label\nx,y\n", encoding="utf-8")
    with pytest.raises(DataError, match="missing column"):
        import_review_decisions(kb, bad)
    assert [t.status for t in kb.tuples] == ["pending", "accepted", "pending"]


def _write_rows(path, rows):
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize(("edit", "message"), [
    ({"concept": "mountains", "decision": "approve"}, r"row 2: the 'concept' cell reads 'mountains'"),
    ({"label": "fear", "decision": "approve"}, r"row 2: the 'label' cell reads 'fear'.*set decision to relabel"),
    ({"tuple_id": "zh::volcano", "decision": "approve"}, r"row 2: tuple 'zh::volcano' is not in the KB"),
    ({"decision": "relabel", "corrected_label": "bliss"}, r"row 2: unknown label 'bliss'.*use one of"),
    ({"evidence": "0000000000000000", "decision": "reject"}, r"row 2: tuple zh::\w+ changed since.*export the queue"),
])
def test_bad_rows_are_refused_with_file_row_and_fix_and_nothing_is_read(kb, tmp_path, edit, message):
    from culturekb.builders.review import read_review_decisions

    queue = tmp_path / "q.csv"
    export_review_queue(kb, queue)
    rows = list(csv.DictReader(queue.open(encoding="utf-8")))
    rows[0].update(edit)
    rows[1]["decision"] = "approve"
    _write_rows(queue, rows)
    with pytest.raises(DataError, match=message) as err:
        read_review_decisions(kb, queue, "li")
    assert str(queue) in str(err.value) and "nothing was written" in str(err.value)


def test_label_studio_round_trip_keeps_every_decision(kb, tmp_path):
    """Export tasks with the ledger's decisions as annotations, annotate two more, import: each decision is there
    once (the ones already in the ledger are recognised, not repeated)."""
    from culturekb.builders.review import export_label_studio, queue_tuples, read_review_decisions
    from culturekb.kb.ledger import make_decision

    ledger = [make_decision(kb, "zh::mountain", "relabel", label="fear", reviewer="ana", note="scary peak")]
    tasks = tmp_path / "tasks.json"
    assert export_label_studio(kb, tasks, queue_tuples(kb, True), ledger) == 2
    assert "<Choices name=\"decision\"" in tasks.with_suffix(".xml").read_text(encoding="utf-8")
    data = json.loads(tasks.read_text(encoding="utf-8"))
    crane = next(t for t in data if t["data"]["concept"] == "crane")
    mountain = next(t for t in data if t["data"]["concept"] == "mountain")
    assert mountain["annotations"][0]["completed_by"] == {"email": "ana"}
    crane["annotations"] = [
        {"completed_by": {"email": "bo"}, "created_at": "2026-01-02T10:00:00Z",
         "result": [{"from_name": "decision", "type": "choices", "value": {"choices": ["reject"]}},
                    {"from_name": "note", "type": "textarea", "value": {"text": ["not a crane"]}}]},
        {"completed_by": 7,
         "result": [{"from_name": "decision", "type": "choices", "value": {"choices": ["approve"]}}]}]
    tasks.write_text(json.dumps(data), encoding="utf-8")
    new, summary = read_review_decisions(kb, tasks, "li", ledger)
    assert summary["already_in_ledger"] == 1 and summary["rejected"] == 1 and summary["approved"] == 1
    got = {(d.tuple_id, d.reviewer, d.decision, d.note) for d in new}
    assert got == {("zh::crane", "bo", "reject", "not a crane"), ("zh::crane", "user7", "approve", "")}
    every = {(d.tuple_id, d.reviewer, d.decision, d.label) for d in [*ledger, *new]}
    assert ("zh::mountain", "ana", "relabel", "fear") in every and len(every) == 3
