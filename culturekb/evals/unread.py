"""Unread answers: how many answers of a run the parser could not read, per setting and prompt language, and the
words they gave instead, so that a missing label word shows and can be added.

Every run's ``run.json`` holds an ``unread_answers`` section and its Markdown report two tables (written by the
`culturekb.evals.runner.Runner` base, so every benchmark has them; ``culturekb eval`` prints them too):

- per setting and prompt language: answers, unread (``parse_status == "invalid"``: a model answered, nothing was
  read), failed calls (``"error"``: no answer came);
- the most frequent unread words: per unread answer, the value it gave as its label (a JSON label key, an
  "Answer: ..." line; `culturekb.inference.parsing.answer_value`), else the whole answer when it is short (at most
  four words), else its last two words (shown after "..."), with their counts and prompt languages.

For a runner whose answers are label words (``Runner.reads_label_words``: ArtECulture, Cedar) the section ends
with how to add such words: ``--label-words FILE`` (`culturekb.kb.label_words`).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from culturekb.evals.reports import Table
from culturekb.inference.base import Prediction
from culturekb.kb.label_words import LABEL_WORDS_FORMAT

__all__ = ["UNREAD_STATUS", "FAILED_STATUS", "unread_summary", "unread_tables", "unread_word"]

UNREAD_STATUS = "invalid"
"""A model answered and the parser read no label (or option) from it."""
FAILED_STATUS = "error"
"""The call failed: no answer to read."""

_SHORT_WORDS = 4
_EDGE = " \t\n.,;:!?。！？、।॥።፣፤\"'`*<>()[]{}«»“”‘’"


def unread_word(raw: str) -> str:
    """What an unread answer gave: its label value (`answer_value`), else the whole answer when short, else
    "... " and its last two words; lower case, outer punctuation stripped ("" for an empty answer)."""
    from culturekb.inference.parsing import answer_value

    value = answer_value(raw)
    if value is not None and value.strip(_EDGE):
        return value.strip(_EDGE)
    words = [w.strip(_EDGE) for w in raw.split()]
    words = [w for w in words if w]
    if len(words) <= _SHORT_WORDS:
        return " ".join(words).lower()
    return "... " + " ".join(words[-2:]).lower()


def _key(word: str) -> str:
    from culturekb.inference._lexicon import normalise_text

    return re.sub(r"\s+", " ", normalise_text(word)).strip()


def unread_summary(predictions: Mapping[str, Sequence[Prediction]], *, top: int = 10,
                   label_words: bool = False) -> dict[str, Any]:
    """The ``unread_answers`` section of a run from its predictions per setting key (see the module docstring).

    `top`: how many unread words to list; `label_words`: the answers are label words, so say how to add some.
    """
    rows: list[dict[str, Any]] = []
    words: dict[str, Counter[str]] = defaultdict(Counter)  # key -> prompt language -> count
    shown: dict[str, str] = {}
    for setting, preds in predictions.items():
        groups: dict[str, list[Prediction]] = defaultdict(list)
        for p in preds:
            groups[p.prompt_language or ""].append(p)
        for lang in sorted(groups):
            group = groups[lang]
            unread = [p for p in group if p.parse_status == UNREAD_STATUS]
            rows.append({"setting": setting, "prompt_language": lang or None, "answers": len(group),
                         "unread": len(unread), "failed": sum(p.parse_status == FAILED_STATUS for p in group)})
            for p in unread:
                word = unread_word(p.raw or "")
                key = _key(word)
                shown.setdefault(key, word or "(empty answer)")
                words[key][lang or "?"] += 1
    ranked = sorted(words.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:top]
    top_words = [{"word": shown[k], "count": sum(c.values()), "prompt_languages": dict(c.most_common())}
                 for k, c in ranked]
    n_unread = sum(r["unread"] for r in rows)
    section: dict[str, Any] = {
        "answers": sum(r["answers"] for r in rows),
        "unread": n_unread,
        "failed": sum(r["failed"] for r in rows),
        "by_setting": rows,
        "top_unread": top_words,
    }
    if label_words and n_unread:
        section["how_to_add"] = _how_to_add(top_words)
    return section


def _how_to_add(top_words: Sequence[Mapping[str, Any]]) -> str:
    example = next((w for w in top_words if not str(w["word"]).startswith("...") and w["word"] != "(empty answer)"),
                   None)
    lang = next(iter(example["prompt_languages"]), "<lang>") if example else "<lang>"
    sample = json.dumps({lang: {"<label>": [example["word"] if example else "word"]}}, ensure_ascii=False)
    return (f"If these are label words, add them with --label-words FILE, format {LABEL_WORDS_FORMAT}, e.g. "
            f"{sample}; rerun into a new folder (the model's answers come from the response cache). A KB can also "
            "learn them from a paired label column at build time (label_<lang> or label_native beside the label).")


def unread_tables(section: Mapping[str, Any] | None) -> dict[str, Table]:
    """The Markdown tables of an ``unread_answers`` section: counts per setting and language, and the most frequent
    unread words (with how to add them as the note); none without a section."""
    if not section:
        return {}
    counts = Table(
        "Unread answers per setting and prompt language",
        ["setting", "prompt language", "answers", "unread", "failed calls"],
        [[r["setting"], r["prompt_language"] or "-", r["answers"], r["unread"], r["failed"]]
         for r in section["by_setting"]],
        note=f"{section['unread']} of {section['answers']} answers unread (the parser read no label), "
             f"{section['failed']} calls failed.",
    )
    tables = {"unread_answers": counts}
    if section.get("top_unread"):
        tables["unread_words"] = Table(
            "Most frequent unread answers",
            ["answer (label value, short answer, or ... last words)", "count", "prompt languages"],
            [[w["word"], w["count"], ", ".join(f"{k} {v}" for k, v in w["prompt_languages"].items())]
             for w in section["top_unread"]],
            note=str(section.get("how_to_add", "")),
        )
    return tables
