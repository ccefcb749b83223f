"""Real multiple-choice answers of public model-output sets, and each set's own extraction rule, reimplemented.

A row (JSONL) is one model answer: ``set``, ``source`` (repository@commit), ``id``, ``model``, ``language``,
``reasoning`` (direct / cot / think), ``options`` (in the order the model saw them), ``gold`` (0-based index of the
right option) and ``answer`` (the model's text). The whole sets stay outside the repository (benchmarks/
make_real_answers.py writes them from a fetched mirror); a few hundred rows ship as
tests/fixtures/real_answers/sample.jsonl (licences in the NOTICE there).

Each set's rule is written here as its repository applies it, so that the benchmark compares culturekb's reader
with the rule the set's own numbers were computed with:

- ``tombench-outputs`` (ToMBench outputs published in joel-wu/ToMBench, get_results.py, MIT): ``[[A]]`` ...
  ``[[D]]`` in A-B-C-D order, then ``[A]`` ... ``[D]``, then the last capital A-D anywhere in the text, else "A".
  Invalid here: the text holds no A-D at all (the rule then says "A"), or a letter the item does not have.
  Guessed (``SourceVerdict.guessed``): that "A" default.
- ``hi-tom-responses`` (ying-hui-he/Hi-ToM_dataset, analyze_new.ipynb, Apache-2.0): no letter is extracted;
  a snippet is cut (GPT-3.5: the 30 characters after "answer is", else the last line; Claude: after "answer
  is" / "in:", else the last paragraph; others: the last 150 characters; "unknown" when the answer says it cannot
  tell), and the answer counts as right when the snippet names the gold location (if it names any colour word)
  or else contains the gold letter as a character anywhere. Invalid here: "unknown", or a snippet with neither a
  location nor a capital option letter. Guessed: counted right only because the gold letter occurs inside a word
  ("### Assistant", "Answer") and nowhere standing alone.
- ``mmlu-pro-outputs`` (TIGER-AI-Lab/MMLU-Pro, evaluate_from_local.py, Apache-2.0): "answer is (X)", else the last
  "Answer: X", else the last capital A-J standing alone anywhere; none found: a random option. Invalid and guessed
  here: that random option.
- ``korean-llm-eval`` (hsr87/evaluate-llm-on-korean-dataset, util/custom_parser.py ``BaseMultipleChoiceParser``,
  MIT; KMMLU, KMMLU-HARD, CLIcK, KorMedMCQA, KoBALT answers): a first line that is one option letter; the first word
  after "### ANSWER"; "answer", "답변" or "정답" then a letter; "(X)" or "[X]"; a line opening "X." or "X)";
  ``<answer>X</answer>``; a last line that is one letter; else the first option letter anywhere, either case
  (every step case-insensitive, a letter the item does not have skipped). Guessed: that last step's letter stands
  inside a word ("the" holds no A-D, "and" holds an "a").
- ``enem-2022-outputs`` (piresramon/gpt-4-enem, lm_eval/tasks/enem.py ``ENEM.process_results``, MIT): the last
  capital A-E followed by a full stop, else the last capital A-E anywhere; none: the answer is scored wrong.
  Guessed: the fallback's letter stands inside a word ("ENEM", "INSS").
- ``igakuqa-outputs`` (aki-wada/IgakuQA-evaluation, evaluate_prompt_comparison.py ``extract_answer``; no licence file:
  measured, never shipped; Japanese medical licensing examination 2022, options a-e): after removing thinking blocks
  and special tokens, lower-cased: a first line of letters a-e only; "正解は X", "正解: X", "選択肢は X"; "答え:" or
  "回答:" then letters; else every a-e in the first 20 characters. Two or more letters: read as that many (scored
  wrong on the single-answer questions kept here; recorded as no single option). Guessed: the letters of that last
  step, which come from any word ("recommend" holds c, d, e).
- ``meld-llm-emotions`` (Huyoyo1/Emotion, code/Dia_gpt4o.py; free-text emotion answers, no licence file: measured,
  not shipped): the answer lower-cased must equal the gold label. Compared with
  ``culturekb.inference.parsing.parse_prediction`` (label words) instead of the option reader.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb.inference.choices import option_letters

HERE = Path(__file__).parent
SAMPLE = HERE.parent / "tests" / "fixtures" / "real_answers" / "sample.jsonl"


@dataclass(frozen=True)
class SourceVerdict:
    """What a set's own rule made of an answer: the option it read (None when it reads no letter or the rule
    only judges), whether it counted it right, and whether the answer was unreadable to it."""

    index: int | None
    correct: bool
    invalid: bool
    guessed: bool = False
    """The rule credited (or read) the answer only through its fallback guess: ToMBench's "A" when the text holds no
    A-D at all; Hi-ToM's gold letter found inside a word ("### Assistant" holds an "A") rather than standing alone."""

    def agrees(self, index: int | None, right: bool) -> bool:
        """Whether a reader that read option `index` (None: none), scored `right`, reads the answer as this rule
        does: the same option, none by both included; a rule that only judges (Hi-ToM: no option, not invalid)
        agrees on the verdict."""
        judged = self.index is None and not self.invalid
        return right == self.correct if judged else index == self.index

    @property
    def correct_no_guess(self) -> bool:
        """Right under the rule with its fallback guess counted as no answer."""
        return self.correct and not self.guessed


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def tombench_rule(row: dict[str, Any]) -> SourceVerdict:
    """ToMBench get_results.extract_answer, verbatim in behaviour."""
    text: str = row["answer"]
    letter = None
    for pattern in ("[[{}]]", "[{}]"):
        for candidate in "ABCD":
            if pattern.format(candidate) in text:
                letter = candidate
                break
        if letter:
            break
    defaulted = False
    if letter is None:
        for ch in reversed(text):
            if ch in "ABCD":
                letter = ch
                break
    if letter is None:
        letter, defaulted = "A", True
    letters = option_letters(len(row["options"]))
    if letter not in letters:  # "C" on a two-option item: the rule's own code would fail on the map
        return SourceVerdict(None, False, True)
    index = letters.index(letter)
    return SourceVerdict(index, index == row["gold"], defaulted, guessed=defaulted)


