"""Concepts that carry no information never become knowledge: instruction words, function words and expressions,
emotion words (the schemes', the vocabularies' and their inflections), people's names and Chinese cross-word
fragments are dropped, each with its reason, and what should stay stays."""

from __future__ import annotations

import pytest

from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme
from culturekb.text.cjk import segment_cjk_detailed
from culturekb.text.concepts import BUILD_FIELDS, STIMULUS_FIELDS, TextConceptExtractor
from culturekb.text.drops import DROP_REASONS, Extraction, summarise_drops
from culturekb.text.languages import (
    instruction_languages,
    instruction_list,
    instruction_words,
    language_rules,
    supported_languages,
)
from culturekb.text.lexicon import load_lexicon
from culturekb.text.names import artist_tokens


@pytest.fixture(scope="module")
def extractor() -> TextConceptExtractor:
    return TextConceptExtractor(fields=BUILD_FIELDS)


def _run(ex: TextConceptExtractor, text: str, culture: str = "en", **fields: object) -> Extraction:
    return ex.extract_detailed([Sample(id="s", culture=culture, text=text, **fields)])[0]  # type: ignore[arg-type]


# -- names ---------------------------------------------------------------------------------------------------
def test_van_gogh_is_a_name_and_sunflowers_a_concept(extractor: TextConceptExtractor) -> None:
    out = _run(extractor, "Van Gogh's sunflowers glow in the vase.")
    assert "sunflower" in out.concepts and "vase" in out.concepts
    assert not {"van", "gogh", "van gogh"} & set(out.concepts)
    assert set(out.dropped["name"]) == {"van", "gogh"}


def test_the_paintings_artist_is_dropped_from_titles_and_explanations(extractor: TextConceptExtractor) -> None:
    sample = Sample(id="a", culture="en", title="sunflowers", metadata={"artist": "vincent van gogh"},
                    explanations=["gogh painted these sunflowers in a vase", "the yellow of Vincent is bright"])
    out = extractor.extract_detailed([sample])[0]
    assert {"sunflower", "vase", "yellow"} <= set(out.concepts)
    assert not {"gogh", "vincent"} & set(out.concepts)
    assert {"gogh", "vincent"} <= set(out.dropped["name"])
    # a raw WikiArt slug names its artist too
    assert artist_tokens(Sample(id="b", culture="en", title="claude-monet_water-lilies-1916")) == {"claude", "monet"}
    slug = extractor.extract([Sample(id="b", culture="en", title="claude-monet_water-lilies-1916",
                                     explanations=["Monet's water lilies"])])[0]
    assert "lily" in slug and "monet" not in slug and "claude" not in slug


def test_capitalised_unknown_words_are_names_but_not_at_sentence_start_or_after_an_article(
        extractor: TextConceptExtractor) -> None:
    out = _run(extractor, "We walked through the City at night with Maria and the Dog. Trees lined the road.")
    assert {"city", "night", "dog", "tree", "road"} <= set(out.concepts)
    assert out.dropped["name"] == ["maria"]
    # religious figures, peoples and places listed as proper concepts stay concepts
    assert {"christ", "paris"} <= set(_run(extractor, "A painting of Christ in Paris.").concepts)
    # Title Case text is left alone
    assert {"old man", "sea", "full moon"} <= set(_run(extractor, "The Old Man And The Sea Under A Full Moon").concepts)
    # a title before a capitalised word
    assert "smith" in _run(extractor, "A portrait of Mr. Smith by the sea.").dropped["name"]


def test_german_nouns_are_capitalised_and_stay_concepts(extractor: TextConceptExtractor) -> None:
    out = _run(extractor, "Der Hund spielt mit der Katze im Garten, die Kinder rufen.", "de")
    assert {"hund", "katze", "garten", "kinder"} <= set(out.concepts)
    assert "name" not in out.dropped
    # but a name particle before a capitalised word still marks a name, in German text as in English
    out = _run(extractor, "Die Sonnenblumen von van Gogh im Museum.", "de")
    assert {"sonnenblumen", "museum"} <= set(out.concepts) and "gogh" not in out.concepts


