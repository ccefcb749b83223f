"""Prompts in every Cedar language: same placeholders as English, the answer format the parser reads, blocks in
the requested language, culture names for every language."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest

from culturekb.evals.cedar import cedar_template
from culturekb.inference.injection import CUES, HARNESS, KNOWLEDGE, KnowledgeService
from culturekb.inference.parsing import parse_prediction
from culturekb.inference.prompts import (
    culture_display_name,
    format_labels,
    prediction_template,
    prediction_values,
)
from culturekb.kb import get_scheme
from culturekb.kb.cultures import default_registry
from culturekb.kb.schemes import EmotionScheme
from culturekb.retrieval.retriever import Retriever
from culturekb.text.prompts import PROMPT_LANGUAGES, available_prompt_languages, load_prompt

MULTILINGUAL = ("predict_orig", "predict_know", "predict_internal_know", "knowledge_item", "cedar_orig",
                "cedar_know", "harness_knowledge", "cues", "cue_item")
ARTEMIS, CEDAR = get_scheme("artemis9"), get_scheme("cedar14")
ANSWER_FORMAT = re.compile(r'\{"emotion": "<[^"<>]+>", "explanation": "<[^"<>]+>"\}')
LEFTOVER = re.compile(r"(?<!\{)\{[a-z_]+\}(?!\})")
SCRIPT = {"zh": r"[\u4e00-\u9fff]", "ar": r"[\u0600-\u06ff]", "hi": r"[\u0900-\u097f]",
          "ja": r"[\u3040-\u30ff\u4e00-\u9fff]"}  # Japanese: kana or kanji
# what a model writes in each language: an explanation, and chain-of-thought lines that name no label
EXPLANATION = {
    "en": "The lanterns recall family gatherings.", "zh": "灯笼让人想起家人团聚。",
    "ar": "تذكّر الفوانيس بلمّة العائلة.", "hi": "लालटेनें परिवार के मिलन की याद दिलाती हैं।",
    "ja": "提灯が家族の団らんを思い出させる。", "es": "Los farolillos recuerdan las reuniones familiares.",
    "sw": "Taa zinakumbusha mikusanyiko ya familia.",
}
REASONING = {
    "en": "1. A street at night with red lanterns.\n2. Lanterns belong to the new year.\n3. One emotion stands out.",
    "zh": "1. 夜晚的街道挂着红灯笼。\n2. 灯笼与新年有关。\n3. 有一种情绪最突出。",
    "ar": "1. شارع ليلي تزينه فوانيس حمراء.\n2. ترتبط الفوانيس بالعيد.\n3. هناك عاطفة واحدة بارزة.",
    "hi": "1. रात की एक सड़क, लाल लालटेनों से सजी।\n2. लालटेनें नए साल से जुड़ी हैं।\n3. एक भावना सबसे प्रमुख है।",
    "ja": "1. 赤い提灯が並ぶ夜の通り。\n2. 提灯は新年と結びつく。\n3. 一つの感情が際立つ。",
    "es": "1. Una calle de noche con farolillos rojos.\n2. Los farolillos se asocian al año nuevo.\n"
          "3. Destaca una emoción.",
    "sw": "1. Barabara usiku yenye taa nyekundu.\n2. Taa zinahusishwa na mwaka mpya.\n3. Hisia moja inajitokeza.",
}


def test_every_multilingual_template_exists_in_the_seven_languages() -> None:
    assert PROMPT_LANGUAGES == ("en", "zh", "ar", "hi", "ja", "es", "sw")
    for name in MULTILINGUAL:
        assert set(PROMPT_LANGUAGES) <= set(available_prompt_languages(name)), name


@pytest.mark.parametrize("name", MULTILINGUAL)
def test_same_placeholders_as_english_and_written_in_the_language(name: str) -> None:
    english = load_prompt(name, "en")
    texts = {}
    for language in PROMPT_LANGUAGES:
        template = load_prompt(name, language)
        assert template.placeholders == english.placeholders, (name, language)
        assert template.id.startswith(f"{name}.{language}@")
        texts[language] = template.text
        if language in SCRIPT:
            assert re.search(SCRIPT[language], template.text), (name, language)
    assert len(set(texts.values())) == len(PROMPT_LANGUAGES)  # seven different texts, not English copies
    if english.text.count("\n") > 1:  # whole prompts (not one-line items) ask in the same steps
        for language, text in texts.items():
            assert ANSWER_FORMAT.search(text) or "{items}" in text or "{knowledge}" in text, (name, language)


def _rendered(name: str, language: str) -> tuple[str, EmotionScheme]:
    """The prompt `name` in `language` as a model receives it, and the scheme it asks for."""
    if name.startswith("cedar_"):
        values = {"culture": culture_display_name("ja", language), "culture_id": "ja", "narrative": "A festival.",
                  "question": "How do they feel?", "labels": format_labels(CEDAR, language),
                  "cues": "- lantern -> happiness (80% of 5 examples)."}
        return cedar_template(name.removeprefix("cedar_"), language).fill(values), CEDAR
    mode = {"predict_orig": "orig", "predict_know": "know", "predict_internal_know": "internal-know"}[name]
    values = prediction_values("zh", ARTEMIS, language, knowledge="- lantern: mostly awe (80% of 5 artworks).")
    return prediction_template(mode, language).fill(values), ARTEMIS


ANSWERING = ("predict_orig", "predict_know", "predict_internal_know", "cedar_orig", "cedar_know")


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
@pytest.mark.parametrize("name", ANSWERING)
def test_an_answer_in_the_requested_format_parses(name: str, language: str) -> None:
    text, scheme = _rendered(name, language)
    assert not LEFTOVER.search(text)
    [example] = ANSWER_FORMAT.findall(text)  # the one JSON answer the prompt asks for
    listed = [line.removeprefix("- ") for line in format_labels(scheme, language).splitlines()]
    assert all(line in text for line in listed)  # every label is offered, with its translation
    for label, shown in zip(scheme.labels, listed, strict=True):
        fields = re.findall(r"<[^<>]+>", example)
        answer = example.replace(fields[0], label).replace(fields[1], EXPLANATION[language])
        if name == "predict_internal_know":  # reasoning first, the JSON on the last line
            answer = f"{REASONING[language]}\n{answer}"
        parsed = parse_prediction(answer, scheme, language)
        assert (parsed.label, parsed.status) == (label, "json"), (name, language, answer)
        assert parsed.explanation == EXPLANATION[language]
        # a model that copies the whole listed line, translation included, is read the same way
        copied = example.replace(fields[0], shown).replace(fields[1], EXPLANATION[language])
        assert parse_prediction(copied, scheme, language).label == label, (name, language, copied)


def test_culture_names_cover_the_seven_languages() -> None:
    raw = json.loads(resources.files("culturekb.data").joinpath("prompts/culture_names.json").read_text("utf-8"))
    registry = default_registry()
    for language in PROMPT_LANGUAGES:
        assert set(PROMPT_LANGUAGES) <= set(raw[language]), language
        names = {c: culture_display_name(c, language) for c in PROMPT_LANGUAGES}
        assert len(set(names.values())) == len(PROMPT_LANGUAGES), language  # seven distinct names
        if language in SCRIPT:  # named in the language's own script, not with the registry's English name
            assert all(re.search(SCRIPT[language], n) for n in names.values()), names
    assert culture_display_name("ja", "ja") == "日本" and culture_display_name("zh", "hi") == "चीनी"
    assert culture_display_name("ar", "es") == "árabe" and culture_display_name("sw", "sw") == "Kiswahili"
    assert culture_display_name("SG", "ja") == "シンガポール"  # RICE-VL countries too
    assert culture_display_name("SG", "en") == registry.resolve("SG").name


@pytest.mark.parametrize("language", PROMPT_LANGUAGES)
def test_blocks_render_in_each_language(small_retriever: Retriever, language: str) -> None:
    service = KnowledgeService(small_retriever)
    concepts = ["full moon", "bamboo"]
    for template, frame in ((KNOWLEDGE, None), (HARNESS, "harness_knowledge"), (CUES, "cues")):
        block = service.inject(concepts, "zh", template=template, language=language)
        assert block.language == language and block.matches
        item = template.item
        assert f"{item}.{language}@" in block.template_id
        if frame is not None:
            assert block.template_id.startswith(f"{frame}.{language}@")
            assert culture_display_name("zh", language) in block.text.splitlines()[0]
        sadness = ARTEMIS.translate("sadness", language) if language != "en" else "sadness"
        assert sadness in block.text  # labels in the block's language
        if language in SCRIPT:
            assert re.search(SCRIPT[language], block.text.replace("满月让人思念远方的亲人", ""))


EXTRA = ("de", "ru", "fr", "pt")  # prompt files beyond the seven Cedar languages (de, ru: the demo's cultures)
VARIANTS = ("predict_image_orig", "predict_image_know", "predict_image_internal_know", "predict_text_orig",
            "predict_text_know", "predict_text_internal_know")  # the image and text versions, packaged in them too


@pytest.mark.parametrize("language", EXTRA)
def test_extra_language_prompts_are_native_and_parse(language: str) -> None:
    for name in (*MULTILINGUAL, *VARIANTS):
        template, english = load_prompt(name, language), load_prompt(name, "en")
        assert template.placeholders == english.placeholders, (name, language)
        assert template.text.count("{culture}") == english.text.count("{culture}"), (name, language)
        assert template.text != english.text, (name, language)
    explanation = {"de": "Die Laternen erinnern an Familientreffen.", "ru": "Фонари напоминают о семейных встречах.",
                   "fr": "Les lanternes rappellent les réunions de famille.",
                   "pt": "As lanternas lembram as reuniões de família."}
    for mode, item_text in (("orig", None), ("know", None), ("orig", "A lantern."), ("know", "A lantern.")):
        template = prediction_template(mode, language, text=item_text is not None)
        assert template.language_status == "native"
        text = template.fill(prediction_values("zh", ARTEMIS, language, knowledge="- lantern: mostly awe.",
                                               text=item_text))
        assert not LEFTOVER.search(text) and culture_display_name("zh", language) in text
        [example] = ANSWER_FORMAT.findall(text)
        fields = re.findall(r"<[^<>]+>", example)
        for label in ARTEMIS.labels:
            answer = example.replace(fields[0], label).replace(fields[1], explanation[language])
            assert parse_prediction(answer, ARTEMIS, language).label == label, (mode, language, answer)