_UNKNOWN = ("Insufficient information", "None of the options", "cannot answer", "cannot provide any information",
            "cannot know", "could be anywhere", "<none>", "t determine", "N/A", "is unknown", "cannot be determined",
            "enough information", "my final answer would be either")
_UNKNOWN_CLAUDE = ("could be anywhere", "<none>", "t determine", "N/A", "is unknown", "cannot be determined",
                   "enough information", "my final answer would be either")


def _hitom_snippet(row: dict[str, Any]) -> str:
    result: str = row["answer"]
    folder = row.get("folder", "")
    if "Claude" in folder:
        if "answer is" in result:
            i = result.find("answer is") + len("answer is")
            return result[i:i + 30]
        if "in:" in result:
            i = result.find("in:") + len("in:")
            return result[i:i + 30]
        if any(u in result for u in _UNKNOWN_CLAUDE):
            return "unknown"
        parts = result.split("\n\n")
        if any(w in parts[-1] for w in ("Hope", "Does", "Happy", "et me know", "Even though Liam told Noah differently",
                                        "Explanation:")):
            parts = parts[:-1]
        if parts and "The key" in parts[-1]:
            parts = parts[:-1]
        if not parts:
            return ""
        key = parts[-1].split("\n")[-1]
        if all(c not in key[-30:] for c in ("red_", "blue_", "green_")):
            if "Which is what" in key or "This is because" in key:
                return parts[-2] if len(parts) > 1 else key
            return key
        return key[-30:]
    if "gpt" in folder:
        if len(result) < 30:
            return result
        if "answer is" in result:
            i = result.find("answer is") + len("answer is")
            return result[i:i + 30]
        if any(u in result for u in _UNKNOWN):
            return "unknown"
        return result.split("\n")[-2:][-1]
    return result[-150:]


def hitom_rule(row: dict[str, Any]) -> SourceVerdict:
    """Hi-ToM analyze_new.ipynb: clean() then correct(), verbatim in behaviour (no option is extracted)."""
    snippet = _hitom_snippet(row).replace("_", " ")
    gold_text = row["options"][row["gold"]].replace("_", " ")
    gold_letter = option_letters(len(row["options"]))[row["gold"]]
    if any(c in snippet for c in ("red", "blue", "green")):
        correct = gold_text in snippet.lower()
        return SourceVerdict(None, correct, False)
    correct = gold_letter in snippet
    letters = option_letters(len(row["options"]))
    invalid = snippet == "unknown" or re.search(r"(?<![A-Za-z])[" + letters[0] + "-" + letters[-1] + r"](?![a-z])",
                                                snippet) is None
    alone = re.search(r"(?<![A-Za-z])" + gold_letter + r"(?![A-Za-z])", snippet) is not None
    return SourceVerdict(None, correct, invalid, guessed=correct and not alone)


