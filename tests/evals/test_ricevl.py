"""RICE-VL: the cue KB through the builders, SEA-LAVE judging (offline and over HTTP), VQA and grounding runs."""

import json
import math
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.builders.cue_kb import build_cue_kb
from culturekb.errors import ConfigError
from culturekb.evals.ricevl import (
    JudgeScores,
    ReferenceJudge,
    Region,
    RiceVLGroundingRunner,
    RiceVLVQARunner,
    SeaLaveJudge,
    VQAPrediction,
    parse_judge_scores,
    token_f1,
)
from culturekb.evals.ricevl.data import load_cue_metadata, load_ricevl_grounding, load_ricevl_vqa
from culturekb.evals.ricevl.vqa import vqa_tables
from culturekb.evals.runner import get_runner
from culturekb.kb import Sample
from culturekb.models.chat import OpenAICompatClient
from culturekb.retrieval.retriever import open_retriever

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "cedar_ricevl"
ASIA = Region("Asia", ("India", "Iran", "Japan"))


def _vqa(predictions: Iterable[object]) -> list[VQAPrediction]:
    """A VQA run's predictions, each checked to be the runner's record type (with its judge's scores)."""
    out = []
    for p in predictions:
        assert isinstance(p, VQAPrediction), p
        out.append(p)
    return out


def _prompt(body):
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


@pytest.fixture(scope="module")
def cue_kb(default_embedder, tmp_path_factory):
    out = tmp_path_factory.mktemp("cue") / "kb"
    samples = load_cue_metadata(FIX / "ricevl_cue_metadata.jsonl", allow_unknown_countries=True)
    res = build_cue_kb(samples, out, embedder=default_embedder)
    return res.kb, out


@pytest.fixture(scope="module")
def retriever(cue_kb, default_embedder):
    return open_retriever(cue_kb[0], default_embedder, backend="numpy")


@pytest.fixture(scope="module")
def vqa():
    return load_ricevl_vqa(FIX / "ricevl_vqa.jsonl", allow_unknown_countries=True)


# -- pure pieces ------------------------------------------------------------------------------------------------


def test_token_f1_by_hand():
    assert token_f1("chilli crab, Singapore", "chilli crab") == pytest.approx(2 * (2 / 3) * 1 / (2 / 3 + 1))
    assert token_f1("", "") == 1.0 and token_f1("the", "crab") == 0.0 and token_f1("crab", "laksa") == 0.0
    # repeated tokens count as often as they occur in both
    assert token_f1("crab crab", "crab") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_parse_judge_scores():
    assert parse_judge_scores({"TU": 1, "CU": "0", "CI": 2.0, "justification": "ok"}) == (1, 0, 2, "ok")
    assert parse_judge_scores([{"text understanding": 0, "cultural_understanding": 1, "ci": 1}]) == (0, 1, 1, "")
    for bad, kind in [({"TU": 1, "CU": 1, "CI": 3}, ValueError), ({"TU": True, "CU": 1, "CI": 1}, ValueError),
                      ({"TU": 0.5, "CU": 1, "CI": 1}, ValueError), ({"TU": 1, "CI": 1}, KeyError),
                      ("TU=1", ValueError), ({"TU": "high", "CU": 1, "CI": 1}, ValueError)]:
        with pytest.raises(kind):
            parse_judge_scores(bad)


def test_judge_scores_sea_lave_by_hand():
    assert JudgeScores(1, 0, 1).score == pytest.approx(0.5)
    assert JudgeScores(1, 1, 2).score == 1.0 and JudgeScores(0, 0, 0).score == 0.0
    assert JudgeScores(None, None, None, "invalid").score == 0.0  # a failed judge scores 0


def test_reference_judge_by_hand(vqa):
    judge = ReferenceJudge()
    qa = next(s for s in vqa if s.id.endswith("-qa") and s.culture == "Iran")       # persian miniature, Iran
    tf = next(s for s in vqa if s.id.endswith("-tf") and s.culture == "Japan")      # true; names Japan
    fill = next(s for s in vqa if s.id.endswith("-fill") and s.culture == "India")  # mughal painting
    got = judge.judge([(qa, "A persian miniature from Iran."), (qa, "bahram chubina, from India."),
                       (tf, "True."), (tf, "False, it is from Japan."), (fill, "Mughal painting")], ASIA)
    assert [(g.tu, g.cu, g.ci) for g in got] == [(1, 1, 2), (0, 0, 1), (1, 1, 2), (0, 0, 2), (1, 1, 0)]


