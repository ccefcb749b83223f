"""Label vocabularies per language and how schemes take them: coverage, sources, ties, the logged table."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.kb import EmotionScheme, get_scheme, load_scheme, scheme_from_labels
from culturekb.kb.schemes import attach_vocabularies
from culturekb.kb.vocab import (
    REQUIRED_LANGUAGES,
    concept_catalogue,
    load_vocabulary,
    match_concepts,
    normalise_form,
    vocabulary_languages,
)

BUILTIN = ("artemis9", "cedar14", "plutchik8", "ricevl14")


def test_every_required_language_ships_a_vocabulary_that_names_its_source() -> None:
    assert set(REQUIRED_LANGUAGES) <= set(vocabulary_languages())
    for lang in vocabulary_languages():
        vocab = load_vocabulary(lang)
        assert vocab.language == lang and vocab.name
        assert "unchecked by a native speaker" in vocab.source and vocab.native_checked is False
        for concept, forms in vocab.forms.items():
            assert forms and "*" not in forms[0], (lang, concept)  # the first form is shown in prompts


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_label_has_words_in_every_language(name: str) -> None:
    scheme = get_scheme(name)
    missing = [(lang, lab) for lang in REQUIRED_LANGUAGES for lab in scheme.labels
               if not scheme.vocabulary.get(lang, {}).get(lab)
               and not scheme.translations.get(lang, {}).get(lab)
               and not (lang == "en" and scheme.synonyms.get(lab))]
    assert not missing, missing


@pytest.mark.parametrize("name", BUILTIN)
def test_within_a_language_every_word_names_one_label(name: str) -> None:
    scheme = get_scheme(name)
    for lang in REQUIRED_LANGUAGES:
        owner: dict[str, str] = {}
        tables = [scheme.translations.get(lang, {}), scheme.vocabulary.get(lang, {})]
        if lang == "en":
            tables.append(scheme.synonyms)
        for table in tables:
            for label, words in table.items():
                for word in words:
                    key = normalise_form(word)
                    assert owner.setdefault(key, label) == label, (lang, word, owner[key], label)


@pytest.mark.parametrize(
    ("word", "label"),
    [("sad", "sadness"), ("sadness", "sadness"), ("triste", "sadness"), ("tristeza", "sadness"), ("悲伤", "sadness"),
     ("悲しい", "sadness"), ("उदास", "sadness"), ("उदासी", "sadness"), ("Traurigkeit", "sadness"),
     ("traurig", "sadness"), ("traurige", "sadness"), ("ሀዘን", "sadness"), ("huzuni", "sadness"),
     ("inasikitisha", "sadness"), ("грусть", "sadness"), ("슬픔", "sadness"), ("kesedihan", "sadness")],
)
def test_the_issue_examples_resolve_in_cedar14(word: str, label: str) -> None:
    assert get_scheme("cedar14").match(word) == label


def test_translate_uses_the_vocabulary_after_the_own_translations() -> None:
    a9 = get_scheme("artemis9")
    assert a9.translate("sadness", "zh") == "悲伤"  # the scheme's own
    assert a9.translate("sadness", "hi") == "उदासी" and a9.translate("sadness", "de") == "Traurigkeit"
    assert a9.translate("sadness", "en") == "sadness" and a9.translate("sadness", "xx") == "sadness"


def test_a_custom_label_set_is_tied_by_name_and_the_table_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    labels = ["joy", "sadness", "anger", "fear", "guilt", "neutral", "meh"]
    with caplog.at_level(logging.INFO, logger="culturekb.kb.schemes"):
        scheme = scheme_from_labels(labels, name="vocab-table-test")
        scheme_from_labels(labels, name="vocab-table-test")
    tables = [r for r in caplog.records if "tied to the built-in label vocabularies" in r.getMessage()]
    assert len(tables) == 1 and tables[0].levelno == logging.WARNING  # 'meh' has no vocabulary
    text = tables[0].getMessage()
    assert "guilt (name)" in text and "meh" in text and "no vocabulary" in text
    assert scheme.concepts == {lab: lab for lab in labels if lab != "meh"}
    assert scheme.match("حزن") == "sadness" and scheme.match("glücklich") == "joy"  # happiness words go to joy
    assert scheme.match("schuldig") == "guilt" and scheme.match("meh") == "meh"


def test_labels_are_not_tied_through_synonyms() -> None:
    assert match_concepts(["calm", "tense", "Sadness"]) == {"Sadness": ("sadness", "name")}


def test_a_scheme_file_can_tie_labels_carry_translations_or_opt_out(tmp_path: Path) -> None:
    path = tmp_path / "mood.json"
    raw = {"name": "mood", "labels": ["blue", "cheerful"], "concepts": {"blue": "sadness", "cheerful": "happiness"},
           "translations": {"de": {"blue": ["bedrückt"]}}}
    path.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    scheme = load_scheme(path)
    assert scheme.translate("blue", "de") == "bedrückt"  # the file's own translation comes first
    assert scheme.match("Traurigkeit") == "blue" and scheme.match("feliz") == "cheerful"
    off = tmp_path / "off.json"
    off.write_text(json.dumps({**raw, "vocabularies": False}, ensure_ascii=False), encoding="utf-8")
    assert load_scheme(off).vocabulary == {} and load_scheme(off).match("Traurigkeit") is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "b", "labels": ["x", "y"], "concepts": {"x": "sorrowz"}}), encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown concept 'sorrowz'"):
        load_scheme(bad)


def test_the_vocabulary_travels_with_the_scheme_dict() -> None:
    c14 = get_scheme("cedar14")
    again = EmotionScheme.from_dict(json.loads(json.dumps(c14.to_dict())))
    assert again == c14
    assert attach_vocabularies(again) is again  # already attached: nothing recomputed


def test_own_words_win_over_the_vocabulary() -> None:
    # artemis9 lists 开心 under amusement itself; the vocabulary's 开心 (happiness) does not move it
    assert get_scheme("artemis9").match("开心") == "amusement"
    assert get_scheme("cedar14").match("开心") == "happiness"


def test_concepts_cover_every_builtin_label() -> None:
    catalogue = concept_catalogue()
    for name in BUILTIN:
        assert set(get_scheme(name).labels) <= set(catalogue), name


def test_an_unknown_vocabulary_language_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no label vocabulary for language 'xx'"):
        load_vocabulary("xx")
