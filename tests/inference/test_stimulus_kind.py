"""A KB's stimulus kind (culturekb.kb.stimulus): decided at build time from the samples, stored in the manifest, and
said by the knowledge headers in every prompt language, so a text dataset is never "annotated artworks"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from culturekb.builders.pipeline import BuildConfig
from culturekb.errors import ConfigError
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.injection import HARNESS, KnowledgeService
from culturekb.inference.predictors import ModelPredictor
from culturekb.inference.prompts import IMAGE_PREDICTION_TEMPLATES, PREDICTION_TEMPLATES, prediction_template
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample
from culturekb.kb.stats import kb_stats, render_stats_markdown
from culturekb.kb.stimulus import (
    STIMULUS_KINDS,
    detect_stimulus_kind,
    kb_stimulus_kind,
    stimulus_noun,
    stimulus_phrase,
)
from culturekb.retrieval.retriever import open_retriever
from culturekb.text.prompts import PROMPT_LANGUAGES
from tests.inference.test_text_prompts import ARTWORK_WORDS, _found

TUPLES = [KnowledgeTuple(concept="puppy", culture="en", label="contentment",
                         distribution={"contentment": 0.8, "fear": 0.2}, support=5,
                         rationales=["the little puppy licked my nails"], status="accepted")]


def test_detected_from_the_samples() -> None:
    art = Sample(id="a", culture="en", metadata={"art_style": "Impressionism"})
    photo = Sample(id="p", culture="en", image="photos/p.jpg")
    text = Sample(id="t", culture="en", text="And it felt good.")
    assert detect_stimulus_kind([text, art]) == "artworks"  # a WikiArt style, images present or not
    assert detect_stimulus_kind([text, photo]) == "images"
    assert detect_stimulus_kind([text]) == "texts"
    assert kb_stimulus_kind({"stimulus_kind": "texts"}) == "texts"
    assert kb_stimulus_kind({}) == "artworks"  # a KB built before the kind was recorded


def test_a_build_names_its_kind_or_is_refused() -> None:
    assert BuildConfig(stimulus_kind="scenarios").stimulus_kind == "scenarios"
    assert "stimulus_kind" not in BuildConfig().model_dump()  # unset: the build config hashes as before
    with pytest.raises(ValidationError, match="artworks"):
        BuildConfig(stimulus_kind="paintings")
    with pytest.raises(ConfigError, match="unknown stimulus kind 'paintings'"):
        stimulus_phrase("paintings", "en")


def test_every_kind_has_words_in_every_prompt_language() -> None:
    for kind in STIMULUS_KINDS:
        for language in PROMPT_LANGUAGES:
            assert stimulus_phrase(kind, language) and stimulus_noun(kind, language), (kind, language)
    assert stimulus_phrase("texts", "xx") == stimulus_phrase("texts", "en")  # no words: English


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> dict[str, KnowledgeService]:
    out = {}
    for kind in ("texts", "artworks", "images"):
        path: Path = tmp_path_factory.mktemp(kind) / "kb"
        KnowledgeBase(TUPLES, build_config={"cultures": ["en"], "stimulus_kind": kind}).save(path)
        out[kind] = KnowledgeService(open_retriever(KnowledgeBase.load(path), default_embedder, backend="numpy"))
    return out


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_a_text_kb_header_names_no_artwork_in_any_language(services: dict[str, KnowledgeService],
                                                          language: str) -> None:
    text = services["texts"].inject(["puppy"], "en", language=language, template=HARNESS)
    assert text.language == language and text.language_status == "native"
    assert stimulus_phrase("texts", language) in text.text
    assert not _found(ARTWORK_WORDS[language], language, text.text), (language, text.text)
    art = services["artworks"].inject(["puppy"], "en", language=language, template=HARNESS)
    assert stimulus_phrase("artworks", language) in art.text
    assert stimulus_phrase("texts", language) not in art.text


def test_stats_report_counts_the_kind(services: dict[str, KnowledgeService]) -> None:
    kb = services["texts"].retriever.kb
    page = render_stats_markdown(kb_stats(kb))
    assert "## Support (texts per concept)" in page and "images" not in page


IMAGE_TEMPLATES = sorted(set(IMAGE_PREDICTION_TEMPLATES.values()))


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
@pytest.mark.parametrize("mode", sorted(IMAGE_PREDICTION_TEMPLATES))
def test_image_templates_are_native_and_name_no_artwork(mode: str, language: str) -> None:
    image = prediction_template(mode, language, kind="images")
    art = prediction_template(mode, language)
    assert image.language_status == "native" and image.id.startswith(f"{IMAGE_PREDICTION_TEMPLATES[mode]}.")
    assert art.id.startswith(f"{PREDICTION_TEMPLATES[mode]}.")
    assert image.placeholders == art.placeholders
    assert not _found(ARTWORK_WORDS[language][:2] if language == "en" else
                      tuple(w for w in ARTWORK_WORDS[language] if w not in ("观众", "المشاهد", "दर्शक", "espectador",
                                                                            "espectadores", "watazamaji")),
                      language, image.text), (mode, language, image.text)
    assert prediction_template(mode, language, kind="artworks").id == art.id


@pytest.mark.parametrize("kind", ["images", "artworks"])
def test_the_predictor_frames_an_image_by_the_kbs_kind(services: dict[str, KnowledgeService], kind: str) -> None:
    augmenter = Augmenter(services[kind].retriever)
    predictor = ModelPredictor(type("Client", (), {"id": "no-calls"})(), augmenter)  # type: ignore[arg-type]
    sample = Sample(id="p", culture="en", image="photo.jpg", concepts=["puppy"])
    text, template_id = predictor.prompt(sample, augmenter.augment(sample), "know", "en")
    expected = "predict_image_know.en@" if kind == "images" else "predict_know.en@"
    assert template_id.startswith(expected) and "puppy: mostly contentment" in text
    assert ("artwork" in text) == (kind == "artworks")