def test_spanish_takes_only_two_capitalised_words_in_a_row_as_a_name(extractor: TextConceptExtractor) -> None:
    out = _run(extractor, "Fuimos al mercado con Juanito y vimos a Álvaro Uribe en la plaza.", "es")
    assert {"mercado", "plaza"} <= set(out.concepts)
    assert set(out.dropped["name"]) == {"álvaro", "uribe"}
    assert "juanito" in out.concepts  # one capitalised word alone: the Spanish word lists are too small to judge


def test_a_category_schemes_kb_keeps_names_as_concepts() -> None:
    # ricevl14 has "notable figures": a person's name is the knowledge there (the RICE-VL cue runner passes it)
    text = 'Which tradition does "Bahram Chubina Slays the Lion-Ape" belong to?'
    assert "bahram" not in TextConceptExtractor().extract([Sample(id="q", culture="en", question=text)])[0]
    kept = TextConceptExtractor(scheme="ricevl14").extract([Sample(id="q", culture="en", question=text)])[0]
    assert {"bahram", "chubina"} <= set(kept)
    assert TextConceptExtractor(scheme="ricevl14", names=True).id != TextConceptExtractor(scheme="ricevl14").id


# -- instruction words ------------------------------------------------------------------------------------------
def test_instruction_words_are_never_concepts_at_test_time() -> None:
    ex = TextConceptExtractor(fields=STIMULUS_FIELDS)  # what the augmenter, the adapters and the cue blocks read
    harness = Sample(id="q", culture="en", text="A red lantern hangs over the door.",
                     question="Which emotion does this picture evoke? Choose one option and answer with one word "
                              "about the culture.")
    out = ex.extract_detailed([harness])[0]
    assert {"red lantern", "lantern", "door"} <= set(out.concepts)
    assert not {"answer", "option", "word", "culture", "picture", "emotion", "choose"} & set(out.concepts)
    assert {"answer", "option", "word", "culture", "choose"} <= set(out.dropped["instruction"])
    zh = Sample(id="z", culture="zh", text="门上挂着红灯笼", question="这幅画唤起了哪种情绪？请选择一个选项回答问题。")
    out = ex.extract_detailed([zh])[0]
    assert {"红灯笼", "灯笼"} <= set(out.concepts)
    assert not {"选项", "回答", "问题", "情绪", "选择"} & set(out.concepts)
    assert {"选项", "回答", "问题"} <= set(out.dropped["instruction"])
    es = _run(ex, "Elige una opción y responde con una palabra: la luna sobre el mar.", "es")
    assert {"luna", "mar"} <= set(es.concepts) and not {"opción", "palabra"} & set(es.concepts)


def test_every_prompt_language_has_an_instruction_list_that_says_where_it_came_from() -> None:
    required = {"en", "zh", "ar", "es", "hi", "ja", "sw", "de", "ru", "fr", "pt"}
    assert required <= set(instruction_languages())
    for lang in instruction_languages():
        found = instruction_list(lang)
        assert found is not None and found.words and found.source, lang
        assert lang in supported_languages(), lang
        if lang != "en":
            assert found.native_checked is False, f"{lang}: set native_checked only after a native speaker's review"
    assert {"answer", "option", "culture", "letter"} <= instruction_words("en")
    assert instruction_words("xx") == frozenset()


# -- function words and expressions -----------------------------------------------------------------------------
def test_function_words_and_expressions_are_dropped(extractor: TextConceptExtractor) -> None:
    out = _run(extractor, "There is nothing left on the table, no matter what the old man says, and a kite "
                          "hangs in the air.")
    assert {"table", "old man", "kite"} <= set(out.concepts)
    assert not {"left", "matter", "air"} & set(out.concepts)
    assert {"no matter", "in the air", "left"} <= set(out.dropped["function"])
    # the words of an expression are concepts elsewhere
    assert "air" in _run(extractor, "Fresh air over the sea.").concepts
    # other languages: adverbs, modal forms, interjections and placeholders
    de = _run(extractor, "Ich hätte vielleicht schon mal gerne einen Hund.", "de")
    assert de.concepts == ["hund"]
    assert {"vielleicht", "schon", "mal", "gerne", "hätte"} <= set(de.dropped["function"])
    es = _run(extractor, "jajaja @username el perro es genial, wow", "es")
    assert es.concepts == ["perro"]
    assert {"jajaja", "username", "wow"} <= set(es.dropped["function"])


