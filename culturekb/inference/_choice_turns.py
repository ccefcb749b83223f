"""Where the model's own turn ends, for `culturekb.inference.choices`: end and role tokens, the turns a model writes
itself after its answer, and which of those still count (a re-answer of the same question) or not (another
question, noise)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from functools import lru_cache

from culturekb.inference import _choice_text as ct
from culturekb.inference._choice_lists import opening_marker_then_noise
from culturekb.inference._choice_text import option_letters
from culturekb.inference._choice_values import ChoiceAnswer, _Item, _leading_letter
from culturekb.inference._lexicon import normalise_text
from culturekb.inference._noise import degenerate_start

__all__ = ["TURN_END", "after_marker_spam", "gemma_tokens", "looped_marker", "own_turn"]

Reader = Callable[[str, _Item, bool], ChoiceAnswer]
"""Reads the answer in a text cut at the end of a turn (`choices._read`)."""

# where a model's turn ends and it goes on to write the next turn itself (a new question, a user reply): a
# chat-template token, any special token written <|...|> (also garbled or full-width: <|end_user|>, <|结束头|>,
# ‹|结束_header_id|>, <|reserved_special_token_220|>, Command-R's <|END_RESPONSE|>), except the thinking/solution
# brackets some reasoning models write inside their own turn, and answer tags (<|answer|>[[D]]<|/answer|>,
# <|response|>): the answer itself
TURN_END = re.compile(r"<\|\s*/?\s*(?:user|system|assistant|im_start|im_end|eot_id|endoftext|start_header_id|"
                       r"end_header_id|end_response|end)\b[^\n]{0,4}|</s>|^\s*(?:#{2,}\s*)?(?:human|user|USER)\s*:"
                       r"|[<‹＜〈]\s*[|｜丨](?![^|｜丨\n]{0,40}(?:thought|solution|think|answer|response|答案))"
                       r"[^|｜丨\n<>]{1,40}[|｜丨]\s*[>›＞〉]?",
                       re.IGNORECASE | re.MULTILINE)


def own_turn(text: str, item: _Item, thinking: bool, read: Reader) -> ChoiceAnswer:
    """Read the answer up to the end of the model's own turn. A role token (``<|user|>``, ``<|system|>``, a "User:"
    line) after some answer text starts a turn the model wrote for someone else: the turn ends there (unless the
    text before it has turned into noise, where such tokens are noise too). Any other
    end token (``</s>``, ``<|im_end|>``, ``<|eot_id|>``, ``<|reserved_special_token_7|>``, a garbled ``<|结束头|>``)
    ends the turn once the text before it names an option (or hedges); before that it is a stray token (damaged or
    degenerate decoding writes them by the dozen) and the reading goes on past it."""
    read = _up_to_another_question(read)
    checked = 0
    hedge: ChoiceAnswer | None = None
    said = False  # (once something is said before a token, it is said before every later one)
    for m in TURN_END.finditer(text):
        before = text[:m.start()]
        said = said or _WORD.search(TURN_END.sub("", _PLACEHOLDER.sub("", before))) is not None
        if not said or _answer_header_at_end(before):
            continue  # nothing said yet ("```<|user|> Step 1: ...", "[[Answer Index]]\n<|user|>"), or an answer
            # header waits for its value ("Answer:\n<|user|>[[A]]"): no turn ended
        if _MATH_LIKE.match(m.group()) and _in_math(text, m.start()):  # "$0 < |x| + |y| < 1$": not a token
            continue
        if (_ROLE.match(text, m.start()) is not None
                and degenerate_start(unicodedata.normalize("NFKC", before)) is None):
            found = read(before.rstrip(), item, thinking)
            if hedge is not None:  # "B. Curious or D. Fear ... randomly choose one.<|assistant|>\n[[B]]\n<|user|>": B
                found = found if found.valid and found.letter in hedge.ambiguous else hedge
            if found.valid and _may_answer_again(before, text[m.start():]) \
                    and _same_question_goes_on(text[m.start():], item):
                again = read(_until_farewell(text, m.end(), item), item, thinking)
                return again if again.valid else found  # a re-answer that settles on nothing takes nothing back
            if not (found.valid or found.ambiguous) and _about_the_options(before, item, 3, short_ok=False):
                return _answered_after(text, m.start(), item, thinking, read) or found
            return found  # (inside noise a role token is noise too)
        if not _names_option(text[checked:m.start()], item):
            continue  # nothing new since the last end token: the reading cannot have changed
        checked = m.start()
        found = read(before.rstrip(), item, thinking)
        past = _past_opening_markers(text, m, found, item, thinking, read)
        if past is not None:
            return past
        if found.valid:
            joined = _hedge_across(text, m.end(), found, item) if hedge is None else None
            if joined is not None:  # "[[D]]<|line|>或者 [[A]]": a hedge, which the text after it may settle
                hedge = joined
                continue
            if hedge is None:
                rest = text[m.end():]
                tag = _ROLE_TAG.search(rest)
                if (tag is not None and _may_answer_again(before, rest[tag.start():])
                        and _same_question_goes_on(rest, item)):
                    return read(_until_farewell(text, m.end(), item), item, thinking)
                # (a loop revises only up to a turn the model then writes for the user: "[[A]]<|assistant|>[[A]]
                # <|system|>答案格式正确。<|user|>那……是否……？<|assistant|>……[[D]] ... [[D]]" answers a new question)
                user = _USER.search(text, m.end())
                return (looped_marker(text[:user.start()] if user else text, m.end(), item)
                        or _stated_after(rest, found, item, thinking, read))
            return found if found.letter in hedge.ambiguous else hedge
        if found.ambiguous and hedge is None:
            hedge = found  # "[[B]] ([[B]]) ([[C]] ...)<|/system|> ... 答案序号：[[B]]": read on, the hedge may settle
    final = read(text, item, thinking)
    if hedge is not None and not (final.valid and final.letter in hedge.ambiguous):
        return hedge  # the text after the end token settles the hedge only on one of its options
    return final


def _past_opening_markers(text: str, m: re.Match[str], found: ChoiceAnswer, item: _Item, thinking: bool,
                          read: Reader) -> ChoiceAnswer | None:
    """The answer stated after the end token `m` where what came before it (read as `found`) is only an opening
    marker; None where the token ends the turn as usual."""
    before = text[:m.start()]
    opening = item.patterns.marker.findall(before)
    if len(opening) == 1 and opening_marker_then_noise(text, None, item):
        # "[[C]]<|结束_header_id|> 雪梨法诊|JR/report ... 因此最有可能的答案是A。 [[A]]": the token is noise after
        # a marker written before any reasoning; the answer the noise reasons to (read whole) wins
        whole = read(text, item, thinking)
        return whole if whole.valid and whole.letter != found.letter else None
    if not opening or _WORD.search(TURN_END.sub("", item.patterns.marker.sub("", before))) is not None:
        return None
    # only markers and tokens so far ("[[D]]<|enduser|>[[D]]<|结束头部|>]]<|结束头部|>根据故事……因此，最可能的答案是
    # [[B]]."): the answer the reasoning after them states, up to a turn for someone else, wins
    role = _ROLE.search(text, m.end())
    end = role.start() if role else len(text)
    whole = read(text[:end], item, thinking)
    lead = _LEADING_RUN.match(text, m.end())
    later = [item.forms[normalise_text(ct.group_token(k))]
             for k in item.patterns.marker.finditer(text, lead.end() if lead else m.end(), end)]
    if whole.valid and whole.path in ("answer-line", "json") and whole.letter != found.letter \
            and whole.index in later and found.index not in later:  # marked, and the opening not restated
        return whole
    return None


_WORD = re.compile(r"\w")
# markers, tokens, brackets and spaces right after an end token ("<|enduser|>[[D]]<|结束头部|>]]<|结束头部|>")
_LEADING_RUN = re.compile(r"(?:\s|[\[\]()（）]|<[^<>\n]{0,40}>|\[\[[^\[\]\n]{1,3}\]\])*")


def _answered_after(text: str, at: int, item: _Item, thinking: bool, read: Reader) -> ChoiceAnswer | None:
    """The answer the turns after a role token at `at` give to this question, read up to where they turn into noise,
    for an own turn that weighed the options and answered nothing ("……选项B中的GPS承诺……不太实际。<|system|>\n答案是：
    \n[[A]]" ... [[A]]): careful readers take it, as for an own turn that said nothing but a marker."""
    clean = _before_noise(unicodedata.normalize("NFKC", text[at:]))
    if _new_question(clean, item) or not _names_option(clean, item):
        return None  # (another question posed, or nothing named before the noise)
    again = read(_until_farewell(text[:at] + clean, at, item), item, thinking)
    return again if again.valid else None


@lru_cache(maxsize=1)
def _empty_answer_header() -> re.Pattern[str]:
    # ("Answer:", "最终答案：", "So, the most likely answer is:")
    return re.compile(r"(?:^|\n)[^\n]{0,60}?(?<![^\W\d_])(?:" + ct.phrase_alternation(ct.answer_words())
                      + r")(?:[ \t]+(?:is|would be|will be))?[ \t*_\]】]*[:：][\s*_]*$", re.IGNORECASE)


def _answer_header_at_end(before: str) -> bool:
    """Whether `before` ends on an answer header with nothing after it ("...\n\nAnswer:\n", "最终答案："): a token
    there stands between the header and its value."""
    return _empty_answer_header().search(unicodedata.normalize("NFKC", before[-200:])) is not None
# a template's placeholder the model wrote out instead of filling it ("[[Penultimate Reasoning Steps 3]]",
# "[[Answer Index]]"): no answer text (an answer marker names one label, "[[B]]")
_PLACEHOLDER = re.compile(r"\[\[[^\[\]\n]{3,60}\]\]|\.{3}")


# a spaced "< |...|" with no closing ">": what a less-than before an absolute value looks like ("$|n| < |n-3| < 9$")
_MATH_LIKE = re.compile(r"<\s+\|[^|>]*\|(?!\s*>)")


def _in_math(text: str, at: int) -> bool:
    """Whether position `at` is inside inline TeX math on its line (an odd number of unescaped ``$`` before it):
    "$|n| < |n-3| < 9$" holds a "< |n-3|" that the garbled-token pattern of `TURN_END` would take for a token."""
    line = text[text.rfind("\n", 0, at) + 1:at]
    return len(re.findall(r"(?<!\\)\$", line)) % 2 == 1


# what a model states as its answer (a marker, an answer line, JSON), as opposed to an option's word met in passing
_STATED = frozenset({"marker", "answer-line", "json"})


def _stated_after(rest: str, found: ChoiceAnswer, item: _Item, thinking: bool, read: Reader) -> ChoiceAnswer:
    """The answer before an end token, unless it was only an option's word met in the reasoning ("...她想保护弟弟不受
    爸爸的担忧...<|结束请求|>\\n\\n[[D]]<|结束输出|> ... 最终答案是 [[D]]") and the text after the token, up to the next
    role tag, states an answer outright and poses no other question: then that answer (rounds 8 and 9 of the hand
    reading each had one such answer, the stated letter right both times)."""
    if found.path != "option-text":
        return found
    tag = _ROLE_TAG.search(rest)
    after = rest[:tag.start()] if tag is not None else rest
    if not after.strip() or _new_question(after, item):
        return found
    later = read(after.strip(), item, thinking)
    return later if later.valid and later.path in _STATED else found


_ROLE_TAG = re.compile(r"<[|丨]\s*\\?(?:user|system|human|assistant|im_start|start_header_id)\s*(?:[|丨]\s*>?)?",
                       re.IGNORECASE)


_USER = re.compile(r"<[|丨]\s*\\?(?:user|human)\s*(?:[|丨]\s*>?)?|^\s*(?:#{2,}\s*)?(?:human|user)\s*:",
                   re.IGNORECASE | re.MULTILINE)


def _until_farewell(text: str, start: int, item: _Item) -> str:
    """`text` up to the first farewell after `start` ("再见！[[D]]", "不客气！... [[A]]"), without the turns written for
    the user after `start`: a conversation the model writes on with itself is over at a farewell (a marker after it
    is a closing flourish, not an answer: measured on 60 judged changes, cutting at the first farewell read 44 as
    the judge did, at the last 38), and what it makes the user say ("我的答案：[[B]]。请帮我确认") is not its answer
    (the turns it writes as the system are kept: Qwen2.5 writes its re-answers there)."""
    bye = item.phrases.farewell.search(text, start)
    end = bye.start() if bye is not None else len(text)
    kept, at = [], start
    for tag, _body, stop in _user_turns(text, start, end):
        kept.append(text[at:tag])
        at = stop
    kept.append(text[at:end])
    return text[:start] + "".join(kept)


def _user_turns(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, int]]:
    """(tag start, body start, end) of each turn written for the user in text[start:end]: from a user tag
    (``<|user|>``, "User:") to the next role tag, or `end`."""
    end = len(text) if end is None else end
    at = start
    for m in _USER.finditer(text, start, end):
        if m.start() < at:
            continue  # a user tag inside the turn just cut out
        stop = _ROLE_TAG.search(text, m.end(), end)
        at = stop.start() if stop is not None else end
        yield m.start(), m.end(), at


