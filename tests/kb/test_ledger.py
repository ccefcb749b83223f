"""The review ledger: evidence, applying decisions, to re-check and gone, a torn last line, reviewers' kappa."""

from pathlib import Path

import pytest

from culturekb.errors import DataError
from culturekb.kb.ledger import (
    DecisionError,
    append_decisions,
    apply_ledger,
    evidence_of,
    ledger_path,
    make_decision,
    read_ledger,
    review_facts,
)
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple
from culturekb.kb.store import KnowledgeBase


def _t(concept: str, culture: str = "zh", rationale: str | None = None, status: str = "pending") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label="awe", distribution={"awe": 0.6, "fear": 0.4},
                          support=5, rationales=[rationale or f"the {concept} is grand"], status=status,
                          flagged=status == "pending", verdicts=[JudgeVerdict(judge="lexicon", label="fear",
                                                                              agrees=False)])


def test_the_ledger_sits_beside_the_kb_folder(tmp_path: Path) -> None:
    assert ledger_path(tmp_path / "kb") == tmp_path / "kb.review.jsonl"
    assert ledger_path(str(tmp_path / "kb") + "/") == tmp_path / "kb.review.jsonl"


def test_decisions_apply_and_a_changed_tuple_is_to_recheck(tmp_path: Path) -> None:
    kb = KnowledgeBase([_t("moon"), _t("crane"), _t("sea"), _t("gone")])
    ds = [make_decision(kb, "zh::moon", "approve", reviewer="li"),
          make_decision(kb, "zh::crane", "reject", reviewer="li"),
          make_decision(kb, "zh::sea", "relabel", label="fear", reviewer="li", note="sea is scary"),
          make_decision(kb, "zh::gone", "approve", reviewer="li")]
    new, state = apply_ledger(kb, ds)
    by = {t.concept: t for t in new.tuples}
    assert by["moon"].status == "approved" and by["crane"].status == "rejected"
    assert by["sea"].label == "fear" and by["sea"].status == "approved"
    assert dict(state.applied) == {"approve": 2, "reject": 1, "relabel": 1}
    assert apply_ledger(new, ds)[0] is new  # applying twice changes nothing
    # a rebuild in which 'sea' has other evidence and 'gone' is no longer made
    rebuilt = KnowledgeBase([_t("moon"), _t("crane"), _t("sea", rationale="the sea is calm")])
    again, state = apply_ledger(rebuilt, ds)
    by = {t.concept: t for t in again.tuples}
    assert by["sea"].label == "awe" and by["sea"].status == "pending"  # not applied, not dropped:
    assert [e["tuple_id"] for e in state.to_recheck] == ["zh::sea"]
    assert [e["tuple_id"] for e in state.gone] == ["zh::gone"]
    facts = review_facts(again, ds)
    assert (facts["approved"], facts["rejected"], facts["relabelled"], facts["to_recheck"]) == (1, 1, 0, 1)


def test_bad_decisions_are_refused_with_the_fix() -> None:
    kb = KnowledgeBase([_t("moon")])
    with pytest.raises(DecisionError, match="not in the KB"):
        make_decision(kb, "zh::sun", "approve", reviewer="li")
    with pytest.raises(DecisionError, match="unknown label 'joyish'"):
        make_decision(kb, "zh::moon", "relabel", label="joyish", reviewer="li")
    with pytest.raises(DecisionError, match="'concept' cell reads 'mooon'"):
        make_decision(kb, "zh::moon", "approve", reviewer="li", shown={"concept": "mooon"})
    with pytest.raises(DecisionError, match="set decision to relabel"):
        make_decision(kb, "zh::moon", "approve", reviewer="li", shown={"label": "fear"})
    with pytest.raises(DecisionError, match="changed since"):
        make_decision(kb, "zh::moon", "approve", reviewer="li", evidence="0123456789abcdef")
    with pytest.raises(DecisionError, match="reviewer"):
        make_decision(kb, "zh::moon", "approve", reviewer=" ")


def test_a_line_cut_by_a_crash_is_skipped_and_the_next_append_starts_a_new_line(tmp_path: Path) -> None:
    kb = KnowledgeBase([_t("moon"), _t("crane")])
    path = tmp_path / "kb.review.jsonl"
    append_decisions(path, [make_decision(kb, "zh::moon", "approve", reviewer="li")])
    with open(path, "a", encoding="utf-8") as fh:
        fh.write('{"format":1,"tuple_id":"zh::cr')  # killed mid-write
    assert [d.tuple_id for d in read_ledger(path)] == ["zh::moon"]
    append_decisions(path, [make_decision(kb, "zh::crane", "reject", reviewer="li")])
    assert [d.tuple_id for d in read_ledger(path)] == ["zh::moon", "zh::crane"]
    path.write_text(path.read_text(encoding="utf-8").replace('"zh::moon"', '"zh::moon', 1), encoding="utf-8")
    with pytest.raises(DataError, match=r"line 1: not a review decision"):
        read_ledger(path)


def test_two_reviewers_on_the_same_20_tuples_give_a_kappa_per_culture() -> None:
    kb = KnowledgeBase([_t(f"c{i}", "zh" if i < 10 else "ja") for i in range(20)])
    ds = []
    for i in range(20):
        a = "approve" if i % 2 else "reject"
        b = a if i not in (3, 4, 15) else ("reject" if a == "approve" else "approve")
        ds += [make_decision(kb, f"{'zh' if i < 10 else 'ja'}::c{i}", a, reviewer="ana"),
               make_decision(kb, f"{'zh' if i < 10 else 'ja'}::c{i}", b, reviewer="bo")]
    ag = review_facts(kb, ds)["agreement"]
    assert ag["overall"]["tuples"] == 20 and ag["overall"]["reviewers"] == ["ana", "bo"]
    assert ag["per_culture"]["zh"]["kappa"] == pytest.approx(0.6)  # 8 of 10 agree, chance 0.5
    assert ag["per_culture"]["ja"]["kappa"] == pytest.approx(0.8)  # 9 of 10
    assert ag["overall"]["agreement"] == pytest.approx(17 / 20)
    tuple_c0 = kb.get("c0", "zh")
    assert tuple_c0 is not None and evidence_of(tuple_c0) == ds[0].evidence
