import json

import pytest
from PIL import Image

from culturekb.errors import ConfigError
from culturekb.inference.calibration import PriorModel
from culturekb.inference.predictors import KBPriorPredictor, ModelPredictor, label_prior, make_predictor
from culturekb.kb import Sample
from culturekb.models.chat import OpenAICompatClient


def test_kb_prior_modes(augmenter, small_kb):
    pred = KBPriorPredictor(augmenter)
    s = [Sample(id="a", culture="zh", concepts=["skull"]), Sample(id="b", culture="en", concepts=["nothing here"])]
    know = pred.predict(s, mode="know")
    assert know[0].label == "fear" and know[0].tuples_used == ["zh::skull"]
    assert know[1].label == "sadness" and know[1].tuples_used == []  # falls back to the culture's prior
    orig = pred.predict(s, mode="orig")
    assert [p.label for p in orig] == ["contentment", "sadness"]  # majority of each culture's training labels
    cross = pred.predict([Sample(id="c", culture="zh", concepts=["storm"])], mode="cross-culture-know")
    # en::storm (fear .7, excitement .3, n=9) read as likelihood ratios against the en prior (sadness 4, fear 1):
    # excitement is lifted 0.255/0.053 = 4.8x, fear 0.60/0.158 = 3.8x; on zh's prior (both 0.5/11.5) excitement wins
    assert cross[0].label == "excitement" and cross[0].tuples_used == ["en::storm"]
    assert label_prior(small_kb)["zh"]["contentment"] == pytest.approx(5 / 7)


def test_kb_prior_weights_by_match_score(augmenter):
    # 'bamboo' (exact, contentment .7) + 'full moon' (exact, sadness .6): mix -> contentment 1.1 vs sadness .6
    p = KBPriorPredictor(augmenter).predict([Sample(id="a", culture="zh", concepts=["bamboo", "full moon"])])[0]
    assert p.label == "contentment"


def test_model_predictor_over_http(augmenter, openai_server, tmp_path):
    img = tmp_path / "big.png"
    Image.new("RGB", (3000, 2000), (200, 30, 30)).save(img)
    answers = ['{"emotion": "awe", "explanation": "the crane is noble"}', "garbage", "悲伤。"]
    srv = openai_server(answers)  # served in order; one request at a time keeps the order
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0, max_concurrency=1)
    pred = ModelPredictor(client, augmenter)
    samples = [Sample(id=k, culture="zh", concepts=["crane"], image=str(img)) for k in "abc"]
    out = pred.predict(samples, mode="know")
    req = srv.requests[0]
    content = req["messages"][-1]["content"]
    parts = content if isinstance(content, list) else [content]
    assert any(isinstance(p, dict) and p.get("type") == "image_url" for p in parts)  # image sent as data URL
    text = json.dumps(req, ensure_ascii=False)
    assert "中华" in text or "中国" in text  # Chinese prompt for a Chinese target culture
    by_id = {p.sample_id: p for p in out}
    assert by_id["a"].label == "awe" and by_id["a"].parse_status == "json" and by_id["a"].explanation
    assert by_id["b"].label is None and by_id["b"].parse_status == "invalid" and by_id["b"].raw == "garbage"
    assert by_id["c"].label == "sadness" and by_id["c"].parse_status == "text"
    assert all(p.template_id.startswith("predict_know.zh@") for p in out)
    assert all(p.tuples_used == ["zh::crane"] for p in out)


def test_model_predictor_records_failures(augmenter, openai_server, tmp_path):
    srv = openai_server((400, '{"error": {"message": "no"}}'))
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    pred = ModelPredictor(client, augmenter)
    out = pred.predict([Sample(id="a", culture="zh", concepts=["crane"]),
                        Sample(id="b", culture="zh", image=str(tmp_path / "missing.jpg"))], mode="orig")
    assert [p.parse_status for p in out] == ["error", "error"]
    assert out[1].error is not None and "missing.jpg" in out[1].error and out[0].error
    # no Korean prompt: the English one, and the record says so (text.prompts.resolve_prompt)
    de = pred.predict([Sample(id="a", culture="zh")], mode="orig", prompt_language="ko")[0]
    assert (de.prompt_language, de.language_status) == ("en", "fallback:en")
    assert de.template_id.startswith("predict_text_orig.en@")  # no image: the text prompt
    with pytest.raises(ConfigError, match="unknown model"):
        make_predictor("gpt", augmenter)


def test_support_shrinkage_pulls_small_tuples_toward_the_prior(augmenter):
    # zh prior (add-0.5 smoothed counts): contentment 5.5/11.5, awe 2.5/11.5, fear 0.5/11.5. 'skull' (support 4):
    # fear 0.9, sadness 0.1.
    s = [Sample(id="a", culture="zh", concepts=["skull"])]
    raw = KBPriorPredictor(augmenter, PriorModel(alpha=0.0)).predict(s)[0]
    # no shrinkage, one tuple of the same culture: prior x (P / prior) is the tuple's own P(e)
    assert raw.label == "fear" and raw.probabilities is not None and raw.probabilities["fear"] == pytest.approx(0.9)
    # alpha = 20: p(fear) = (3.6 + 20 * 0.043) / 24 = 0.186, ratio 4.3; p(contentment) = 20 * 0.478 / 24 = 0.398,
    # ratio 0.83: q(fear) ~ 0.043 * 4.3 = 0.19 < q(contentment) ~ 0.478 * 0.83 = 0.40
    shrunk = KBPriorPredictor(augmenter, PriorModel(alpha=20.0)).predict(s)[0]
    assert shrunk.label == "contentment"
    # beta = 0: the prior alone, whatever was retrieved
    prior_only = KBPriorPredictor(augmenter, PriorModel(beta=0.0)).predict(s)[0]
    assert prior_only.label == "contentment" and prior_only.tuples_used == ["zh::skull"]
    assert prior_only.probabilities is not None
    assert prior_only.probabilities["contentment"] == pytest.approx(5.5 / 11.5, abs=1e-6)
