"""Read the chosen option of a multiple-choice answer: a letter (A, B, C ...) from free model output.

Any benchmark with lettered (or numbered) options uses it (CulturalToM-VQA; a harness task with options); 2 to 26
options. Real answers reason before they answer, walk through the options ("(a) ... (b) ... (c) ...") and conclude
elsewhere, so **the final answer wins**: the text after a closing ``</think>`` is read first, then the whole
answer, and among the places that name an option the last one counts. What is read, in order of evidence:

1. Explicit answers, the last one in the text wins:
   - JSON (`path="json"`): an object with an answer key (``answer``, ``choice`` ... and every vocabulary's answer
     keys) whose value names an option;
   - a marker (`path="marker"`): ``[[B]]``, ``\\boxed{B}``, ``<answer>B</answer>``, ``[答案C]``, ``【C】``;
   - an answer line or phrase (`path="answer-line"`): ``Answer: B``, ``**Final answer:** (C)``, ``答案：B``,
     "the answer is B", "答案是B" (``culturekb/data/choice_words.json``).
2. Conclusions (`path="conclusion"`), when they come after every explicit answer or there is none: a conclusion
   phrase before the option ("the best course of action would be option (d)", "最合适的回答是 (d)", "I recommend
   choice (d)"), after it ("选项(d)是最好的选择", "(c) is correct"), or a concluding sentence ("Therefore ...",
   "Based on the reasoning ...", "因此 ...") that names exactly one option. Phrases per language, as data:
   ``culturekb/data/languages/choices/<code>.txt``. A sentence with a negation ("(a) is not correct") concludes
   nothing.
3. A last line that is only an option (`path="final-letter"`): ``d``, ``(D)``, ``D. Briefcase``.
4. An answer that starts with an option (`path="letter"`): ``B``, ``(B)``, ``B. Backpack``, ``B) ...``, ``选项B``,
   unless the answer walks through several options (then the leading one is just the first of the walk-through).
   "A man ..." is not read as A: a letter must be followed by punctuation, the end, or its own option's text. An
   answer that gives its option first, on a line of its own, then an explanation under a header ("e\n\n**解説:**
   ..."), is read by that line before any conclusion in the explanation (`answer_first`)
5. The option's text instead of the letter (`path="option-text"`): a short answer that is or mentions exactly one
   option's text, or, in a long one not cut off mid-sentence, the last sentence that mentions an option; last, a
   concluding sentence that restates one option in other words (`_choice_content`).
6. Otherwise ``invalid`` (letter None): scored wrong, never dropped. Hedges ("A or C", "between B and D") and
   contradictions (``"C" - green_drawer`` where green_drawer is option B) are ``invalid`` with `ambiguous` listing the
   letters named: recorded, never guessed.

Option labels may be upper or lower case, full-width (``Ｂ``, ``（c）``), Arabic and Devanagari option letters
(أ ب ج د, क ख ग घ), or numbers 1..n with ``numbered=True``. Every answer keeps how it was read (`path`, also
`parse_path`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import cache

from culturekb.inference import _choice_text as ct
from culturekb.inference._choice_content import restated_answer
from culturekb.inference._choice_layout import (
    answer_first,
    before_its_reason,
    before_reason,
    closing_label,
    cut_off,
    declined,
    described,
    identifier,
    introduced_line,
    leading,
    loops_unconcluded,
    marker_column,
    opens_walk_through,
    reopened,
    second_choice,
    tentative,
    walks_through,
    written_out,
)
from culturekb.inference._choice_lists import (
    complemented,
    cycling_tail,
    dominated,
    is_listing,
    late_listings_dropped,
    opening_conflict,
    outvoted,
    reasoned_in_noise,
    scattered_listing,
    stray_marker,
    unconditional,
    walk_through_tail,
)
from culturekb.inference._choice_text import option_letters
from culturekb.inference._choice_turns import after_marker_spam, gemma_tokens, looped_marker, own_turn
from culturekb.inference._choice_values import (
    _BETWEEN_MARKERS,
    _CONNECTORS,
    ChoiceAnswer,
    ChoicePath,
    _contradiction,
    _disowned,
    _from_value,
    _hedged,
    _is_enumeration_item,
    _Item,
    _leading_letter,
    _letter_then_tail,
    _marker_run_to_end,
    _Reading,
    _sentences,
    _settled,
    _strong_at_start,
    _strong_labels,
    _without_option_text,
    answer_said_in_noise,
    joined_labels,
    ranges_as_hedges,
    taken_back,
)
from culturekb.inference._json_objects import json_objects
from culturekb.inference._lexicon import normalise_text
from culturekb.inference._noise import degenerate_start

__all__ = ["ChoiceAnswer", "ChoicePath", "option_letters", "parse_choice"]

_JSON_KEYS = ("answer", "final_answer", "choice", "option", "letter", "correct_option", "selected_option",
              "answer_letter", "prediction")
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
# what may stand between two markers that are read together as one hedge: spaces, a separator, a connector word
# (also after a token the model wrote, "[[D]]<|line|>或者 [[A]]", when a connector follows it)
_ADJACENT = re.compile(r"[\s,，、;；/|&“”\"「」『』(（]*(?:(?:<\|?/?[a-z_]{1,16}/?\|?>\s*)?(?:"
                       + "|".join(sorted(map(re.escape, _CONNECTORS), key=len, reverse=True))
                       + r")[\s,，、“”\"「」『』(（]*)?", re.IGNORECASE)
_HTML_TAG = re.compile(r"</?(?:b|i|u|em|strong)>", re.IGNORECASE)
_SOFT = ("option-text", "invalid", "conclusion")  # readings of a clean part that yield to an answer in the noise


def _explicit(text: str, item: _Item) -> list[_Reading]:
    """JSON answers, markers, answer lines and "the answer is" phrases, each with its position."""
    found: list[_Reading] = []
    keys = _answer_keys()
    for start, _, obj in json_objects(text):
        for k, v in obj.items():
            if _key(k) in keys and isinstance(v, str | int) and not isinstance(v, bool):
                index, ambiguous = _from_value(str(v), item)
                if index is not None or ambiguous:
                    found.append(_Reading(index, "json", start, ambiguous))
                    break
    found.extend(r for r in _markers(text, item) if not second_choice(text, r.at, item))  # not "另一答案是[[B]]"
    for m in item.phrases.header.finditer(text):
        index, ambiguous = _from_value(m.group("value"), item, text_ok=False)
        if index is not None:
            found.append(_Reading(index, "answer-line", m.start()))
    for m in item.patterns.bare.finditer(text):
        found.append(_Reading(item.forms[normalise_text(ct.group_token(m))], "answer-line", m.start()))
    for pattern in (item.phrases.line, item.phrases.answer_is):
        for m in pattern.finditer(text):
            if item.phrases.negation.match(m.group("value").lstrip(" *_\"“(")):
                continue  # "The answer is not listed, but the closest option is (J)": the value names no answer
            value_at = m.start("value")
            if taken_back(m.group("value"), item) or second_choice(text, value_at, item):
                continue  # "the answer is 21 * 2 * 120 = 5040. However, this is not ...", "another answer is B"
            if "\n" in text[m.start():value_at] and opens_walk_through(text[value_at:value_at + 800], item):
                continue  # "let's analyze each choice:\n\nA. He calls back ...\n\nB. He prepares ...": no answer
            index, ambiguous = _from_value(m.group("value"), item)
            if index is not None or ambiguous:
                found.append(_Reading(index, "answer-line", m.start(), ambiguous))
    return found


def _markers(text: str, item: _Item) -> list[_Reading]:
    """Answer markers; markers of different options side by side ("[[B]] [[D]]", "[[A]]/[[C]]") are one hedge."""
    found: list[_Reading] = []
    group: list[tuple[int, int]] = []  # (index, start) of adjacent markers
    end = -1

    def close() -> None:
        if group:
            labels = tuple(dict.fromkeys(i for i, _ in group))
            if (all(ct.bracketed(text, s) for _, s in group[1:]) and not ct.bracketed(text, group[0][1])
                    and len(labels) < len(item.options)):  # (not "[[A]] ([[B]] ([[C]] ([[D]]))", every option)
                labels = labels[:1]  # "[[B]] ([[C]]) ([[D]])": the answer, then others in brackets beside it
            found.append(_Reading(labels[0], "marker", group[0][1]) if len(labels) == 1
                         else _Reading(None, "marker", group[0][1], labels))

    for m in item.patterns.marker.finditer(text):
        index = item.forms[normalise_text(ct.group_token(m))]
        if group and _ADJACENT.fullmatch(text[end:m.start()]) is None:
            close()
            group = []
        group.append((index, m.start()))
        end = ct.marker_end(text, m)
    close()
    return found


def _conclusions(text: str, item: _Item) -> list[_Reading]:
    """Conclusion phrases and concluding sentences that name one option (or hedge between several); TeX math is
    blanked out first ("$H$ is the enthalpy": a symbol)."""
    text = ct.math_masked(text)
    found: list[_Reading] = []
    phrases = item.phrases
    for m in phrases.lead.finditer(text):
        value = m.group("value")
        sentence = re.split(r"(?<=[.!?。！？])\s", value, maxsplit=1)[0]
        if declined(text, m, item):
            continue
        if _disowned(sentence, item) or ("\n" in text[m.start():m.start("value") + 1]
                                         and opens_walk_through(text[m.start("value"):m.start("value") + 800], item)):
            continue  # "基于此信息的选择：\nA：“……”\nB：……": the options about to be weighed, no answer
        index, ambiguous = _from_value(sentence, item, text_ok=False)
        if index is None and not ambiguous:
            labels = _strong_labels(sentence[:40], item)
            if len(labels) == 1 and _strong_at_start(sentence, item):
                index = labels[0]
        if index is not None or ambiguous:
            found.append(_Reading(index, "conclusion", m.start(), ambiguous))
    found += _letter_then_tail(text, item)
    for start, sentence in _sentences(text):
        if not (phrases.cue.search(sentence) or phrases.tail.search(sentence)):
            continue
        if sentence.rstrip().endswith(("?", "？")) or phrases.no_answer.search(sentence):
            continue  # "So is the answer B?" asks, "therefore none of the given options A through O" declines
        labels = _strong_labels(sentence, item)
        # a negation rejects an option ("(a) is not correct"), unless it is only inside the option's own words
        # ("Therefore ... that (F) we cannot know what is right", F being "we cannot know what is right") or in
        # the reason given after it ("答案选项应该是“C”因为……但没有立即处理")
        if (phrases.negation.search(_without_option_text(sentence, labels, item))
                and phrases.negation.search(_without_option_text(before_reason(sentence, item), labels, item))):
            continue
        label = list(item.patterns.strong.finditer(sentence))[-1] if len(labels) == 1 else None
        if label and not _is_enumeration_item(sentence, item) and not second_choice(sentence, label.start(), item):
            conflict = _contradiction(labels[0], sentence[label.end():], item)
            found.append(_Reading(None, "conclusion", start, conflict) if conflict
                         else _Reading(labels[0], "conclusion", start))
        elif len(labels) > 1 and phrases.hedge.search(sentence):
            found.append(_Reading(None, "conclusion", start, tuple(labels)))
    return found


def _final_letter(text: str, item: _Item) -> _Reading | None:
    lines = [ln for ln in text.strip().splitlines() if ln.strip(" \t*_#>")]
    if len(lines) < 2:
        return None
    column = marker_column(lines, item)
    if len(column) == len(lines) and len(set(column)) > 1:  # "b\ne": nothing but labels, one per line: no one answer
        return _Reading(None, "final-letter", len(text), tuple(dict.fromkeys(column)))
    last = lines[-1].strip(" \t*_#>")
    named = [item.forms[normalise_text(ct.group_token(m))] for m in item.patterns.marker.finditer(last)]
    if named == list(range(len(item.options))) and not item.patterns.marker.sub("", last).strip(_BETWEEN_MARKERS):
        return None  # "[[A]] [[B]] [[C]] [[D]]" in label order lists the options ("[[D]] [[A]] [[B]] [[C]]" picks D)
    index = _leading_letter(last, item) if len(last) <= 100 and not identifier(last) else None
    if index is None:
        m = item.phrases.option_word.fullmatch(unicodedata.normalize("NFKC", last).strip(" *_.。:："))
        if m is not None and normalise_text(m.group("letter")) in item.forms:
            index = item.forms[normalise_text(m.group("letter"))]
    if index is None or joined_labels(last, index, item):  # "[[C]],[[D]] 因为 ...": two options listed
        return None
    column = marker_column(lines[:-1], item)
    if len(column) >= 3 and len({*column, index}) >= 3 and column[0] != index:
        # "[[B]]\n[[A]]\n[[C]]\n[[D]] (……应为[[B]])": the last of a column of options' markers, no answer of its own
        return None
    after = ct.without_label(last)
    if any(r.index not in (None, index) and r.path != "marker" for r in _explicit(after, item)):
        return None  # "[[C]]虽然部分符合逻辑……最符合条件的答案是[[B]]。": the line answers B after naming C
    rest = ct.clean(after)
    next_label = not rest and index > 0 and _leading_letter(lines[-2].strip(" \t*_#>"), item) == index - 1
    if ((rest and rest != ct.clean(item.options[index])) or next_label) and walks_through(text, item):
        return None  # the last item of a walk-through (or its next label, cut off: "E. means ...\nF."), no answer
    return _Reading(index, "final-letter", len(text))


def _option_text(text: str, item: _Item, whole: bool = True) -> tuple[int | None, tuple[int, ...]]:
    """The option a short answer is or mentions; in a long answer, the last sentence that mentions options."""
    if len(text) <= 200:
        return ct.by_text(text, item.options, reverse=False)
    if whole and cut_off(text):  # reasoning cut off before it concluded: the last option it named is no answer
        return None, ()
    last = _sentences(text)[-4:]
    if last and item.phrases.no_answer.search(last[-1][1]) and not ct.options_in(last[-1][1], item.options):
        return None, ()  # "..., only Jack knows it is in the green_bottle. Therefore, the answer cannot be determined."
    for _, sentence in reversed(last):
        named = ct.options_in(sentence, item.options)  # a negation inside the option's own words ("不同") is its own
        if item.phrases.negation.search(_without_option_text(before_its_reason(sentence, named, item), named, item)):
            continue
        if len(named) == 1:
            return named[0], ()
        if len(named) > 1:
            return None, tuple(named)
    return None, ()


def _as_answer(reading: _Reading, letters: Sequence[str]) -> ChoiceAnswer:
    """The answer a reading gives: its option, or invalid with the options it hedged between."""
    if reading.index is None:
        return ChoiceAnswer(None, None, "invalid", tuple(letters[i] for i in reading.ambiguous))
    return ChoiceAnswer(letters[reading.index], reading.index, reading.path)


def _parse_one(text: str, item: _Item, *, explicit_only: bool = False, finished: bool = False,
               whole: bool = True) -> ChoiceAnswer | None:
    letters = option_letters(len(item.options))

    def answer(reading: _Reading) -> ChoiceAnswer:
        return _as_answer(reading, letters)

    nfkc = ranges_as_hedges(unicodedata.normalize("NFKC", text), item)  # "one of B through O": no one option
    nfkc = _HTML_TAG.sub(lambda m: " " * len(m.group()), nfkc)  # "<b>她因此知道……</b>": no option b
    broken = degenerate_start(nfkc)
    if broken is not None:
        return _parse_degenerate(nfkc, broken, item, explicit_only=explicit_only)
    explicit = _explicit(nfkc, item)
    if explicit_only:
        # inside thinking: an explicit answer, or an answer phrase ("the most likely answer is D"), unless its
        # sentence is a guess under way ("perhaps the answer is C"); a thinking that reached </think> (`finished`)
        # has stopped weighing, so its last answer phrase stands even when hedged ("Maybe the intended answer is D")
        firm = [r for r in explicit + _answer_phrases(nfkc, item) if finished or not tentative(nfkc, r.at, item)]
        if finished:  # the thinking closed on a conclusion ("... so D is the most likely.\n</think>")
            firm += _closing_conclusions(nfkc, item)
        last = max(firm, key=lambda r: r.at, default=None)
        if last is not None and not finished and reopened(nfkc, last.at, item):
            return None  # cut off while still weighing: "... the answer is C.\n\nWait, maybe I'm overcomplicating"
        return answer(last) if last is not None else None
    if whole and not explicit and loops_unconcluded(nfkc, item, _conclusions):
        return None  # caught in a loop of reasoning to the token limit: it never concluded
    soft = _conclusions(nfkc, item)
    line = introduced_line(nfkc, item)  # "..., the lettuce is actually in:\n\nI. blue_container\n\n..."
    soft += [_Reading(line[1], "conclusion", line[0])] if line else []
    final = _final_letter(nfkc, item)
    explicit, soft = unconditional(nfkc, explicit, soft, item)  # not "如果……，选择[[D]]" beside an answer
    # markers naming every option ('randomly output one of "[[A]]", "[[B]]", "[[C]]" or "[[D]]"') list the options:
    # they revise no answer given before them
    undropped = explicit
    explicit = late_listings_dropped(explicit, item)
    if final is not None and any(r not in explicit and _marker_run_to_end(nfkc, r, item) for r in undropped):
        final = None  # the last line ends a listing of every option's marker ("[[D]]\n[[A]]\n[[B]]"), no answer
    lead = answer_first(nfkc, item)  # "e\n\n**解説:** ... A群 ...": the first line answers, the rest explains it
    if lead is not None and all(r.index == lead for r in explicit if r.index is not None or r.ambiguous):
        said = min((r for r in explicit if r.index == lead), key=lambda r: r.at, default=None)  # "Answer: C. ..."
        return ChoiceAnswer(letters[lead], lead, said.path if said is not None and said.at == 0 else "letter")
    if explicit and all(is_listing(r, item) for r in explicit):
        # nothing explicit but the instruction's marker list echoed back ("只有A选项…最符合上述分析\n\n[[A]] [[B]]
        # [[C]] [[D]]"): the list is no answer; a lone marker on the line after it ("...\n[[A]]"), a conclusion, or
        # failing that the options' text, says what it is
        said = final or max((r for r in soft if r.index is not None), key=lambda r: r.at, default=None)
        if said is None:  # an option's whole text on a line of its own, or in the last sentence naming options
            index = written_out(nfkc, item)
            index = index if index is not None else _option_text(nfkc[:min(r.at for r in explicit)], item, False)[0]
            said = _Reading(index, "option-text", 0) if index is not None else None
        if said is not None:
            return answer(said)
    # the markers of every option over and over in option order to the end ("最终答案为[[A]]。 <[[A]]> <[[B]]> <[[C]]>
    # <[[D]]> <[[A]]> <[[B]]> <", cut off anywhere) are a loop, not a revision: where it happens to stop says nothing
    cycle = cycling_tail(explicit, len(item.options)) or walk_through_tail(nfkc, explicit, item)
    if cycle:  # also options' markers each before its own text, from the first, cut off: a walk-through under way
        explicit = [r for r in explicit if r not in cycle]
        final = final if final is None or "\n" in nfkc[cycle[-1].at:].strip() else None  # its last line: no answer
    last_explicit = max(explicit, key=lambda r: r.at, default=None)
    last_soft = max(soft, key=lambda r: r.at, default=None)
    if last_explicit is not None and last_explicit.index is None and last_explicit.ambiguous:
        if final is not None and _marker_run_to_end(nfkc, last_explicit, item):
            final = None  # "[[B]]\n[[C]]\n[[D]]": the last line is the end of a list of markers, not an answer
        if last_explicit.path == "marker":  # "...选项是B。\n\n[[B]]([[D]])": B
            last_explicit = _settled(last_explicit, _beside(nfkc, last_explicit, explicit + soft, item))
            last_explicit = outvoted(last_explicit, explicit)  # "[[C]] is the answer" x3, "[[B]] and [[A]] fall short"
            last_explicit = complemented(last_explicit, explicit, item)  # "[[D]] [[]]\n[[A]]\n[[B]]\n[[C]]": D
    if final is not None and (last_explicit is None or last_explicit.index != final.index):
        # a bare option on the last line is the final word, unless an explicit answer says otherwise after a
        # walk-through, or the line describes that option ("*   **a: 乳癌 --- 飲酒習慣:** ..."): the explicit one stands
        if last_explicit is None or not (walks_through(nfkc, item) or described(nfkc, final.index, item)):
            return answer(final)
    if last_explicit is not None and (last_soft is None or last_soft.at <= last_explicit.at
                                      or last_soft.index == last_explicit.index or last_soft.index is None):
        return answer(last_explicit)
    if last_soft is not None:
        return answer(last_soft)
    if final is not None:
        return answer(final)
    lead_hedge = _hedged(nfkc.strip().splitlines()[0].strip(" \t[]()（）【】*"), item) if nfkc.strip() else ()
    if lead_hedge:  # "[[B, D]]"
        return answer(_Reading(None, "invalid", 0, lead_hedge))
    index = leading(nfkc, item)
    if index is not None:
        return ChoiceAnswer(letters[index], index, "letter")
    index = closing_label(nfkc, item)
    if index is not None:
        return ChoiceAnswer(letters[index], index, "final-letter")
    index, ambiguous = _option_text(nfkc, item, whole)  # not `whole`: the clean part of an answer turned to noise
    if index is not None or ambiguous:
        return answer(_Reading(index, "option-text", 0, ambiguous))
    hedge = _hedged(nfkc, item) if len(nfkc) <= 40 else ()
    if hedge:
        return answer(_Reading(None, "invalid", 0, hedge))
    return None


def _closing_conclusions(text: str, item: _Item) -> list[_Reading]:
    """Conclusions in the last paragraph of a thinking that reached ``</think>`` (its last 600 characters at
    most): where the model stopped weighing."""
    ends = list(_THINK_END.finditer(text))
    if not ends:
        return []
    end = ends[-1].start()
    start = max(text.rfind("\n\n", 0, end), end - 600, 0)
    return [_Reading(r.index, r.path, start + r.at, r.ambiguous) for r in _conclusions(text[start:end], item)]


def _beside(text: str, hedge: _Reading, readings: list[_Reading], item: _Item) -> list[_Reading]:
    """The readings that may settle a hedge of markers: on its own line or the next non-empty line before or after
    it, standing on their own (not an answer line whose value is the hedge itself, "最终答案：[[A]] [[D]]")."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"[^\n]*\S[^\n]*", text)]  # the non-empty lines
    here = next((i for i, (s, e) in enumerate(spans) if s <= hedge.at < e), None)
    if here is None:
        return []
    lo, hi = spans[max(0, here - 1)][0], spans[min(len(spans) - 1, here + 1)][1]
    near = []
    for r in readings:
        if r is hedge or not lo <= r.at < hi:
            continue
        if r.at < hedge.at:
            own = _explicit(text[r.at:hedge.at], item) + _conclusions(text[r.at:hedge.at], item)
            if r.index not in {x.index for x in own}:
                continue
        near.append(r)
    return near


