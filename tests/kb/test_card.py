"""The KB card (KB_CARD.md): written with every save, facts between markers, the user's text kept across rebuilds,
outside the KB's versioned content; `culturekb kb card`, `culturekb kb info` and `/v1/kb` show it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.kb.card import BEGIN, CARD, END, card_facts, describe_sources, merge_card, read_card
from culturekb.kb.store import write_card
from culturekb.workflows import build_from_files

runner = CliRunner()

TEXTS = {
    "fear": ["the storm at sea frightened me", "a dark storm over the sea, I was afraid", "the storm scared the crew"],
    "contentment": ["a calm garden in the morning sun", "the garden was peaceful and calm", "sun over a quiet garden"],
    "awe": ["the mountain rose above the clouds", "a vast mountain, breathtaking", "the mountain peak at dawn"],
}


def _t(concept: str, culture: str, dist: dict[str, float], support: int, status: str = "accepted") -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=max(dist, key=dist.__getitem__), distribution=dist,
                          support=support, rationales=[f"{concept} in {culture}"], status=status,  # type: ignore[arg-type]
                          flagged=status == "pending")


def _kb(extra: list[KnowledgeTuple] | None = None) -> KnowledgeBase:
    return KnowledgeBase([_t("storm", "en", {"fear": 0.7, "awe": 0.3}, 10),
                          _t("storm", "zh", {"awe": 0.6, "fear": 0.4}, 2, "pending"),
                          _t("ship", "zh", {"contentment": 1.0}, 4, "rejected"), *(extra or [])],
                         build_config={"cultures": ["en", "zh"], "judges": ["lexicon", "prototype"],
                                       "rationales": "extractive"})


def _generated(text: str) -> str:
    return text[text.index(BEGIN):text.index(END)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> dict[str, Path]:
    """A real build (offline defaults) from a small JSONL file with a NOTICE.md beside it naming its licence, and
    its FAISS index."""
    from culturekb.retrieval import build_index

    root = tmp_path_factory.mktemp("card")
    data = root / "data"
    data.mkdir()
    rows = [{"id": f"{culture}-{label}-{i}", "culture": culture, "label": label, "text": text, "split": "train"}
            for culture in ("en", "de") for label, texts in TEXTS.items() for i, text in enumerate(texts)]
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (data / "NOTICE.md").write_text("# Sample\n\nMade for the tests; shared under the\nCC BY 4.0 licence.\n",
                                    encoding="utf-8")
    kb_dir = root / "kb"
    build_from_files([data / "train.jsonl"], kb_dir, cache_dir=root / "cache", progress=False)
    build_index(KnowledgeBase.load(kb_dir), default_embedder, "faiss")
    return {"root": root, "data": data / "train.jsonl", "kb": kb_dir}


def test_build_writes_a_card_with_sources_licence_cultures_judges_and_limits(built: dict[str, Path]) -> None:
    kb = KnowledgeBase.load(built["kb"])
    text = read_card(built["kb"])
    assert text is not None and text.startswith("# KB card\n") and BEGIN in text and END in text
    assert f"KB version: `{kb.version}`" in text
    assert "| train.jsonl |" in text and "CC BY 4.0 (NOTICE.md)" in text  # the licence its notice names
    report = json.loads((built["kb"] / "build_report.json").read_text(encoding="utf-8"))
    assert report["sources"][0]["samples"] == 18 and report["sources"][0]["licence"] == "CC BY 4.0"
    assert report["judge_kappa"] is not None
    assert f"Cohen's kappa between the two judges: {report['judge_kappa']}" in text
    for cid in ("en", "de"):
        n = len(kb.for_culture(cid))
        assert f"| {cid} |" in text and f"| 9 | {n} |" in text  # 9 training items, n tuples
    assert "## Intended use" in text and "## Known limits" in text and "## Notes" in text


def test_user_text_survives_rebuild_and_regeneration_and_the_facts_are_refreshed(built: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    kb_dir = tmp_path / "kb"
    _kb().save(kb_dir)
    card = kb_dir / CARD
    first = card.read_text(encoding="utf-8")
    edited = first.replace("# KB card", "# Storms across cultures") + "\nReviewed by A. Person, 2026.\n"
    edited = edited.replace("## Known limits", "## Known limits\n\n- my edit inside the markers")
    card.write_text(edited, encoding="utf-8")
    bigger = _kb([_t("sea", "en", {"awe": 1.0}, 5)])
    bigger.save(kb_dir)  # a rebuild into the same directory
    text = card.read_text(encoding="utf-8")
    assert text.startswith("# Storms across cultures\n") and text.endswith("Reviewed by A. Person, 2026.\n")
    assert f"KB version: `{bigger.version}`" in text and bigger.version != _kb().version
    assert "my edit inside the markers" not in text  # the generated part is culturekb's
    card.write_text(text.replace("Reviewed by", "Checked by"), encoding="utf-8")
    assert write_card(kb_dir) == card  # `culturekb kb card`
    again = card.read_text(encoding="utf-8")
    assert "Checked by A. Person" in again and _generated(again) == _generated(text)


def test_a_loaded_kb_saved_elsewhere_takes_its_card_along(tmp_path: Path) -> None:
    """`culturekb review import KB queue --out NEW`: the new KB's card keeps the notes of the one it came from."""
    _kb().save(tmp_path / "a")
    card = tmp_path / "a" / CARD
    card.write_text(card.read_text(encoding="utf-8") + "Reviewed twice.\n", encoding="utf-8")
    kb = KnowledgeBase.load(tmp_path / "a")
    kb.save(tmp_path / "b")
    assert (tmp_path / "b" / CARD).read_text(encoding="utf-8").endswith("Reviewed twice.\n")


