"""The Cedar run: metrics by hand, cues from the KB, the scripted model over HTTP, the real-data fixture, the CLI."""

import json
import math
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.errors import ConfigError
from culturekb.evals.cedar import CedarPredictor, CedarRunner, cedar_tables
from culturekb.evals.cedar.data import load_cedar
from culturekb.evals.runner import get_runner
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample, get_scheme
from culturekb.models.chat import OpenAICompatClient
from culturekb.retrieval.retriever import open_retriever

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "cedar_ricevl"
CEDAR = get_scheme("cedar14")


def _t(concept, culture, dist):
    return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.get), distribution=dist,
                          support=3, rationales=[f"{concept} example"])


@pytest.fixture(scope="module")
def retriever(default_embedder):
    kb = KnowledgeBase(
        [_t("dog", "en", {"sadness": 1.0}), _t("stadium", "en", {"happiness": 1.0}), _t("dog", "zh", {"fear": 1.0})],
        CEDAR, extra_counts={"label_prior": {"en": {"fear": 3, "sadness": 1}, "zh": {"anger": 2}}},
    )
    return open_retriever(kb, default_embedder, backend="numpy")


@pytest.fixture
def items(tmp_path):
    img = tmp_path / "evening.png"
    Image.new("RGB", (16, 16), (200, 120, 40)).save(img)

    def s(sid, lang, text, gold, image=None):
        return Sample(id=sid, culture=lang, text=text, question="How do they feel?", label=gold, image=image,
                      metadata={"modality": "multimodal" if image else "text"})

    return [
        s("e1", "en", "A dog is lost.", "sadness"),
        s("e2", "en", "The fans at the stadium.", "happiness"),
        s("e3", "en", "A quiet evening.", "fear", image=str(img)),
        s("z1", "zh", "A dog is lost.", "anger"),
        s("z2", "zh", "Fans at the stadium.", "happiness"),
    ]


def test_registered():
    assert get_runner("cedar") is CedarRunner


def test_kb_prior_metrics_by_hand(retriever, items, tmp_path):
    runner = CedarRunner(items, CedarPredictor("cedar14", retriever), prompt_languages=["en", "zh"], progress=False)
    m = runner.run(tmp_path / "run").metrics
    orig, know = m["settings"]["orig"]["all"], m["settings"]["know"]["all"]
    # orig: the culture's prior (en: fear, zh: anger) -> en 1/3 (e3), zh 1/2 (z1)
    assert orig["per_language"] == {"en": pytest.approx(1 / 3), "zh": pytest.approx(1 / 2)}
    assert orig["macro_average"] == pytest.approx(5 / 12)
    assert orig["cross_lingual_variance"] == pytest.approx(1 / 144)
    # GEPP: fear predicted 3x / gold once; anger 2x / once; happiness 0 of 2; a label never gold is NaN
    assert orig["gepp"]["fear"] == pytest.approx(3.0) and orig["gepp"]["anger"] == pytest.approx(2.0)
    assert orig["gepp"]["happiness"] == 0.0 and math.isnan(orig["gepp"]["awe"])
    # GRQB: all 5 predictions in Q2; golds Q1 x2, Q2 x2, Q3 x1
    assert orig["grqb"] == {"Q1": pytest.approx(-40.0), "Q2": pytest.approx(60.0), "Q3": pytest.approx(-20.0),
                            "Q4": 0.0}
    # know: the dog and stadium cues fix en; zh's dog means fear there and zh has no stadium tuple
    assert know["per_language"] == {"en": 1.0, "zh": 0.0}
    assert know["macro_average"] == 0.5 and know["cross_lingual_variance"] == pytest.approx(0.25)
    assert know["with_cues"] == 3 and know["cue_status"]["matched"] == 3
    # multimodal and text-only apart
    assert m["settings"]["orig"]["multimodal"]["accuracy"] == 1.0
    assert m["settings"]["orig"]["text"]["n"] == 4
    # the prompt-language x data-language grid (kb-prior ignores the prompt language)
    assert m["grid"] == {"en": {"en": 1.0, "zh": 0.0}, "zh": {"en": 1.0, "zh": 0.0}}
    tables = cedar_tables(m)
    assert set(tables) == {"accuracy", "gepp", "lsepp", "grqb", "lsrqb", "grid"}
    md = (tmp_path / "run" / "cedar.md").read_text(encoding="utf-8")
    assert "Russell quadrant bias" in md and "know / multimodal" in md
    for name in ("accuracy-all", "accuracy-multimodal", "accuracy-text", "quadrant-bias", "grid"):
        assert (tmp_path / "run" / f"cedar-{name}.png").read_bytes()[:4] == b"\x89PNG"


def test_lsrqb_by_hand(retriever, items, tmp_path):
    m = CedarRunner(items, CedarPredictor("cedar14", retriever), modes=["orig"], progress=False).run(tmp_path).metrics
    zh = m["settings"]["orig"]["all"]["lsrqb"]["zh"]
    # zh: preds anger, anger (Q2 x2); golds anger (Q2), happiness (Q1); total 2
    assert zh == {"Q1": pytest.approx(-50.0), "Q2": pytest.approx(50.0), "Q3": 0.0, "Q4": 0.0}


