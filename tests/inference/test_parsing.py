from __future__ import annotations

import json

import pytest

from culturekb.inference.parsing import ParsedAnswer, find_label_mentions, parse_prediction
from culturekb.kb import get_scheme
from culturekb.kb.schemes import scheme_from_labels

ART = get_scheme("artemis9")
CEDAR = get_scheme("cedar14")


def parse(text: str | None, language: str | None = None) -> ParsedAnswer:
    return parse_prediction(text, ART, language)


# -- JSON ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label", "explanation"),
    [
        ('{"emotion": "sadness", "explanation": "dark tones"}', "sadness", "dark tones"),
        ('```json\n{"Emotion": "Awe", "Explanation": "a vast sky"}\n```', "awe", "a vast sky"),
        ('Sure! My answer: {"label": "fear", "reason": "a storm"} Hope this helps.', "fear", "a storm"),
        ('{"ANSWER": "anger", "Rationale": "soldiers"}', "anger", "soldiers"),
        ("{'emotion': 'disgust', 'explanation': 'rotting fruit'}", "disgust", "rotting fruit"),
        ('{“emotion”: “contentment”, “explanation”: “a calm lake”,}', "contentment", "a calm lake"),
        ('{"emotion": "something_else", "explanation": "unclear"}', "something else", "unclear"),
        ('{"emotion": "Sadness.", "explanation": "x"}', "sadness", "x"),
        ('{"emotion": "calm", "explanation": "a synonym"}', "contentment", "a synonym"),
        ('{"emotion": ["excitement"], "explanation": ["bright", "red"]}', "excitement", "bright red"),
        ('{"result": {"emotion": "awe", "explanation": "mountains"}}', "awe", "mountains"),
        ('{"answer": {"emotion": "fear"}, "explanation": "night"}', "fear", "night"),
        ('{"emotion": "amusement"}', "amusement", ""),
    ],
)
def test_json_answers(text: str, label: str, explanation: str) -> None:
    assert parse(text) == ParsedAnswer(label, explanation, "json")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ('{"emotion": "悲伤", "explanation": "画面昏暗"}', "sadness"),
        ('{"情绪": "敬畏", "解释": "群山巍峨"}', "awe"),
        ('{"emotion": "悲伤（sadness）"}', "sadness"),
        ('{"emotion": "حزن", "explanation": "ألوان قاتمة"}', "sadness"),
        ('{"العاطفة": "الخوف", "التفسير": "عاصفة"}', "fear"),
        ('{"emotion": "رِضا"}', "contentment"),  # Arabic diacritics are ignored
        ('{"emotion": "إعجاب"}', "awe"),
    ],
)
def test_json_with_chinese_and_arabic_values_and_keys(text: str, label: str) -> None:
    parsed = parse(text)
    assert (parsed.label, parsed.status) == (label, "json")


def test_every_translation_maps_back_to_its_label() -> None:
    for language, table in ART.translations.items():
        for label, words in table.items():
            for word in words:
                assert parse(json.dumps({"emotion": word}, ensure_ascii=False)).label == label, (language, word)


def test_chain_of_thought_takes_the_last_json_object() -> None:
    text = (
        "1. The painting shows a storm at sea; a first guess could be {\"emotion\": \"fear\"}.\n"
        "2. For these viewers the sea is also a symbol of grandeur.\n"
        '{"emotion": "awe", "explanation": "the sea is majestic"}'
    )
    assert parse(text) == ParsedAnswer("awe", "the sea is majestic", "json")


def test_json_without_explanation_keeps_the_reasoning() -> None:
    parsed = parse('The red horse feels energetic and bright.\n{"emotion": "excitement"}')
    assert parsed.label == "excitement" and parsed.explanation == "The red horse feels energetic and bright."


def test_think_block_is_skipped_in_favour_of_the_final_answer() -> None:
    text = "<think>maybe fear, maybe sadness</think>\n{\"emotion\": \"awe\", \"explanation\": \"big\"}"
    assert parse(text) == ParsedAnswer("awe", "big", "json")


def test_json_with_an_unknown_label_is_invalid_not_guessed() -> None:
    parsed = parse('{"emotion": "happy", "explanation": "the sadness is gone"}')
    assert parsed == ParsedAnswer(None, "the sadness is gone", "invalid")
    assert parse('{"emotion": 3}').status == "invalid"
    assert parse('{"emotion": null}').status == "invalid"


def test_json_without_a_label_key_falls_back_to_text() -> None:
    parsed = parse('{"mood": "gloomy"} I would say sadness.')
    assert (parsed.label, parsed.status) == ("sadness", "text")


# -- free text ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Sadness", "sadness"),
        ("I think the viewers would feel awe.", "awe"),
        ("The painting is sad at first sight.\nAnswer: awe", "awe"),
        ("**Final answer:** Fear", "fear"),
        ("Step 1: a storm. Step 2: fear is common. Emotion: not fear, but sadness", "sadness"),
        ("Answer: something else", "something else"),
        ("I feel amused by the clown", "amusement"),
        ("It evokes a sense of wonder and awe", "awe"),
        ("something-else", "something else"),
        ("EXCITEMENT!!!", "excitement"),
    ],
)
def test_free_text_english(text: str, label: str) -> None:
    parsed = parse(text)
    assert (parsed.label, parsed.status) == (label, "text")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("画面让人感到非常悲伤。", "sadness"),  # 非常 = very, not a negation
        ("观众不会感到恐惧，而是感到平静。", "contentment"),
        ("这幅画令人不禁感到敬畏", "awe"),
        ("分析：山水画。\n答案：满足", "contentment"),
        ("情绪：敬畏\n解释：高山让人敬畏", "awe"),
        ("感到不安和恐惧", "fear"),  # 不安 = uneasy, not a negation of 恐惧
        ("一点也不悲伤，反而很兴奋", "excitement"),
    ],
)
def test_free_text_chinese(text: str, label: str) -> None:
    parsed = parse(text, "zh")
    assert (parsed.label, parsed.status) == (label, "text")


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("يشعر المشاهدون بالحزن", "sadness"),
        ("لا يشعر المشاهدون بالخوف بل بالحزن", "sadness"),
        ("الإجابة: الرهبة", "awe"),
        ("التحليل: لوحة بحرية\nالإجابة النهائية: خوف", "fear"),
        ("ليس غضبا، إنه اشمئزاز", "disgust"),
    ],
)
def test_free_text_arabic(text: str, label: str) -> None:
    parsed = parse(text, "ar")
    assert (parsed.label, parsed.status) == (label, "text")


