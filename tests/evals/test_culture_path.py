"""A culture's path from ``culturekb eval cedar --kb KB`` to the prompt: the KB's manifest says which language and
name a culture has, the process registry is never consulted nor changed, and a language without a template gets
the English one, recorded as ``language_status="fallback:en"``."""

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.evals.cedar import CedarPredictor, CedarRunner
from culturekb.evals.cedar.data import load_cedar
from culturekb.kb import Culture, KnowledgeBase, KnowledgeTuple, get_scheme
from culturekb.kb.cultures import default_registry, packaged_registry
from culturekb.retrieval.index import build_index

CEDAR = get_scheme("cedar14")
# zh as the packaged registry does not describe it (Chinese, language zh), and a culture it does not know at all
KB_CULTURES = [Culture(id="zh", name="Sinitic", language="ja"), Culture(id="xq", name="Xanadu", language="ko")]


def _tuple(concept: str, culture: str, label: str) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 1.0}, support=3,
                          rationales=[f"{concept} example"])


@pytest.fixture
def kb_and_data(tmp_path: Path, default_embedder, monkeypatch) -> tuple[Path, Path]:
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)
    kb = KnowledgeBase([_tuple("dog", "zh", "fear"), _tuple("dog", "xq", "anger")], CEDAR, cultures=KB_CULTURES)
    kb_dir = tmp_path / "kb"
    kb.save(kb_dir)
    build_index(KnowledgeBase.load(kb_dir), default_embedder, "faiss")
    rows = [{"id": f"{c}-1", "language": c, "modality": "text", "narrative": "A dog is lost in the rain.",
             "question": "How do they feel?", "label": "fear"} for c in ("zh", "xq")]
    data = tmp_path / "cedar.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return kb_dir, data


def _prompt_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


def test_the_kb_manifest_drives_the_cedar_prompt_language_and_name(kb_and_data, openai_server, tmp_path):
    kb_dir, data = kb_and_data
    before = default_registry()
    ids, zh = before.ids(), before.resolve("zh")
    srv = openai_server(lambda body: '{"emotion": "fear"}')
    out = tmp_path / "run"
    result = CliRunner().invoke(__import__("culturekb.cli", fromlist=["app"]).app, [
        "eval", "cedar", str(data), "--kb", str(kb_dir), "--out", str(out), "--model", "openai:cedar-vlm",
        "--base-url", srv.base_url, "--modes", "orig,know"])
    assert result.exit_code == 0, result.output
    prompts = [_prompt_text(b) for b in srv.requests]
    japanese = [p for p in prompts if "Sinitic" in p]
    english = [p for p in prompts if "Xanadu" in p]
    assert len(japanese) == 2 and len(english) == 2  # orig and know, one item each
    assert not any("Chinese" in p or "中华" in p for p in prompts)  # the packaged description is not used
    # the process registry was neither read for the prompt nor changed by the run (xq stays unknown to it)
    assert default_registry() is before and default_registry().ids() == ids and default_registry().resolve("zh") == zh
    assert "xq" not in default_registry()
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    by_item = {(r["sample_id"], r["mode"]): r for r in (json.loads(x)["prediction"] for x in lines if x.strip())}
    for mode in ("orig", "know"):
        zh_rec, xq_rec = by_item[("zh-1", mode)], by_item[("xq-1", mode)]
        # zh: Japanese, as the KB says, natively; xq: Korean has no Cedar template, so English, and it says so
        assert zh_rec["prompt_language"] == "ja" and zh_rec["template_id"].startswith(f"cedar_{mode}.ja@")
        assert zh_rec["language_status"] == "native"
        assert xq_rec["prompt_language"] == "en" and xq_rec["template_id"].startswith(f"cedar_{mode}.en@")
        assert xq_rec["language_status"] == "fallback:en"
    # the runner's declared client (from the run context) is the one whose counters run.json reports
    model = json.loads((out / "run.json").read_text(encoding="utf-8"))["model"]
    assert model["model"] == "openai:cedar-vlm" and model["this_run"]["answers"] == len(srv.requests) == 4