def test_scripted_model_over_http(retriever, items, openai_server, tmp_path):
    def respond(body):
        text = body["messages"][-1]["content"]
        text = text if isinstance(text, str) else next(p["text"] for p in text if p["type"] == "text")
        if "情境" in text:
            return "我不确定。"  # no label: counted as invalid
        if "quiet evening" in text:
            return (400, '{"error": {"message": "bad request"}}')  # a failed call: counted as an error
        if "- dog -> sadness" in text:
            return '{"emotion": "sadness", "explanation": "the cue"}'
        return "They would feel happiness."

    srv = openai_server(respond)
    client = OpenAICompatClient("cedar-vlm", base_url=srv.base_url, max_retries=0)
    predictor = CedarPredictor("cedar14", retriever, client)
    res = CedarRunner(items, predictor, progress=False).run(tmp_path)
    know = {p.sample_id: p for p in res.predictions["know"]}
    assert know["e1"].label == "sadness" and know["e1"].parse_status == "json" and know["e1"].tuples_used
    assert know["e2"].label == "happiness" and know["e2"].parse_status == "text"
    assert know["e3"].parse_status == "error" and know["e3"].label is None
    assert know["z1"].parse_status == "invalid" and know["z1"].prompt_language == "zh"
    bodies = srv.requests
    assert all(b["temperature"] == 0.0 and b["max_tokens"] == 128 for b in bodies)
    # the multimodal item sends its image
    assert any(isinstance(b["messages"][-1]["content"], list) for b in bodies)
    m = res.metrics["settings"]["know"]["all"]
    assert (m["invalid"], m["errors"]) == (2, 1)  # z1, z2 invalid; e3 failed; all scored wrong, none dropped
    assert m["n"] == 5 and m["accuracy"] == pytest.approx(2 / 5)
    log = (tmp_path / "run.log").read_text(encoding="utf-8")  # every run folder has its log
    assert "eval cedar started: culturekb" in log and "eval cedar finished after" in log


def test_bad_configurations(retriever, items, default_embedder):
    artemis_kb = KnowledgeBase([_t("dog", "en", {"sadness": 1.0})])
    with pytest.raises(ConfigError, match="no mapping"):
        CedarPredictor("cedar14", open_retriever(artemis_kb, default_embedder, backend="numpy"))
    with pytest.raises(ConfigError, match="needs a KB"):
        CedarPredictor("cedar14")
    # a prompt language without a Cedar template is no error: English, recorded (tests/text/test_prompt_resolver.py)
    with pytest.raises(ConfigError, match="unknown Cedar mode"):
        CedarRunner(items, CedarPredictor("cedar14", retriever), modes=["random-know"])


def _fixture_kb(default_embedder, out: Path) -> Path:
    from culturekb.builders.concepts import PrecomputedConcepts
    from culturekb.builders.judges import LexiconJudge, PrototypeJudge
    from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
    from culturekb.builders.rationales import ExtractiveRationaleGenerator
    from culturekb.kb.loaders import load_samples_jsonl

    samples = load_samples_jsonl(FIX / "cedar_kb_train.jsonl", scheme="cedar14").samples
    components = BuildComponents(PrecomputedConcepts(), ExtractiveRationaleGenerator(default_embedder),
                                 [LexiconJudge("cedar14"), PrototypeJudge(default_embedder, "cedar14")])
    build_kb(samples, BuildConfig(scheme="cedar14", concepts="precomputed", min_support=1), out=out,
             components=components, progress=False)
    return out


def test_real_fixture_end_to_end_and_cli(default_embedder, tmp_path, monkeypatch):
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)
    kb_dir = _fixture_kb(default_embedder, tmp_path / "kb")
    samples = load_cedar(FIX / "cedar_sample.jsonl")
    kb = KnowledgeBase.load(kb_dir)
    predictor = CedarPredictor("cedar14", open_retriever(kb, default_embedder, backend="numpy"))
    m = CedarRunner(samples, predictor, progress=False).run(tmp_path / "run").metrics
    know = m["settings"]["know"]["all"]
    assert know["n"] == 18 and set(know["per_language"]) == {"en", "ar", "zh"}
    assert know["with_cues"] >= 5  # FindingEmo scenes share people and settings with the KB's training scenes
    assert know["cue_status"]["culture-not-in-kb"] == 5  # ar and zh items: the KB is English only
    result = CliRunner().invoke(__import__("culturekb.cli", fromlist=["app"]).app, [
        "eval", "cedar", str(FIX / "cedar_sample.jsonl"), "--kb", str(kb_dir), "--out", str(tmp_path / "cli"),
        "--modes", "orig,know", "--prompt-languages", "en,zh"])
    assert result.exit_code == 0, result.output
    assert "Accuracy per language" in result.output and "Prompt language x data language" in result.output
    report = json.loads((tmp_path / "cli" / "cedar.json").read_text(encoding="utf-8"))
    assert set(report["settings"]) == {"orig", "know", "know@en", "know@zh"}
    bad = CliRunner().invoke(__import__("culturekb.cli", fromlist=["app"]).app, [
        "eval", "cedar", str(FIX / "cedar_sample.jsonl"), "--out", str(tmp_path / "cli2")])
    assert bad.exit_code == 2 and "need a KB" in bad.output