@pytest.mark.parametrize(
    "text",
    [
        "Viewers would not feel sad here.",
        "There is no fear in this picture.",
        "It doesn't evoke anger.",
        "without any sadness",
        "不悲伤",
        "并非恐惧",
        "لا خوف",
    ],
)
def test_negated_mentions_do_not_count(text: str) -> None:
    assert parse(text).status == "invalid"


def test_negation_stops_at_the_clause_boundary() -> None:
    assert parse("It is not dark, and the mood is sadness.").label == "sadness"
    assert parse("I wouldn't say fear; it's anger").label == "anger"
    assert parse("There is no doubt: awe.").label == "awe"


def test_first_mention_wins_without_an_answer_line() -> None:
    assert parse("Sadness, then a little fear.").label == "sadness"
    assert parse("Fear, then a little sadness.").label == "fear"


def test_everyday_words_count_only_when_nothing_else_is_mentioned() -> None:
    assert parse("Unlike other paintings, the content of this one evokes excitement.").label == "excitement"
    assert parse("I wonder whether this is sad").label == "sadness"
    assert parse("Other.").label == "something else"
    assert parse("其他画作不同，这幅令人兴奋", "zh").label == "excitement"
    # (the old sentence "... هذه مخيفة ورهبة" also names fear, "مخيفة", since the Arabic vocabulary knows it)
    assert parse("على عكس لوحة آخر، هذه اللوحة تثير الرهبة", "ar").label == "awe"


def test_explanation_line_is_extracted() -> None:
    parsed = parse("Emotion: awe\nExplanation: the cathedral towers over the crowd")
    assert parsed == ParsedAnswer("awe", "the cathedral towers over the crowd", "text")


def test_language_searches_its_translations_first_then_all() -> None:
    # a Chinese answer to an Arabic prompt is still understood
    assert parse("悲伤", "ar").label == "sadness"
    mentions = find_label_mentions("sad and then 愤怒", ART, "zh")
    assert [label for _, label in mentions] == ["sadness", "anger"]
    assert find_label_mentions("愤怒", ART, "ar") == []


# -- garbage ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [None, "", "   ", "asdkjh 123 ???", "{", "}{", '{"emotion": ', "[1, 2, 3]", "😀😀😀", "\x00\x01", "null",
     "The painting shows a boat on a lake.", "<think>", "{{{{{{{{{{"],
)
def test_garbage_is_invalid_and_kept(text: str | None) -> None:
    parsed = parse(text)
    assert parsed.status == "invalid" and parsed.label is None
    assert parsed.explanation == (text or "").strip()


def test_huge_answers_with_noise_before_the_json_still_parse() -> None:
    """Long noise before the JSON answer (broken braces, quotes, lists) is skipped and the answer read. How the
    time grows with the noise (linear, not quadratic) is measured side by side in benchmarks/bench_parser.py, not
    asserted here: a test asserts no wall-clock time or ratio."""
    for noise in ("blah { not json ", "{'broken': ", '{"k": [1, '):
        for reps in (200, 2000):
            assert parse(noise * reps + '{"emotion": "fear"}').label == "fear", (noise, reps)


def test_words_inside_other_words_do_not_match() -> None:
    assert parse("The sadder mood").status == "invalid"
    assert parse("awesome fearless").status == "invalid"


# -- other schemes ------------------------------------------------------------------------------------------


def test_cedar_scheme_labels() -> None:
    assert parse_prediction('{"emotion": "Happiness"}', CEDAR).label == "happiness"
    assert parse_prediction("I would answer: sympathy", CEDAR).label == "sympathy"
    assert parse_prediction('{"emotion": "contentment"}', CEDAR).label == "contentment"


def test_custom_scheme_from_labels() -> None:
    scheme = scheme_from_labels(["calm", "tense", "very tense"])
    assert parse_prediction("It feels very tense.", scheme).label == "very tense"  # the longer form wins
    assert parse_prediction('{"label": "Calm"}', scheme) == ParsedAnswer("calm", "", "json")
    assert parse_prediction("sadness", scheme).status == "invalid"


@pytest.mark.parametrize("language", ["en", "zh", "ar"])
def test_an_echoed_prompt_is_invalid_not_its_first_listed_label(language: str) -> None:
    from culturekb.inference.prompts import prediction_template, prediction_values

    prompt = prediction_template("orig", language).fill(prediction_values(language, ART, language))
    assert parse(prompt, language).status == "invalid"


def test_regional_language_codes_use_the_base_language() -> None:
    # the prompt language's translations are searched first, so the Chinese word wins over the earlier Arabic one
    assert parse("حزن 愤怒", "zh-CN").label == "anger"
    assert parse("حزن 愤怒", "zh_TW").label == "anger"
    assert parse("حزن 愤怒").label == "sadness"
