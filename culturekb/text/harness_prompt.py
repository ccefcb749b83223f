"""Taking a harness prompt apart: the question, its context, its options and its instructions.

An evaluation harness sends one string such as::

    Hint: a festival at night.
    Question: Why do people light the red lanterns?
    Options:
    A. to honour ancestors
    B. to scare ghosts
    Answer with the option's letter from the given choices directly.

`parse_harness_prompt` splits it into the question ("Why do people light the red lanterns?"), the context
("a festival at night."), the options (A and B, also when written on one line: "A. x B. y", "(A) x", "A) x")
and the instruction sentences ("Answer with ..."), so that concepts come from the question and the options
apart, and never from the instructions. The labels ("Question:", "问题：" ...) and the words that open an
instruction sentence ("answer", "please", "请" ...) are data: the sections ``[question_labels]``,
``[option_labels]``, ``[context_labels]`` and ``[instruction_openers]`` of
``culturekb/data/languages/instructions/<code>.txt`` (with their source). A prompt is read with the labels of
every language at once: harness prompts mix languages (an English instruction under a Chinese question).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from culturekb.text.languages import instruction_languages, script_of, word_list_sections

__all__ = ["HarnessPrompt", "PromptLabels", "parse_harness_prompt", "prompt_labels"]

_OPTION_MARK = re.compile(r"(?:(?<=\s)|^)(?:[(（]([A-Za-z])[)）]|([A-Z])[.)．:：])\s*(?=\S)", re.M)
_SENTENCE_END = re.compile(r"(?<=[.?!。？！؟।])\s*")
_LABEL_SEP = ":：-"


@dataclass(frozen=True)
class PromptLabels:
    """The labels and instruction openers of all languages with an instruction file, lowercased."""

    question: tuple[str, ...]
    options: tuple[str, ...]
    context: tuple[str, ...]
    openers: tuple[str, ...]


_AM = re.compile("\u0e4d\u0e32|\u0ecd\u0eb2")


def _whole_am(m: re.Match[str]) -> str:
    return "\u0e33" if m.group() == "\u0e4d\u0e32" else "\u0eb3"


@lru_cache(maxsize=1)
def prompt_labels() -> PromptLabels:
    """The labels of every language (`culturekb/data/languages/instructions/<code>.txt`), longest first."""
    found: dict[str, set[str]] = {"question_labels": set(), "option_labels": set(), "context_labels": set(),
                                  "instruction_openers": set()}
    for code in instruction_languages():
        sections = word_list_sections(f"languages/instructions/{code}.txt")
        for name, bucket in found.items():
            # the lists are NFKC-normalised, which splits the Thai and Lao vowel AM (ำ -> ํา); prompts keep it whole
            bucket.update(w for word in sections.get(name, []) for w in (word, _AM.sub(_whole_am, word)))

    def ordered(name: str) -> tuple[str, ...]:
        return tuple(sorted(found[name], key=lambda w: (-len(w), w)))

    return PromptLabels(ordered("question_labels"), ordered("option_labels"), ordered("context_labels"),
                        ordered("instruction_openers"))


@dataclass(frozen=True)
class HarnessPrompt:
    """A harness prompt taken apart (each part stripped; "" or () when absent)."""

    question: str
    context: str
    options: tuple[str, ...]
    instructions: tuple[str, ...]

    @property
    def stem(self) -> str:
        """The question and its context, the text the main concepts come from."""
        return "\n".join(p for p in (self.question, self.context) if p)


def _strip_label(line: str, labels: tuple[str, ...]) -> str | None:
    """The rest of `line` when it starts with one of `labels` followed by ':' (or is the label alone), else None."""
    low = line.lower()
    for label in labels:
        if low.startswith(label):
            rest = line[len(label):].lstrip()
            if not rest:
                return ""
            if rest[0] in _LABEL_SEP:
                return rest[1:].strip()
    return None


def _is_instruction(sentence: str, openers: tuple[str, ...]) -> bool:
    """Whether `sentence` opens with an instruction word (a whole word; any continuation in Chinese or Japanese)."""
    low = sentence.strip().lower()
    for opener in openers:
        if low.startswith(opener):
            rest = low[len(opener):]
            if not rest or unicodedata.category(rest[0])[0] not in "LMN" or _unspaced(opener):
                return True
    return False


def _unspaced(word: str) -> bool:
    return any(script_of(c) in ("han", "kana") for c in word)


def _options(text: str) -> tuple[str, list[str], str]:
    """(text before the options, the options, text after the last option's line) for a run of consecutive option
    letters starting at A (at least two); no options: (text, [], "")."""
    marks = [(m.start(), m.end(), (m.group(1) or m.group(2)).upper()) for m in _OPTION_MARK.finditer(text)]
    best: list[tuple[int, int, str]] = []
    for i, (_, _, letter) in enumerate(marks):
        if letter != "A":
            continue
        run = [marks[i]]
        for mark in marks[i + 1:]:
            if ord(mark[2]) == ord(run[-1][2]) + 1:
                run.append(mark)
        if len(run) > len(best):
            best = run
    if len(best) < 2:
        return text, [], ""
    options = [text[best[k][1]:best[k + 1][0]].strip() for k in range(len(best) - 1)]
    last, _, after = text[best[-1][1]:].partition("\n")
    options.append(last.strip())
    return text[:best[0][0]], options, after


def parse_harness_prompt(text: str) -> HarnessPrompt:
    """Split a harness prompt into question, context, options and instruction sentences (see the module doc)."""
    labels = prompt_labels()
    before, options, after = _options(text or "")
    question: list[str] = []
    context: list[str] = []
    instructions: list[str] = []
    for raw in f"{before}\n{after}".splitlines():
        line = raw.strip()
        if not line:
            continue
        if _strip_label(line, labels.options) is not None and not _strip_label(line, labels.options):
            continue  # an "Options:" header
        target = question
        rest = _strip_label(line, labels.question)
        if rest is None:
            rest = _strip_label(line, labels.context)
            target = context if rest is not None else question
        line = line if rest is None else rest
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            if not sentence:
                continue
            if _is_instruction(sentence, labels.openers):
                instructions.append(sentence)
            else:
                target.append(sentence)
    opts = tuple(o for o in (_strip_trailing_instruction(o, labels.openers, instructions) for o in options) if o)
    return HarnessPrompt(" ".join(question), " ".join(context), opts, tuple(instructions))


def _strip_trailing_instruction(option: str, openers: tuple[str, ...], instructions: list[str]) -> str:
    """An option without instruction sentences glued after it on its line ("B. ghosts Answer with ...")."""
    kept = []
    for sentence in _SENTENCE_END.split(option):
        if sentence.strip() and _is_instruction(sentence, openers):
            instructions.append(sentence.strip())
        elif sentence.strip():
            kept.append(sentence.strip())
    return " ".join(kept)