# -- the cue KB -----------------------------------------------------------------------------------------------------


def test_cue_kb_goes_through_the_builders(cue_kb):
    kb, out = cue_kb
    assert kb.scheme.name == "ricevl14" and set(kb.cultures) == {"India", "Iran", "Japan"}
    mughal = next(t for t in kb.tuples if t.concept == "mughal painting")
    assert (mughal.culture, mughal.label, mughal.support) == ("India", "painting", 3)
    assert mughal.rationales and len(mughal.verdicts) == 2  # extractive facts, two judges' verdicts
    assert mughal.provenance["extractor"].startswith("precomputed")
    assert (out / "manifest.json").is_file() and (out / "build_report.json").is_file()


# -- VQA ----------------------------------------------------------------------------------------------------------


def test_vqa_kb_prior_reference_judge(vqa, retriever, tmp_path):
    runner = RiceVLVQARunner(vqa, retriever=retriever, region=ASIA, progress=False)
    res = runner.run(tmp_path)
    cues = {p.sample_id: p for p in _vqa(res.predictions["kb-cues"])}
    iran_qa = cues["vulca-PAIR_10475-qa"]  # "Bahram Chubina Slays the Lion-Ape": the title's concept is in the KB
    assert iran_qa.cue_status == "matched" and iran_qa.label == "bahram, from Iran."
    # reference "persian miniature, Iran": token F1 0.4 < 0.5 -> TU 0; the sub-culture is not named -> CU 0;
    # Iran is named -> CI 2; SEA-LAVE (0 + 0 + 2/2) / 3
    assert (iran_qa.tu, iran_qa.cu, iran_qa.ci) == (0, 0, 2) and iran_qa.sea_lave == pytest.approx(1 / 3)
    m = res.metrics
    assert set(m["settings"]) == {"global", "sea", "kb-cues"}
    k = m["settings"]["kb-cues"]
    assert k["n"] == 9 and k["judged"] == 9 and k["with_cues"] >= 1
    assert set(k["per_country"]) == {"India", "Iran", "Japan"} and set(k["per_format"]) == {"qa", "tf", "fill"}
    scores = [p.sea_lave for p in cues.values() if p.sea_lave is not None]
    assert len(scores) == 9 and k["sea_lave"] == pytest.approx(sum(scores) / 9)
    md = (tmp_path / "ricevl-vqa.md").read_text(encoding="utf-8")
    for title in ("SEA-LAVE per setting", "SEA-LAVE per country", "SEA-LAVE per category",
                  "SEA-LAVE per question format"):
        assert title in md
    fmt = vqa_tables(m)["format"]  # every score per question format has its bootstrap interval and n
    assert [r[0] for r in fmt.rows] == ["fill", "qa", "tf"]
    for row in fmt.rows:
        cells = map(str, row[1:-1])
        assert all(re.fullmatch(rf"\d\.\d{{3}} \[\d\.\d{{3}}, \d\.\d{{3}}\] n={row[-1]}", c) for c in cells), row
    assert (tmp_path / "ricevl-vqa-country.png").read_bytes()[:4] == b"\x89PNG"
    assert get_runner("ricevl-vqa") is RiceVLVQARunner


