"""CulturalToM-VQA: the loader and its matrix check, positivity and Excess Positivity Drift by hand, every strategy
over HTTP to the scripted server (the compositional one with an invalid scene graph re-asked), resume with zero
calls, and the CLI end to end on the shipped sample."""

import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.errors import ConfigError, DataError
from culturekb.evals.culturaltom import (
    CulturalToMRunner,
    excess_positivity_drift,
    load_culturaltom,
    load_matrix,
    macro_f1,
    option_positivity,
    positivity_pick,
)
from culturekb.evals.runner import get_runner
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.schemes import get_scheme
from culturekb.kb.store import KnowledgeBase
from culturekb.models.chat import OpenAICompatClient
from culturekb.retrieval import open_retriever

SAMPLE = Path(str(resources.files("culturekb.data").joinpath("demo/culturaltom/culturaltom_sample.jsonl")))
FINDINGEMO = SAMPLE.parent / "findingemo_items.jsonl"


def _row(**over):
    row = {"id": "q1", "image": "img.png", "question": "What does the bride feel at the wedding?",
           "options": ["Joyful", "Bored", "Angry", "Afraid"], "answer": "A", "task": "mental state attribution",
           "level": 1, "image_source": "FindingEmo", "region": "CN", "culture": "zh"}
    row.update(over)
    return row


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def data_dir(tmp_path):
    Image.new("RGB", (8, 8), (200, 30, 30)).save(tmp_path / "img.png")
    return tmp_path


# -- loader and matrix ----------------------------------------------------------------------------------------------

def test_shipped_sample_loads_with_its_matrix():
    samples = load_culturaltom(SAMPLE)
    assert len(samples) == 41
    matrix = load_matrix()
    assert all(matrix.allows(s.metadata["task"], s.metadata["level"]) for s in samples)
    assert {s.metadata["image_source"] for s in samples} == {"none", "WikiArt"}
    assert {s.metadata["language"] for s in samples} == {"en", "zh"}
    with_image = [s for s in samples if s.image]
    assert len(with_image) == 5 and all(Path(str(s.image)).is_file() for s in with_image)
    fe = load_culturaltom(FINDINGEMO, check_images=False)  # paths only: FindingEmo ships no pixels
    assert len(fe) == 10 and all(s.metadata["image_source"] == "FindingEmo" for s in fe)
    with pytest.raises(DataError, match="not found"):
        load_culturaltom(FINDINGEMO)


def test_loader_reads_jsonl_and_tsv(data_dir):
    s = load_culturaltom(_write(data_dir / "a.jsonl", [_row(answer="(b)", level="2", task="false-belief")]))[0]
    assert (s.label, s.metadata["task"], s.metadata["level"], s.culture) == ("B", "false_belief", 2, "zh")
    tsv = data_dir / "a.tsv"
    tsv.write_text("id\timage\tquestion\toption_a\toption_b\toption_c\toption_d\tanswer\ttask\tlevel\timage_source\t"
                   "region\tcontext\nq9\t\tWho knows?\tAli\tBea\tCem\tDan\tC\tperspective coordination\t2\tnone\tTR\t"
                   "A story.\n", encoding="utf-8")
    t = load_culturaltom(tsv)[0]
    assert (t.options, t.label, t.image, t.text, t.culture) == (["Ali", "Bea", "Cem", "Dan"], "C", None,
                                                                "A story.", "TR")


@pytest.mark.parametrize(("over", "message"), [
    ({"answer": "E"}, "answer 'E' is not one of the option letters"),
    ({"options": ["a"]}, "2 to 26 answer texts, got 1"),
    ({"options": ["a", None, "c"]}, "an empty option comes before a filled one"),
    ({"options": ["a", "b", "a", "c"]}, "two options have the same text"),
    ({"task": "telepathy"}, "unknown task 'telepathy'"),
    ({"level": 4}, "has no complexity level 4 in the task x complexity matrix"),
    ({"level": "high"}, "must be a number 1-4"),
    ({"question": ""}, "field 'question' is missing or empty"),
    ({"image": ""}, "set image_source to 'none' for a text-only question"),
])
def test_bad_rows_name_file_and_line(data_dir, over, message):
    path = _write(data_dir / "bad.jsonl", [_row(id="ok"), _row(**over)])
    with pytest.raises(DataError, match=message) as err:
        load_culturaltom(path)
    assert f"{path}, line 2" in str(err.value)