_MMLU_PRO_LETTERS = "ABCDEFGHIJ"


def mmlu_pro_extract(text: str) -> str | None:
    """MMLU-Pro evaluate_from_local.extract_answer, verbatim in behaviour: "answer is (X)", else the last "Answer: X",
    else the last capital A-J standing alone anywhere in the text; None when there is none."""
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m:
        return m.group(1)
    m = re.search(r".*[aA]nswer:\s*([A-J])", text)
    if m:
        return m.group(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    return m.group(0) if m else None


def mmlu_pro_rule(row: dict[str, Any]) -> SourceVerdict:
    """MMLU-Pro's scoring (evaluate_from_local.py / compute_accuracy.py): the extracted letter, and when none is
    found a random option (the rule's fallback guess; drawn here with a seed per answer, so each run scores alike)."""
    letter = mmlu_pro_extract(row["answer"])
    n = len(row["options"])
    if letter is None:
        index = random.Random(f"mmlu-pro {row['id']}").randint(0, n - 1)
        return SourceVerdict(index, index == row["gold"], True, guessed=True)
    index = _MMLU_PRO_LETTERS.index(letter)
    if index >= n:  # a letter the item does not have: scored wrong
        return SourceVerdict(None, False, True)
    return SourceVerdict(index, index == row["gold"], False)


_KOREAN_STEPS = (
    re.compile(r"(?:answer|답변|정답)[\s:：]*([A-J])", re.IGNORECASE),
    re.compile(r"[\(\[]([A-J])[\)\]]", re.IGNORECASE),
    re.compile(r"^([A-J])[\.\)]", re.IGNORECASE | re.MULTILINE),
    re.compile(r"<answer>([A-J])</answer>", re.IGNORECASE),
)


def korean_llm_rule(row: dict[str, Any]) -> SourceVerdict:
    """hsr87/evaluate-llm-on-korean-dataset's BaseMultipleChoiceParser.parse (the current version), verbatim in
    behaviour; the options are the item's letters (its parser's Four, Five or Ten)."""
    choices = option_letters(len(row["options"]))
    response = (row["answer"] or "").strip()
    if not response or response == "[EMPTY_RESPONSE]":  # the evaluator's mark of an empty answer
        return SourceVerdict(None, False, True)
    letter: str | None = None
    guessed = False
    first_line = response.split("\n")[0].strip()
    if len(first_line) == 1 and first_line.upper() in choices:
        letter = first_line.upper()
    if letter is None and "### ANSWER" in response:
        section = response.split("### ANSWER", 1)[1].strip()
        first = section.split()[0] if section.split() else section[:1]
        if first.upper() in choices:
            letter = first.upper()
    for step in _KOREAN_STEPS:
        if letter is None:
            m = step.search(response)
            if m and m.group(1).upper() in choices:
                letter = m.group(1).upper()
    if letter is None:
        last_line = response.split("\n")[-1].strip()
        if len(last_line) == 1 and last_line.upper() in choices:
            letter = last_line.upper()
    if letter is None:
        m = re.search(f"([{''.join(choices)}])", response, re.IGNORECASE)
        if m:
            letter = m.group(1).upper()
            guessed = bool(re.match(r"[A-Za-z]", response[m.start() - 1:m.start()] or " ")
                           or re.match(r"[A-Za-z]", response[m.end():m.end() + 1] or " "))
    if letter is None:
        return SourceVerdict(None, False, True)
    index = choices.index(letter)
    return SourceVerdict(index, index == row["gold"], False, guessed=guessed)


def enem_rule(row: dict[str, Any]) -> SourceVerdict:
    """piresramon/gpt-4-enem's ENEM.process_results, verbatim in behaviour: the last capital A-E before a full stop,
    else the last capital A-E anywhere; without one the raw answer is compared with the gold and scored wrong."""
    text = row["answer"] or ""
    dotted = re.findall(r"(?:|[Ll]etra |[Aa]lternativa )([ABCDE])\.", text)
    if dotted:
        return SourceVerdict("ABCDE".index(dotted[-1]), "ABCDE".index(dotted[-1]) == row["gold"], False)
    anywhere = list(re.finditer(r"[ABCDE]", text))
    if not anywhere:
        return SourceVerdict(None, False, True)
    m = anywhere[-1]
    index = "ABCDE".index(m.group())
    inside = bool(re.match(r"\w", text[m.start() - 1:m.start()] or " ")
                  or re.match(r"\w", text[m.end():m.end() + 1] or " "))
    return SourceVerdict(index, index == row["gold"], False, guessed=inside)


_IGAKU_LETTERS = r"([a-e](?:\s*[,、]\s*[a-e])*)"
_IGAKU_SEIKAI = (r"正解[はは]\s*\*{0,2}\s*" + _IGAKU_LETTERS, r"正解[:：]\s*\*{0,2}\s*" + _IGAKU_LETTERS,
                 r"選択肢は\s*\*{0,2}\s*" + _IGAKU_LETTERS, r"答え[:：]\s*([a-e,\s]+)", r"回答[:：]\s*([a-e,\s]+)")


def igakuqa_rule(row: dict[str, Any]) -> SourceVerdict:
    """aki-wada/IgakuQA-evaluation's extract_answer (evaluate_prompt_comparison.py), verbatim in behaviour; a reading
    of two or more letters is no single option (invalid here, scored wrong as the repository scores it)."""
    text = row["answer"] or ""
    final = re.search(r"<\|channel\|>\s*final\s*<\|message\|>(.*)", text, flags=re.DOTALL)
    if final:
        text = final.group(1).strip()
    text = re.sub(r"<(?:\w+:)?think>.*?</(?:\w+:)?think>", "", text, flags=re.DOTALL).strip()
    text = re.sub(r"^.*?</(?:\w+:)?think>", "", text, flags=re.DOTALL).strip()
    text = re.sub(r"<(?:\w+:)?think>.*", "", text, flags=re.DOTALL).strip()
    text = re.sub(r"<unused\d+>thought.*", "", text, flags=re.DOTALL).strip()
    text = re.sub(r"<\|[^|]*\|>", "", text).strip()
    text = re.sub(r"<\|.*", "", text, flags=re.DOTALL).strip()
    low = text.lower().translate(str.maketrans("ａｂｃｄｅ", "abcde"))
    letters: list[str] = []
    guessed = False
    head = re.match(r"^([a-e](?:\s*[,、]\s*[a-e])*)\s*$", low.split("\n")[0].strip()) if low else None
    if head:
        letters = re.findall(r"[a-e]", head.group(1))
    for pattern in _IGAKU_SEIKAI:
        if not letters and low:
            m = re.search(pattern, low)
            if m:
                letters = re.findall(r"[a-e]", m.group(1))
    if not letters and low:
        letters = re.findall(r"[a-e]", low[:20])
        guessed = bool(letters)
    found = sorted(set(letters))
    if len(found) != 1:
        return SourceVerdict(None, False, True)
    index = "abcde".index(found[0])
    return SourceVerdict(index, index == row["gold"], False, guessed=guessed)


def emotion_exact_rule(row: dict[str, Any]) -> tuple[str | None, bool]:
    """Huyoyo1/Emotion's scoring (code/Dia_gpt4o.py: the answer lower-cased, sklearn accuracy_score against the gold
    label): the label the answer is exactly (else None, invalid), and whether it is the gold."""
    said = row["answer"].strip().lower()
    label = said if said in row["labels"] else None
    return label, label == row["gold"]


EMOTION_RULES = {"meld-llm-emotions": emotion_exact_rule}
"""Rules of free-text emotion answer sets (labels, not options): (label read or None, counted right)."""

RULES = {"tombench-outputs": tombench_rule, "hi-tom-responses": hitom_rule, "mmlu-pro-outputs": mmlu_pro_rule,
         "korean-llm-eval": korean_llm_rule, "enem-2022-outputs": enem_rule,
         "igakuqa-outputs": igakuqa_rule}
