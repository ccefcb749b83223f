"""Culture registry and label schemes: aliases, quadrants, synonyms, translations, user schemes, mappings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.kb import (
    Culture,
    CultureRegistry,
    EmotionScheme,
    get_scheme,
    list_schemes,
    load_scheme,
    map_distribution,
    resolve_culture,
    scheme_from_labels,
)

ARTEMIS9 = ("contentment", "awe", "amusement", "sadness", "fear", "excitement", "disgust", "anger", "something else")


# -- cultures --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "cid"),
    [("English", "en"), ("english", "en"), ("en", "en"), (" EN ", "en"), ("Chinese", "zh"), ("中文", "zh"),
     ("arabic", "ar"), ("العربية", "ar"), ("Singapore", "SG"), ("sg", "SG"), ("east timor", "TL")],
)
def test_culture_aliases(name: str, cid: str) -> None:
    assert resolve_culture(name) == cid


def test_unknown_culture_is_an_error_listing_known_ones() -> None:
    with pytest.raises(ConfigError) as e:
        resolve_culture("klingon")
    msg = str(e.value)
    assert "'klingon'" in msg and "en" in msg and "zh" in msg and "declare" in msg


def test_declared_culture_resolves_in_its_registry_only() -> None:
    reg = CultureRegistry.from_package()
    reg.declare(Culture(id="yo", name="Yoruba", language="yo", aliases=("yoruba", "yorùbá")))
    assert reg.resolve("Yorùbá").id == "yo"
    assert "yoruba" in reg and "Yoruba" in reg
    with pytest.raises(ConfigError):
        resolve_culture("yoruba")  # the packaged default registry is unchanged


def test_registry_western_flags() -> None:
    reg = CultureRegistry.from_package()
    assert reg.resolve("en").western is True
    assert reg.resolve("zh").western is False and reg.resolve("ar").western is False


# -- schemes ---------------------------------------------------------------------------------------------------
def test_builtin_schemes() -> None:
    assert set(list_schemes()) >= {"artemis9", "cedar14", "plutchik8"}
    a9 = get_scheme("artemis9")
    assert a9.labels == ARTEMIS9
    assert get_scheme(a9) is a9
    assert len(get_scheme("cedar14").labels) == 14
    assert len(get_scheme("plutchik8").labels) == 8
    with pytest.raises(ConfigError, match="unknown label scheme 'nope'"):
        get_scheme("nope")


def test_cedar14_quadrants_partition_the_labels() -> None:
    c14 = get_scheme("cedar14")
    assert sorted(c14.quadrants) == ["Q1", "Q2", "Q3", "Q4"]
    members = [lab for labs in c14.quadrants.values() for lab in labs]
    assert sorted(members) == sorted(c14.labels)  # every label in exactly one quadrant
    assert c14.quadrant_of("happiness") == "Q1"  # positive valence, high arousal
    assert c14.quadrant_of("anger") == "Q2"
    assert c14.quadrant_of("sadness") == "Q3"
    assert c14.quadrant_of("contentment") == "Q4"


def test_artemis9_has_no_quadrants() -> None:
    a9 = get_scheme("artemis9")
    assert a9.quadrants == {}
    assert a9.quadrant_of("awe") is None


def test_quadrant_with_unknown_label_is_rejected() -> None:
    with pytest.raises(ConfigError, match="quadrant Q1 names unknown labels"):
        EmotionScheme(name="x", labels=("a", "b"), quadrants={"Q1": ("a", "c")})


@pytest.mark.parametrize(
    ("scheme", "text", "label"),
    [
        ("artemis9", "Sad", "sadness"),
        ("artemis9", "in awe", "awe"),
        ("artemis9", "something-else", "something else"),
        ("artemis9", "SOMETHING_ELSE", "something else"),
        ("artemis9", "other", "something else"),
        ("artemis9", "悲伤", "sadness"),
        ("artemis9", "敬畏", "awe"),
        ("artemis9", "حزن", "sadness"),
        ("artemis9", "خوف", "fear"),
        ("cedar14", "joyful", "happiness"),
        ("cedar14", "同情", "sympathy"),
        ("cedar14", "ألم", "pain"),
    ],
)
def test_synonyms_and_translations_resolve(scheme: str, text: str, label: str) -> None:
    s = get_scheme(scheme)
    assert s.match(text) == label
    assert s.canonical(text) == label


def test_unknown_label_lists_the_scheme() -> None:
    a9 = get_scheme("artemis9")
    assert a9.match("bliss") is None
    with pytest.raises(DataError, match=r"unknown label 'bliss' for scheme 'artemis9'.*contentment"):
        a9.canonical("bliss")


def test_translate_and_surface_forms() -> None:
    a9 = get_scheme("artemis9")
    assert a9.translate("sadness", "zh") == "悲伤"
    assert a9.translate("sadness", "xx") == "sadness"
    zh_forms = a9.surface_forms("zh")
    assert zh_forms["悲伤"] == "sadness" and "حزن" not in zh_forms


def test_user_scheme_from_text_file(tmp_path: Path) -> None:
    p = tmp_path / "mood.txt"
    p.write_text("# my labels\npositive\nnegative\n\nneutral\n", encoding="utf-8")
    s = get_scheme(str(p))
    assert s.name == "mood" and s.labels == ("positive", "negative", "neutral")
    assert load_scheme(p).labels == s.labels


def test_user_scheme_from_json_file(tmp_path: Path) -> None:
    p = tmp_path / "polarity.json"
    raw = {"name": "polarity", "labels": ["pos", "neg"], "synonyms": {"pos": ["good"]},
           "translations": {"zh": {"neg": ["消极"]}}, "mappings": {"artemis9": {"pos": {"awe": 0.5, "contentment": 0.5},
                                                                                  "neg": {"sadness": 1.0}}}}
    p.write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    s = load_scheme(p)
    assert s.canonical("Good") == "pos" and s.canonical("消极") == "neg"
    out = map_distribution({"pos": 0.5, "neg": 0.5}, s, get_scheme("artemis9"))
    assert out["awe"] == pytest.approx(0.25) and out["sadness"] == pytest.approx(0.5)


def test_user_scheme_from_list() -> None:
    s = scheme_from_labels(["yes", " no ", ""])
    assert s.labels == ("yes", "no")
    assert get_scheme("red,green,blue").labels == ("red", "green", "blue")
    with pytest.raises(ConfigError, match="at least two labels"):
        scheme_from_labels(["only"])
    with pytest.raises(ConfigError, match="repeats a label"):
        EmotionScheme(name="d", labels=("a", "a"))


def test_bad_scheme_files(tmp_path: Path) -> None:
    bad_sum = tmp_path / "s.json"
    bad_sum.write_text(json.dumps({"name": "s", "labels": ["a", "b"], "mappings": {"t": {"a": {"x": 0.7}}}}))
    with pytest.raises(ConfigError, match="must sum to 1"):
        load_scheme(bad_sum)
    no_labels = tmp_path / "n.json"
    no_labels.write_text(json.dumps({"name": "n"}))
    with pytest.raises(ConfigError, match="needs 'name' and 'labels'"):
        load_scheme(no_labels)
    bad_tr = tmp_path / "t.json"
    bad_tr.write_text(json.dumps({"name": "t", "labels": ["a", "b"], "translations": {"zh": {"c": ["丙"]}}}))
    with pytest.raises(ConfigError, match="translations"):
        load_scheme(bad_tr)
    with pytest.raises(ConfigError, match="does not exist"):
        load_scheme(tmp_path / "missing.json")


@pytest.mark.parametrize("target", ["artemis9", "cedar14"])
def test_plutchik8_mappings_sum_to_one(target: str) -> None:
    p8, tgt = get_scheme("plutchik8"), get_scheme(target)
    table = p8.mapping_to(target)
    assert set(table) == set(p8.labels)
    for src, weights in table.items():
        assert sum(weights.values()) == pytest.approx(1.0), src
        assert set(weights) <= set(tgt.labels), src


def test_map_distribution_plutchik_to_artemis() -> None:
    p8, a9 = get_scheme("plutchik8"), get_scheme("artemis9")
    out = map_distribution({"joy": 1.0}, p8, a9)
    assert list(out) == list(a9.labels)
    assert out["contentment"] == pytest.approx(0.4)
    assert out["amusement"] == pytest.approx(0.3)
    assert out["excitement"] == pytest.approx(0.3)
    mixed = map_distribution({"fear": 0.25, "trust": 0.5, "surprise": 0.25}, p8, a9)
    assert sum(mixed.values()) == pytest.approx(1.0)
    assert mixed["fear"] == pytest.approx(0.25)
    assert mixed["contentment"] == pytest.approx(0.35)  # trust 0.5 * 0.7
    assert mixed["awe"] == pytest.approx(0.5 * 0.3 + 0.25 * 0.6)


def test_missing_mapping_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="no mapping from scheme 'artemis9' to 'cedar14'"):
        map_distribution({"awe": 1.0}, get_scheme("artemis9"), get_scheme("cedar14"))


def test_scheme_dict_roundtrip() -> None:
    c14 = get_scheme("cedar14")
    again = EmotionScheme.from_dict(c14.to_dict())
    assert again.labels == c14.labels and again.quadrants == c14.quadrants
    assert again.canonical("尴尬") == "embarrassment"