def _answer_phrases(text: str, item: _Item) -> list[_Reading]:
    """Conclusion phrases that are answers in all but name: a phrase with an answer word ("the most likely answer
    is D", "最可能的答案是 D") or a Chinese/Japanese one ("故选 B", "故:B", "我选择 C"), right before the option."""
    words = ct.long_answer_words()
    found = []
    for m in item.phrases.lead.finditer(text):
        phrase = text[m.start():m.start("value")].lower()
        if not (any(w in phrase for w in words) or ct.NOSPACE.search(phrase)):
            continue
        if declined(text, m, item):
            continue
        if _disowned(re.split(r"(?<=[.!?。！？])\s", m.group("value"), maxsplit=1)[0], item):
            continue
        index, ambiguous = _from_value(m.group("value"), item, text_ok=False)
        if index is None and not ambiguous:
            value = m.group("value")
            labels = _strong_labels(value[:40], item)
            if len(labels) == 1 and _strong_at_start(value, item):
                index = labels[0]
        if index is not None or ambiguous:
            found.append(_Reading(index, "conclusion", m.start(), ambiguous))
    return found


def _parse_degenerate(text: str, broken: int, item: _Item, *, explicit_only: bool) -> ChoiceAnswer | None:
    """An answer that turns into noise at `broken`: what the text before the noise says (an option's word or a
    passing conclusion there yields to an explicit answer in the noise); else the first explicit answer in the
    noise (a marker or an answer line a human would still read), never a conclusion or a letter in the noise."""
    letters = option_letters(len(item.options))
    clean = text[:broken].rstrip()
    firm = late_listings_dropped(_explicit(text, item) + _answer_phrases(text, item), item, agreeing=True)
    looped = looped_marker(text, broken, item)  # the noise is one option's marker over and over: the answer
    if looped is not None:
        return looped
    before = [r for r in firm if r.at < len(clean)]
    scattered = scattered_listing(text, before, item)
    if scattered:  # "[[C]]eptentals6VIP\n [[D]]_terr Adolf\n [[A]]_bang\n [[B]]_atted …": the options listed into noise
        before = [r for r in before if r not in scattered]
        said = [] if explicit_only else [r for r in _conclusions(text[:scattered[-1].at], item) if r.index is not None]
        if not before and said:  # "最可能的答案选项是B，……\n[[B]]！或[[C]]！或[[D]]！或[[A]]！": B
            return _as_answer(max(said, key=lambda r: r.at), letters)
        if not before:
            listed = tuple(dict.fromkeys(r.index for r in reversed(scattered) if r.index is not None))
            return _as_answer(_Reading(None, "invalid", 0, listed), letters)
    said = [] if explicit_only or not before else _conclusions(clean, item)  # read only where an answer stands before
    reasoned = reasoned_in_noise(text, clean, before, firm, item)
    if reasoned is not None:  # "[[C]]<noise> 根据故事的内容……因此最有可能的答案是A。 [[A]]": A
        return _as_answer(reasoned, letters)
    opening = opening_conflict(clean, before, said, item)  # "[[A]]。[[B]]。 1 1 1 ...": no settled answer
    if opening is not None:
        return _as_answer(opening, letters)
    if before:  # the last answer before the noise; a passing conclusion after it is not read
        last = dominated(text, _settled(max(before, key=lambda r: r.at), firm), item)
        stated = [r for r in before + said if r.path != "marker"]
        last = stray_marker(text, last, stated, [r for r in before if r.path == "marker"])  # "[[B]]" x5, "'[[C]]')"
        lines = [r for r in before if r.path == "answer-line" and r.index is not None and r.at < last.at - 30]
        if last.index is None and last.path == "marker" and lines and lines[-1].index not in last.ambiguous:
            last = lines[-1]  # "答案：[[B]] 是最可能的反应……\n最上有“[[A]]”，“[[D]]”，并其他心的lgPainter": B
        return _as_answer(last, letters)
    after = [r for r in firm if r.at >= len(clean)]
    first = min(after, key=lambda r: r.at, default=None)
    stated = [r for r in after if r.index is not None and r.path != "marker"]
    if first is not None and first.index is None and first.path == "marker" and stated:
        first = min(stated, key=lambda r: r.at)  # a column of markers in the noise, then "答案是[[B]]": B
    first = _settled(first, firm) if first is not None else None
    if clean.strip():
        found = _parse_one(clean, item, explicit_only=explicit_only, whole=False)
        if found is not None and found.path == "option-text" and walks_through(clean, item):
            found = None  # 'B. "Daniel expresses regret ..." - It might seem like, butdeserialize error |->': cut off
        # an explicit answer after the noise beats an option's word or a passing conclusion in the clean part
        if found is not None and (found.valid or found.ambiguous) and not (
                found.path in _SOFT and first is not None and first.index is not None):
            return found
    named = tuple(dict.fromkeys(r.index for r in after if r.index is not None))
    if first is not None and not stated and len(named) >= 3:  # "[[A]]。 - 1 -\n[[C]]。\n[[D]]。…[[B]]。": a listing,
        told: list[int | None] = [r.index for r in _conclusions(text[:first.at], item) if r.index is not None]
        told.append(_option_text(text[max(len(clean), first.at - 150):first.at], item, False)[0])
        if first.index not in told[-2:]:  # unless said before it ("最有可能的反应是…“是笑脸”\n[[D]][][[B]]…")
            return _as_answer(_Reading(None, "invalid", 0, named), letters)
    first = first if first is not None else answer_said_in_noise(text[len(clean):], item)  # "可推测答案:D.callref"
    return _as_answer(first, letters) if first is not None else None


