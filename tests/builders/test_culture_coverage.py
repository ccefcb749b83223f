"""Issue 27 item 5: a build where a culture yields no tuple warns with the reason; one where no culture yields
any stops with a DataError (exit 2 from the CLI)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pytest

from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.errors import DataError
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import get_scheme
from culturekb.text.concepts import TextConceptExtractor

SCHEME = get_scheme("artemis9")


class HashEmbedder:
    id = "test:hash"
    dim = 16

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t:
                out[i, ord(ch) % self.dim] += 1.0
        return out + 1e-3


def _components() -> BuildComponents:
    emb = HashEmbedder()
    return BuildComponents(TextConceptExtractor(), ExtractiveRationaleGenerator(emb),
                           [LexiconJudge(SCHEME), PrototypeJudge(emb, SCHEME)])


ENGLISH = [("The old church bell rang over the quiet village.", "contentment"),
           ("A church choir sang in the village at dawn.", "contentment"),
           ("The village church burned down in the storm.", "sadness")]
GEORGIAN = [("ძველი ეკლესიის ზარი სოფელში რეკავდა.", "contentment"),
            ("ეკლესიის გუნდი სოფელში მღეროდა.", "contentment")]  # a script without word lists


def _samples(rows: list[tuple[str, str]], culture: str) -> list[Sample]:
    return [Sample(id=f"{culture}{i}", culture=culture, text=t, label=lab, split="train")
            for i, (t, lab) in enumerate(rows)]


def test_a_culture_without_tuples_is_named_with_the_reason(caplog: pytest.LogCaptureFixture) -> None:
    samples = _samples(ENGLISH, "en") + _samples(GEORGIAN, "ka")
    with caplog.at_level(logging.WARNING):
        result = build_kb(samples, BuildConfig(min_support=2), components=_components(), progress=False)
    assert {t.culture for t in result.kb.tuples} == {"en"}
    why = result.report["cultures_without_tuples"]
    assert set(why) == {"ka"} and "no word lists" in why["ka"]
    assert "culture ka yields no tuples" in caplog.text


def test_a_culture_whose_concepts_stay_below_min_support_says_so() -> None:
    samples = _samples(ENGLISH, "en") + _samples([("Un perro ladra en la calle.", "fear")], "es")
    result = build_kb(samples, BuildConfig(min_support=2), components=_components(), progress=False)
    assert "min_support" in result.report["cultures_without_tuples"]["es"]


def test_a_build_where_no_culture_yields_any_tuple_stops() -> None:
    with pytest.raises(DataError, match="no knowledge tuple for any culture.*ka: .*no word lists"):
        build_kb(_samples(GEORGIAN, "ka"), BuildConfig(min_support=2), components=_components(), progress=False)


# Written for these tests (by their author): Japanese in kana only, Khmer (a script without spaces, word lists or
# segmenter), and Spanish made only of stopwords and emotion words.
KANA = [("きのうはうみでねこがさかなをたべました。", "contentment"), ("ねこはとてもかわいいです。", "contentment"),
        ("うみでねことあそびました。", "sadness")]
KHMER = [("ឆ្មាកំពុងដេកនៅលើតុ។", "contentment"), ("ឆ្មារបស់ខ្ញុំចូលចិត្តត្រី។", "contentment")]


@pytest.mark.parametrize("rows, culture, concept", [(KANA, "ja", "ねこ"), (KHMER, "KH", "ឆ្មា")])
def test_kana_only_japanese_and_khmer_build_tuples(rows: list[tuple[str, str]], culture: str, concept: str) -> None:
    result = build_kb(_samples(rows, culture), BuildConfig(min_support=2), components=_components(), progress=False)
    assert concept in {t.concept for t in result.kb.tuples if t.culture == culture}
    assert not result.report["cultures_without_tuples"]


def test_texts_without_a_kept_word_are_said_to_give_none_and_why() -> None:
    rows = [("¡Qué triste y qué miedo!", "sadness"), ("Es muy triste, muy triste.", "sadness")]
    with pytest.raises(DataError) as err:
        build_kb(_samples(rows, "es"), BuildConfig(min_support=2), components=_components(), progress=False)
    message = str(err.value)
    assert "es: its texts (latin (2 texts); culture language es) gave no concept: the extractor kept no word" in message
    assert "every word was a stopword" not in message