def _may_answer_again(own: str, rest: str) -> bool:
    """Whether an answer after the role token that opens `rest` may revise the answer of the model's own turn
    (`own`). A turn the model writes for someone else (``<|user|>``, ``<|system|>``, "User:") is text a chat server
    would never have let it write, since generation stops at the end of its turn: what it then concedes to its
    own invented pushback ("<|user|>你再想想，应该是C吧？<|assistant|>[[C]]") does not take back the answer it gave.
    Only an own turn that said nothing but a marker ("[[B]] <|system|> 答案解析：……最终答案：[[D]]") leaves the
    answer to what follows. Careful readers who were told no rule kept the own turn's answer 10 times out of 11 in
    rounds 13-19 of the hand reading (issue 21)."""
    if _OTHER_PARTY.match(rest) is None:
        return True  # <|im_start|>assistant: the model's own turn goes on
    said = _MARKER_OR_TOKEN.sub("", TURN_END.sub("", own))
    return _WORD.search(said) is None


# a role token that opens a turn for someone other than the model (a user, the system)
_OTHER_PARTY = re.compile(r"\s*(?:<\|\s*(?:im_start|start_header_id)\s*\|>\s*)?(?:<\|\s*/?\s*)?(?:user|system|human)\b"
                          r"|\s*(?:#{2,}\s*)?(?:human|user)\s*:", re.IGNORECASE)
