"""An answer that names its option only by content, in other words ("我认为……她希望李明去mall或者附近的超市买一些鸡蛋
回来" for the option "妈妈希望李明去买一些鸡蛋回来"): the last resort of `culturekb.inference.choices` when nothing
else in the answer names an option.

Each option is reduced to the pieces only it has: the character pairs of its Chinese or Japanese text (a piece two
options share tells them apart from neither; options in spaced scripts, whose words a reasoning repeats from the
question, are not read this way). A concluding sentence (one with a conclusion cue: "所以", "我认为") restates an
option when it holds at least half of that option's own pieces and no other option comes close. Every concluding
sentence that restates one option must restate the same one; a sentence that negates, asks or supposes ("如果")
restates nothing, and an option another sentence rules out by name is restated by none.
"""

from __future__ import annotations

import re
from functools import lru_cache

from culturekb.inference import _choice_text as ct
from culturekb.inference._choice_turns import _ROLE_TAG
from culturekb.inference._choice_values import ChoiceAnswer, _Item
from culturekb.inference._lexicon import normalise_text

__all__ = ["restated_answer", "restated_option"]

_PIECES_AT_LEAST = 3  # an option with fewer pieces of its own is too short to be recognised in other words
_SHARE = 0.5  # of the option's own pieces a restating sentence holds at least
_MARGIN = 2.0  # ... at least this many times the share of any other option
_SENTENCE = re.compile(r"[^。！？!?\n]+[。！？!?]*")
_QUOTE_EDGES = " \t\"'“”‘’「」『』()（）[]【】*"


@lru_cache(maxsize=1024)
def _own_pieces(options: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """Each option's pieces that no other option has."""
    every = [ct.cjk_pairs(o) for o in options]
    return tuple(p - frozenset().union(*(q for j, q in enumerate(every) if j != i)) for i, p in enumerate(every))


def _restates(sentence: str, own: tuple[frozenset[str], ...]) -> int | None:
    have = ct.cjk_pairs(sentence)
    shares = [len(p & have) / len(p) if len(p) >= _PIECES_AT_LEAST else 0.0 for p in own]
    best = max(range(len(shares)), key=shares.__getitem__)
    runner_up = max((s for i, s in enumerate(shares) if i != best), default=0.0)
    if shares[best] >= _SHARE and shares[best] >= _MARGIN * runner_up:
        return best
    return None


def restated_answer(text: str, item: _Item) -> ChoiceAnswer | None:
    """The option an answer that names none restates in other words, read in the model's own turn (up to the first
    role token: a restatement in a turn it wrote for the user is not its answer); None when there is none."""
    end = _ROLE_TAG.search(text)
    index = restated_option(text[:end.start()] if end is not None else text, item)
    return None if index is None else ChoiceAnswer(ct.option_letters(len(item.options))[index], index, "option-text")


def restated_option(text: str, item: _Item) -> int | None:
    """The one option the sentences of `text` restate in other words; None when none does or they disagree."""
    own = _own_pieces(tuple(item.options))
    if sum(len(p) >= _PIECES_AT_LEAST for p in own) < 2:
        return None
    phrases = item.phrases
    named: set[int] = set()
    rejected: set[int] | None = None  # (found only once a sentence restates an option)
    for m in _SENTENCE.finditer(text):
        sentence = m.group().strip(_QUOTE_EDGES)
        if len(sentence) < 4 or not phrases.cue.search(sentence):
            continue
        index = _restates(sentence, own)
        if index is None:
            continue
        rejected = _rejected(text, item) if rejected is None else rejected
        if (index in rejected or _negates(sentence, item.options[index], item) or phrases.what_if.search(sentence)
                or sentence.rstrip().endswith(("?", "？", "吗", "嗎"))):
            continue
        named.add(index)
    return named.pop() if len(named) == 1 else None


def _rejected(text: str, item: _Item) -> set[int]:
    """The options a sentence of `text` rules out by name ("我们可以先排除……的选项“B. 准备去女朋友那里复习.”"): one
    option's text or label in a sentence with a negation that is not that option's own."""
    out: set[int] = set()
    for m in _SENTENCE.finditer(text):
        named = set(ct.options_in(m.group(), item.options))
        named |= {item.forms[normalise_text(ct.group_token(x))] for x in item.patterns.strong.finditer(m.group())}
        if len(named) == 1 and _negates(m.group(), item.options[next(iter(named))], item):
            out |= named
    return out


def _negates(sentence: str, option: str, item: _Item) -> bool:
    """Whether the sentence holds a negation that is not the option's own ("没有" restating "李明没有及时补充食材")."""
    own = option.lower()
    return any(m.group().lower() not in own for m in item.phrases.negation.finditer(sentence))

