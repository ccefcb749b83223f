"""Issue 27 item 5: Korean and Thai text yields concepts (Korean: particles stripped from spaced words; Thai: the
pythainlp dictionary segmenter, no download), and the warning for a script without word lists names that script's
language, not the sample culture's. Japanese written in kana only is cut at particles; Khmer, Lao and Burmese
(no word lists, no segmenter) give character n-grams. The sentences in these tests were written for them (by the
author of the tests, not taken from a data set)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from culturekb.kb.schema import Sample
from culturekb.text import languages
from culturekb.text.concepts import TextConceptExtractor, guess_language
from culturekb.text.languages import language_rules, strip_suffixes, supported_languages

FIXTURE = Path(__file__).parents[1] / "fixtures" / "wisesight_th" / "wisesight_sample.jsonl"


def _concepts(culture: str, text: str) -> list[str]:
    return TextConceptExtractor().extract([Sample(id="1", culture=culture, text=text, label="joy")])[0]


def test_korean_text_yields_nouns_without_their_particles() -> None:
    got = _concepts("ko", "어제 바다에서 고양이가 아이들에게 물고기를 가져왔어요. 고양이는 정말 귀엽다.")
    assert {"바다", "고양이", "아이", "물고기"} <= set(got)
    assert not any(w.endswith(("어요", "다")) and w != "바다" for w in got)  # verb and adjective forms dropped


def test_korean_particles_are_stripped_only_when_two_syllables_remain() -> None:
    rules = language_rules("ko")
    assert strip_suffixes("사람들에게", rules) == "사람"
    assert strip_suffixes("나이", rules) == "나이"  # age, not 나 + subject particle
    assert strip_suffixes("고양이가", rules) == "고양이"


def test_thai_text_yields_words_from_the_dictionary_segmenter() -> None:
    got = _concepts("th", "วันนี้ฝนตกหนักมาก แมวของฉันกลัวฟ้าร้อง ร้านอาหารใกล้บ้านปิดแล้ว")
    assert {"แมว", "ฟ้าร้อง", "ร้านอาหาร", "บ้าน"} <= set(got)
    assert "มาก" not in got and "ของ" not in got  # stopwords


def test_most_real_thai_messages_yield_concepts() -> None:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    samples = [Sample(id=r["id"], culture=r["culture"], text=r["text"], label=r["label"]) for r in rows]
    found = TextConceptExtractor().extract(samples)
    assert sum(1 for cs in found if cs) >= 0.9 * len(samples)


def test_korean_and_thai_have_word_lists_and_their_scripts_are_read() -> None:
    assert {"ko", "th"} <= set(supported_languages())
    assert guess_language("고양이가 좋아요") == "ko"
    assert guess_language("แมวของฉัน") == "th"


def test_the_unsupported_script_warning_names_the_script_language_not_the_culture(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(languages, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="culturekb.text.languages"):
        assert guess_language("ქართული ენა ლამაზია", hint="zh") is None  # Georgian text in a zh sample
    text = caplog.text
    assert "no word lists for language 'ka' written in the georgian script" in text
    assert "give no text concepts" in text
    assert "no word lists for language 'zh'" not in text
    assert "culture whose language is 'zh'" in text


@pytest.mark.parametrize("texts, wanted", [
    (["きのうはうみでねこがさかなをたべました。", "ねこはとてもかわいいです。", "うみでねことあそびました。"],
     [{"きのう", "うみ", "ねこ", "さかな"}, {"ねこ"}, {"うみ", "ねこ"}]),
    (["あしたは　ともだちと　やまへ　いきます。", "ねこのタマが　いぬと　はしっている。"],
     [{"あした", "ともだち", "やま"}, {"ねこ", "タマ", "いぬ"}]),
])
def test_japanese_written_in_kana_only_yields_its_nouns(texts: list[str], wanted: list[set[str]]) -> None:
    got = [set(_concepts("ja", t)) for t in texts]
    assert got == wanted  # particles, adverbs (とても) and predicates (たべました, かわいいです) left out


def test_kanji_text_is_read_as_before_beside_kana_only_text() -> None:
    assert set(_concepts("ja", "猫が魚を食べた。")) == {"猫", "魚"}  # hiragana beside kanji stays grammar


@pytest.mark.parametrize("culture, texts, word", [
    ("km", ["ឆ្មាកំពុងដេកនៅលើតុ។", "ឆ្មារបស់ខ្ញុំចូលចិត្តត្រី។"], "ឆ្មា"),  # cat
    ("lo", ["ແມວນອນຢູ່ເທິງໂຕະ", "ແມວມັກກິນປາ"], "ແມວ"),
    ("mm", ["ကြောင်က စားပွဲပေါ်မှာ အိပ်နေတယ်။", "ကြောင်က ငါးကို ကြိုက်တယ်။"], "ကြောင်"),
])
def test_khmer_lao_and_burmese_give_character_ngrams_shared_across_texts(
        culture: str, texts: list[str], word: str, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(languages, "_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="culturekb.text.languages"):
        got = [_concepts(culture, t) for t in texts]
    assert all(word in g for g in got)
    script = {"km": "khmer", "lo": "lao", "mm": "myanmar"}[culture]
    assert f"written in the {script} script" in caplog.text and "character n-grams" in caplog.text
    assert "other script" not in caplog.text


def test_scripts_are_named_not_other() -> None:
    from culturekb.text.scripts import dominant_script

    assert [dominant_script(t) for t in ("ភ្នំពេញ", "ພາສາລາວ", "မြန်မာ", "ქართული", "Հայերեն")] == [
        "khmer", "lao", "myanmar", "georgian", "armenian"]


def test_script_ranges_are_sorted_and_disjoint() -> None:
    from culturekb.text.scripts import _SCRIPT_RANGES

    assert all(lo <= hi < nxt for (lo, hi, _), (nxt, _, _) in zip(_SCRIPT_RANGES, _SCRIPT_RANGES[1:], strict=False))