_MARKER_OR_TOKEN = re.compile(r"\[\[[^\]\n]{0,6}\]\]|<\|[^|\n]{0,30}\|>?")


def _same_question_goes_on(rest: str, item: _Item) -> bool:
    """Whether the turns the model wrote after ending its own go on about this question (a self-written "user"
    pushes back, the model answers again: its last answer stands) rather than pose another one (round 6: three of
    100 held-out answers were re-answered so, six went on to other questions)."""
    rest = unicodedata.normalize("NFKC", rest)
    clean = _before_noise(rest)  # (what it says before its turns turn into noise)
    return not _new_question(rest, item) and _names_option(clean, item) and _about_the_options(clean, item)


def _before_noise(text: str) -> str:
    """`text` (NFKC) up to where it turns into noise, all of it if it does not."""
    broken = degenerate_start(text)
    return text if broken is None else text[:broken]


def _about_the_options(text: str, item: _Item, least: int = 2, *, short_ok: bool = True) -> bool:
    """Whether `text` talks about this question's options: at least `least` of their content pieces (words of 4
    letters or more, numbers of 2 digits or more, pairs of CJK characters) appear in it, or (with `short_ok`) the
    options are too short to tell (single words such as emotions). An unrelated question the model writes itself
    without a header shares none."""
    pieces = _option_pieces(ct.clean_options(tuple(item.options)))
    if short_ok and len(pieces) < 2 * least:
        return True
    hay = ct.clean(text)
    return sum(p in hay for p in pieces) >= least


_CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]{2,}")
_WORDS = re.compile(r"(?:(?![\d_\u3040-\u30ff\u4e00-\u9fff])\w){4,}|\d{2,}")


@lru_cache(maxsize=1024)
def _option_pieces(cleaned: tuple[str, ...]) -> frozenset[str]:
    """The content pieces of an item's cleaned options (`ct.clean_options`), once per item."""
    pieces: set[str] = set()
    for option in cleaned:
        pieces.update(_WORDS.findall(option))
        for run in _CJK.findall(option):
            pieces.update(run[i:i + 2] for i in range(len(run) - 1))
    # pieces every option shares (the question's own frame: "小刘看目的地列表后，推测有") say nothing about which
    return frozenset(p for p in pieces if not all(p in o for o in cleaned) or len(cleaned) == 1)


def _new_question(text: str, item: _Item) -> bool:
    """Whether turns written after a role token pose another question: a header ("[Story]", "[问题]") or a list of
    two or more options none of which is one of this question's ("A. 7\nB. 10")."""
    if item.phrases.new_question.search(text):
        return True
    for _tag, body, stop in _user_turns(text):  # a hypothetical asked as the user ("如果我们换成 ... 怎样推理？")
        turn = text[body:stop]
        if ("?" in turn or "？" in turn) and item.phrases.what_if.search(turn):
            return True
    labels = set()
    for m in item.patterns.enumerated.finditer(text):
        eol = text.find("\n", m.end())
        if not ct.options_in(text[m.end():eol if eol >= 0 else len(text)], item.options):  # (not this question's)
            labels.add(normalise_text(ct.group_token(m)))
    return len(labels) >= 2


