"""Cue blocks (`culturekb.cues`): concepts from text or a list, looked up in the target culture, rendered from a
template by the knowledge service."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.injection import cues
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval import Retriever, build_index


def tup(concept: str, culture: str, label: str, rationale: str) -> KnowledgeTuple:
    other = "fear" if label != "fear" else "awe"
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 0.75, other: 0.25},
                          support=8, rationales=[rationale, "A second reason."])


@pytest.fixture(scope="module")
def retriever(default_embedder: Any) -> Retriever:
    kb = KnowledgeBase([
        tup("full moon", "zh", "sadness", "The full moon recalls family far away."),
        tup("crane", "zh", "awe", "Cranes stand for long life."),
        tup("red lantern", "zh", "excitement", "Red lanterns mean a festival."),
        tup("full moon", "en", "contentment", "A full moon feels calm."),
        tup("desert", "ar", "awe", "The desert is vast and old."),
    ])
    return Retriever(kb, build_index(kb, default_embedder, "faiss", persist=False), default_embedder)


NARRATIVE = "Under the full moon, a crane stands beside a bamboo grove near red lanterns."


def test_cues_from_a_narrative(retriever: Retriever) -> None:
    block = cues(NARRATIVE, "zh", retriever)
    assert {m.tuple.id for m in block.matches} == {"zh::full moon", "zh::crane", "zh::red lantern"}
    assert all(m.culture == "zh" for m in block.matches)
    assert "full moon" in block.concepts and "crane" in block.concepts
    text = block.text
    assert text.startswith("Cultural cues for people from the Chinese culture")
    assert "- full moon -> sadness (75% of 8 examples). The full moon recalls family far away." in text
    assert "- crane -> awe (75% of 8 examples). Cranes stand for long life." in text
    assert "A second reason." not in text  # only the top rationale
    assert block.template_id.startswith("cues.en@") and bool(block)


def test_cues_for_another_culture_and_no_match(retriever: Retriever) -> None:
    en = cues(NARRATIVE, "English", retriever)
    assert [m.tuple.id for m in en.matches] == ["en::full moon"]
    assert "A full moon feels calm." in en.text and "Cranes" not in en.text
    none = cues("A spreadsheet on a laptop screen.", "ar", retriever)
    assert none.text == "" and none.matches == () and not none
    assert cues("   ", "zh", retriever).matches == ()


def test_cues_from_a_concept_list_and_max_items(retriever: Retriever) -> None:
    block = cues(["crane", "full moons", "red lantern"], "zh", retriever, max_items=2)
    assert [m.tuple.id for m in block.matches] == ["zh::crane", "zh::full moon"]
    assert block.text.count("\n- ") == 2
    with pytest.raises(ConfigError, match="max_items"):
        cues(["crane"], "zh", retriever, max_items=0)
    with pytest.raises(ConfigError, match="not in this KB"):
        cues(["crane"], "klingon", retriever)


def test_cross_culture_cues(retriever: Retriever) -> None:
    block = cues(NARRATIVE, "zh", retriever, cross_culture=True)
    assert [m.tuple.id for m in block.matches] == ["en::full moon"]


def test_user_templates_are_validated(retriever: Retriever, tmp_path: Path) -> None:
    block_t = tmp_path / "mine.txt"
    block_t.write_text("Hints for {culture}:\n{items}\n")
    item_t = tmp_path / "item.txt"
    item_t.write_text("* {query} ~ {concept}: {label}\n")
    block = cues(["cranes"], "zh", retriever, block_template=block_t, item_template=item_t)
    assert block.text == "Hints for Chinese:\n* cranes ~ crane: awe"  # blocks end without a line break
    bad = tmp_path / "bad.txt"
    bad.write_text("* {concept} {label} {mood}\n")
    with pytest.raises(ConfigError, match="mood"):
        cues(["crane"], "zh", retriever, item_template=bad)


def test_a_pending_tuple_is_marked_unreviewed_in_every_cue_language(default_embedder: Any) -> None:
    """The README's promise: a pending tuple's line says it is unreviewed, in cue blocks as in knowledge blocks."""
    pending = tup("lantern", "zh", "excitement", "Lanterns mean a festival.").model_copy(update={"status": "pending"})
    kb = KnowledgeBase([pending, tup("crane", "zh", "awe", "Cranes stand for long life.")])
    r = Retriever(kb, build_index(kb, default_embedder, "faiss", persist=False), default_embedder)
    en = cues(["lantern", "crane"], "zh", r).text
    assert "- lantern (unreviewed) -> excitement (75% of 8 examples)" in en
    assert "- crane -> awe" in en  # an accepted tuple carries no mark
    assert "- lantern（未经审核） -> " in cues(["lantern"], "zh", r, language="zh").text
