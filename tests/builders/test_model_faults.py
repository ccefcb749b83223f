"""A build's model faults: the bad-answer policy (fail / skip / flag) naming the item and counting what the server
saw, nothing cached for a skipped item, the build response cache (a resume re-pays no answer), and a no-op rerun that
keeps the earlier runs' counts in the build report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from culturekb.builders.base import Judge
from culturekb.builders.concepts import PrecomputedConcepts
from culturekb.builders.judges import LexiconJudge
from culturekb.builders.pipeline import BUILD_RESPONSES, BuildComponents, BuildConfig, build_kb, make_components
from culturekb.builders.rationales import LLMRationaleGenerator
from culturekb.errors import ModelOutputError
from culturekb.kb import Sample, get_scheme
from culturekb.models.chat import OpenAICompatClient

SCHEME = get_scheme("artemis9")
GOOD = json.dumps(["The moon is linked to reunion and longing.", "Cranes stand for long life."])


def _samples() -> list[Sample]:
    out = []
    concepts = [["moon", "crane"], ["moon", "river"], ["crane", "river"], ["moon", "crane", "river"]]
    for i, cs in enumerate(concepts * 2):
        out.append(Sample(id=f"img{i}::en", culture="en", label="contentment", concepts=cs, split="train",
                          explanations=["the calm moon over the river"], metadata={"image_id": f"img{i}"}))
    return out


def _never_about_crane(body: dict[str, Any]) -> str:
    """Valid rationales, except for the concept "crane": prose, whatever the re-ask says."""
    first = str(body["messages"][0]["content"])
    return "I would rather not say." if '"crane"' in first else GOOD


def _components(url: str) -> tuple[BuildComponents, OpenAICompatClient]:
    client = OpenAICompatClient("m", base_url=url, max_concurrency=2, backoff_s=0.01)
    judges: list[Judge] = [LexiconJudge(SCHEME), LexiconJudge(SCHEME)]
    return BuildComponents(PrecomputedConcepts(), LLMRationaleGenerator(client, SCHEME), judges, [client]), client


def test_fail_names_the_item_and_counts_the_answers(openai_server, tmp_path):
    srv = openai_server(_never_about_crane)
    comp, _ = _components(srv.base_url)
    with pytest.raises(ModelOutputError) as info:
        build_kb(_samples(), BuildConfig(), out=tmp_path / "kb", cache_dir=tmp_path / "c", components=comp,
                 progress=False)
    message = str(info.value)
    assert "concept 'crane' (culture en, contentment)" in message
    assert "3 answer(s)" in message and "3 request(s) to the server" in message  # one ask + two re-asks
    assert "--on-bad-answer skip" in message
    assert not (tmp_path / "kb").exists()


def test_skip_drops_the_tuple_records_it_and_caches_nothing_for_it(openai_server, tmp_path):
    srv = openai_server(_never_about_crane)
    comp, _ = _components(srv.base_url)
    res = build_kb(_samples(), BuildConfig(on_bad_answer="skip"), out=tmp_path / "kb", cache_dir=tmp_path / "c",
                   components=comp, progress=False)
    assert {t.concept for t in res.kb.tuples} == {"moon", "river"}
    model = res.report["model"]
    assert model["skipped"] == 1 and model["reasks"] == 2
    (bad,) = model["bad_answers"]
    assert bad["action"] == "skip" and "'crane'" in bad["item"] and bad["asks"] == 3 and bad["requests"] == 3
    assert "skip: rationale generation" in (tmp_path / "kb" / "build_report.md").read_text()
    # the model recovers: a rebuild over the same cache asks only for the skipped item
    srv.responder = lambda body: GOOD
    calls = srv.chat_calls
    again = build_kb(_samples(), BuildConfig(on_bad_answer="skip"), cache_dir=tmp_path / "c", components=comp,
                     progress=False)
    assert {t.concept for t in again.kb.tuples} == {"moon", "crane", "river"}
    assert srv.chat_calls - calls == 1


def test_flag_keeps_the_tuple_flagged_without_rationales(openai_server, tmp_path):
    srv = openai_server(_never_about_crane)
    comp, _ = _components(srv.base_url)
    res = build_kb(_samples(), BuildConfig(on_bad_answer="flag"), cache_dir=tmp_path / "c", components=comp,
                   progress=False)
    crane = next(t for t in res.kb.tuples if t.concept == "crane")
    assert crane.rationales == [] and crane.flagged and crane.status == "pending"
    assert crane.provenance["evidence"] == "no valid answer"
    assert res.report["model"]["flagged"] == 1


def test_on_bad_answer_is_validated():
    with pytest.raises(ValueError, match="on_bad_answer must be one of"):
        BuildConfig(on_bad_answer="ignore")


def test_a_resume_after_a_failed_build_repays_no_answer(openai_server, tmp_path, monkeypatch):
    """Through `make_components`: the clients answer through <cache_dir>/build_responses.sqlite."""
    monkeypatch.setenv("CULTUREKB_MODEL_BACKOFF_S", "0.01")
    answered: list[str] = []
    state = {"down": False}

    def responder(body: dict[str, Any]) -> Any:
        key = json.dumps(body["messages"], sort_keys=True)
        if state["down"] and '"river"' in str(body["messages"][0]["content"]):
            return (503, '{"error": {"message": "down"}}')
        answered.append(key)
        return GOOD

    srv = openai_server(responder)
    config = BuildConfig(rationales="openai:m", judges=["lexicon", "lexicon"], base_url=srv.base_url, chunk_size=8)
    state["down"] = True
    with pytest.raises(Exception, match="concept 'river'"):
        build_kb(_samples(), config, out=tmp_path / "kb", cache_dir=tmp_path / "c",
                 components=make_components(config, cache_dir=tmp_path / "c"), progress=False)
    assert (tmp_path / "c" / BUILD_RESPONSES).is_file()
    before = list(answered)
    assert before  # the other items were answered (and cached) before the build failed
    state["down"] = False
    res = build_kb(_samples(), config, out=tmp_path / "kb", cache_dir=tmp_path / "c",
                   components=make_components(config, cache_dir=tmp_path / "c"), progress=False)
    new = answered[len(before):]
    assert not set(new) & set(before), "an answer received before was paid for again"
    assert len(new) == 1 and res.report["model"]["attempts"] == 1


def test_a_no_op_rerun_keeps_the_counts_of_earlier_runs(openai_server, tmp_path):
    srv = openai_server(lambda body: GOOD)
    comp, _ = _components(srv.base_url)
    first = build_kb(_samples(), BuildConfig(), out=tmp_path / "kb", cache_dir=tmp_path / "c", components=comp,
                     progress=False)
    assert first.report["model_calls"] == 3
    second = build_kb(_samples(), BuildConfig(), out=tmp_path / "kb", cache_dir=tmp_path / "c", components=comp,
                      progress=False)
    saved = json.loads(Path(tmp_path / "kb" / "build_report.json").read_text())
    assert second.report["model_calls"] == 0
    assert [r["model_calls"] for r in saved["runs"]] == [3, 0]
    assert saved["model_calls_all_runs"] == 3


def test_an_html_page_with_status_200_is_a_bad_answer_not_an_abort(openai_server, tmp_path):
    """A proxy's error page for one item: retried like a 5xx, then the policy (here skip) takes it."""
    from culturekb.testing.openai_server import ScriptedReply

    def responder(body: dict[str, Any]) -> Any:
        if '"crane"' in str(body["messages"][0]["content"]):
            return ScriptedReply(status=200, body="<html><body>502 Bad Gateway</body></html>")
        return GOOD

    srv = openai_server(responder)
    comp, client = _components(srv.base_url)
    res = build_kb(_samples(), BuildConfig(on_bad_answer="skip"), cache_dir=tmp_path / "c", components=comp,
                   progress=False)
    assert {t.concept for t in res.kb.tuples} == {"moon", "river"}
    (bad,) = res.report["model"]["bad_answers"]
    assert "'crane'" in bad["item"] and bad["requests"] == 1 + client.retry.max_retries
    assert res.report["model"]["failures_by_cause"]["malformed"] == 1