def test_a_predictor_without_a_kb_takes_the_run_registry(kb_and_data, openai_server, tmp_path):
    """Cedar orig without --kb: the registry comes from the caller (the run context), not the process."""
    _, data = kb_and_data
    srv = openai_server(lambda body: '{"emotion": "fear"}')
    from culturekb.models.chat import OpenAICompatClient

    registry = packaged_registry()
    registry.declare(Culture(id="zh", name="Sinitic", language="ja"))
    registry.declare(Culture(id="xq", name="Xanadu", language="ko"))
    client = OpenAICompatClient("cedar-vlm", base_url=srv.base_url, max_retries=0)
    samples = load_cedar(data, registry=registry)
    res = CedarRunner(samples, CedarPredictor("cedar14", client=client, cultures=registry), modes=["orig"],
                      progress=False).run(tmp_path / "run")
    preds = {p.sample_id: p for p in res.predictions["orig"]}
    assert preds["zh-1"].prompt_language == "ja" and preds["zh-1"].language_status == "native"
    assert preds["xq-1"].prompt_language == "en" and preds["xq-1"].language_status == "fallback:en"
    assert any("Sinitic" in _prompt_text(b) for b in srv.requests)
    assert "xq" not in default_registry()
    # built by hand: the runner takes its client from its Cedar predictor, and run.json counts its calls
    model = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))["model"]
    assert model["model"] == client.id and model["this_run"]["answers"] == len(srv.requests) == 2


def test_cedar_know_resolves_each_items_culture_once(kb_and_data, openai_server, default_embedder, monkeypatch):
    """One registry lookup per item in mode know: `CedarPredictor._culture`; the knowledge request carries the
    `Culture`, so the service neither resolves the code again in the KB nor looks the name up for the cue frame
    (before: three lookups per item)."""
    from culturekb.inference.injection import KnowledgeRequest, KnowledgeService
    from culturekb.kb.cultures import CultureRegistry
    from culturekb.models.chat import OpenAICompatClient
    from culturekb.retrieval.retriever import Retriever, open_retriever

    kb_dir, data = kb_and_data
    retriever = open_retriever(KnowledgeBase.load(kb_dir), default_embedder, backend="numpy")
    cultures = retriever.kb.culture_registry
    samples = load_cedar(data, registry=cultures)
    srv = openai_server(lambda body: '{"emotion": "fear"}')
    client = OpenAICompatClient("cedar-vlm", base_url=srv.base_url, max_retries=0)
    predictor = CedarPredictor("cedar14", retriever, client, cultures=cultures)
    lookups: list[str] = []
    resolve = CultureRegistry.resolve
    callers: list[str] = []  # who asks the retriever to resolve a culture
    resolve_culture = Retriever.resolve_culture

    def counted_resolve(name: str) -> Any:
        lookups.append(name)
        return resolve(cultures, name)

    def counted_resolve_culture(self: Retriever, c: Any) -> Any:
        callers.append(sys._getframe(1).f_code.co_name)
        return resolve_culture(self, c)

    monkeypatch.setattr(cultures, "resolve", counted_resolve)
    monkeypatch.setattr(Retriever, "resolve_culture", counted_resolve_culture)
    preds = predictor.predict(samples, mode="know")
    assert sorted(lookups) == ["xq", "zh"]  # once per item, in the run's (the KB's) registry
    assert set(callers) == {"_exact_pass"}  # only the lookup's own id check (a set test), never the service
    assert [p.cue_status for p in preds] == ["matched", "matched"]
    prompts = sorted(_prompt_text(b) for b in srv.requests)
    assert "people from the Xanadu culture" in prompts[0] and "Sinitic" in prompts[1]  # the cue frame's name
    # a bare code or alias (the API, the adapters) is resolved by the service; a resolved culture the KB lacks is
    # skipped like an unknown code
    lookups.clear()
    callers.clear()
    by_alias, missing = KnowledgeService(retriever).inject_many([KnowledgeRequest(["dog"], "Sinitic"), KnowledgeRequest(
        ["dog"], Culture(id="qq", name="Nowhere", language="en"))], on_unknown_culture="skip")
    assert by_alias.status == "matched" and by_alias.culture == "zh" and missing.status == "culture-not-in-kb"
    assert lookups.count("Sinitic") == 1 and by_alias.language == "ja"  # the KB says zh speaks Japanese
    assert callers.count("_target") == 2  # both requests: the alias, and the resolved culture the KB lacks
