from __future__ import annotations

import pytest

from culturekb.text.normalise import MAX_CONCEPT_CHARS, english_stopwords, normalise_concept, singularise


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("trees", "tree"),
        ("The Trees", "tree"),
        ("leaves", "leaf"),
        ("churches", "church"),
        ("glass", "glass"),
        ("dress", "dress"),
        ("people", "people"),
        ("children", "child"),
        ("women", "woman"),
        ("wolves", "wolf"),
        ("knives", "knife"),
        ("waves", "wave"),
        ("houses", "house"),
        ("horses", "horse"),
        ("roses", "rose"),
        ("boxes", "box"),
        ("bushes", "bush"),
        ("glasses", "glass"),
        ("princesses", "princess"),
        ("berries", "berry"),
        ("skies", "sky"),
        ("cities", "city"),
        ("flies", "fly"),
        ("ties", "tie"),
        ("potatoes", "potato"),
        ("shoes", "shoe"),
        ("photos", "photo"),
        ("boys", "boy"),
        ("mountains", "mountain"),
        ("cactus", "cactus"),
        ("bus", "bus"),
        ("buses", "bus"),
        ("canvas", "canvas"),
        ("series", "series"),
        ("sheep", "sheep"),
        ("clothes", "clothes"),
        ("iris", "iris"),
        ("Venus", "venus"),
        ("physics", "physics"),
        ("gentlemen", "gentleman"),
        ("fishermen", "fisherman"),
        ("specimen", "specimen"),
    ],
)
def test_english_words(text: str, expected: str) -> None:
    assert normalise_concept(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Red Dresses", "red dress"),
        ("  full   MOONS!! ", "full moon"),
        ("a crane", "crane"),
        ("an old man", "old man"),
        ("these pine trees", "pine tree"),
        ("bamboo-grove", "bamboo grove"),
        ("bamboo_grove", "bamboo grove"),
        ("man's hat", "man hat"),
        ("St. Peter's Basilica", "st peter basilica"),
        ("“lanterns”", "lantern"),
        ("dresses of silk", "dresses of silk"),
        ("Ｆｕｌｌ ｍｏｏｎ", "full moon"),  # full-width letters (NFKC)
        ("3 apples", "3 apple"),
    ],
)
def test_english_phrases(text: str, expected: str) -> None:
    assert normalise_concept(text) == expected


@pytest.mark.parametrize("text", ["", "   ", "the", "a an the", "of the", "it is", "!!!", "1920", "and then", "x" * 70])
def test_not_a_concept(text: str) -> None:
    assert normalise_concept(text) is None


def test_length_limit_applies_to_the_normalised_form() -> None:
    ok = "the " + "a" * MAX_CONCEPT_CHARS
    assert normalise_concept(ok) == "a" * MAX_CONCEPT_CHARS
    assert normalise_concept("a" * (MAX_CONCEPT_CHARS + 1)) is None


def test_non_string_is_not_a_concept() -> None:
    assert normalise_concept(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("满 月。", "zh", "满月"),
        (" 竹林，", "zh", "竹林"),
        ("「鶴」", "ja", "鶴"),
        ("القمر  المكتمل!", "ar", "القمر المكتمل"),
        ("، النخيل .", "ar", "النخيل"),
        ("Los Árboles", "es", "los árboles"),  # no English rules for other languages
        ("。！", "zh", None),
        ("", "zh", None),
        ("满" * 65, "zh", None),
        ("trees", "en-US", "tree"),
    ],
)
def test_other_languages(text: str, language: str, expected: str | None) -> None:
    assert normalise_concept(text, language) == expected


def test_idempotent() -> None:
    for text in ["The Red Dresses", "leaves", "full moons", "glass", "people", "churches", "满 月"]:
        lang = "zh" if "满" in text else "en"
        once = normalise_concept(text, lang)
        assert once is not None
        assert normalise_concept(once, lang) == once


def test_singularise_only_touches_the_last_word() -> None:
    assert normalise_concept("trees branches") == "trees branch"
    assert singularise("glasses") == "glass"
    assert singularise("cats") == "cat"
    assert singularise("as") == "as"


def test_stopwords_loaded_from_package_data() -> None:
    stop = english_stopwords()
    assert {"the", "and", "of", "with"} <= stop
    assert "tree" not in stop