def parse_choice(text: str | None, options: Sequence[str], *, numbered: bool = False,
                 language: str | None = None, thinking: bool = False) -> ChoiceAnswer:
    """The option an answer chose among `options` (in label order A, B, ... or 1, 2, ... with `numbered`); see the
    module docstring for the rules. `language` (a code such as "zh") narrows the conclusion phrases to that
    language plus English; None reads every language's. `thinking`: the model is a reasoning model whose output
    starts inside its thinking (the ``<think>`` tag was in the prompt), so an answer without ``</think>`` never
    left its thinking and only an explicit answer in it counts, never a passing conclusion. Never raises for a bad
    answer: an unreadable, hedged or contradictory one is ``invalid``."""
    option_letters(len(options))  # checks the number of options
    raw = gemma_tokens((text or "").strip())  # "b<unused95>答え: b"
    if not raw:
        return ChoiceAnswer(None, None, "invalid")
    item = _Item(tuple(options), numbered, language)
    if language is not None:
        ct.conclusion_words(language)  # a language without phrases fails here, with the list of those known
    found = after_marker_spam(raw, item, thinking, _read) or own_turn(raw, item, thinking, _read)
    if found.valid or found.ambiguous or thinking or _THINK_END.search(raw) or "<think>" in raw[:200].lower():
        return found
    return restated_answer(raw, item) or found  # nothing names an option: one restated in other words may