def test_the_card_is_outside_the_versioned_content(built: dict[str, Path], default_embedder: Any) -> None:
    from culturekb.retrieval import open_retriever

    kb_dir = built["kb"]
    kb = KnowledgeBase.load(kb_dir)
    manifest = (kb_dir / "manifest.json").read_bytes()
    card = kb_dir / CARD
    card.write_text(card.read_text(encoding="utf-8") + "\nMy notes: fine for storms.\n", encoding="utf-8")
    assert KnowledgeBase.load(kb_dir).version == kb.version  # an edited card changes no version
    assert (kb_dir / "manifest.json").read_bytes() == manifest
    retriever = open_retriever(kb_dir, embedder=default_embedder)  # the index's file checks accept the edited card
    assert retriever.kb.version == kb.version
    card.unlink()
    assert KnowledgeBase.load(kb_dir).version == kb.version  # nor does a missing one
    write_card(kb_dir)


def test_a_card_without_markers_is_left_as_written(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    kb_dir = tmp_path / "kb"
    _kb().save(kb_dir)
    (kb_dir / CARD).write_text("# My own card\n\nNo markers here.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="culturekb.kb.card"):
        _kb().save(kb_dir)
    assert (kb_dir / CARD).read_text(encoding="utf-8") == "# My own card\n\nNo markers here.\n"
    assert "markers" in caplog.text
    assert merge_card(f"{BEGIN}\nnew\n{END}\n", "intro\n" + BEGIN + "\nold\n" + END + "\nafter\n") == (
        f"intro\n{BEGIN}\nnew\n{END}\nafter\n")


def test_facts_count_tuples_by_status_and_name_the_limits() -> None:
    facts = card_facts(_kb(), {"judges": ["lexicon", "prototype"], "judge_kappa": 0.25, "judge_kappa_tuples": 3})
    by = {c["id"]: c for c in facts["cultures"]}
    assert (by["en"]["accepted"], by["en"]["tuples"]) == (1, 1)
    assert (by["zh"]["pending"], by["zh"]["rejected"], by["zh"]["flagged"]) == (1, 1, 1)
    assert {k: facts["review"][k] for k in ("accepted", "approved", "relabelled", "pending", "rejected", "flagged",
                                             "to_recheck", "decisions")} == {
        "accepted": 1, "approved": 0, "relabelled": 0, "pending": 1, "rejected": 1, "flagged": 1, "to_recheck": 0,
        "decisions": 0}
    assert facts["judges"]["kappa_band"] == "fair" and facts["low_support_tuples"] == 1
    limits = " ".join(facts["limits"])
    assert "1 tuples are pending" in limits and "offline heuristics" in limits and "not recorded" in limits
    assert "agree only fairly" in limits


def test_describe_sources_reads_the_notice_beside_a_file(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n", encoding="utf-8")
    assert describe_sources([tmp_path / "a.csv"])[0]["licence"] is None
    (tmp_path / "LICENSE").write_text("Apache License\nVersion 2.0, January 2004\n", encoding="utf-8")
    rec = describe_sources([tmp_path / "a.csv"], [{"samples": 1, "layout": "artemis"}])[0]
    assert rec["notice"] == "LICENSE" and rec["licence"] == "Apache License Version 2.0" and rec["samples"] == 1
    assert len(rec["sha256"]) == 16


def test_kb_info_and_kb_card_commands(built: dict[str, Path]) -> None:
    kb_dir = built["kb"]
    res = runner.invoke(app, ["kb", "info", str(kb_dir), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.stdout)
    version = KnowledgeBase.load(kb_dir).version
    assert info["kb_version"] == version and info["card"] == str(kb_dir / CARD)
    assert {c["id"] for c in info["cultures"]} == {"en", "de"} and info["label_scheme"] == "artemis9"
    assert f"kb_version={version}" in info["harness_args"]["lmms_eval"]
    assert f"-S kb_version={version}" in info["harness_args"]["inspect_ai"]
    res = runner.invoke(app, ["kb", "info", str(kb_dir)])
    assert res.exit_code == 0 and f"version: {version}" in res.output and "--model_args" in res.output
    assert "inspect eval" in res.output and "VLMEvalKit" in res.output
    res = runner.invoke(app, ["kb", "card", str(kb_dir)])
    assert res.exit_code == 0 and "KB card written" in res.output
    res = runner.invoke(app, ["kb", "info", str(built["root"] / "nope")])
    assert res.exit_code == 2 and "manifest.json is missing" in res.output


def test_api_kb_route_serves_the_card(built: dict[str, Path], default_embedder: Any) -> None:
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with TestClient(create_app(built["kb"], embedder=default_embedder)) as client:
        body = client.get("/v1/kb").json()
    assert body["card"] == read_card(built["kb"]) and BEGIN in body["card"]