def test_duplicate_ids_and_another_matrix(data_dir):
    with pytest.raises(DataError, match=r"already used \(.*, line 1\)"):
        load_culturaltom(_write(data_dir / "d.jsonl", [_row(), _row()]))
    matrix = data_dir / "m.json"
    matrix.write_text(json.dumps({"levels": {"1": "a", "4": "b"}, "tasks": {
        "mental_state_attribution": {"levels": [4], "aliases": ["mental state attribution"]}}}))
    path = _write(data_dir / "m.jsonl", [_row(level=4)])
    assert load_culturaltom(path, matrix=matrix)[0].metadata["level"] == 4
    with pytest.raises(DataError, match="no complexity level 4"):
        load_culturaltom(path)


# -- positivity, drift, macro-F1 by hand ---------------------------------------------------------------------------

def test_positivity_by_hand():
    assert option_positivity("happy and kind") == pytest.approx(2 / 3)  # two positive words of three
    assert option_positivity("not happy") == pytest.approx(-1 / 2)  # negated
    assert option_positivity("The man is sad and angry") == pytest.approx(-2 / 6)
    assert option_positivity("a red box") == 0.0
    assert option_positivity("我很高兴", "zh") == pytest.approx(1 / 3)  # 我 很 高兴
    assert option_positivity("我不高兴", "zh") == pytest.approx(-1 / 3)
    assert option_positivity("Er ist nicht traurig", "de") == pytest.approx(1 / 4)
    pick = positivity_pick(["a red box", "a blue box", "happy", "sad"])
    assert (pick.tied, pick.pick, pick.expected_credit(2), pick.expected_credit(0)) == ((2,), 2, 1.0, 0.0)
    tie = positivity_pick(["a red box", "a blue box", "a cup", "sad"], item_id="x")
    assert tie.tied == (0, 1, 2) and tie.pick in tie.tied and tie.expected_credit(1) == pytest.approx(1 / 3)
    assert positivity_pick(["a red box", "a blue box", "a cup", "sad"], item_id="x").pick == tie.pick  # seeded


def test_excess_positivity_drift_by_hand():
    scores: list[list[float]] = [[0.5, 0.0, -0.5, 0.2], [0, 0, 0, 0], [1, -1, -1, 0], [0, 1, 0, 0], [-1, 0.5, 0, 0]]
    golds = [1, 2, 0, 1, 0]
    chosen = [0, 3, 0, None, 2]
    # wrong answers: item 1 (0.5 > 0: more positive; chance 2/3 of its wrong options beat the gold),
    # item 2 (0 > 0 no; chance 0), item 5 (0 > -1 yes; chance 3/3); item 3 right, item 4 invalid
    d = excess_positivity_drift(scores, golds, chosen)
    assert (d["n_wrong"], d["n_invalid"]) == (3, 1)
    assert d["observed"] == pytest.approx(2 / 3)
    assert d["chance"] == pytest.approx((2 / 3 + 0 + 1) / 3)
    assert d["drift"] == pytest.approx(1 / 9) and d["ratio"] == pytest.approx(6 / 5)
    assert excess_positivity_drift([[0, 1, 0, 0]], [1], [1])["drift"] is None


def test_macro_f1_by_hand():
    # A: tp 1 fp 1 fn 0 -> 2/3; B: tp 0 fp 0 fn 1 -> 0; C: tp 1 -> 1; the invalid answer is a miss for B
    assert macro_f1(["A", "A", "C", None], ["A", "B", "C", "B"]) == pytest.approx((2 / 3 + 0 + 1) / 3)