def looped_marker(text: str, start: int, item: _Item) -> ChoiceAnswer | None:
    """The answer the text from `start` repeats over and over: one option's marker three or more times and no other
    option's. After an end token it revises the answer before the token ("[[D]]<|user||\n ... 答案应该是 A ...
    答案序号如下：[[A]]" to the end); as the whole of an answer's noise it is the answer ("[[B]]\n[[B]]\n[[B]] ...");
    anything else there (a turn for another question, noise) says nothing."""
    matches = list(item.patterns.marker.finditer(text, start))
    found = [item.forms[normalise_text(ct.group_token(m))] for m in matches]
    if len(found) < 3:
        return None
    run = next((k for k, i in enumerate(reversed(found)) if i != found[-1]), len(found))
    others = len(found) - run
    if all(ct.bracketed(text, m.start()) for m in matches[-run:]) and any(
            not ct.bracketed(text, m.start()) for m in item.patterns.marker.finditer(text, 0, matches[-run].start())):
        return None  # "选项为 [[B]]。 ([[C]]) ([[D]]) ([[D]]) ([[D]]) ...": asides to the bare answer, run on
    # one option's marker alone, or a long run of it at the end that outweighs the few others before it many times
    # over ("[[D]] ... [[D]] <|change_end|> [[C]] ... 因此，答案是[[C]]。>[[C]]" and [[C]] a dozen times more)
    if others and (run < 8 or run < 4 * others):
        return None
    return ChoiceAnswer(option_letters(len(item.options))[found[-1]], found[-1], "marker")


# "or" right after an end token, then another option's marker: "[[D]]<|line|>或者 [[A]]" is one hedge, not D
_OR_NEXT = re.compile(r"\s*(?:or|或者|或|还是)\s*", re.IGNORECASE)


