"""The CoMMET run over real HTTP: feedback chosen from the previous answer (right, wrong, branch), the model's own
answers in the conversation, images and the blind run, kb-cues in the first turn only, resume with zero calls,
a failed call replayed from the cache, stories played concurrently, the Runner's predict_stream, and the CLI end to
end on the shipped sample (scripted model, offline judge)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.errors import ConfigError, ProviderError
from culturekb.evals import Runner, Setting, get_runner
from culturekb.evals.commet import CommetRunner, OfflineAnswerJudge, StoryPrediction, load_story_turns
from culturekb.evals.commet.report import commet_tables
from culturekb.inference.base import Prediction
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.kb.store import KnowledgeBase
from culturekb.models.cache import ResponseCache
from culturekb.models.chat import OpenAICompatClient
from culturekb.retrieval.retriever import open_retriever

SAMPLE = Path(__file__).resolve().parents[2] / "culturekb" / "data" / "demo" / "commet" / "commet_sample.jsonl"


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content if p["type"] == "text")


def _question(body: dict[str, Any]) -> str:
    m = re.search(r"Question: (.*)", _text(body["messages"][-1]))
    assert m is not None
    return m.group(1).strip()


def _stories(tmp_path: Path) -> Path:
    """Two stories: 'shop' (3 turns: a branch question, feedback keyed by branch and outcome, an answer keyed by
    the outcome) and 'look' (image-dependent, 2 turns)."""
    img = tmp_path / "red.png"
    Image.new("RGB", (24, 24), (220, 20, 20)).save(img)
    shop = {"id": "shop", "culture": "zh", "category": "intention", "turns": [
        {"text": "Mei finds a wallet on the shop floor.", "question": "What does Mei do with the wallet?",
         "branches": {"returns": {"answers": "she gives it back", "correct": True},
                      "keeps": {"answers": "she keeps it", "correct": False}}},
        {"feedback": {"returns": "FB-RETURNS", "keeps": "FB-KEEPS", "right": "FB-RIGHT", "wrong": "FB-WRONG"},
         "text": "The owner comes back.", "question": "How does the owner feel?", "answer": "grateful",
         "category": "emotion"},
        {"feedback": {"any": "FB-ANY"}, "question": "Would Mei do it again?",
         "answer": {"right": "yes", "wrong": "yes; yes, probably"}, "category": "belief"}]}
    look = {"id": "look", "culture": "en", "category": "percept", "modality": "image-dependent", "turns": [
        {"text": "Tom holds up a card.", "image": img.name, "question": "What colour is the card?", "answer": "red"},
        {"feedback": {"right": "FB-RIGHT", "wrong": "FB-WRONG"}, "question": "Can Ann, behind him, see it?",
         "answer": "no"}]}
    path = tmp_path / "stories.jsonl"
    path.write_text(json.dumps(shop) + "\n" + json.dumps(look) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def judge(default_embedder: Any) -> OfflineAnswerJudge:
    return OfflineAnswerJudge(default_embedder)


def _runner(path: Path, server: Any, judge: OfflineAnswerJudge, **kw: Any) -> CommetRunner:
    client = OpenAICompatClient("scripted", base_url=server.base_url, max_retries=0, cache=kw.pop("cache", None))
    return CommetRunner(load_story_turns(path), client=client, judge=judge, progress=False, **kw)


@pytest.mark.parametrize(("first", "feedback", "correct"), [
    ("She gives it back.", "FB-RETURNS", True),      # the right branch
    ("She keeps it.", "FB-KEEPS", False),            # the wrong branch
    ("She calls the police", "FB-WRONG", False),     # no branch: the outcome decides (the judge says wrong)
])
def test_feedback_in_turn_two_depends_on_the_answer_in_turn_one(tmp_path: Path, openai_server: Any,
                                                                  default_embedder: Any, first: str, feedback: str,
                                                                  correct: bool) -> None:
    answers = {"What does Mei do with the wallet?": first, "How does the owner feel?": "Grateful.",
               "Would Mei do it again?": "yes", "What colour is the card?": "red", "Can Ann, behind him, see it?": "no"}
    srv = openai_server(lambda body: answers[_question(body)])
    res = _runner(_stories(tmp_path), srv, OfflineAnswerJudge(default_embedder, threshold=0.99),
                  setting_names=["orig"]).run(tmp_path / "run")
    shop = [b for b in srv.requests if "wallet" in _text(b["messages"][1])]
    assert len(shop) == 3
    second = shop[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == first  # the model's own earlier answer is in the conversation
    turn2 = _text(second[3])
    assert turn2.startswith(feedback) and "The owner comes back." in turn2
    assert all(f not in turn2 for f in ("FB-RETURNS", "FB-KEEPS", "FB-RIGHT", "FB-WRONG") if f != feedback)
    third = shop[2]["messages"]
    assert [m["content"] for m in third if m["role"] == "assistant"] == [first, "Grateful."]
    assert _text(third[-1]).startswith("FB-ANY")
    rec = next(p for p in res.predictions["orig"] if p.sample_id == "shop")
    assert isinstance(rec, StoryPrediction)
    assert [t.correct for t in rec.turns] == [correct, True, True]
    assert [t.feedback_key for t in rec.turns] == ["", feedback[3:].lower(), "any"]
    assert rec.turns[0].branch == {"FB-RETURNS": "returns", "FB-KEEPS": "keeps"}.get(feedback)
    assert rec.turns[2].expected == ["yes"]  # after a right answer: the answer under 'right'
    assert (rec.story_correct, rec.n_correct, rec.model_calls, rec.judge_calls) == (correct, 2 + correct, 3, 0)


def test_images_blind_run_and_report(tmp_path: Path, openai_server: Any, judge: OfflineAnswerJudge) -> None:
    def model(body: dict[str, Any]) -> str:
        q = _question(body)
        if q == "What colour is the card?":
            last = body["messages"][-1]["content"]
            return "Red." if isinstance(last, list) else "I cannot see a card."
        return {"What does Mei do with the wallet?": "she gives it back", "How does the owner feel?": "angry",
                "Would Mei do it again?": "yes", "Can Ann, behind him, see it?": "No."}[q]

    srv = openai_server(model)
    res = _runner(_stories(tmp_path), srv, judge).run(tmp_path / "run")
    assert [s.key for s in res.settings] == ["orig", "blind"]  # blind: there is an image-dependent story
    look = [b for b in srv.requests if "Tom holds up a card" in _text(b["messages"][1])]
    with_image = [b for b in look if isinstance(b["messages"][1]["content"], list)]
    assert len(with_image) == 2 and len(look) == 4  # orig sends the image (in turn 1, kept in turn 2), blind never
    part = with_image[0]["messages"][1]["content"][0]
    assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/jpeg;base64,")
    m = res.metrics
    orig, blind = m["settings"]["orig"], m["settings"]["blind"]
    assert (orig["n_stories"], orig["n_questions"], blind["n_stories"], blind["skipped_stories"]) == (2, 5, 1, 1)
    assert orig["story_accuracy"] == pytest.approx(1 / 2) and orig["question_accuracy"] == pytest.approx(4 / 5)
    assert orig["story_accuracy_by_category"] == {"intention": 0.0, "percept": 1.0}  # the stories' own categories
    assert orig["question_accuracy_by_category"]["emotion"] == 0.0
    assert orig["by_modality"]["image-dependent"]["story_accuracy"] == 1.0
    assert blind["story_accuracy"] == 0.0 and blind["feedback"]["n_after_wrong"] == 1
    assert m["diagnostics"]["blind"]["story_accuracy"] == [1.0, 0.0]
    assert m["diagnostics"]["blind"]["same_answer_share"] == pytest.approx(1 / 2)
    assert orig["calls"]["model_per_story"] == pytest.approx(5 / 2) and orig["calls"]["judge_per_story"] == 0
    md = (tmp_path / "run" / "commet.md").read_text(encoding="utf-8")
    for title in ("story and question accuracy per setting", "Story accuracy per mental-state category",
                  "Question accuracy per mental-state category", "text-complete and image-dependent",
                  "Feedback diagnostic", "Blind run", "calls per story"):
        assert title in md
    tables = commet_tables(m)  # every accuracy with its 95% interval and n
    assert tables["modality"].rows[0][1:3] == ("0.000 [0.000, 0.793] n=1", "0.667 [0.208, 0.939] n=3")
    assert tables["modality"].rows[1][3:5] == ("0.000 [0.000, 0.793] n=1", "0.500 [0.095, 0.905] n=2")
    assert tables["feedback"].rows[1][1:4] == ("0.000 [0.000, 0.793] n=1", "n/a (no such turn)",
                                               "1.000 [0.207, 1.000] n=1")  # blind: one turn after wrong feedback
    blind_rows = {r[0]: r[1:] for r in tables["blind"].rows}
    assert blind_rows["blind"] == ("0.000 [0.000, 0.793] n=1", "0.500 [0.095, 0.905] n=2")
    assert blind_rows["change"] == ("-1.000 [-1.000, -1.000] n=1", "-0.500 [-1.000, 0.000] n=2")
    assert (tmp_path / "run" / "commet-category_story.png").is_file()


def test_resume_makes_no_calls_and_failed_story_replays_from_cache(tmp_path: Path, openai_server: Any,
                                                                   judge: OfflineAnswerJudge) -> None:
    state = {"fail": True}

    def model(body: dict[str, Any]) -> Any:
        q = _question(body)
        if q == "Would Mei do it again?" and state["fail"]:
            return (500, '{"error": {"message": "down"}}')
        return {"What does Mei do with the wallet?": "she gives it back", "How does the owner feel?": "grateful",
                "Would Mei do it again?": "yes", "What colour is the card?": "red",
                "Can Ann, behind him, see it?": "no"}[q]

    srv = openai_server(model)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    path = _stories(tmp_path)
    first = _runner(path, srv, judge, cache=cache, setting_names=["orig"]).run(tmp_path / "run")
    shop = next(p for p in first.predictions["orig"] if p.sample_id == "shop")
    assert isinstance(shop, StoryPrediction)
    assert (shop.story_status, shop.parse_status, len(shop.turns)) == ("failed", "error", 3)
    assert "turn 3" in str(shop.error) and first.metrics["settings"]["orig"]["failed_stories"] == 1
    assert first.metrics["settings"]["orig"]["story_accuracy"] == 0.5
    calls = srv.calls
    state["fail"] = False
    second = _runner(path, srv, judge, cache=cache, setting_names=["orig"]).run(tmp_path / "run")
    assert second.n_predicted == {"orig": 1} and srv.calls == calls + 1  # turns 1-2 from the cache, turn 3 sent
    replayed = next(p for p in second.predictions["orig"] if p.sample_id == "shop")
    assert isinstance(replayed, StoryPrediction)
    assert (replayed.story_status, replayed.model_calls, replayed.model_cached) == ("played", 1, 2)
    calls = srv.calls
    third = _runner(path, srv, judge, cache=cache, setting_names=["orig"]).run(tmp_path / "run")
    assert srv.calls == calls and third.n_predicted == {"orig": 0} and third.n_resumed == {"orig": 2}
    assert third.metrics["settings"]["orig"]["story_accuracy"] == 1.0


def test_stories_run_concurrently_each_in_order(tmp_path: Path, openai_server: Any,
                                                 judge: OfflineAnswerJudge) -> None:
    rows = [{"id": f"s{i}", "category": "belief", "turns": [
        {"text": f"Story {i}.", "question": f"Q{i}-1?", "answer": "alpha"},
        {"feedback": "Next.", "question": f"Q{i}-2?", "answer": "beta"},
        {"question": f"Q{i}-3?", "answer": "gamma"}]} for i in range(6)]
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lock = threading.Lock()
    order: dict[str, list[int]] = {}

    def model(body: dict[str, Any]) -> str:
        q = _question(body)
        sid, turn = q[1:-1].split("-")
        with lock:
            order.setdefault(sid, []).append(int(turn))
            assert len(body["messages"]) == 2 * int(turn)  # system + (user, assistant) per earlier turn + user
        return ("alpha", "beta", "gamma")[int(turn) - 1]

    srv = openai_server(model, latency_s=0.05)
    res = _runner(path, srv, judge, concurrency=3, setting_names=["orig"]).run(tmp_path / "run")
    assert res.metrics["settings"]["orig"]["story_accuracy"] == 1.0
    assert all(v == [1, 2, 3] for v in order.values()) and len(order) == 6
    assert 2 <= srv.max_in_flight <= 3
    lines = (tmp_path / "run" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6  # one checkpoint line per story


def test_kb_cues_in_the_first_turn_only(tmp_path: Path, openai_server: Any, default_embedder: Any,
                                        judge: OfflineAnswerJudge) -> None:
    kb = KnowledgeBase([KnowledgeTuple(concept="wallet", culture="zh", label="fear", distribution={"fear": 1.0},
                                       support=4, rationales=["losing money is frightening"])], "artemis9")
    retriever = open_retriever(kb, default_embedder, backend="numpy")
    srv = openai_server(lambda body: "she gives it back")
    runner = _runner(_stories(tmp_path), srv, judge, retriever=retriever, setting_names=["kb-cues"])
    res = runner.run(tmp_path / "run")
    shop = [b for b in srv.requests if "wallet" in _text(b["messages"][1])]
    first_turn = _text(shop[0]["messages"][1])
    assert first_turn.startswith("Background for this story") and "wallet -> fear" in first_turn
    assert first_turn.index("wallet -> fear") < first_turn.index("Mei finds a wallet")
    assert all("Background" not in _text(m) for b in shop for m in b["messages"][2:])
    status = res.metrics["settings"]["kb-cues"]["cue_status"]
    assert status == {"culture-not-in-kb": 1, "matched": 1}  # 'look' is an en story; the KB has zh only
    rec = next(p for p in res.predictions["kb-cues"] if p.sample_id == "shop")
    assert rec.tuples_used == ["zh::wallet"]
    assert runner.config()["kb_version"] == kb.version


def test_configuration_errors(tmp_path: Path, openai_server: Any, judge: OfflineAnswerJudge) -> None:
    srv = openai_server()
    path = _stories(tmp_path)
    with pytest.raises(ConfigError, match="kb-cues setting needs a KB"):
        _runner(path, srv, judge, setting_names=["kb-cues"])
    with pytest.raises(ConfigError, match="unknown CoMMET settings"):
        _runner(path, srv, judge, setting_names=["sea"])
    with pytest.raises(ConfigError, match="concurrency"):
        _runner(path, srv, judge, concurrency=0)
    assert get_runner("commet") is CommetRunner


# -- the Runner base: predict_stream -------------------------------------------------------------------------------


class _Streamer(Runner):
    """Yields predictions in reverse order, one at a time; `mess` breaks the contract on purpose."""

    def __init__(self, mess: str = "", **kw: Any) -> None:
        super().__init__(None, **kw)
        self.mess = mess

    def load(self) -> list[Sample]:
        return [Sample(id=f"x{i}", culture="en", label="a") for i in range(4)]

    def predict_stream(self, samples: Sequence[Sample], setting: Setting) -> Iterator[Sequence[Prediction]]:
        preds = [Prediction(sample_id=s.id, culture="en", mode=setting.mode, label="a", parse_status="text")
                 for s in reversed(samples)]
        if self.mess == "duplicate":
            preds.append(preds[0])
        if self.mess == "missing":
            preds = preds[1:]
        for p in preds:
            yield [p]

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        return {"n": sum(len(p) for p in predictions_by_setting.values())}


def test_predict_stream_checkpoints_out_of_order_and_checks_the_contract(tmp_path: Path) -> None:
    res = _Streamer(settings=[Setting("orig")], progress=False).run(tmp_path / "ok")
    assert [p.sample_id for p in res.predictions["orig"]] == ["x0", "x1", "x2", "x3"]  # back in sample order
    lines = (tmp_path / "ok" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["prediction"]["sample_id"] for x in lines] == ["x3", "x2", "x1", "x0"]
    with pytest.raises(ProviderError, match="came twice"):
        _Streamer("duplicate", settings=[Setting("orig")], progress=False).run(tmp_path / "dup")
    with pytest.raises(ProviderError, match="no prediction came for 1 items"):
        _Streamer("missing", settings=[Setting("orig")], progress=False).run(tmp_path / "miss")


# -- the CLI on the shipped sample ----------------------------------------------------------------------------------


def _sample_model() -> Any:
    """A scripted model for the shipped sample: the first expected answer, except a fixed few questions."""
    stories = load_story_turns(SAMPLE)
    table = {(s.turns[0].text, t.question): (t.expected_for(None) or ("?",))[0] for s in stories for t in s.turns}
    wrong = {"Where is the cabbage before?", "What kind of emotion does the client have?"}

    def model(body: dict[str, Any]) -> str:
        q = _question(body)
        if q in wrong:
            return "I am not sure."
        return table[(_first_text(body), q)]

    def _first_text(body: dict[str, Any]) -> str:
        first = _text(body["messages"][1])
        return next(s.turns[0].text for s in stories if s.turns[0].text in first)

    return model


def test_cli_end_to_end_on_the_shipped_sample(tmp_path: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
                                              default_embedder: Any) -> None:
    from culturekb.cli import app
    from culturekb.workflows import index_kb

    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "cache"))
    kb_dir = tmp_path / "kb"
    KnowledgeBase([KnowledgeTuple(concept="speech", culture="zh", label="fear", distribution={"fear": 1.0},
                                  support=3, rationales=["speaking in public is scary"])], "artemis9").save(kb_dir)
    index_kb(kb_dir, backend="numpy", embedder="minilm")
    srv = openai_server(_sample_model())
    args = ["eval", "commet", str(SAMPLE), "--out", str(tmp_path / "run"), "--model", "openai:scripted",
            "--base-url", srv.base_url, "--kb", str(kb_dir), "--concurrency", "4"]
    runner = CliRunner()
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "Story accuracy per mental-state category" in res.output and "Blind run" in res.output
    report = json.loads((tmp_path / "run" / "commet.json").read_text(encoding="utf-8"))
    assert set(report["settings"]) == {"orig", "blind", "kb-cues"}
    orig = report["settings"]["orig"]
    assert (orig["n_stories"], orig["n_questions"]) == (15, 44)
    assert orig["question_accuracy"] == pytest.approx(42 / 44)
    assert orig["story_accuracy"] == pytest.approx(13 / 15)
    assert orig["calls"]["model_per_question"] == 1.0 and orig["calls"]["judge_per_story"] == 0.0
    assert report["judge"].startswith("offline:v1:") and "weaker" in report["judge_note"]
    assert report["settings"]["kb-cues"]["cue_status"].get("matched", 0) >= 1
    calls = srv.calls
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert srv.calls == calls  # a rerun makes zero model calls
    bad = runner.invoke(app, ["eval", "commet", str(SAMPLE), "--out", str(tmp_path / "x"), "--model", "kb-prior"])
    assert bad.exit_code == 2 and "needs a chat model" in bad.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "b", "category": "belief", "turns": [{"question": "q"}]}\n', encoding="utf-8")
    bad = runner.invoke(app, ["eval", "commet", str(broken), "--out", str(tmp_path / "y"), "--model", "openai:m",
                              "--base-url", srv.base_url])
    assert bad.exit_code == 2 and "story 'b', turn 1: no expected answer" in bad.output
    assert not (tmp_path / "y").exists() and srv.calls == calls  # nothing written, no call made