def test_unread_at_chance_credits_only_unread_answers_by_hand():
    from culturekb.evals.culturaltom.runner import CulturalToMPrediction
    from culturekb.evals.culturaltom.scoring import unread_at_chance
    from culturekb.kb.schema import Sample

    samples = [Sample(id=str(i), culture="en", options=["x"] * k, label="A") for i, k in enumerate((4, 4, 2, 5))]
    preds = [CulturalToMPrediction(sample_id="0", culture="en", mode="m", label="A", parse_status="text"),
             CulturalToMPrediction(sample_id="1", culture="en", mode="m", label="B", parse_status="text"),
             CulturalToMPrediction(sample_id="2", culture="en", mode="m", label=None, parse_status="invalid"),
             CulturalToMPrediction(sample_id="3", culture="en", mode="m", label=None, parse_status="error")]
    # right 1, wrong 0, unread on two options 1/2, a failed call 0 (not an answer nobody could read)
    assert unread_at_chance(samples, preds) == pytest.approx((1 + 0 + 1 / 2 + 0) / 4)
    assert unread_at_chance([], []) == 0.0


# -- the runner over HTTP -------------------------------------------------------------------------------------------

def _text(body):
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") for p in content if p.get("type") == "text")


def _has_image(body):
    content = body["messages"][0]["content"]
    return isinstance(content, list) and any(p.get("type") == "image_url" for p in content)


GOOD_GRAPH = {"setting": "a wedding", "entities": [{"id": "p1", "type": "person", "attributes": ["smiling"]}],
              "relations": []}
BAD_GRAPH = {"setting": "a wedding", "entities": [{"id": "p1", "type": "person"}],
             "relations": [{"subject": "p1", "predicate": "hugs", "object": "p9"}]}


def _responder(seen):
    def respond(body):
        text = _text(body)
        seen.append((text, _has_image(body), body["max_tokens"], len(body["messages"])))
        if "scene graph before any question" in text:
            if "The ring is hidden" in text and len(body["messages"]) == 1:
                return json.dumps(BAD_GRAPH)  # relation to an unknown entity: invalid, asked again
            return "Here it is:\n```json\n" + json.dumps(GOOD_GRAPH) + "\n```"
        if "nothing else" in text:
            return "(B)"
        if "Here is a scene graph" in text:
            return "The bride smiles.\nAnswer: A"
        return "Let me think step by step.\nFinal answer: Joyful"
    return respond


@pytest.fixture
def items(data_dir):
    rows = [_row(id="q1"), _row(id="q2", question="Who hid the ring at the wedding?", answer="B",
                                   context="The ring is hidden."),
            _row(id="q3", image="", image_source="none", context="At the wedding, Li smiles.", answer="C",
                 task="non_literal_communication", level=2)]
    return load_culturaltom(_write(data_dir / "items.jsonl", rows))