def _hedge_across(text: str, start: int, found: ChoiceAnswer, item: _Item) -> ChoiceAnswer | None:
    """The hedge an answer before an end token makes with the text right after it ("[[D]]<|line|>或者 [[A]]"), or
    None: an "or" opening the text after the token and a marker of another option right behind it. The reading
    goes on past it: a later answer on one of its options settles it ("... 或者 [[D]]。最可能的答案是 [[A]]")."""
    joint = _OR_NEXT.match(text, start)
    marker = item.patterns.marker.match(text, joint.end()) if joint is not None else None
    if marker is None:
        return None
    other = item.forms[normalise_text(ct.group_token(marker))]
    if other == found.index or found.letter is None:
        return None
    return ChoiceAnswer(None, None, "invalid", (found.letter, option_letters(len(item.options))[other]))


# a well-formed role token or line: <|user|>, <|system|>, <|im_start|>..., <|start_header_id|>..., "User:", "### Human:"
# (a header token counts when a role name, a line end or another token follows it: "<|start_header_id|>user", not
# "...acaktır<|start_header_id|>说明她对演技的投入", a token dropped into the middle of a sentence)
_ROLE = re.compile(r"<\|\s*(?:im_start|start_header_id)\s*\|>(?=\s*(?:user|system|human|assistant|tool|ipython)\b"
                   r"|[ \t]*(?:\n|$|<))|<[|丨]\s*\\?(?:user|system|human)\s*[|丨]>"
                   r"|\s*(?:#{2,}\s*)?(?:human|user)\s*:", re.IGNORECASE)


def _names_option(segment: str, item: _Item) -> bool:
    """Whether a stretch of text holds anything an answer could be read from (a label, an option word, an option's
    text), cheaply: a false True costs one more reading, a false False would miss an answer."""
    if item.patterns.strong.search(segment) or item.patterns.marker.search(segment):
        return True
    if item.phrases.option_word.search(segment) or item.patterns.bare.search(segment):
        return True
    return bool(ct.options_in(segment, item.options)) or _leading_letter(segment, item) is not None


def _up_to_another_question(read: Reader) -> Reader:
    """`read` of the text up to where it poses another question with options of its own (`another_question_at`);
    where the turns end is decided on the whole text, whose later questions tell turns for another question."""
    return lambda text, item, thinking: read(text[:another_question_at(text, item) or len(text)], item, thinking)


_OPTION_LINE_AT_MOST = 60  # an option line of a question is short; a walk-through line explains at length


def another_question_at(text: str, item: _Item) -> int | None:
    """Where the text goes on to pose another question with options of its own after answering this one (no role
    token needed: "[[B]]igneoussystem>以下给你几个选项：…\n\nA. 关上窗户\n\nB. 关上冰箱门\n\nC. 关上门"): the start of
    the first run of three or more short option lines, A, B, C in order, that share almost no words with this
    question's options, once an answer marker came before it. None otherwise."""
    run: list[tuple[int, int, str]] = []  # (start, label index, option text) of consecutive option lines
    for m in item.patterns.enumerated.finditer(text):
        index = item.forms[normalise_text(ct.group_token(m))]
        eol = text.find("\n", m.end())
        line = text[m.end():eol if eol >= 0 else len(text)].strip()
        if run and (index != run[-1][1] + 1 or m.start() - run[-1][0] > 400):
            run = []
        if index == 0 or run:
            run.append((m.start(), index, line))
        if len(run) == 3 and _foreign(run, tuple(item.options)) and item.patterns.marker.search(text, 0, run[0][0]):
            return None if _answers_this_again(text, run[0][0], item) else run[0][0]
    return None


def _answers_this_again(text: str, start: int, item: _Item) -> bool:
    """Whether a marker after `start` stands beside its own option's text of this question ("最合理的答案是C. 悲伤
    [[C]]"): the model came back to this question after the other one."""
    for m in item.patterns.marker.finditer(text, start):
        index = item.forms[normalise_text(ct.group_token(m))]
        if index in ct.options_in(text[max(start, m.start() - 40):m.end() + 40], item.options):
            return True
    return False


