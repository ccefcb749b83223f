from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.base import MODES
from culturekb.inference.prompts import (
    PREDICTION_TEMPLATES,
    TEMPLATE_FIELDS,
    concept_template,
    culture_display_name,
    format_labels,
    prediction_languages,
    prediction_template,
    prediction_values,
)
from culturekb.kb import get_scheme
from culturekb.text.prompts import PROMPT_LANGUAGES, load_prompt

LANGS = PROMPT_LANGUAGES
SEVEN = sorted(PROMPT_LANGUAGES)  # ['ar', 'en', 'es', 'hi', 'ja', 'sw', 'zh']
SCHEME = get_scheme("artemis9")


@pytest.mark.parametrize("language", LANGS)
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_and_language_loads_with_its_placeholders(mode: str, language: str) -> None:
    template = prediction_template(mode, language)
    name = PREDICTION_TEMPLATES[mode]
    fields = TEMPLATE_FIELDS[name]
    assert fields.required <= template.placeholders <= fields.required | fields.allowed
    assert re.fullmatch(rf"{name}\.{language}@[0-9a-f]{{12}}", template.id)
    assert template.sha == hashlib.sha256(template.text.encode("utf-8")).hexdigest()
    assert template.source == f"culturekb/data/prompts/{name}.{language}.txt"
    rendered = template.fill(prediction_values(language, SCHEME, language, knowledge="- crane -> awe"))
    assert '{"emotion": "' in rendered and '"explanation": "' in rendered  # asks for the JSON answer
    assert not re.search(r"(?<!\{)\{[a-z_]+\}(?!\})", rendered)  # no placeholder left unfilled


def test_know_template_carries_the_knowledge_block_and_orig_does_not() -> None:
    values = prediction_values("zh", SCHEME, "zh", knowledge="- 仙鹤 -> awe (60% of 5 examples)")
    assert "仙鹤 -> awe" in prediction_template("know", "zh").fill(values)
    assert "仙鹤" not in prediction_template("orig", "zh").fill(values)
    assert "knowledge" not in prediction_template("internal-know", "en").placeholders


def test_ablation_modes_share_the_know_template() -> None:
    know = prediction_template("know", "en")
    assert prediction_template("random-know", "en").id == know.id
    assert prediction_template("cross-culture-know", "en").id == know.id


def test_languages_have_distinct_texts_in_their_own_script() -> None:
    texts = {lang: prediction_template("internal-know", lang).text for lang in LANGS}
    assert len(set(texts.values())) == len(LANGS)
    assert re.search(r"[\u4e00-\u9fff]", texts["zh"]) and re.search(r"[\u0600-\u06ff]", texts["ar"])
    assert re.search(r"[\u0900-\u097f]", texts["hi"]) and re.search(r"[\u3040-\u30ff]", texts["ja"])
    assert "step by step" in texts["en"]  # chain of thought
    assert "paso a paso" in texts["es"] and "hatua kwa hatua" in texts["sw"]


def test_unknown_mode_lists_the_modes() -> None:
    with pytest.raises(ConfigError, match="unknown prediction mode 'zero-shot'") as err:
        prediction_template("zero-shot", "en")
    for mode in MODES:
        assert mode in str(err.value)


def test_language_without_template_falls_back_to_english_and_says_so() -> None:
    ko = prediction_template("know", "ko")
    assert ko.id == prediction_template("know", "en").id and ko.language == "en"
    assert (ko.requested_language, ko.language_status) == ("ko", "fallback:en")
    assert prediction_template("know", "zh").language_status == "native"
    assert prediction_languages("orig") == sorted([*SEVEN, "de", "fr", "pt", "ru"])  # the seven, and de, fr, pt, ru


def test_language_codes_are_normalised() -> None:
    assert prediction_template("orig", "zh-CN").id == prediction_template("orig", "zh").id
    assert prediction_template("orig", " AR ").id.startswith("predict_orig.ar@")
    with pytest.raises(ConfigError, match="empty"):
        prediction_template("orig", "")