def _answer_loop(text: str, item: _Item) -> tuple[str, tuple[int, ...]]:
    """An answer that ends in a loop of three or more answer-only lines naming different options ("The answer is
    (J).\nThe answer is (A).\nThe answer is (C).\n..."; a few-shot prompt's answer lines written on after the
    model's own answer, MMLU-Pro's Yi-6B and Phi-3): (the text before the loop, the options the loop names); else
    (text, ()). The loop is not an answer; the model's answer is what it said before it."""
    lines = text.rstrip().split("\n")
    if len(lines) < 3:
        return text, ()
    tail = [ln.strip() for ln in lines[-12:] if ln.strip()][-4:]
    if sum(len(ln) <= 40 for ln in tail) < 3:  # no room for a loop of short lines (most answers): done cheaply
        return text, ()
    end = len(lines)
    last = lines[-1].strip()
    if last and _answer_only_line(last, item) is None and any(ln.strip().startswith(last) for ln in lines[-3:-1]):
        end -= 1  # the loop cut off mid-line ("The answer is")
    named: list[int] = []
    start = end
    while start > 0:
        line = lines[start - 1].strip()
        if line:
            index = _answer_only_line(line, item)
            if index is None:
                break
            named.append(index)
        start -= 1
    if len(named) < 3 or len(set(named)) < 2:
        return text, ()
    return "\n".join(lines[:start]), tuple(dict.fromkeys(reversed(named)))