def test_vqa_scripted_model_and_judge(vqa, retriever, openai_server, tmp_path):
    state = {"fail_judge": True}

    def model(body):
        text = _prompt(body)
        assert body["temperature"] == 0.0 and body["max_tokens"] == 128
        if "Regional notes" in text:
            return "bahram chubina, from Iran."
        return "True." if "True or false" in text else "A painting tradition of Japan."

    def judge(body):
        text = _prompt(body)
        if state["fail_judge"]:
            return (500, '{"error": {"message": "down"}}')
        if len(body["messages"]) == 1 and "Bahram" in text:
            return "It is mostly right."  # invalid JSON: the judge is asked again
        if "Intellectual Pursuits" in text:
            return "TU 1, CU 1"  # stays invalid after the re-asks: counted, scored 0
        return json.dumps({"TU": 1, "CU": int("true-or-false" in text), "CI": 2, "justification": "fine"})

    msrv, jsrv = openai_server(model), openai_server(judge)
    client = OpenAICompatClient("vlm", base_url=msrv.base_url, max_retries=0)
    judge_client = OpenAICompatClient("judge", base_url=jsrv.base_url, max_retries=0)
    make = lambda: RiceVLVQARunner(vqa, client=client, retriever=retriever,  # noqa: E731
                                   judge=SeaLaveJudge(judge_client, retries=1), region=ASIA, progress=False)
    first = make().run(tmp_path)
    assert first.metrics["settings"]["sea"]["judge_errors"] == 9  # every judge call failed: scored 0, counted
    assert first.metrics["settings"]["sea"]["sea_lave"] == 0.0
    state["fail_judge"] = False
    res = make().run(tmp_path)  # resumes: the answers are kept, the failed judgements are redone
    assert res.n_predicted == {"global": 9, "sea": 9, "kb-cues": 9}
    sea = {p.sample_id: p for p in _vqa(res.predictions["sea"])}
    assert sea["vulca-PAIR_04384-fill"].judge_status == "invalid"
    assert sea["vulca-PAIR_10475-qa"].judge_status == "ok"  # after one re-ask
    tf = sea["vulca-PAIR_09366-tf"]
    assert (tf.tu, tf.cu, tf.ci, tf.sea_lave) == (1, 1, 2, 1.0)
    s = res.metrics["settings"]["sea"]
    assert (s["judge_invalid"], s["judge_errors"], s["judged"]) == (1, 0, 8)
    # per format: tf items score 1; qa/fill (1 + 0 + 1) / 3 except the invalid one, which scores 0
    assert s["per_format"]["tf"] == pytest.approx(1.0)
    assert s["per_format"]["fill"] == pytest.approx((2 / 3 + 0 + 2 / 3) / 3)
    prompts = [_prompt(b) for b in msrv.requests]
    assert any("Asia (India, Iran, Japan)" in p for p in prompts)
    assert any("Regional notes" in p and "Notes on Iran" in p for p in prompts)
    assert not any("Asia" in p for p in prompts if "Regional notes" not in p and "culture of" not in p)
    rubrics = [_prompt(b) for b in jsrv.requests]
    assert any("true-or-false question" in r for r in rubrics) and any("fill-in-the-blank" in r for r in rubrics)


def test_vqa_bad_configuration(vqa, retriever):
    with pytest.raises(ConfigError, match="kb-cues setting needs a cue KB"):
        RiceVLVQARunner(vqa, client=type("C", (), {"id": "c"})())
    with pytest.raises(ConfigError, match="unknown RICE-VL VQA settings"):
        RiceVLVQARunner(vqa, retriever=retriever, setting_names=["local"])
    with pytest.raises(ConfigError, match="cue_scope"):
        RiceVLVQARunner(vqa, retriever=retriever, cue_scope="planet")


def test_vqa_country_scope_oracle_falls_back(vqa, retriever, tmp_path):
    runner = RiceVLVQARunner(vqa, retriever=retriever, region=ASIA, setting_names=["kb-cues"], cue_scope="country",
                             fallback_cues=1, progress=False)
    preds = _vqa(runner.run(tmp_path).predictions["kb-cues"])
    japan = [p for p in preds if p.culture == "Japan"]
    assert all(p.cue_status in ("matched", "fallback") for p in preds)
    assert all("Japan" in (p.label or "") for p in japan)  # the oracle gives the item's own country away


# -- grounding ----------------------------------------------------------------------------------------------------


@pytest.fixture
def grounding(tmp_path):
    Image.new("RGB", (400, 200), (90, 90, 90)).save(tmp_path / "a.png")
    rows = [{"id": f"g{i}", "country": c, "category": "transport", "image": "a.png", "phrase": p,
             "bbox": [100, 50, 300, 150]} for i, (c, p) in enumerate(
                 [("TH", "tuk-tuk"), ("TH", "long-tail boat"), ("VN", "cyclo"), ("VN", "xe om"), ("PH", "jeepney"),
                  ("PH", "bangka")])]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return load_ricevl_grounding(path)


