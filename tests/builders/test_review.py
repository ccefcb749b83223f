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
    assert len(new) == 2
    first = new.get(rows[0]["concept"], "zh")
    assert first is not None and first.status == "approved"
    if suffix == ".jsonl":
        assert first.label == "fear" and summary["relabelled"] == 1
    moon = new.get("moon", "zh")
    assert moon is not None and moon.status == "accepted"
    assert new.extra_counts["rejected_by_review"] == 1


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
