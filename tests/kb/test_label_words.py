"""Label words a user gives (a scheme file's translations, a label words file) and a data file teaches (paired
label columns): Hindi and Amharic answers in words outside the packaged lists are unread before and read after,
and a prompt shows the words the parser reads."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.parsing import parse_prediction
from culturekb.inference.prompts import format_labels
from culturekb.kb.label_words import (
    label_words_digest,
    learn_label_words,
    load_label_words,
    merge_label_words,
    parse_column_words,
)
from culturekb.kb.schemes import EmotionScheme, load_scheme, scheme_from_labels

LABELS = ["joy", "sadness", "anger", "fear", "guilt", "neutral"]

# Ordinary answers whose label word no packaged list holds: the Hindi for "ordinary" (offered for neutral) and for
# "crime" (guilt), the Amharic for "ordinary" and "crime/fault"; each with the scheme label the answer means.
ANSWERS: list[tuple[str, str, str]] = [
    ("hi", "साधारण", "neutral"),
    ("hi", '{"भावना": "साधारण", "व्याख्या": "कुछ खास नहीं"}', "neutral"),
    ("hi", "उत्तर: अपराध", "guilt"),
    ("hi", "मुझे लगता है कि यह भावना अपराध है।", "guilt"),
    ("am", "ተራ", "neutral"),
    ("am", "ስሜት: ተራ", "neutral"),
    ("am", '{"emotion": "ወንጀል"}', "guilt"),
    ("am", "ጥፋት", "guilt"),
]
WORDS = {"hi": {"neutral": ["साधारण"], "guilt": ["अपराध"]}, "am": {"neutral": ["ተራ"], "guilt": ["ወንጀል", "ጥፋት"]}}


def _scheme() -> EmotionScheme:
    return scheme_from_labels(LABELS, name="six")


def _read(scheme: EmotionScheme) -> list[str | None]:
    return [parse_prediction(text, scheme, lang).label for lang, text, _ in ANSWERS]


def test_answers_outside_the_packaged_lists_are_unread_without_the_words() -> None:
    assert _read(_scheme()) == [None] * len(ANSWERS)


def test_a_scheme_files_translations_are_read_and_shown(tmp_path: Path) -> None:
    path = tmp_path / "six.json"
    path.write_text(json.dumps({"name": "six", "labels": LABELS, "translations": WORDS}, ensure_ascii=False),
                    encoding="utf-8")
    scheme = load_scheme(path)
    assert _read(scheme) == [gold for _, _, gold in ANSWERS]
    hindi = format_labels(scheme, "hi")
    assert "- neutral (साधारण)" in hindi and "- guilt (अपराध)" in hindi  # the prompt shows the words read
    assert "- neutral (ተራ)" in format_labels(scheme, "am")


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_label_words_file_is_read_and_shown(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"words{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"_source": "ours", **WORDS}, ensure_ascii=False), encoding="utf-8")
    else:
        path.write_text("[hi]\nneutral = ['साधारण']\nguilt = 'अपराध'\n[am]\nneutral = ['ተራ']\n"
                        "guilt = ['ወንጀል', 'ጥፋት']\n", encoding="utf-8")
    words = load_label_words(path)
    assert words == {lang: {lab: tuple(ws) for lab, ws in t.items()} for lang, t in WORDS.items()}
    scheme = _scheme().with_words(words)
    assert _read(scheme) == [gold for _, _, gold in ANSWERS]
    assert "- neutral (साधारण)" in format_labels(scheme, "hi")
    assert scheme.translate("neutral", "hi") == "साधारण"
    assert _scheme().translate("neutral", "hi") == "तटस्थ"  # the packaged word before


def test_given_words_win_and_bad_files_say_the_fix(tmp_path: Path) -> None:
    base = _scheme()
    assert base.match("तटस्थ") == "neutral"
    moved = base.with_words({"hi": {"guilt": ["तटस्थ"]}})  # a user moves a packaged word to another label
    assert parse_prediction("तटस्थ", moved, "hi").label == "guilt"
    with pytest.raises(ConfigError, match="not a label of scheme 'six'"):
        base.with_words({"hi": {"calm": ["शांत"]}})
    with pytest.raises(ConfigError, match="given for both"):
        base.with_words({"hi": {"guilt": ["अपराध"], "fear": ["अपराध"]}})
    bad = tmp_path / "bad.json"
    bad.write_text('{"hi": ["साधारण"]}', encoding="utf-8")
    with pytest.raises(ConfigError, match="should map labels to words"):
        load_label_words(bad)
    bad.write_text('{"hindi!": {"neutral": "x"}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="not a language code"):
        load_label_words(bad)
    assert label_words_digest(WORDS) != label_words_digest({"hi": {"neutral": ["साधारण"]}})


def test_merge_lets_the_later_words_win() -> None:
    merged = merge_label_words({"hi": {"neutral": ("साधारण",), "fear": ("डरावना",)}},
                               {"hi": {"guilt": ("साधारण",)}})
    assert merged == {"hi": {"fear": ("डरावना",), "guilt": ("साधारण",)}}


def _rows(pairs: list[tuple[str, str, str]]) -> list[dict[str, str]]:
    return [{"id": f"r{i}", "culture": lang, "label": label, "native": word} for i, (lang, word, label) in
            enumerate(pairs)]


PAIRS = [("hi", "साधारण", "neutral")] * 3 + [("hi", "साधारण", "joy")] + [("hi", "अपराध", "guilt")] * 2 + [
    ("hi", "दुख", "sadness"), ("am", "ተራ", "neutral"), ("am", "ተራ", "neutral"), ("am", "ወንጀል", "guilt"),
    ("am", "ጥፋት", "guilt"), ("am", "ጥፋት", "fear")]


def test_paired_native_label_columns_teach_the_words_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "culture": r["culture"], "label": r["label"],
                                        "metadata": {"label_native": r["native"]}}, ensure_ascii=False) + "\n"
                            for r in _rows(PAIRS)), encoding="utf-8")
    learned = learn_label_words([path], _scheme())
    assert learned.words == {"hi": {"neutral": ("साधारण",), "guilt": ("अपराध",)},
                             "am": {"neutral": ("ተራ",), "guilt": ("ወንጀል",)}}
    as_json = tmp_path / "train.json"  # the same rows as a JSON object keyed by id
    as_json.write_text(json.dumps({r["id"]: r for r in map(json.loads, path.read_text("utf-8").splitlines())},
                                  ensure_ascii=False), encoding="utf-8")
    assert learn_label_words([as_json], _scheme()).words == learned.words
    as_jsonl_named_json = tmp_path / "lines.json"  # JSON Lines in a .json file, read as the loader reads it
    as_jsonl_named_json.write_text(path.read_text("utf-8"), encoding="utf-8")
    assert learn_label_words([as_jsonl_named_json], _scheme()).words == learned.words
    report = learned.report
    assert report["columns"] == {str(path): {"label_native": "native"}} and report["pairs"] == len(PAIRS)
    assert report["known"] == 1  # दुख is already a packaged Hindi word for sadness
    conflicts = {c["word"]: c for c in report["conflicts"]}
    assert conflicts["साधारण"]["learned"] == "neutral" and conflicts["साधारण"]["labels"] == {"neutral": 3, "joy": 1}
    assert conflicts["ጥፋት"]["learned"] is None  # one row each way: not learned
    taught = _scheme().with_words(learned.words)
    assert _read(taught)[:7] == [gold for _, _, gold in ANSWERS][:7]
    assert _read(taught)[7] is None  # ጥፋት was a tie


def test_paired_label_lang_columns_and_explicit_columns_csv(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["painting", "art_style", "emotion", "utterance", "language", "emotion_hi", "amharic_word"])
        for i, (lang, word, label) in enumerate(PAIRS):
            w.writerow([f"p{i}", "Baroque", label, "", "hindi" if lang == "hi" else "am",
                        word if lang == "hi" else "", word if lang == "am" else ""])
    learned = learn_label_words([path], _scheme(), columns=parse_column_words(["amharic_word=am"]))
    assert learned.report["columns"] == {str(path): {"emotion_hi": "hi", "amharic_word": "am"}}
    assert learned.words["hi"] == {"neutral": ("साधारण",), "guilt": ("अपराध",)}
    assert learned.words["am"] == {"neutral": ("ተራ",), "guilt": ("ወንጀል",)}
    with pytest.raises(ConfigError, match="COLUMN=LANG"):
        parse_column_words(["amharic_word"])
    with pytest.raises(ConfigError, match="no data file has the column"):
        learn_label_words([path], _scheme(), columns={"missing": "am"})


@pytest.mark.parametrize(("lang", "text"), [
    ("en", "normal"), ("en", "The person would feel normal."), ("hi", "सामान्य"), ("hi", "वह सामान्य महसूस करेगा"),
    ("am", "መደበኛ"), ("ar", "عادي"), ("de", "normal"), ("es", "normal"),
])
def test_the_word_for_normal_is_a_weak_neutral_word_in_the_packaged_lists(lang: str, text: str) -> None:
    assert parse_prediction(text, _scheme(), lang).label == "neutral"


@pytest.mark.parametrize(("lang", "text", "gold"), [
    ("en", "Normally she would be happy.", "joy"), ("hi", "सामान्य रूप से, वह खुश होगा", "joy"),
    ("de", "Es ist ganz normal, dass sie Angst hat.", "fear"),
])
def test_normal_yields_to_a_label_the_answer_names(lang: str, text: str, gold: str) -> None:
    assert parse_prediction(text, _scheme(), lang).label == gold


def test_normal_is_unread_in_a_scheme_without_neutral() -> None:
    assert parse_prediction("normal", scheme_from_labels(["joy", "sadness"]), "en").label is None


@pytest.mark.parametrize(("lang", "text", "gold"), [
    ("de", "Die Person würde wahrscheinlich Angst empfinden, nicht Wut.", "fear"),
    ("es", "La emoción predominante sería la tristeza, no la ira.", "sadness"),
    ("ar", "الشعور الأساسي هو الغضب وليس الحزن.", "anger"),
    ("hi", "वह डर महसूस करेगा, खुशी नहीं।", "fear"),
    ("hi", "उसे अपराधबोध होगा क्योंकि उसने झूठ बोला।", "guilt"),
    ("am", "ፍርሃት ይሰማዋል እንጂ ደስታ አይደለም።", "fear"),
    ("am", "አዘነ", "sadness"), ("am", "እሷ አዘነች።", "sadness"), ("am", "ትፈራለች", "fear"),  # verbs: was sad, fears
    ("am", "አላዘነም", None),  # was not sad
    ("ko", "화가 날 것입니다.", "anger"), ("ko", "슬플 것입니다", "sadness"), ("ko", "화가 나지 않고 기쁩니다.", "joy"),
    ("ko", "기쁘지 않습니다", None),  # verb forms: will get angry, will be sad; not angry but glad; not glad
])
def test_sentences_in_the_languages_of_a_culture_emotion_set(lang: str, text: str, gold: str | None) -> None:
    assert parse_prediction(text, _scheme(), lang).label == gold
