"""Texts without explanations: rationales from the stimulus texts, the judges' "no evidence" state counted apart,
and a kappa that is not 1.0 when the judges had nothing to read."""

from __future__ import annotations

from typing import Any

import pytest

from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator, split_sentences, stimulus_evidence
from culturekb.builders.report import render_report_markdown
from culturekb.builders.validation import apply_verdicts, cohen_kappa, verdict_state
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple, Sample
from culturekb.kb.schemes import get_scheme, scheme_from_labels
from culturekb.text.concepts import PrecomputedConcepts, TextConceptExtractor

SCHEME = get_scheme("artemis9")

# a Cedar-like narrative set: text stimuli with labels, no explanations, in three languages
NARRATIVES = [
    ("en", "At the funeral the family stood by the grave in the rain. Nobody spoke.", "sadness"),
    ("en", "We left white flowers on the grave. The sky was grey.", "sadness"),
    ("en", "The clown at the circus made the children laugh. He fell over a bucket.", "amusement"),
    ("en", "A clown juggled oranges at the circus and everyone laughed.", "amusement"),
    ("zh", "葬礼上，一家人站在坟墓旁边，天在下雨。", "sadness"),
    ("zh", "我们在坟墓前放了白花，大家都很难过。", "sadness"),
    ("zh", "马戏团的小丑让孩子们哈哈大笑。", "amusement"),
    ("zh", "小丑在马戏团里摔倒了，观众都笑了。", "amusement"),
    ("es", "En el funeral la familia lloraba junto a la tumba bajo la lluvia.", "sadness"),
    ("es", "Dejamos flores blancas sobre la tumba; todos estábamos tristes.", "sadness"),
]


def _samples() -> list[Sample]:
    return [Sample(id=f"s{i}", culture=c, text=t, label=lab, split="train")
            for i, (c, t, lab) in enumerate(NARRATIVES)]


def _verdict(judge: str, label: str | None, truth: str = "sadness") -> JudgeVerdict:
    return JudgeVerdict(judge=judge, label=label, agrees=label == truth)


def _tuple(concept: str, rationales: list[str] | None = None) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture="en", label="sadness", distribution={"sadness": 1.0}, support=2,
                          rationales=rationales or [])


@pytest.fixture(scope="module")
def offline(default_embedder: Any) -> BuildComponents:
    return BuildComponents(TextConceptExtractor(), ExtractiveRationaleGenerator(default_embedder),
                           [LexiconJudge(SCHEME), PrototypeJudge(default_embedder, SCHEME)])


# ------------------------------------------------------------------------------------------------ verdict states
def test_verdict_states() -> None:
    assert verdict_state(_verdict("j", "sadness")) == "agrees"
    assert verdict_state(_verdict("j", "fear")) == "disagrees"
    assert verdict_state(_verdict("j", None)) == "no-evidence"


def test_no_evidence_is_counted_apart_and_left_out_of_kappa() -> None:
    tuples = [_tuple("grave"), _tuple("rain"), _tuple("stone"), _tuple("wall")]
    verdicts = [
        [_verdict("lex", "sadness"), _verdict("proto", "sadness")],
        [_verdict("lex", "sadness"), _verdict("proto", "fear")],
        [_verdict("lex", None), _verdict("proto", None)],  # neither judge could read it
        [_verdict("lex", None), _verdict("proto", "sadness")],  # one confirmed, one had nothing
    ]
    res = apply_verdicts(tuples, verdicts, "pending")
    assert res.flagged == 3  # a judge that did not confirm still flags the tuple for review
    assert res.disagreed == 1 and res.no_evidence == 1
    assert res.no_evidence_by_judge == {"lex": 2, "proto": 1}
    assert res.kappa_items == 3
    assert res.kappa == pytest.approx(cohen_kappa(["sadness", "sadness", None], ["sadness", "fear", "sadness"]))


def test_kappa_is_none_when_no_judge_had_evidence() -> None:
    tuples = [_tuple("grave"), _tuple("rain")]
    verdicts = [[_verdict("lex", None), _verdict("proto", None)] for _ in tuples]
    res = apply_verdicts(tuples, verdicts, "pending")
    # before: None was a category of its own, both raters always said None, and kappa was 1.0
    assert cohen_kappa([None, None], [None, None]) == 1.0
    assert res.kappa is None and res.kappa_items == 0
    assert res.no_evidence == 2 and res.flagged == 2 and res.disagreed == 0


# --------------------------------------------------------------------------------------------- stimulus evidence
def test_stimulus_evidence_takes_the_sentences_that_name_the_concept() -> None:
    samples = _samples()
    assert stimulus_evidence(samples, "grave", "sadness") == [
        "At the funeral the family stood by the grave in the rain.", "We left white flowers on the grave."]
    assert stimulus_evidence(samples, "grave", "amusement") == []  # only samples with the tuple's label
    assert stimulus_evidence(samples, "坟墓", "sadness") == ["葬礼上，一家人站在坟墓旁边，天在下雨。",
                                                               "我们在坟墓前放了白花，大家都很难过。"]
    assert stimulus_evidence(samples, "tumba", "sadness")[0].startswith("En el funeral")


