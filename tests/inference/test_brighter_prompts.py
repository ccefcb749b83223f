"""Issue 27 (done when 2): BRIGHTER texts, through the predictor's own prompt building (`ModelPredictor.prompt`) on
a KB built from the shipped BRIGHTER sample (so its stimulus kind is texts), in every mode and every prompt
language, never speak of an artwork, a painting or its viewers: neither the task prompt nor the knowledge header."""

from __future__ import annotations

import json
from typing import Any

import pytest

from culturekb.demo import demo_dataset
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.base import MODES
from culturekb.inference.predictors import ModelPredictor
from culturekb.kb import Sample
from culturekb.kb.stimulus import kb_stimulus_kind
from culturekb.retrieval.retriever import open_retriever
from culturekb.text.concepts import TextConceptExtractor
from culturekb.text.prompts import PROMPT_LANGUAGES
from tests.inference.test_text_prompts import ARTWORK_WORDS, _found

pytestmark = pytest.mark.slow  # builds a KB from 720 texts (a minute or more on a busy machine)

TRAIN_PER_CULTURE = 120  # enough for tuples in every culture, small enough to build in seconds


@pytest.fixture(scope="module")
def brighter(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> tuple[Augmenter, list[Sample]]:
    """An Augmenter on a KB built from part of the BRIGHTER sample's training split, and per culture the first
    test text whose `know` block holds a tuple."""
    from culturekb.workflows import build_from_files, load_kb_samples

    data = demo_dataset()
    rows = [json.loads(line) for line in data.sample.read_text(encoding="utf-8").splitlines()]
    taken: dict[str, int] = {}
    kept = []
    for r in rows:
        if r["split"] == "train":
            taken[r["culture"]] = taken.get(r["culture"], 0) + 1
            if taken[r["culture"]] > TRAIN_PER_CULTURE:
                continue
        kept.append(r)
    work = tmp_path_factory.mktemp("brighter")
    path = work / "brighter.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    kb_dir = work / "kb"
    build_from_files([path], kb_dir, cache_dir=work / "cache", progress=False, cultures_file=data.cultures,
                     scheme=str(data.scheme), loaded_embedder=default_embedder, calibrate=False)
    augmenter = Augmenter(open_retriever(kb_dir, default_embedder))
    tests = [s for s in load_kb_samples(kb_dir, [path]) if s.split == "test"]
    found = TextConceptExtractor().extract(tests)
    tests = [s.model_copy(update={"concepts": c}) for s, c in zip(tests, found, strict=True)]
    chosen: dict[str, Sample] = {}
    for s in sorted(tests, key=lambda s: s.id):
        if s.culture not in chosen and augmenter.augment(s).block:
            chosen[s.culture] = s
    return augmenter, list(chosen.values())


def test_the_kb_is_a_text_kb_and_every_culture_has_a_text_with_knowledge(
        brighter: tuple[Augmenter, list[Sample]]) -> None:
    augmenter, samples = brighter
    assert kb_stimulus_kind(augmenter.retriever.kb) == "texts"
    assert {s.culture for s in samples} == {"en", "de", "es", "zh", "ru", "hi"}


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_brighter_prompts_name_no_artwork_in_any_mode(brighter: tuple[Augmenter, list[Sample]],
                                                     language: str) -> None:
    augmenter, samples = brighter
    predictor = ModelPredictor(type("Client", (), {"id": "no-calls"})(), augmenter)  # type: ignore[arg-type]
    shown = 0
    for sample in samples:
        for mode in MODES:
            # the block as `predict` asks for it (in the culture's language), and in the prompt's language
            for aug in (augmenter.augment(sample, mode=mode), augmenter.augment(sample, mode=mode, language=language)):
                text, template_id = predictor.prompt(sample, aug, mode, language)
                assert template_id.startswith("predict_text_"), (mode, template_id)
                assert sample.text and sample.text in text
                assert not _found(ARTWORK_WORDS[language], language, text), (sample.id, mode, language, text)
                if aug.block:
                    assert aug.block.strip().splitlines()[-1] in text, (mode, language)
                    shown += 1
    assert shown >= len(samples) * 3  # know, random-know and cross-culture-know showed their knowledge