def _answer_only_line(line: str, item: _Item) -> int | None:
    """The option a short line that is only an answer line ("The answer is (J).", "Answer: C") names (a marker
    alone is not one: "[[B]]" lines are read as markers, a run of them as a hedge)."""
    if len(line) > 40 or not any(p.search(line) for p in (item.phrases.answer_is, item.phrases.line,
                                                           item.patterns.bare)):
        return None
    readings = [r for r in _explicit(line, item) if r.path == "answer-line"]
    found = {r.index for r in readings}
    if len(found) != 1 or min(r.at for r in readings) > 2:  # words before the answer: not only an answer
        return None
    return found.pop()


def _read(raw: str, item: _Item, thinking: bool) -> ChoiceAnswer:
    """The option an answer (cut at the end of the model's turn) chose."""
    before, loop = _answer_loop(raw, item)
    if loop:
        found = _read(before, item, thinking) if before.strip() else None
        if found is not None and (found.valid or found.ambiguous):
            return found
        letters = option_letters(len(item.options))
        return ChoiceAnswer(None, None, "invalid", tuple(letters[i] for i in loop))
    parts = _THINK_END.split(raw)
    # (text, explicit answers only): after </think> every rule; the thinking itself only for an explicit answer
    candidates = [(parts[-1].strip(), False)] if len(parts) > 1 and parts[-1].strip() else []
    unfinished = len(parts) == 1 and (thinking or bool(re.match(r"\s*<think>", raw, re.IGNORECASE)))
    candidates.append((raw, len(parts) > 1 or unfinished))
    first_invalid: ChoiceAnswer | None = None
    for candidate, explicit_only in candidates:
        found = _parse_one(candidate, item, explicit_only=explicit_only, finished=len(parts) > 1)
        if found is not None and found.valid:
            return found
        if found is not None and first_invalid is None:
            first_invalid = found
    return first_invalid or ChoiceAnswer(None, None, "invalid")


@cache
def _answer_keys() -> frozenset[str]:
    keys = {k for k in _JSON_KEYS}
    keys.update(_key(w) for w in ct.answer_words())
    return frozenset(keys)


def _key(name: object) -> str:
    return re.sub(r"[\s\-]+", "_", normalise_text(str(name)).strip())