def test_a_narrative_set_without_explanations_builds_a_useful_kb(offline: BuildComponents, tmp_path: Any) -> None:
    res = build_kb(_samples(), BuildConfig(min_support=2), out=tmp_path / "kb", components=offline, progress=False)
    kb, rep = res.kb, res.report
    by_id = {t.id: t for t in kb.tuples}
    assert {"en::grave", "en::clown", "en::circus", "zh::坟墓", "zh::小丑", "zh::马戏团", "es::tumba"} <= set(by_id)
    sentences = {s for _, text, _ in NARRATIVES for s in split_sentences(text)}
    for t in kb.tuples:
        assert t.provenance["evidence"] == "stimuli"
        assert t.rationales and set(t.rationales) <= sentences  # extractive: real stimulus sentences
    assert by_id["en::grave"].label == "sadness" and by_id["zh::小丑"].label == "amusement"
    assert rep["evidence_sources"] == {"stimuli": len(kb)}
    assert rep["judge_kappa"] is not None and rep["judge_kappa_tuples"] > 0
    assert rep["no_evidence"] == 0  # every tuple has rationales the prototype judge can read
    assert rep["flagged"] < len(kb)  # not everything flagged
    assert rep["flagged"] >= rep["flagged_disagreement"]
    md = (tmp_path / "kb" / "build_report.md").read_text(encoding="utf-8")
    assert "rationales from: stimuli" in md and "Cohen's kappa: " in md


def test_no_text_at_all_reports_no_evidence_instead_of_kappa_one(offline: BuildComponents) -> None:
    samples = [s.model_copy(update={"text": None, "concepts": ["grave" if s.label == "sadness" else "clown"]})
               for s in _samples()]
    components = BuildComponents(PrecomputedConcepts(), offline.generator, offline.judges)
    rep = build_kb(samples, BuildConfig(concepts="precomputed"), components=components, progress=False).report
    assert rep["tuples"] > 0
    assert rep["no_evidence"] == rep["tuples"] == rep["flagged"]
    assert rep["flagged_disagreement"] == 0
    assert rep["judge_kappa"] is None  # was 1.0: two judges that always said "nothing" agreed perfectly
    assert rep["evidence_sources"] == {"none": rep["tuples"]}
    md = render_report_markdown({**rep, "kb_version": "v"})
    assert "Cohen's kappa: no evidence" in md
    assert f"no evidence (no judge could infer an emotion): {rep['tuples']}" in md


def test_old_reports_still_render() -> None:
    old = {"kb_version": "v", "label_scheme": "artemis9", "samples": 1, "tuples": 1, "rationales": 1, "flagged": 0,
           "flagged_rate": 0.0, "policy": "pending", "dropped_by_policy": 0, "judge_kappa": 0.5,
           "judges": ["lexicon", "prototype"], "model_calls": 0, "wall_time_s": 1.0, "per_culture": {}, "steps": {}}
    md = render_report_markdown(old)
    assert "Cohen's kappa: 0.5" in md and "no evidence" not in md


# ------------------------------------------------------------------------------------- the lexicon in any language
@pytest.mark.parametrize(
    ("culture", "rationale", "label"),
    [
        ("de", "Sie war sehr traurig über den Abschied.", "sadness"),
        ("de", "Er war nicht traurig, er hatte nur Angst.", "fear"),  # a negated word counts nothing
        ("ru", "Мне стало грустно, когда он уехал.", "sadness"),
        ("hi", "वह बहुत उदास था क्योंकि उसका दोस्त चला गया।", "sadness"),
        ("es", "Tenía mucho miedo de la oscuridad.", "fear"),
        ("zh", "他非常生气，因为没有人听他说话。", "anger"),
        ("ja", "彼はとても怒っていた。", "anger"),
    ],
)
def test_lexicon_judge_reads_a_custom_scheme_in_any_language(culture: str, rationale: str, label: str) -> None:
    scheme = scheme_from_labels(["joy", "sadness", "anger", "fear", "neutral"], name="five")
    judge = LexiconJudge(scheme)
    [v] = judge.judge([_input(culture, rationale, label)])
    assert v.label == label, (v.label, v.scores, v.detail)
    assert verdict_state(v) == "agrees"


def test_lexicon_judge_without_emotion_words_has_no_evidence() -> None:
    judge = LexiconJudge(scheme_from_labels(["joy", "sadness", "anger", "fear", "neutral"], name="five"))
    [v] = judge.judge([_input("de", "Der Zug fuhr um acht Uhr ab.", "joy")])
    assert verdict_state(v) == "no-evidence" and v.detail == "no lexicon evidence"


def _input(culture: str, rationale: str, label: str) -> Any:
    from culturekb.builders.base import JudgeInput

    return JudgeInput("concept", culture, (rationale,), label)
