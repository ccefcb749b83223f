"""The multiple-choice answer parser: letters in every written form, answer lines in several languages, the option's
text instead of the letter, hedged answers, and what must not be read as a letter."""

import pytest

from culturekb.errors import ConfigError
from culturekb.inference.choices import option_letters, parse_choice

OPTS = ["Backpack", "Handbag", "Tote bag", "Briefcase"]
ZH = ["背包", "手提袋", "手提包", "公文包"]


@pytest.mark.parametrize(("answer", "letter", "path"), [
    ("B", "B", "letter"),
    ("(B)", "B", "letter"),
    ("B.", "B", "letter"),
    ("b", "B", "letter"),
    ("**B**", "B", "letter"),
    ("[C]", "C", "letter"),
    ("Ｄ", "D", "letter"),  # full-width
    ("D) Briefcase", "D", "letter"),
    ("B Handbag", "B", "letter"),
    ("Option C", "C", "letter"),
    ("Answer: B", "B", "answer-line"),
    ("He forgets where it went.\n**Final answer:** (C)", "C", "answer-line"),
    ("Step 1 ... step 2 ...\nAnswer: A\n", "A", "answer-line"),
    ("The answer is D.", "D", "answer-line"),
    ("Answer: handbag", "B", "answer-line"),
    ('{"answer": "D", "reason": "..."}', "D", "json"),
    ("<think>maybe A, maybe B</think>\nC", "C", "letter"),
    ("Handbag", "B", "option-text"),
    ("He will look in the handbag, where he saw it last.", "B", "option-text"),
    # answers in other languages
    ("答案：C", "C", "answer-line"),
    ("答案是D", "D", "answer-line"),
    ("选项B", "B", "letter"),
    ("Respuesta: B", "B", "answer-line"),
    ("La respuesta es c", "C", "answer-line"),
    ("Réponse : (A)", "A", "answer-line"),
    ("الإجابة: ب", "B", "answer-line"),  # Arabic option letter
    ("उत्तर: ग", "C", "answer-line"),  # Devanagari option letter
])
def test_readable_answers(answer, letter, path):
    got = parse_choice(answer, OPTS)
    assert (got.letter, got.path) == (letter, path)
    assert got.index == "ABCD".index(letter)


def test_option_text_in_another_script():
    assert parse_choice("小明会在手提袋里找。", ZH).letter == "B"
    assert parse_choice("背包", ZH).letter == "A"


@pytest.mark.parametrize(("answer", "ambiguous"), [
    ("Answer: A or C", ("A", "C")),
    ("Answer: B/D", ("B", "D")),
    ("Tote bag or briefcase?", ("C", "D")),
    ("It is in the bag somewhere.", ()),
    ("", ()),
    (None, ()),
])
def test_unreadable_or_hedged_answers_are_invalid(answer, ambiguous):
    got = parse_choice(answer, OPTS)
    assert got.letter is None and got.path == "invalid" and not got.valid
    assert got.ambiguous == ambiguous


def test_an_article_is_not_a_letter():
    # "A man ..." starts with the article, not option A; the option text decides
    assert parse_choice("A man would look in the briefcase", OPTS).letter == "D"
    assert parse_choice("A Tote bag", OPTS).letter == "C"  # "A" followed by another option's text


def test_option_count_is_checked():
    assert option_letters(4) == ("A", "B", "C", "D")
    with pytest.raises(ConfigError, match="2 to 26 options"):
        parse_choice("A", ["only one"])