def _foreign(run: list[tuple[int, int, str]], options: tuple[str, ...]) -> bool:
    """Whether option lines are another question's: short, and their words hardly any of this question's."""
    if any(not line or len(line) > _OPTION_LINE_AT_MOST for _, _, line in run):
        return False
    ours = _option_words(options)
    pieces = [_pieces(line) for _, _, line in run]
    total = sum(len(p) for p in pieces)
    return total >= 3 and sum(len(p & ours) for p in pieces) <= 0.2 * total


@lru_cache(maxsize=1024)
def _option_words(options: tuple[str, ...]) -> frozenset[str]:
    """The words, character pairs and numbers of all of a question's options (once per item)."""
    return frozenset().union(*(_pieces(o) for o in options))


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _pieces(text: str) -> frozenset[str]:
    """The words, CJK character pairs and numbers of a text ("A) 20": 20)."""
    return ct.words_and_pairs(text) | frozenset(_NUMBER.findall(ct.clean(text)))


def after_marker_spam(text: str, item: _Item, thinking: bool, read: Reader) -> ChoiceAnswer | None:
    """The reading of an answer that opens with a run of markers of three or more options (`_marker_spam`): an
    answer said in words after the run ("... 故[[B]]的概率最高。最终的输出结果是：[[B]]" and [[B]] to the end), else
    invalid with the options the run named (a choice of its first marker it is not; round 21 of the hand reading
    had two). None when the answer does not open so."""
    spam = _marker_spam(text, item)
    if spam is None:
        return None
    end, named = spam
    after = own_turn(text[end:], item, thinking, read) if _says_words(text[end:], item) else None
    if after is not None and after.valid and (after.path != "marker" or looped_marker(text, end, item) is not None):
        return after  # (a marker only where one option's marker then runs on alone: more spam names no answer)
    looped = looped_marker(text, 0, item)  # the spam settling into one option's marker to the end: that option
    if looped is not None:
        return looped
    return ChoiceAnswer(None, None, "invalid", tuple(option_letters(len(item.options))[i] for i in named))


def _marker_spam(text: str, item: _Item) -> tuple[int, tuple[int, ...]] | None:
    """The run of answer markers an answer opens with, one after another with nothing between them but end tokens,
    punctuation, spaces and at most a stray letter ("[[B]]<|end_header|>[[C]]<|end_header|>[[B]]<|end_header|>[[A]]
    ..."), when it holds six or more markers naming three or more options: (where the run ends, the options in the
    order first named). Degenerate decoding, not a choice of its first marker; None otherwise."""
    named: list[int] = []
    end = 0
    for m in item.patterns.marker.finditer(text):
        gap = TURN_END.sub("", text[end:m.start()])
        if len(gap) > 40 or len(_LETTER.findall(gap)) > 1:
            break
        named.append(item.forms[normalise_text(ct.group_token(m))])
        end = m.end()
    if len(named) < 6 or len(set(named)) < 3:
        return None
    return end, tuple(dict.fromkeys(named))


_LETTER = re.compile(r"[^\W\d_]")


def _says_words(text: str, item: _Item) -> bool:
    """Whether the start of `text` says something in words (four or more letters once markers and tokens are
    taken out), as opposed to more markers and tokens ("<|_/|> [[B]] <|_/|> .$ B <|_/|> [[A]]")."""
    bare = item.patterns.marker.sub("", TURN_END.sub("", text[:300]))
    return len(_LETTER.findall(bare)) >= 4


_UNUSED_TOKEN = re.compile(r"<unused(\d+)>(thought)?")  # Gemma's reserved tokens


def gemma_tokens(text: str) -> str:
    """`text` with Gemma's reserved tokens as tags: MedGemma thinks between <unused94>thought and <unused95>, so those
    are <think> and </think>; any other is a line break."""
    return _UNUSED_TOKEN.sub(lambda m: "<think>" if m.group(1) == "94" and m.group(2)
                             else "</think>" if m.group(1) == "95" else "\n", text)
