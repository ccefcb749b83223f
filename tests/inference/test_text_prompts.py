"""The text prediction prompts (``predict_text_*``, items without an image such as BRIGHTER's sentences) exist in
all seven prompt languages: each is read natively, shows the item's text and never speaks of an artwork, a painting
or its viewers, in any language."""

from __future__ import annotations

import re

import pytest

from culturekb.inference.prompts import (
    TEMPLATE_FIELDS,
    TEXT_PREDICTION_TEMPLATES,
    prediction_template,
    prediction_values,
)
from culturekb.kb import get_scheme
from culturekb.text.prompts import PROMPT_LANGUAGES, resolve_prompt

TEXT_TEMPLATES = sorted(set(TEXT_PREDICTION_TEMPLATES.values()))
# words for an artwork, a painting and its viewers, as the image templates of each language use them
ARTWORK_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("artwork", "painting", "viewer"),
    "zh": ("艺术品", "艺术作品", "作品", "画", "观众"),
    "ar": ("عمل فني", "العمل الفني", "أعمال فنية", "لوحة", "المشاهد"),
    "hi": ("कलाकृति", "चित्र", "दर्शक"),
    "ja": ("作品", "絵画", "美術", "鑑賞"),
    "es": ("obra", "obras", "pintura", "espectador", "espectadores"),
    "sw": ("kazi ya sanaa", "mchoro", "michoro", "watazamaji"),
}
LATIN = {"en", "es", "sw"}  # matched as whole words ('obra' is not in 'sobra')
# a BRIGHTER-style item: one sentence of the speaker's own, no image
TEXT = "And it felt good when the little fat puppy clumsily crawled over my feet and licked my nails."
KNOWLEDGE = "- puppy: mostly joy (80% of 5 items)."


def _found(words: tuple[str, ...], language: str, text: str) -> list[str]:
    if language in LATIN:
        return [w for w in words if re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE)]
    return [w for w in words if w in text]


def _rendered(name: str, language: str) -> tuple[str, str]:
    fields = TEMPLATE_FIELDS[name]
    template = resolve_prompt(name, language, required=fields.required, allowed=fields.allowed)
    assert (template.language, template.requested_language, template.language_status) == (
        language, language, "native"), (name, language)
    assert template.id.startswith(f"{name}.{language}@")
    values = prediction_values("en", get_scheme("plutchik8"), language, knowledge=KNOWLEDGE, text=TEXT,
                               title="an unused title")
    return template.fill(values), template.check_status


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
@pytest.mark.parametrize("name", TEXT_TEMPLATES)
def test_text_prompts_are_native_and_name_no_artwork(name: str, language: str) -> None:
    rendered, status = _rendered(name, language)
    assert status == ("source" if language == "en" else "unchecked")
    assert not _found(ARTWORK_WORDS[language], language, rendered), (name, language, rendered)
    assert TEXT in rendered and "an unused title" not in rendered
    assert ("puppy: mostly joy" in rendered) == (name == "predict_text_know")
    assert '{"emotion": "<' in rendered and not re.search(r"(?<!\{)\{[a-z_]+\}(?!\})", rendered)
    # the word lists are the ones the image template of the same language uses
    image = resolve_prompt(name.replace("predict_text_", "predict_"), language).text
    assert _found(ARTWORK_WORDS[language], language, image), (name, language)


@pytest.mark.parametrize("name", TEXT_TEMPLATES)
def test_same_placeholders_as_english(name: str) -> None:
    english = resolve_prompt(name, "en")
    for language in PROMPT_LANGUAGES:
        template = resolve_prompt(name, language)
        assert template.placeholders == english.placeholders, (name, language)
        assert template.text.count("{culture}") == english.text.count("{culture}"), (name, language)


@pytest.mark.parametrize("mode", list(TEXT_PREDICTION_TEMPLATES))
def test_prediction_template_reads_the_text_variant_natively(mode: str) -> None:
    for language in PROMPT_LANGUAGES:
        template = prediction_template(mode, language, text=True)
        assert template.language_status == "native" and template.id.startswith(
            f"{TEXT_PREDICTION_TEMPLATES[mode]}.{language}@"), (mode, language)
    assert prediction_template(mode, "ko", text=True).language_status == "fallback:en"  # no Korean file