def test_grounding_full_image_baseline_by_hand(grounding, tmp_path):
    m = RiceVLGroundingRunner(grounding, progress=False).run(tmp_path).metrics["settings"]["ground"]
    # gold 200x100 inside a 400x200 image: IoU = 20000 / 80000
    assert m["mean_iou"] == pytest.approx(0.25) and m["accuracy_at_iou"] == 0.0
    assert m["per_country"] == {"PH": pytest.approx(0.25), "TH": pytest.approx(0.25), "VN": pytest.approx(0.25)}
    assert get_runner("ricevl-grounding") is RiceVLGroundingRunner


def test_grounding_scripted_forms_and_failures(grounding, openai_server, tmp_path):
    answers = {
        "tuk-tuk": "<|box_start|>(250,250),(750,750)<|box_end|>",              # exact, 0..1000 grid
        "long-tail boat": '{"bbox_2d": [50, 25, 150, 75]}',                  # sent image is 200x100: x2 scale
        "cyclo": "[100, 25, 250, 75]",                                       # partly outside: clipped
        "xe om": "[150, 75, 50, 25]",                                        # inverted: invalid
        "jeepney": "It is the colourful one.",                               # unparsed
        "bangka": '{"x": 50, "y": 25, "w": 50, "h": 50}',                    # x/y/w/h
    }

    def respond(body):
        text = _prompt(body)
        assert "200 pixels wide and 100 pixels high" in text  # the size the model sees
        return next(a for phrase, a in answers.items() if f"Find this in the image: {phrase}\n" in text)

    srv = openai_server(respond)
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    res = RiceVLGroundingRunner(grounding, client=client, max_image_side=200, progress=False).run(tmp_path)
    m = res.metrics["settings"]["ground"]
    ious = m["ious"]
    assert ious["g0"] == pytest.approx(1.0) and ious["g1"] == pytest.approx(1.0)
    # cyclo: [100, 25, 250, 75] on the 200x100 image sent -> clipped [100, 25, 200, 75] -> x2 to the original:
    # [200, 50, 400, 150] vs gold [100, 50, 300, 150]: inter 100x100, union 2 x 20000 - 10000
    assert ious["g2"] == pytest.approx(10000 / 30000)
    assert ious["g3"] == 0.0 and ious["g4"] == 0.0
    # bangka: [50, 25, 100, 75] sent -> [100, 50, 200, 150]: inside gold, 10000 / 20000
    assert ious["g5"] == pytest.approx(0.5)
    assert m["box_status"] == {"ok": 3, "clipped": 1, "invalid": 1, "unparsed": 1}
    assert m["mean_iou"] == pytest.approx((1 + 1 + 1 / 3 + 0 + 0 + 0.5) / 6)
    assert m["accuracy_at_iou"] == pytest.approx(3 / 6)
    assert m["per_country"]["VN"] == pytest.approx(1 / 6)
    md = (tmp_path / "ricevl-grounding.md").read_text(encoding="utf-8")
    assert "Mean IoU per country" in md and "Mean IoU per category" in md


def test_cli_commands(cue_kb, grounding, tmp_path, monkeypatch, default_embedder):
    from culturekb.cli import app

    # the session's embedder instead of a second load of the same weights
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)

    runner = CliRunner()
    res = runner.invoke(app, ["eval", "ricevl-vqa", str(FIX / "ricevl_vqa.jsonl"), "--kb", str(cue_kb[1]),
                              "--out", str(tmp_path / "vqa"), "--any-country", "--region", "Asia",
                              "--settings", "sea,kb-cues"])
    assert res.exit_code == 0, res.output
    assert "SEA-LAVE per country" in res.output
    assert set(json.loads((tmp_path / "vqa" / "ricevl-vqa.json").read_text())["settings"]) == {"sea", "kb-cues"}
    bad = runner.invoke(app, ["eval", "ricevl-vqa", str(FIX / "ricevl_vqa.jsonl"), "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "unknown country 'India'" in bad.output
    data = Path(grounding[0].image).parent / "g.jsonl"
    res = runner.invoke(app, ["eval", "ricevl-grounding", str(data), "--out", str(tmp_path / "g")])
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "g" / "ricevl-grounding.json").read_text())
    assert math.isclose(report["settings"]["ground"]["mean_iou"], 0.25)


def test_sample_without_format_is_refused(retriever):
    s = Sample(id="x", culture="India", question="q", label="a", metadata={})
    with pytest.raises(ConfigError, match="lacks its format"):
        RiceVLVQARunner([s], retriever=retriever, progress=False).run("/tmp/never-written-ricevl")