# -- emotion words --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("culture", "text", "emotion", "kept"), [
    ("en", "She was so sad by the river.", "sad", "river"),
    ("de", "Er war traurig am Fluss.", "traurig", "fluss"),
    ("de", "Die traurigen Kinder am Fluss.", "traurigen", "fluss"),
    ("es", "Estaba muy triste junto al río.", "triste", "río"),
    ("ru", "Я боюсь темноты в лесу.", "боюсь", "лесу"),
    ("es", "Amo las canciones de mi abuela.", "amo", "abuela"),
])
def test_emotion_words_and_their_inflections_never_name_a_label(extractor: TextConceptExtractor, culture: str,
                                                                text: str, emotion: str, kept: str) -> None:
    out = _run(extractor, text, culture)
    assert kept in out.concepts and emotion not in out.concepts, out
    assert emotion in out.dropped["emotion"]


def test_the_build_schemes_own_label_words_are_dropped_only_for_an_emotion_scheme() -> None:
    scheme = EmotionScheme.from_dict({"name": "longing", "labels": ["joy", "sadness", "saudade"],
                                      "synonyms": {"saudade": ["saudade", "saudades"]}})
    text = "The saudade of the harbour."
    assert "saudade" in _run(TextConceptExtractor(), text).concepts
    with_scheme = TextConceptExtractor(scheme=scheme)
    out = _run(with_scheme, text)
    assert "saudade" not in out.concepts and "saudade" in out.dropped["emotion"]
    assert with_scheme.id != TextConceptExtractor().id  # the build's cache sees the scheme
    # a category scheme's labels name real concepts
    assert "food" in _run(TextConceptExtractor(scheme="ricevl14"), "Food at the festival.").concepts


# -- Chinese ----------------------------------------------------------------------------------------------------
def test_chinese_pieces_are_cut_by_the_word_list_and_fragments_recorded() -> None:
    seg = segment_cjk_detailed("中低风险地区的本地人挂着红灯笼", "zh")
    assert {"风险", "地区", "本地人", "红灯笼", "灯笼"} <= set(seg.words)
    assert not {"低风", "险地"} & set(seg.words)
    assert {"低风", "险地"} <= set(seg.fragments)
    # words the list lacks stay whole, and a function character ends them
    seg = segment_cjk_detailed("很多人说新冠", "zh")
    assert "新冠" in seg.words and "多人" not in seg.words
    assert language_rules("zh").lexicon == "zh"


def test_the_word_list_segments_by_word_probability() -> None:
    lex = load_lexicon("zh")
    assert lex.segment("中华人民共和国") == ["中华", "人民", "共和国"]
    assert "风险" in lex and "低风" not in lex
    words, unknown = lex.words("龘靐")
    assert words == unknown == ["龘靐"]


# -- the record -------------------------------------------------------------------------------------------------
def test_drops_are_summarised_per_culture_and_reason() -> None:
    samples = [Sample(id=str(i), culture=c) for i, c in enumerate(["en", "en", "de"])]
    extractions = [Extraction(["moon"], {"name": ["gogh"], "function": ["left"]}),
                   Extraction(["sun"], {"name": ["gogh", "monet"]}),
                   Extraction(["mond"], {"emotion": ["traurig"]})]
    summary = summarise_drops(samples, extractions, top=1)
    assert summary["reasons"] == DROP_REASONS
    assert summary["per_culture"]["en"]["name"] == {"count": 3, "distinct": 2, "top": [["gogh", 2]]}
    assert list(summary["per_culture"]["en"]) == ["function", "name"]  # the legend's order
    assert summary["totals"] == {"name": 3, "function": 1, "emotion": 1}
    assert Extraction.from_json(extractions[0].as_json()) == extractions[0]
