"""Lists, loops and conditions of option markers, for `culturekb.inference.choices`: the instruction's list of every
option's marker echoed back (which revises no answer), single markers stepping through the options round and round
(a loop a model fell into, not a revision), markers under a condition ("如果没有足够信息，选择[[D]]": a fallback,
not the answer), and markers that open an answer before it turns into noise (a conflicting pair, or one marker
written before the reasoning the noise then states)."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

from culturekb.inference._choice_text import clean, clean_options, group_token, long_answer_words, marker_end
from culturekb.inference._choice_values import _BETWEEN_MARKERS, LONE_LETTER, _Item, _Reading
from culturekb.inference._lexicon import normalise_text
from culturekb.inference._noise import degenerate_start

__all__ = ["complemented", "cycling_tail", "dominated", "is_listing", "late_listings_dropped", "opening_conflict",
           "opening_marker_then_noise", "outvoted", "reasoned_in_noise", "scattered_listing", "stray_marker",
           "unconditional", "walk_through_tail"]

# where a sentence ends (also at a "\\n" written out inside echoed JSON)
_SENTENCE_END = re.compile(r"\.+(?=\s|$)|[!?。！？]+|\n+|\\n")


def is_listing(reading: _Reading, item: _Item) -> bool:
    """Whether a reading is markers naming every option of three or more ("[[A]] [[B]] [[C]] [[D]]"): the list of
    answer formats an instruction gives, echoed back."""
    return reading.path == "marker" and len(set(reading.ambiguous)) == len(item.options) >= 3


def late_listings_dropped(readings: list[_Reading], item: _Item, *, agreeing: bool = False) -> list[_Reading]:
    """`readings` without the listings of every option's marker that come after another answer: a list of the
    options revises no answer given before it ("[[A]]。最可能的答案选项为“A”。… [[A]]，\n[[B]]，\n[[C]]和[[D]]").
    `agreeing`: only where the other answers all name one option (in noise, a stream of markers of every option
    mixed with single ones, "[[B]] ([[A]]) ([[B]]) ([[C]]) ([[D]]) ([[D]]) ...", is no answer whichever comes last)."""
    others = [r for r in readings if not is_listing(r, item)]
    if not others or len(others) == len(readings):
        return readings
    if agreeing and len({r.index for r in others}) > 1:
        return readings
    first = min(r.at for r in others)
    return [r for r in readings if not is_listing(r, item) or r.at < first]


def cycling_tail(readings: list[_Reading], options: int) -> list[_Reading]:
    """The last readings when they are single markers stepping through the options in order, round and round (at
    least twice the number of options, and at least 6): a loop a model fell into; else []."""
    markers = sorted((r for r in readings if r.path == "marker" and r.index is not None), key=lambda r: r.at)
    if not markers or max(readings, key=lambda r: r.at) is not markers[-1]:
        return []
    run: list[_Reading] = []
    for r in reversed(markers):
        if run and ((r.index or 0) + 1) % options != run[-1].index:
            break
        run.append(r)
    return run if len(run) >= max(2 * options, 6) else []


def walk_through_tail(text: str, readings: list[_Reading], item: _Item) -> list[_Reading]:
    """The last readings when they are markers each followed by its own option's text, in label order from the
    first option ("选项[[A]]：“建议她和家长……” 选项[[B]]：“建议她定期更改密码，保持", cut off): a walk-through of the
    options under way, not an answer; else []."""
    run: list[_Reading] = []
    for r in sorted(readings, key=lambda r: r.at, reverse=True):
        if r.path != "marker" or r.index is None or not _labels_own_text(text, r, item):
            break
        run.append(r)
    run.reverse()
    if len(run) >= 2 and [r.index for r in run] == list(range(len(run))):
        return run
    return _opening_tail(text, readings, item, _BULLET_BEFORE) or _ruled_out_tail(text, readings, item)


_BULLET_BEFORE = re.compile(r"(?:^|\n)[ \t]*(?:[-*•]|\d+[.)])[ \t]*(?:\*\*)?$")
_LINE_BEFORE = re.compile(r"(?:^|\n)[ \t]*(?:[-*•]|\d+[.)])?[ \t]*(?:\*\*)?$")
_WORDS_AFTER = re.compile(r"[ \t]*(?:\*\*)?[ \t]*[^\W\d_]{2,}")  # a word on the marker's line ("suggests ...")


def _opening_tail(text: str, readings: list[_Reading], item: _Item, before: re.Pattern[str]) -> list[_Reading]:
    """The last readings when they are markers that each open a bullet (or a line: `before`) and go on to say
    something about their option, in label order ("- [[A]] suggests all 30 groups ..., so it's unlikely.\n- [[C]]
    suggests only 10", cut off): the options weighed one by one, not an answer; else []."""
    run: list[_Reading] = []
    for r in sorted(readings, key=lambda r: r.at, reverse=True):
        marker = item.patterns.marker.match(text, r.at) if r.path == "marker" and r.index is not None else None
        if (marker is None or not before.search(text, 0, r.at) or (run and (r.index or 0) >= (run[-1].index or 0))
                or not _WORDS_AFTER.match(text, marker_end(text, marker))):
            break
        run.append(r)
    return run[::-1] if len(run) >= 2 else []  # in label order, each once


def _ruled_out_tail(text: str, readings: list[_Reading], item: _Item) -> list[_Reading]:
    """The last readings when they are markers that each open a line and say something about their option, in label
    order, naming every option but the one a reading before them chose ("因此：\n[[B]]\n其他选项不合理，因为：\n[[A]]是
    积极情绪……；\n[[C]]与……不符；\n[[D]]完全没有……"): the other options ruled out after the answer; else []."""
    run = _opening_tail(text, readings, item, _LINE_BEFORE)
    left = set(range(len(item.options))) - {r.index for r in run}
    if not run or len(left) != 1 or len(run) != len(item.options) - 1:
        return []
    chosen = left.pop()
    return run if any(r.index == chosen and r.at < run[0].at for r in readings) else []


def _labels_own_text(text: str, reading: _Reading, item: _Item) -> bool:
    """Whether the marker at `reading` is followed (after its closing brackets and a colon or quote) by the start
    of its own option's text."""
    own = clean_options(item.options)[reading.index or 0]
    marker = item.patterns.marker.match(text, reading.at)
    if marker is None or not own:
        return False
    end = marker_end(text, marker)
    after = text[end:end + 20 + len(own)]
    m = re.match(r"\s*[:：.、]\s*[\"“「『']?", after)
    return m is not None and clean(after[m.end():]).startswith(own[:min(len(own), 8)])


def unconditional(text: str, explicit: list[_Reading], soft: list[_Reading],
                  item: _Item) -> tuple[list[_Reading], list[_Reading]]:
    """`explicit` and `soft` (conclusions) without the readings in a sentence that states a condition before them
    ("如果没有足够信息，选择[[D]]是随机选择的", "had we not inferred this, [[C]] would have been a close second"), where
    an unconditional answer remains; otherwise both as they are."""
    def conditional(reading: _Reading) -> bool:
        start = _sentence_start(text, reading.at)
        return reading.path != "json" and item.phrases.conditional.search(text[start:reading.at]) is not None

    flags = {id(r): conditional(r) for r in explicit + soft}
    if not any(flags.values()) or not any(r.index is not None and not flags[id(r)] for r in explicit + soft):
        return explicit, soft
    return [r for r in explicit if not flags[id(r)]], [r for r in soft if not flags[id(r)]]


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence holding position `at` starts (looking back 400 characters at most); the full stop after a
    lone letter ("A. Handbag") ends no sentence."""
    low = max(0, at - 400)
    ends = [m.end() for m in _SENTENCE_END.finditer(text, low, at)
            if not (m.group().startswith(".") and LONE_LETTER.search(text, max(0, m.start() - 2), m.start()))]
    return ends[-1] if ends else low


def outvoted(hedge: _Reading, explicit: list[_Reading]) -> _Reading:
    """A last hedge of markers of other options after one option's answer was given three or more times (twice as
    often as any other; "[[C]] is the final answer." over and over, then "[[D]] would overestimate while [[B]] and
    [[A]] fall far short"): the hedge compares the options the model set aside, the repeated answer stands. Any
    other reading as it is."""
    if hedge.index is not None or not hedge.ambiguous:
        return hedge
    before = [r for r in explicit if r.at < hedge.at and r.index is not None]
    if not before:
        return hedge
    counts = Counter(r.index for r in before)
    top, n = counts.most_common(1)[0]
    if n < 3 or n < 2 * max((m for i, m in counts.items() if i != top), default=0) or top in hedge.ambiguous:
        return hedge
    return max((r for r in before if r.index == top), key=lambda r: r.at)


def stray_marker(text: str, last: _Reading, stated: list[_Reading], marked: list[_Reading]) -> _Reading:
    """The last answer before an answer turns to noise when it is the only bare marker of an option the model never
    stated, after it stated one other option (answer lines, conclusions in `stated`) and stated or marked it (`marked`:
    the markers) on two or more lines of `text` ("最终答案是：[[B]]" over and over, then "highlight='[[C]]'",
    "[[D]]imens>" or "MouseEventHandler([[C]])" in the code-like garbage the noise starts with): the stated answer.
    A last hedge of markers one of whose options the model stated before it ("因此选项D最符合……" then "[[D]] [[A]] [[B]]
    [[D]] [[D]] ..."): that option. Nothing stated, one option marked on three or more lines stands the same way.
    Any other reading as it is."""
    if last.path != "marker":
        return last
    said = [r for r in stated if r.index is not None and r.at < last.at]
    options = {r.index for r in said}
    if last.index is None:
        return max(said, key=lambda r: r.at) if len(options) == 1 and options <= set(last.ambiguous) else last
    # nothing stated: the markers before it ("[[A]]" on three or more lines, then one "[[C]]" in garbage)
    pool = said or [r for r in marked if r.index is not None and r.at < last.at]
    options = {r.index for r in pool}
    if len(options) != 1 or last.index in options or last.index in {r.index for r in stated}:
        return last
    lines = {text.count("\n", 0, r.at) for r in pool + marked if r.index in options and r.at < last.at}
    if len(lines) < (2 if stated else 3) or sum(r.index == last.index for r in marked) > 1:
        return last
    return max(pool, key=lambda r: r.at)


def dominated(text: str, hedge: _Reading, item: _Item) -> _Reading:
    """A hedge that is a long run of markers (twenty or more, nothing but separators between them) in which one
    option's marker makes four in five and the last five ("最终结论是：……40道……\n\n[[C]] [[B]] [[A]] [[D]] [[A]] [[C]]
    ... [[C]] [[C]] [[C]]" two hundred times): the model's answer run on, that option; any other reading as it is."""
    if hedge.index is not None or not hedge.ambiguous or hedge.path != "marker":
        return hedge
    named: list[int] = []
    end = hedge.at
    for m in item.patterns.marker.finditer(text, hedge.at):
        if text[end:m.start()].strip(_BETWEEN_MARKERS):
            break
        named.append(item.forms[normalise_text(group_token(m))])
        end = m.end()
    if len(named) < 20:
        return hedge
    top, count = Counter(named).most_common(1)[0]
    if count < 0.8 * len(named) or set(named[-5:]) != {top}:
        return hedge
    return _Reading(top, "marker", hedge.at)


def complemented(hedge: _Reading, explicit: list[_Reading], item: _Item) -> _Reading:
    """A last hedge of markers naming every option but one, right after a marker of that one ("[[D]] [[]]\n[[A]]\n
    [[B]]\n[[C]]"): the remaining options listed after the answer; the answer stands. Any other reading as it is."""
    if hedge.index is not None or hedge.path != "marker" or len(item.options) < 3:
        return hedge
    before = max((r for r in explicit if r.at < hedge.at), key=lambda r: r.at, default=None)
    if (before is None or before.path != "marker" or before.index is None or hedge.at - before.at > 40
            or before.index in hedge.ambiguous or {*hedge.ambiguous, before.index} != set(range(len(item.options)))
            or [before.index, *hedge.ambiguous] == list(range(len(item.options)))):
        return hedge  # "[[A]]，[],\n[[B]]，\n[[C]]，\n[[D]]" in label order lists the options
    return before


def scattered_listing(text: str, readings: list[_Reading], item: _Item, gap: int = 30) -> list[_Reading]:
    """The last readings when they are single markers a few characters apart (at most `gap`) naming three or more
    different options, no more than twice as many markers as options, none followed by an answer word
    ("1[[B]]]]>。[[C]]ąż。[[D]]12alice"): options listed with junk between them, not answers; else []."""
    options = len(item.options)
    words = long_answer_words()
    run: list[_Reading] = []
    for r in sorted(readings, key=lambda r: r.at, reverse=True):
        if r.path != "marker" or r.index is None or (run and run[-1].at - r.at > gap):
            break
        if any(w in text[r.at:r.at + 16].lower() for w in words):
            return []  # "因此 [[D]] 是最有可能的答案": stated, not listed
        run.append(r)
    if options < 3 or len(run) > 2 * options or len({r.index for r in run}) < 3:
        return []
    return run


def opening_conflict(clean: str, before: list[_Reading], said: list[_Reading], item: _Item) -> _Reading | None:
    """An answer that opens with answers naming two or more options and turns into noise soon after (`clean`, the
    text before the noise, under 250 characters; the first answer within the first 100): "[[A]]。 [[B]]。 1 1 1 ...",
    "[[C]]。另加一点：[[D]] <noise>". It never settled on one: `ambiguous` naming them, unless its answer lines and
    phrases (not bare markers) and the conclusions it `said` all name one option ("[[C]]]] ... [[A]]]] 答案为：C": C;
    "“[[D]]”在 点，[[A]] 或是，[[B]]”，因此 [[D]] 是最有可能的答案": D). Careful readers read no
    answer in such openings (issue 21, rounds 13-28: 8 of 8 where the markers alone disagree)."""
    if not before or len(clean.strip()) >= _SHORT_CLEAN or min(r.at for r in before) > _OPENING:
        return None
    named = tuple(dict.fromkeys(i for r in before for i in ((r.index,) if r.index is not None else r.ambiguous)))
    if len(named) < 2:
        return None
    stated = [r for r in before + said if r.path != "marker" and r.index is not None]
    ends = sorted(r.at for r in before)[1:] + [len(clean)]
    stated += [r for r, end in zip(sorted(before, key=lambda r: r.at), ends, strict=True)
               if r.path == "marker" and r.index is not None and item.phrases.tail.search(clean, r.at, end)]
    if stated and len({r.index for r in stated}) == 1:
        return max(stated, key=lambda r: r.at)
    return _Reading(None, "invalid", 0, named)


_SHORT_CLEAN = 250  # characters of clean text before the noise: an opening, not an answer reasoned out
_OPENING = 100  # the first answer stands within this many characters of the start


def opening_marker_then_noise(text: str, broken: int | None, item: _Item) -> bool:
    """Whether an answer opens with a bare marker (its first characters) and turns into noise (at `broken`, found
    here when None) within 150 characters: the marker came before any reasoning ("[[D]]')),1 dobhalb
    accompanyete ...")."""
    first = item.patterns.marker.search(text, 0, 12)
    if first is None or text[:first.start()].strip(" \t\n([（【"):
        return False
    if broken is None:
        broken = degenerate_start(unicodedata.normalize("NFKC", text[:2000]))
    return broken is not None and broken <= 150


def reasoned_in_noise(text: str, clean: str, before: list[_Reading], firm: list[_Reading],
                      item: _Item) -> _Reading | None:
    """An answer that is only a bare marker (or a hedge of markers, "[[B]] [[D]]"), or only passing answer phrases
    ("根据选择“C. 水母”可能是一种很混淆的选择"), before it turns into noise, then reasons on and states an answer (an
    answer phrase and that option's marker): the reasoned answer, when every answer stated in the noise names that
    one option; else None. The opening marker was written before any reasoning."""
    phrases_only = bool(before) and all(r.path == "conclusion" for r in before)
    if not phrases_only and (len(before) != 1 or before[0].path != "marker"
                             or not opening_marker_then_noise(text, len(clean), item)):
        return None
    # stated: an answer phrase or line, or a marker right after a conclusion cue ("……忽视他们的行为。因此：\n\n[[A]]")
    stated = [r for r in firm if r.at >= len(clean) and (r.path != "marker" or item.phrases.cue.search(
        text, max(len(clean), r.at - 12), r.at))]
    named = {r.index for r in stated}
    if len(named) != 1 or None in named or any(r.index in named for r in before):
        return None
    first = min(stated, key=lambda r: r.at)
    if any(r.path == "marker" and len(clean) <= r.at < first.at for r in firm):
        return None  # markers in the noise before the reasoning ("[[C]] ... [[A]]<|…|> ... 正确答案应该是 [[C]]")
    marked = [r for r in firm if r.at >= first.at and r.path == "marker" and r.index == first.index]
    return first if marked and marked[0].at - first.at < 80 else None
