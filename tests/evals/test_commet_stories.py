"""CoMMET pieces: the StoryTurns loader (the shipped sample, every bad-row message), the judges (offline, and a
scripted judge model over HTTP with an invalid JSON answer re-asked) and the metrics by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from culturekb.errors import DataError
from culturekb.evals.commet import (
    CATEGORIES,
    Branch,
    JudgeRequest,
    ModelAnswerJudge,
    OfflineAnswerJudge,
    Outcome,
    TurnRecord,
    feedback_accuracy,
    load_story_turns,
    normalise_answer,
    question_accuracy,
    story_accuracy,
)
from culturekb.models import CallTally
from culturekb.models.chat import OpenAICompatClient

SAMPLE = Path(__file__).resolve().parents[2] / "culturekb" / "data" / "demo" / "commet" / "commet_sample.jsonl"


def _write(tmp_path: Path, *stories: dict[str, Any]) -> Path:
    path = tmp_path / "stories.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in stories), encoding="utf-8")
    return path


def _story(**over: Any) -> dict[str, Any]:
    story: dict[str, Any] = {
        "id": "s1", "culture": "zh", "category": "belief",
        "turns": [{"text": "Ann puts the ball in the box and leaves.", "question": "Where is the ball?",
                   "answer": "in the box; box"},
                  {"feedback": {"right": "Yes.", "wrong": "No, it is in the box."},
                   "question": "Where will Ann look?", "answer": "box"}]}
    story.update(over)
    return story


# -- the loader ---------------------------------------------------------------------------------------------------


def test_the_shipped_sample_loads() -> None:
    stories = load_story_turns(SAMPLE)
    assert len(stories) == 15 and sum(len(s.turns) for s in stories) == 44
    assert {s.category for s in stories} <= set(CATEGORIES)
    assert {s.category for s in stories} >= {"belief", "emotion", "intention", "desire", "percept", "combinations",
                                              "non-literal communication", "moral reasoning"}
    images = [s for s in stories if s.image_dependent]
    assert len(images) == 2 and all(Path(str(s.turns[0].image)).is_file() for s in images)
    assert all(s.culture == "zh" for s in stories)
    fauxpas = next(s for s in stories if s.id == "tombench-fauxpas-01")
    assert {b.name for b in fauxpas.turns[0].branches} == {"someone-did", "no-one-did"}
    assert fauxpas.turns[1].feedback_for(Outcome(True, "someone-did")) == ("someone-did", "Yes, someone did.")
    assert fauxpas.turns[1].feedback_for(Outcome(False, None)) == ("wrong", "Not quite.")


def test_keyed_texts_resolve_branch_then_outcome_then_any(tmp_path: Path) -> None:
    turns = [{"text": "t", "question": "q1", "branches": {"pay": {"answers": "she pays", "correct": True},
                                                          "leave": {"answers": "she leaves", "correct": False}}},
             {"feedback": {"pay": "F-pay", "right": "F-right", "wrong": "F-wrong"},
              "question": "q2", "answer": {"leave": "back; returns", "any": "stays"}}]
    story = load_story_turns(_write(tmp_path, _story(turns=turns)))[0]
    second = story.turns[1]
    assert second.feedback_for(Outcome(True, "pay")) == ("pay", "F-pay")
    assert second.feedback_for(Outcome(False, "leave")) == ("wrong", "F-wrong")  # no 'leave' feedback: by outcome
    assert second.feedback_for(Outcome(True, None)) == ("right", "F-right")
    assert second.expected_for(Outcome(False, "leave")) == ("back", "returns")
    assert second.expected_for(Outcome(True, "pay")) == ("stays",)
    assert story.turns[0].expected_for(None) == ("she pays",)  # the right branch's answers


BAD = [
    ({"turns": []}, "'turns' must be a non-empty list"),
    ({"id": ""}, "the story has no 'id'"),
    ({"turns": [{"text": "t", "answer": "a"}]}, "turn 1: question is missing"),
    ({"turns": [{"question": "q", "answer": "a", "feedback": "Good."}]}, "turn 1: the first turn cannot have feedback"),
    ({"turns": [{"question": "q", "answer": {"right": "a", "wrong": "b"}}]}, "turn 1: answer is keyed"),
    ({"turns": [{"question": "q", "answer": "a"}, {"question": "q2", "answer": "b", "feedback": {"right": "ok"}}]},
     "turn 2: feedback must cover both outcomes"),
    ({"turns": [{"question": "q", "answer": "a"}, {"question": "q2", "answer": "b", "feedback": {"pay": "x",
                                                                                               "any": "y"}}]},
     "turn 2: feedback has keys ['pay'] that are neither outcomes nor branches"),
    ({"category": "happiness"}, "unknown mental-state category 'happiness'"),
    ({"category": None}, "turn 1: no mental-state category"),
    ({"modality": "image-dependent"}, "image-dependent but no turn has an image"),
    ({"modality": "video"}, "unknown modality 'video'"),
    ({"turns": [{"question": "q", "anwser": "a"}]}, "turn 1: unknown turn fields ['anwser']"),
    ({"colour": "red"}, "unknown story fields ['colour']"),
    ({"turns": [{"question": "q"}]}, "turn 1: no expected answer"),
    ({"turns": [{"question": "q", "answer": " ; "}]}, "turn 1: answer is empty"),
    ({"turns": [{"question": "q", "branches": {"pay": {"answers": "x"}}}]}, "branch 'pay': expected"),
    ({"turns": [{"question": "q", "answer": "a", "image": "missing.jpg"}]}, "turn 1: image 'missing.jpg' not found"),
]


@pytest.mark.parametrize(("override", "message"), BAD)
def test_bad_rows_name_file_line_story_and_turn(tmp_path: Path, override: dict[str, Any], message: str) -> None:
    good = _story(id="ok")
    path = _write(tmp_path, good, _story(**override))
    with pytest.raises(DataError) as err:
        load_story_turns(path)
    text = str(err.value)
    assert message in text
    assert str(path) in text and "line 2" in text
    if override.get("id", "s1"):
        assert "story 's1'" in text


def test_duplicate_ids_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="story id 's1' was already used"):
        load_story_turns(_write(tmp_path, _story(), _story()))
    with pytest.raises(DataError, match="does not exist"):
        load_story_turns(tmp_path / "none.jsonl")


# -- judges -------------------------------------------------------------------------------------------------------


def _request(answer: str, **kw: Any) -> JudgeRequest:
    base: dict[str, Any] = {"story_id": "s", "turn": 1, "story": "Ann puts the ball in the box.",
                            "question": "Where is the ball?", "answer": answer, "expected": ("box", "in the box"),
                            "wrong_answers": ("basket",)}
    base.update(kw)
    return JudgeRequest(**base)


def test_normalise_answer() -> None:
    assert normalise_answer("Answer: In THE Box!") == "in box"
    assert normalise_answer("  ") == ""
    assert normalise_answer("A.") == "a"  # nothing but an article: kept


def test_offline_judge_string_rules_then_embedding(default_embedder: Any) -> None:
    judge = OfflineAnswerJudge(default_embedder, threshold=0.6)
    assert judge.id.startswith("offline:v1:")
    exact = judge.judge(_request("The box."))
    assert (exact.correct, exact.method) == (True, "exact")
    contains = judge.judge(_request("I think it is still in the box, where Ann left it"))
    assert (contains.correct, contains.method) == (True, "contains")
    wrong = judge.judge(_request("the basket"))
    assert (wrong.correct, wrong.method) == (False, "exact")
    both = judge.judge(_request("not in the box but in the basket"))  # two classes contained: embeddings decide
    assert both.method in ("embedding", "below-threshold") and both.similarity is not None
    far = judge.judge(_request("Paris is the capital of France"))
    assert (far.correct, far.method) == (False, "below-threshold")
    assert judge.judge(_request("")).method == "empty"
    branches = (Branch("pay", ("she pays the bill",), True), Branch("leave", ("she walks out",), False))
    b = judge.judge(_request("She pays the bill.", expected=("she pays the bill",), wrong_answers=(),
                             branches=branches))
    assert (b.correct, b.branch) == (True, "pay")
    near = judge.judge(_request("She settles the bill herself", expected=("she pays the bill",), wrong_answers=(),
                                branches=branches))
    assert near.method == "embedding" and (near.correct, near.branch) == (True, "pay")


def test_model_judge_over_http_reasks_invalid_json(openai_server: Any) -> None:
    seen: list[dict[str, Any]] = []

    def judge(body: dict[str, Any]) -> str:
        seen.append(body)
        prompt = body["messages"][0]["content"]
        answer = re.search(r"Answer to check:\n<<<\n(.*?)\n>>>", prompt, re.S)
        assert answer is not None
        if len(body["messages"]) == 1 and "garbled" in answer.group(1):
            return "It looks right to me."  # not JSON: asked again
        if "stubborn" in answer.group(1):
            return '{"correct": "maybe"}'  # stays invalid
        if "mismatch" in answer.group(1) and len(body["messages"]) == 1:
            return '{"correct": false, "branch": "pay", "reason": "x"}'  # a right branch marked wrong: re-asked
        right = "box" in answer.group(1)
        branch = "pay" if "mismatch" in answer.group(1) else None
        return json.dumps({"correct": right or branch is not None, "branch": branch, "reason": "by rule"})

    srv = openai_server(judge)
    client = OpenAICompatClient("judge", base_url=srv.base_url, max_retries=0)
    j = ModelAnswerJudge(client, retries=1)
    tally = CallTally()
    v = j.judge(_request("garbled: the box"), tally)
    assert (v.correct, v.status, v.method, v.reason) == (True, "ok", "model", "by rule")
    assert tally.sent == 2 and srv.calls == 2
    rubric = seen[0]["messages"][0]["content"]
    assert "Right answers (matching any one is enough): box; in the box" in rubric
    assert "Known wrong answers: basket" in rubric and "Ann puts the ball in the box." in rubric
    assert "could not be used" in seen[1]["messages"][-1]["content"]  # the re-ask names the problem
    bad = j.judge(_request("stubborn"))
    assert (bad.correct, bad.status) == (False, "invalid") and "no valid JSON" in str(bad.error)
    branches = (Branch("pay", ("she pays",), True),)
    m = j.judge(_request("mismatch", branches=branches))
    assert (m.correct, m.branch, m.status) == (True, "pay", "ok")
    down = ModelAnswerJudge(OpenAICompatClient("judge", base_url="http://127.0.0.1:9/v1", max_retries=0,
                                               timeout_s=2), retries=0)
    assert down.judge(_request("box")).status == "error"


# -- metrics by hand ----------------------------------------------------------------------------------------------


def test_story_and_question_accuracy_by_hand() -> None:
    outcomes = [[True, True, True], [True, False], [False], [True]]
    assert story_accuracy(outcomes) == pytest.approx(2 / 4)  # only stories with every question right
    assert question_accuracy(outcomes) == pytest.approx(5 / 7)
    t = lambda n, prev, ok, key="": TurnRecord(turn=n, category="belief", question="q",  # noqa: E731
                                               previous_correct=prev, correct=ok, feedback_key=key)
    fb = feedback_accuracy([[t(1, None, True), t(2, True, True, "right"), t(3, True, False, "right")],
                            [t(1, None, False), t(2, False, True, "pay")]])
    assert (fb["first_turn"], fb["n_first"]) == (0.5, 2)
    assert (fb["after_right"], fb["n_after_right"]) == (0.5, 2)
    assert (fb["after_wrong"], fb["n_after_wrong"]) == (1.0, 1)
    assert fb["n_branch_feedback"] == 1
