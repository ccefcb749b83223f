"""The multilingual text layer: word lists as data, scripts, tokenisation, CJK segmentation, the offline extractor in
every Cedar language, the one stimulus-field definition on both sides, and normalisation across scripts."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from culturekb.errors import ConfigError
from culturekb.kb.schema import Sample
from culturekb.text.cjk import segment_cjk
from culturekb.text.concepts import (
    BUILD_FIELDS,
    STIMULUS_FIELDS,
    TextConceptExtractor,
    guess_language,
    mentions,
)
from culturekb.text.languages import (
    dominant_script,
    emotion_words,
    is_emotion_word,
    language_rules,
    supported_languages,
    word_tokens,
)
from culturekb.text.normalise import normalise_concept

CEDAR = ("en", "zh", "ar", "hi", "ja", "es", "sw")

# (culture, stimulus text, concepts that must be found, words that must not be concepts: emotions, judgements)
STIMULI = [
    ("en", "During the festival we watched the full moon and ate sweet cakes; I felt so happy.",
     {"full moon", "festival", "cake"}, {"happy", "felt"}),
    ("zh", "中秋节的晚上，我们一家人在院子里看着天上的月亮，吃着月饼，红灯笼挂在门口，大家都很快乐。",
     {"中秋节", "月亮", "月饼", "红灯笼", "院子"}, {"快乐", "大家", "我们"}),
    ("ar", "في ليلة العيد جلست العائلة في الحديقة تنظر إلى القمر والنجوم، وكان الجميع سعداء جدا.",
     {"العيد", "العائلة", "الحديقة", "القمر", "النجوم"}, {"سعداء", "في", "إلى"}),
    ("hi", "दिवाली की रात हमने घर के दरवाज़े पर दीये जलाए और आसमान में चाँद को देखा। सब बहुत खुश थे।",
     {"दिवाली", "रात", "दीये", "आसमान", "चाँद"}, {"खुश", "की", "में"}),
    ("ja", "お月見の夜、縁側で団子を食べながら満月を見ました。ドラゴンの提灯がとても嬉しかった。",
     {"月見", "縁側", "団子", "満月", "ドラゴン", "提灯"}, {"嬉しかった", "嬉"}),
    ("es", "En la noche de los muertos, la familia puso flores de cempasúchil y velas en el altar; estábamos tristes.",
     {"noche", "muertos", "familia", "cempasúchil", "velas", "altar"}, {"tristes", "la", "en"}),
    ("sw", "Usiku wa sikukuu familia ilikaa bustanini ikitazama mwezi na nyota; kila mtu alikuwa na furaha.",
     {"usiku", "sikukuu", "familia", "mwezi", "nyota"}, {"furaha", "na", "wa"}),
    ("de", "Am Heiligabend saß die Familie unter dem Weihnachtsbaum, draußen fiel Schnee. Wir waren glücklich.",
     {"heiligabend", "familie", "weihnachtsbaum", "schnee"}, {"glücklich", "die", "dem", "unter"}),
    ("ru", "В новогоднюю ночь вся семья собралась за столом, на ёлке горели огни, и всем было радостно.",
     {"ночь", "семья", "ёлке", "огни"}, {"радостно", "за", "на"}),
]


@pytest.fixture(scope="module")
def extractor() -> TextConceptExtractor:
    return TextConceptExtractor(max_concepts=20)


def test_every_cedar_language_has_word_lists() -> None:
    assert set(CEDAR) <= set(supported_languages())
    for lang in CEDAR:
        rules = language_rules(lang)
        assert rules.stopwords, lang
        assert rules.code == lang and rules.sha
    assert language_rules("pt-BR").code == "pt" and language_rules("zh_Hant").code == "zh"


def test_a_language_without_word_lists_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"no word lists for language 'xx'.*culturekb/data/languages/xx.txt"):
        language_rules("xx")


@pytest.mark.parametrize(("culture", "text", "found", "never"), STIMULI, ids=[s[0] for s in STIMULI])
def test_extractor_in_each_language(extractor: TextConceptExtractor, culture: str, text: str, found: set[str],
                                    never: set[str]) -> None:
    concepts = extractor.extract([Sample(id="s", culture=culture, text=text)])[0]
    assert found <= set(concepts), (found - set(concepts), concepts)
    assert not never & set(concepts), never & set(concepts)


def test_emotion_words_of_every_language_come_from_the_vocabularies() -> None:
    for lang, word in (("zh", "悲伤"), ("ar", "حزن"), ("hi", "उदासी"), ("ja", "悲しみ"), ("es", "tristeza"),
                       ("sw", "huzuni"), ("de", "traurigkeit")):
        assert is_emotion_word(word, lang), (lang, word)
    assert is_emotion_word("traurige", "de")  # a stem ("traurig*") matches its inflections
    assert not is_emotion_word("schnee", "de") and not is_emotion_word("寺庙", "zh")  # a temple is no emotion
    exact, _, _ = emotion_words("zh")
    assert "悲伤" in exact


def test_tokens_keep_combining_marks() -> None:
    # Python's \w splits Devanagari at its vowel signs and vowelled Arabic at its harakat
    assert word_tokens("चाँद पूर्णिमा का।") == ["चाँद", "पूर्णिमा", "का"]
    assert word_tokens("القَمَر، والنجوم") == ["القَمَر", "والنجوم"]
    assert word_tokens("Ｆｕｌｌ Moon's") == ["full", "moon", "s"]


@pytest.mark.parametrize(
    ("text", "script"),
    [("full moon", "latin"), ("月亮", "han"), ("ドラゴンの", "kana"), ("القمر", "arabic"), ("चाँद", "devanagari"),
     ("луна", "cyrillic"), ("ጨረቃ", "ethiopic"), ("123 !", None)],
)
def test_dominant_script(text: str, script: str | None) -> None:
    assert dominant_script(text) == script


def test_chinese_segmentation_cuts_at_function_characters_and_stopwords() -> None:
    assert segment_cjk("一个老人坐在河边，远处的山上有一座寺庙", "zh") == ["老人", "河边", "远处", "山上", "寺庙"]
    # the packaged word list cuts a long run into its words (it gave the cross-word bigrams 华人 民共 和国 before)
    assert segment_cjk("中华人民共和国", "zh") == ["中华", "人民", "共和国"]
    # a run of characters the word list does not know gives its bigrams
    assert segment_cjk("龘靐齉齾爩", "zh") == ["龘靐", "靐齉", "齉齾", "齾爩"]


def test_japanese_segmentation_keeps_kanji_and_katakana_runs() -> None:
    words = segment_cjk("月が綺麗で、ドラゴンを見る", "ja")
    assert "月" in words and "ドラゴン" in words
    assert "見" not in words  # a kanji stem with its okurigana is a verb
    assert "綺麗" not in words  # a judgement


def test_auto_language_reads_each_text_in_its_own_language() -> None:
    # an English WikiArt title in a Chinese-culture sample is read as English, the Chinese explanation as Chinese
    s = Sample(id="a", culture="zh", title="ogata-gekko_crane-and-full-moon-1896", explanations=["满月下的白鹤很宁静"])
    concepts = TextConceptExtractor(fields=BUILD_FIELDS).extract([s])[0]
    assert {"full moon", "crane", "满月", "白鹤"} <= set(concepts)
    # Latin script: the culture's own language when its stopwords dominate, else English
    assert guess_language("la luna sobre el mar", "es") == "es"
    assert guess_language("the moon over the sea", "es") == "en"
    assert guess_language("月亮", None) == "zh" and guess_language("月見", "ja") == "ja"
    assert guess_language("12 34", "de") is None


def test_unsupported_language_gives_no_concepts_and_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    ex = TextConceptExtractor()
    samples = [Sample(id=f"a{i}", culture="am", text="ጨረቃዋ በሰማይ ላይ ታበራለች") for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="culturekb.text.languages"):
        assert ex.extract(samples) == [[], [], []]
    warnings = [r for r in caplog.records if "no word lists for language 'am'" in r.getMessage()]
    assert len(warnings) <= 1  # once per process (another test may have warned already)


def test_explicit_language_applies_to_every_text() -> None:
    s = Sample(id="a", culture="en", text="la luna sobre el mar")
    assert TextConceptExtractor(language="es").extract([s])[0] == ["luna", "mar"]
    assert "la" not in TextConceptExtractor(language="es").extract([s])[0]


def test_english_output_is_unchanged_by_auto_language() -> None:
    s = Sample(id="t", culture="en", title="ogata-gekko_crane-and-full-moon-1896",
               text="She wears red shoes near the harbour wall. Another harbour wall.")
    assert TextConceptExtractor().extract([s]) == TextConceptExtractor(language="en").extract([s])
    assert TextConceptExtractor(fields=("title",)).extract([s])[0] == ["full moon", "crane", "moon"]


def test_ids_name_the_language_and_the_word_lists() -> None:
    assert TextConceptExtractor().id.startswith("text:auto:title+text+question:")
    assert TextConceptExtractor(language="zh").id != TextConceptExtractor(language="es").id


# -------------------------------------------------------------------------------------- one stimulus-field definition
def test_stimulus_fields_are_the_non_leaky_fields() -> None:
    assert STIMULUS_FIELDS == ("title", "text", "question")
    assert "explanations" not in STIMULUS_FIELDS and set(STIMULUS_FIELDS) < set(BUILD_FIELDS)


def test_text_stimulus_yields_test_time_concepts_on_every_path() -> None:
    """A text-only sample (no title) gets concepts from the augmenter, the harness injector's extractor and the
    cue path alike, and they are the build extractor's concepts of the same text minus the explanations."""
    from culturekb.evals._cues import item_concepts
    from culturekb.inference.augmenter import Augmenter

    sample = Sample(id="n", culture="zh", text="中秋节的晚上，我们在院子里看着天上的月亮。", question="他们感觉如何？",
                    explanations=["团圆的快乐"])
    build = TextConceptExtractor(fields=BUILD_FIELDS).extract([sample.model_copy(update={"explanations": []})])[0]
    augmenter = Augmenter.__new__(Augmenter)  # the concept path needs no index: only the KB's scheme (none here)
    augmenter.concept_extractor = None
    augmenter._text_extractor = None
    augmenter.retriever = SimpleNamespace(kb=SimpleNamespace(scheme=None))  # type: ignore[assignment]
    assert augmenter.concepts_for([sample])[0] == build
    assert augmenter.text_concepts([sample])[0] == build
    assert item_concepts([sample])[0] == build
    assert "月亮" in build and "团圆" not in build  # an explanation never reaches a test-time concept


# ---------------------------------------------------------------------------------------------------- normalisation
@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("चाँद", "en", "चाँद"),  # English default, Devanagari text: the vowel sign stays
        ("月 亮", "en", "月亮"),
        ("القَمَر", "ar", "القمر"),  # harakat removed
        ("والقمر", "ar", "القمر"),  # conjunction + article -> article
        ("بالقمر", "en", "القمر"),
        ("للقمر", "ar", "القمر"),
        ("بالون", "ar", "بالون"),  # too short to hold a fused article
        ("The Red Dresses", "en", "red dress"),
    ],
)
def test_normalisation_by_script(text: str, language: str, expected: str) -> None:
    assert normalise_concept(text, language) == expected
    assert normalise_concept(expected, language) == expected  # idempotent


def test_mentions_compares_normalised_words() -> None:
    assert mentions("She wore red dresses.", "red dress", "en")
    assert not mentions("A red wine and a dress.", "red dress", "en")
    assert mentions("我们看着天上的月亮。", "月亮") and not mentions("太阳", "月亮")
    assert mentions("दिवाली की रात चाँद निकला", "चाँद", "hi")
    assert mentions("Wir sahen den Mond.", "mond", "de")
    assert not mentions("", "moon") and not mentions("moon", "")