def test_every_strategy_over_http_and_resume(items, openai_server, tmp_path):
    seen: list[Any] = []
    srv = openai_server(_responder(seen))
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    make = lambda: CulturalToMRunner(items, client=client, progress=False)  # noqa: E731
    res = make().run(tmp_path / "run")
    preds: dict[str, dict[str, Any]] = {k: {p.sample_id: p for p in v} for k, v in res.predictions.items()}
    assert list(preds) == ["zero-shot", "cot", "compositional", "blind", "positivity"]
    # zero-shot and blind answer "(B)"; cot names the option text (A); compositional "Answer: A"
    assert [preds["zero-shot"][i].label for i in ("q1", "q2", "q3")] == ["B", "B", "B"]
    assert preds["cot"]["q1"].label == "A" and preds["cot"]["q1"].parse_path == "answer-line"  # the option text
    assert preds["compositional"]["q2"].parse_path == "answer-line"
    # calls per question: 1, 1, 2 (+1 for the re-asked scene graph), 1, 0
    calls = {k: [v[i].calls for i in ("q1", "q2", "q3")] for k, v in preds.items()}
    assert calls == {"zero-shot": [1, 1, 1], "cot": [1, 1, 1], "compositional": [2, 3, 2], "blind": [1, 1, 1],
                     "positivity": [0, 0, 0]}
    assert srv.calls == 3 + 3 + 7 + 3
    assert preds["compositional"]["q2"].scene_graph == GOOD_GRAPH
    assert preds["compositional"]["q2"].scene_graph_status == "ok"
    # the re-ask showed the model what was wrong; the graph reached the answer prompt
    reask = [t for t, _, _, n in seen if n == 3]
    assert len(reask) == 1
    answer_prompts = [t for t, *_ in seen if "Here is a scene graph" in t]
    assert len(answer_prompts) == 3 and all('"entities"' in t for t in answer_prompts)
    # images: sent in every setting but blind (and never for the text-only question); token budgets
    for text, _image, max_tokens, _ in seen:
        if "nothing else" in text:
            assert max_tokens == 32
        else:
            assert max_tokens >= 512
    assert sum(image for t, image, *_ in seen if "nothing else" in t) == 2  # zero-shot q1, q2; blind none
    assert any("Context: At the wedding, Li smiles." in t for t, *_ in seen)
    m = res.metrics
    assert m["settings"]["zero-shot"]["accuracy"] == pytest.approx(1 / 3)
    assert m["settings"]["compositional"]["calls_per_question"] == pytest.approx(7 / 3)
    assert m["blind"]["n_with_image"] == 2 and m["blind"]["same_answer"] == 1.0
    assert m["human_accuracy"] == 0.983
    assert m["positivity_baseline"]["accuracy"] == pytest.approx(1 / 3)  # "Joyful" wins where A is right
    files = {p.name for p in res.files}
    assert {"culturaltom.json", "culturaltom.md", "culturaltom-accuracy-task.png"} <= files
    md = (tmp_path / "run" / "culturaltom.md").read_text(encoding="utf-8")
    assert "human reference" in md and "Excess Positivity Drift" in md and "Macro-F1 (%) by region" in md
    before = srv.calls
    again = make().run(tmp_path / "run")  # resumed: no model call at all
    assert srv.calls == before and set(again.n_predicted.values()) == {0}


def test_thinking_reads_a_cut_off_reasoning_answer_as_none(items, openai_server, tmp_path):
    # a reasoning model's answer that stops inside its thinking: a passing conclusion is no answer under
    # --thinking (the run's config records it, so answers read the other way are not resumed into it)
    srv = openai_server(lambda body: "Okay, so the bride smiles. So she is probably joyful, which is option A. "
                                     "Wait, but the ring")
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    plain = CulturalToMRunner(items, client=client, setting_names=["zero-shot"], progress=False)
    thinking = CulturalToMRunner(items, client=client, setting_names=["zero-shot"], thinking=True, progress=False)
    assert thinking.config()["thinking"] is True and "thinking" not in plain.config()
    read = {p.parse_path for p in plain.run(tmp_path / "plain").predictions["zero-shot"]}
    cut = thinking.run(tmp_path / "thinking")
    assert read == {"conclusion"}
    assert {p.parse_status for p in cut.predictions["zero-shot"]} == {"invalid"}
    # unread answers at chance: the items have 4 options each, none read, a quarter of a point each
    assert cut.metrics["settings"]["zero-shot"]["accuracy"] == 0.0
    assert cut.metrics["settings"]["zero-shot"]["accuracy_unread_at_chance"] == pytest.approx(1 / 4)


def test_failed_scene_graph_call_is_retried_on_rerun(items, openai_server, tmp_path):
    state = {"down": True}

    def respond(body):
        if state["down"] and "scene graph before any question" in _text(body):
            return (500, '{"error": {"message": "down"}}')
        return _responder([])(body)

    srv = openai_server(respond)
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    run = lambda: CulturalToMRunner(items, client=client, setting_names=["compositional"],  # noqa: E731
                                    progress=False).run(tmp_path)
    first = run()
    assert {p.parse_status for p in first.predictions["compositional"]} == {"error"}
    assert first.metrics["settings"]["compositional"]["errors"] == 3
    state["down"] = False
    second = run()
    assert second.n_predicted == {"compositional": 3}
    assert {getattr(p, "scene_graph_status", None) for p in second.predictions["compositional"]} == {"ok"}


