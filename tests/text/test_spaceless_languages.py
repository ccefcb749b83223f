"""Issue 27 item 5: Korean and Thai text yields concepts (Korean: particles stripped from spaced words; Thai: the
pythainlp dictionary segmenter, no download), and the warning for a script without word lists names that script's
language, not the sample culture's."""

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
    assert "no word lists for any language written in the other script" in text
    assert "no word lists for language 'zh'" not in text
    assert "culture whose language is 'zh'" in text
