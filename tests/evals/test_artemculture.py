import json

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.artemculture import ArtECultureRunner
from culturekb.evals.runner import get_runner
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.calibration import PriorModel
from culturekb.inference.predictors import KBPriorPredictor
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample, get_scheme
from culturekb.retrieval.retriever import open_retriever

SCHEME = get_scheme("artemis9")


@pytest.fixture(scope="module")
def setup(default_embedder):
    kb = KnowledgeBase(
        [KnowledgeTuple(concept="skull", culture=c, label="fear", distribution={"fear": 1.0}, support=3)
         for c in ("en", "zh")]
        + [KnowledgeTuple(concept="garden", culture="zh", label="contentment", distribution={"contentment": 1.0},
                          support=3)],
        extra_counts={"label_prior": {"en": {"sadness": 3}, "zh": {"awe": 3}}},
    )
    samples = []
    for i, (concept, gold) in enumerate([("skull", "fear"), ("garden", "contentment"), ("river", "sadness")]):
        for c in ("en", "zh"):
            samples.append(Sample(id=f"t{i}::{c}", culture=c, label=gold, split="test", concepts=[concept],
                                  metadata={"image_id": f"t{i}", "western": i != 1}))
    samples += [Sample(id=f"tr{i}::{c}", culture=c, label=lab, split="train", concepts=["x"])
                for i in range(3) for c, lab in (("en", "sadness"), ("zh", "awe"))]
    aug = Augmenter(open_retriever(kb, default_embedder, backend="numpy"))
    return kb, samples, KBPriorPredictor(aug, PriorModel(alpha=0.0))  # the tuples' own P(e), by hand


def test_runner_is_registered():
    assert get_runner("artemculture") is ArtECultureRunner


def test_ablation_table_and_reports(setup, tmp_path):
    kb, samples, predictor = setup
    runner = ArtECultureRunner(samples, predictor, SCHEME, kb_version=kb.version, prompt_languages=["en", "zh"],
                               progress=False)
    res = runner.run(tmp_path)
    m = res.metrics
    assert m["n_samples"] == 6
    # majority baseline: en predicts sadness (1 of 3 right), zh predicts awe (0 of 3)
    assert m["majority_baseline"]["overall"] == pytest.approx(1 / 6)
    know, orig = m["settings"]["know"], m["settings"]["orig"]
    # know: en gets skull (fear) right + river falls back to sadness; zh gets skull and garden right
    assert know["per_culture"] == {"en": pytest.approx(2 / 3), "zh": pytest.approx(2 / 3)}
    assert orig["accuracy"] == pytest.approx(1 / 6)
    # en viewers given zh tuples: skull -> fear, garden -> contentment (zh only), river -> en prior sadness
    assert m["settings"]["cross-culture-know"]["per_culture"]["en"] == pytest.approx(1.0)
    assert set(m["settings"]) == {"orig", "know", "internal-know", "random-know", "cross-culture-know",
                                  "know@en", "know@zh"}
    assert know["western"]["non-western"] == pytest.approx(1 / 2)
    md = (tmp_path / "artemculture.md").read_text()
    assert "majority baseline" in md and "Prompt language x culture" in md
    assert (tmp_path / "artemculture-accuracy.png").read_bytes()[:4] == b"\x89PNG"
    assert json.loads((tmp_path / "artemculture.json").read_text())["n_samples"] == 6
    # resumable: a rerun predicts nothing new
    again = ArtECultureRunner(samples, predictor, SCHEME, kb_version=kb.version, prompt_languages=["en", "zh"],
                              progress=False).run(tmp_path)
    assert sum(again.n_predicted.values()) == 0


def test_bad_options(setup):
    _, samples, predictor = setup
    with pytest.raises(ConfigError, match="unknown mode"):
        ArtECultureRunner(samples, predictor, SCHEME, modes=["psychic"])
    with pytest.raises(ConfigError, match="split"):
        ArtECultureRunner(samples, predictor, SCHEME, split="valid").load()


def test_explanation_alignment_two_judges(setup, tmp_path, openai_server):
    from culturekb.models.chat import OpenAICompatClient

    kb, samples, predictor = setup

    def judge_a(body):
        text = body["messages"][-1]["content"]
        return '{"score": 5, "reason": "specific"}' if "retrieved:" in text else '{"score": 2, "reason": "vague"}'

    def judge_b(body):
        text = body["messages"][-1]["content"]
        return '{"score": 4}' if "retrieved:" in text else 'I think 1? {"score": 1}'

    a, b = openai_server(judge_a), openai_server(judge_b)
    judges = [OpenAICompatClient("judge-a", base_url=a.base_url), OpenAICompatClient("judge-b", base_url=b.base_url)]
    runner = ArtECultureRunner(samples, predictor, SCHEME, modes=["orig", "know", "random-know"], judges=judges,
                               progress=False)
    res = runner.run(tmp_path)
    ea = res.metrics["explanation_alignment"]
    assert ea["judges"] == ["openai:judge-a", "openai:judge-b"]
    # orig: every explanation is the prior fallback -> 2 and 1; know: 3 of 6 retrieved (skull x2, zh garden)
    assert ea["mean_score"]["openai:judge-a"]["orig"] == pytest.approx(2.0)
    assert ea["mean_score"]["openai:judge-b"]["orig"] == pytest.approx(1.0)
    assert ea["mean_score"]["openai:judge-a"]["know"] == pytest.approx((3 * 5 + 3 * 2) / 6)
    assert ea["spearman"] == pytest.approx(1.0)  # both judges rank the settings alike
    assert "Explanation alignment" in (tmp_path / "artemculture.md").read_text()
    with pytest.raises(ConfigError, match="two judge"):
        ArtECultureRunner(samples, predictor, SCHEME, judges=judges[:1])