def test_kb_cues_reach_the_prompt(items, openai_server, tmp_path, default_embedder):
    def t(concept, culture, label):
        return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 1.0}, support=3,
                              rationales=[f"a {concept} is a happy family occasion"])

    kb = KnowledgeBase([t("wedding", "zh", "contentment"), t("ring", "en", "awe")], get_scheme("artemis9"))
    retriever = open_retriever(kb, default_embedder, backend="numpy")
    seen: list[Any] = []
    srv = openai_server(_responder(seen))
    client = OpenAICompatClient("vlm", base_url=srv.base_url, max_retries=0)
    res = CulturalToMRunner(items, client=client, retriever=retriever, progress=False,
                            setting_names=["zero-shot+kb-cues", "compositional+kb-cues"]).run(tmp_path)
    cued: list[Any] = list(res.predictions["zero-shot+kb-cues"])
    assert all(p.cue_status == "matched" and p.tuples_used for p in cued)
    prompts = [t for t, *_ in seen]
    assert sum("wedding -> contentment" in t for t in prompts) == 6  # zero-shot x3, compositional answers x3
    assert not any("wedding -> contentment" in t for t in prompts if "scene graph before any question" in t)
    assert res.metrics["settings"]["zero-shot+kb-cues"]["with_cues"] == 3


def test_configuration_errors(items):
    with pytest.raises(ConfigError, match="need a model"):
        CulturalToMRunner(items, setting_names=["zero-shot"])
    with pytest.raises(ConfigError, match="need a KB for the cues"):
        CulturalToMRunner(items, client=type("C", (), {"id": "c"})(), setting_names=["cot+kb-cues"])
    with pytest.raises(ConfigError, match="at least 512"):
        CulturalToMRunner(items, client=type("C", (), {"id": "c"})(), reasoning_max_tokens=256)
    with pytest.raises(ConfigError, match="unknown CulturalToM-VQA settings"):
        CulturalToMRunner(items, setting_names=["few-shot"])
    assert CulturalToMRunner(items).settings()[0].key == "positivity"  # no model: the baseline alone
    assert get_runner("culturaltom") is CulturalToMRunner


# -- the CLI end to end on the shipped sample -----------------------------------------------------------------------

def test_cli_on_the_shipped_sample(openai_server, tmp_path, monkeypatch):
    from culturekb.cli import app

    monkeypatch.chdir(tmp_path)  # the response cache goes under the test's folder
    srv = openai_server(_responder([]))
    runner = CliRunner()
    args = ["eval", "culturaltom", str(SAMPLE), "--model", "openai:scripted", "--base-url", srv.base_url,
            "--out", str(tmp_path / "run")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "Accuracy and macro-F1 by model and setting" in res.output and "human reference" in res.output
    report = json.loads((tmp_path / "run" / "culturaltom.json").read_text())
    assert set(report["settings"]) == {"zero-shot", "cot", "compositional", "blind", "positivity"}
    # 1 + 1 + 2 + 1 + 0 requests per question; the 36 text-only questions' blind prompt is their zero-shot
    # prompt, so the response cache answers it
    assert report["n_samples"] == 41 and srv.calls == 41 * 5 - 36
    assert {"task", "level", "image_source", "region"} <= set(report["counts"])
    assert math.isclose(report["settings"]["compositional"]["calls_per_question"], 2.0)
    assert (tmp_path / "run" / "culturaltom-accuracy-level.png").stat().st_size > 0
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and srv.calls == 41 * 5 - 36  # rerun: zero model calls
    offline = runner.invoke(app, ["eval", "culturaltom", str(FINDINGEMO), "--out", str(tmp_path / "fe")])
    assert offline.exit_code == 0, offline.output  # the positivity baseline needs no model and no pixels
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_row(level=9)) + "\n", encoding="utf-8")
    refused = runner.invoke(app, ["eval", "culturaltom", str(bad), "--out", str(tmp_path / "x")])
    assert refused.exit_code == 2 and "line 1" in refused.output
    assert not (tmp_path / "x" / "culturaltom.json").exists()
