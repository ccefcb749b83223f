"""The build end to end: offline defaults on the shipped real sample, caching, resume, zero-call rebuild."""

import json

import pytest

from culturekb.builders.base import Judge
from culturekb.builders.concepts import PrecomputedConcepts, TextConceptExtractor
from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator, LLMRationaleGenerator
from culturekb.errors import DataError, ProviderError
from culturekb.kb import KnowledgeBase, Sample, get_scheme
from culturekb.models.chat import OpenAICompatClient
from culturekb.testing import ScriptedOpenAIServer
from culturekb.workflows import demo_data_files, load_data

SCHEME = get_scheme("artemis9")


@pytest.fixture(scope="module")
def demo_samples():
    samples, _ = load_data(demo_data_files())
    return samples


@pytest.fixture(scope="module")
def offline_components(default_embedder):
    return BuildComponents(
        extractor=TextConceptExtractor(),
        generator=ExtractiveRationaleGenerator(default_embedder),
        judges=[LexiconJudge(SCHEME), PrototypeJudge(default_embedder, SCHEME)],
    )


def test_offline_build_on_real_sample(demo_samples, offline_components, tmp_path):
    out = tmp_path / "kb"
    res = build_kb(demo_samples, BuildConfig(), out=out, cache_dir=tmp_path / "cache",
                   components=offline_components, progress=False)
    rep = res.report
    assert rep["tuples"] == len(res.kb) > 20
    assert rep["rationales"] > rep["tuples"]  # several rationales per tuple on average
    assert 0.0 <= rep["flagged_rate"] <= 1.0
    assert rep["judge_kappa"] is not None
    assert rep["model_calls"] == 0
    train_ids = {s.image_id for s in demo_samples if s.split == "train"}
    for t in res.kb.tuples:
        assert t.support >= 2
        assert t.distribution[t.label] == max(t.distribution.values())
        assert abs(sum(t.distribution.values()) - 1) < 1e-6
        assert len(t.verdicts) == 2
        assert t.status in ("accepted", "pending")
        assert t.flagged == any(not v.agrees for v in t.verdicts)
        assert t.provenance["split"] == "train"
    assert train_ids  # the split exists
    # saved atomically with its report, and loads back to the same version
    loaded = KnowledgeBase.load(out)
    assert loaded.version == res.kb.version
    assert json.loads((out / "build_report.json").read_text())["kb_version"] == res.kb.version
    assert (out / "build_report.md").read_text().startswith("# Build report")

    # an unchanged rebuild recomputes nothing
    again = build_kb(demo_samples, BuildConfig(), out=tmp_path / "kb2", cache_dir=tmp_path / "cache",
                     components=offline_components, progress=False)
    assert again.kb.version == res.kb.version
    assert all(st["computed"] == 0 for st in again.report["steps"].values())
    # a changed step redoes only that step
    changed = build_kb(demo_samples, BuildConfig(policy="drop"), cache_dir=tmp_path / "cache",
                       components=offline_components, progress=False)
    assert all(st["computed"] == 0 for st in changed.report["steps"].values())
    assert not any(t.flagged for t in changed.kb.tuples)
    assert len(changed.kb) == res.report["tuples"] - res.report["flagged"]


def _small_samples() -> list[Sample]:
    out = []
    concepts = [["moon", "crane"], ["moon", "river"], ["crane", "river"], ["moon", "crane", "river"]]
    for i, cs in enumerate(concepts * 2):
        for culture, label in (("en", "contentment"), ("zh", "awe" if i % 2 else "sadness")):
            out.append(Sample(id=f"img{i}::{culture}", culture=culture, label=label, concepts=cs, split="train",
                              explanations=["the calm moon over the river"], metadata={"image_id": f"img{i}"}))
    return out


def test_llm_build_resumes_after_interruption_and_rebuild_makes_zero_calls(tmp_path, default_embedder):
    samples = _small_samples()
    good = json.dumps(["The moon is linked to reunion and longing.", "Cranes stand for long life."])
    n_fail_after = 2
    state = {"n": 0}

    def flaky(body):
        state["n"] += 1
        return good if state["n"] <= n_fail_after else (400, '{"error": {"message": "scripted failure"}}')

    cfg = BuildConfig(chunk_size=1, min_support=2)
    judges: list[Judge] = [LexiconJudge(SCHEME), PrototypeJudge(default_embedder, SCHEME)]
    with ScriptedOpenAIServer(responder=flaky) as srv:
        client = OpenAICompatClient("m", base_url=srv.base_url, max_concurrency=1, max_retries=0)
        comp = BuildComponents(PrecomputedConcepts(), LLMRationaleGenerator(client, SCHEME), judges, [client])
        with pytest.raises(ProviderError):
            build_kb(samples, cfg, out=tmp_path / "kb", cache_dir=tmp_path / "cache", components=comp, progress=False)
    assert not (tmp_path / "kb").exists()  # nothing half-written

    with ScriptedOpenAIServer(responder=good) as srv:
        client = OpenAICompatClient("m", base_url=srv.base_url, max_concurrency=4)
        comp = BuildComponents(PrecomputedConcepts(), LLMRationaleGenerator(client, SCHEME), judges, [client])
        res = build_kb(samples, cfg, out=tmp_path / "kb", cache_dir=tmp_path / "cache", components=comp,
                       progress=False)
        n_tuples = len(res.kb)
        assert n_tuples == 6  # 3 concepts x 2 cultures, each on >= 2 images
        assert res.report["steps"]["rationales"]["cached"] == n_fail_after
        assert srv.chat_calls == n_tuples - n_fail_after == res.report["model_calls"]
        assert all(t.rationales for t in res.kb.tuples)

        again = build_kb(samples, cfg, cache_dir=tmp_path / "cache", components=comp, progress=False)
        assert again.report["model_calls"] == 0
        assert srv.chat_calls == n_tuples - n_fail_after
        assert again.kb.version == res.kb.version


def test_no_training_samples_is_a_clear_error(tmp_path, offline_components):
    s = [Sample(id="a", culture="en", label="awe", split="test")]
    with pytest.raises(DataError, match="no labelled samples in split 'train'"):
        build_kb(s, BuildConfig(), out=tmp_path / "kb", components=offline_components, progress=False)
    assert not (tmp_path / "kb").exists()