def test_override_dir_replaces_a_template_by_file_name(tmp_path: Path) -> None:
    (tmp_path / "predict_orig.en.txt").write_text(
        'How would {culture} viewers feel? Pick from {labels}. Title: {title}. JSON: {{"emotion": ""}}\n',
        encoding="utf-8",
    )
    packaged = prediction_template("orig", "en")
    mine = prediction_template("orig", "en", override_dir=tmp_path)
    assert mine.id.startswith("predict_orig.en@") and mine.sha != packaged.sha
    assert mine.source == str(tmp_path / "predict_orig.en.txt")
    assert "Title: The Crane." in mine.fill(prediction_values("en", SCHEME, "en", title="The Crane"))
    # templates not overridden still come from the package
    assert prediction_template("know", "en", override_dir=tmp_path).id == prediction_template("know", "en").id


def test_override_dir_can_add_a_language(tmp_path: Path) -> None:
    (tmp_path / "predict_know.ko.txt").write_text("문화 {culture}; 지식: {knowledge}; {labels}\n", "utf-8")
    assert "ko" in prediction_languages("random-know", override_dir=tmp_path)
    assert prediction_template("random-know", "ko", override_dir=tmp_path).id.startswith("predict_know.ko@")
    orig = prediction_template("orig", "ko", override_dir=tmp_path)  # orig has no ko file: English, recorded
    assert orig.id.startswith("predict_orig.en@") and orig.language_status == "fallback:en"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Culture {culture} with {labels} and {mood}\n", r"unknown placeholders \['mood'\]"),
        ("Culture {culture} only\n", r"missing required placeholders \['labels'\]"),
        ("Culture {culture} {labels} {0}\n", "not plain names"),
        ("Culture {culture} {labels} {\n", "literal braces"),
    ],
)
def test_override_with_bad_placeholders_fails_on_load(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "predict_orig.en.txt").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        prediction_template("orig", "en", override_dir=tmp_path)


def test_know_override_must_keep_the_knowledge_placeholder(tmp_path: Path) -> None:
    (tmp_path / "predict_know.en.txt").write_text("{culture} {labels}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"missing required placeholders \['knowledge'\]"):
        prediction_template("cross-culture-know", "en", override_dir=tmp_path)


def test_missing_override_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        prediction_template("orig", "en", override_dir=tmp_path / "nope")


def test_undecodable_override_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "predict_orig.en.txt").write_bytes(b"\xff\xfe{culture}\x00\xff")
    with pytest.raises(ConfigError, match="UTF-8"):
        prediction_template("orig", "en", override_dir=tmp_path)


@pytest.mark.parametrize("language", ["en", "zh", "ar"])
def test_concept_extraction_prompt_in_each_language(language: str) -> None:
    template = concept_template(language)
    assert template.placeholders == {"max_concepts"}
    assert "8" in template.render(max_concepts=8)
    # the builders' VLM concept extractor loads it the same way
    assert load_prompt("concept_extraction", language, required=(), allowed=("max_concepts",)).id == template.id


def test_load_prompt_keeps_its_positional_signature(tmp_path: Path) -> None:
    assert load_prompt("judge", "en", ["concept", "culture", "rationales", "labels"], []).id.startswith("judge.en@")
    (tmp_path / "judge.en.txt").write_text("{concept} {culture} {rationales} {labels} (mine)\n", encoding="utf-8")
    mine = load_prompt("judge", "en", override_dir=tmp_path)
    assert mine.text.endswith("(mine)\n") and mine.id.startswith("judge.en@")


def test_format_labels_lists_every_label_with_its_translation() -> None:
    en = format_labels(SCHEME, "en").splitlines()
    zh = format_labels(SCHEME, "zh").splitlines()
    ar = format_labels(SCHEME, "ar").splitlines()
    assert en == [f"- {label}" for label in SCHEME.labels]
    assert zh[3] == "- sadness（悲伤）" and ar[3] == "- sadness (حزن)"
    custom = get_scheme("calm,tense")
    assert format_labels(custom, "zh") == "- calm\n- tense"  # no translation: the label alone


def test_culture_names_follow_the_prompt_language() -> None:
    assert culture_display_name("zh", "en") == "Chinese"
    assert culture_display_name("Chinese", "zh") == "中华"
    assert culture_display_name("ar", "ar") == "العربية"
    assert culture_display_name("SG", "en") == "Singapore"  # registry name when no localised one is listed
    with pytest.raises(ConfigError, match="unknown culture"):
        culture_display_name("atlantis", "en")
    values = prediction_values("ar", SCHEME, "zh", title=None)
    assert values["culture"] == "阿拉伯" and values["culture_id"] == "ar" and values["title"] == ""
