"""Make the shipped BRIGHTER sample (`culturekb/data/demo/brighter/`) from the BRIGHTER / SemEval-2025 Task 11 data.

BRIGHTER (Muhammad et al., 2025) is a multi-label text emotion dataset in 28+ languages, each annotated by native
speakers of that language; it is CC BY 4.0. This script takes the Track A training file of six languages, keeps
the texts with a single label, draws a small fixed subset per language and writes it as culturekb sample JSONL.
It is reproducible: same source commit, same output, byte for byte.

Source: https://github.com/emotion-analysis-project/SemEval2025-Task11, folder
``task-dataset/semeval-2025-task11-dataset/track_a/train/`` (one CSV per language: ``id,text,<emotion columns>``,
1 = the emotion was perceived; English has no ``disgust`` column). Read either from a checkout (``--source DIR``,
the folder with ``eng.csv`` ...) or straight from a git directory of the repository (``--git-dir DIR [--commit
SHA]``; ``git show`` is used).

Rules (all in this file):

- languages and their culturekb cultures: ``LANGUAGES`` (BRIGHTER code -> ISO 639-1 code, used as culture id);
- label: a row with exactly one emotion marked gets that emotion; a row with none gets ``neutral``; a row with two
  or more is dropped (counted): the knowledge base stores one dominant emotion per text;
- texts longer than ``--max-chars`` characters (default 280) are dropped (counted), to keep the sample small;
- selection: the kept rows of a language ordered by the SHA-1 of their BRIGHTER id, the first ``--per-language``
  (default 400) taken; of those, the first ``--test`` (default 40) are ``test``, the next ``--valid`` (default 20)
  ``valid``, the rest ``train`` (BRIGHTER's own test labels are not public for every language, so the split is ours);
- each sample: ``id`` = BRIGHTER id, ``culture``, ``label``, ``text`` (unchanged), ``split``, and ``metadata``
  (``brighter_language``: the source file's code, ``language``, ``western``: the culture's flag, for the report's
  Western / non-Western split). No explanations, no concepts, no images.

Also written: ``brighter_scheme.json`` (the label set: BRIGHTER's six emotions plus ``neutral``; no translations:
the label words in other languages come from culturekb's vocabularies) and ``brighter_cultures.json`` (names and
languages of the six cultures, for ``--cultures-file``).

Usage::

    python benchmarks/make_multilingual_sample.py --git-dir /path/to/SemEval2025-Task11.git \\
        --commit 513a7e8bef7ef6370ac416ced97efba338c47c97 --out culturekb/data/demo/brighter
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import logging
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("make_multilingual_sample")

TRACK_A_TRAIN = "task-dataset/semeval-2025-task11-dataset/track_a/train"
# BRIGHTER file code -> (culture id = ISO 639-1 language code, English name, native name, Western). Six languages,
# three of them in non-Latin scripts (Han, Cyrillic, Devanagari).
# The Western flag follows culturekb/data/cultures.json (English and Spanish Western, Chinese and Hindi not); German
# is Western and Russian is not, as in most cross-cultural studies that use the split.
LANGUAGES: dict[str, tuple[str, str, str, bool]] = {
    "eng": ("en", "English", "English", True),
    "deu": ("de", "German", "Deutsch", True),
    "esp": ("es", "Spanish", "español", True),
    "chn": ("zh", "Chinese", "中文", False),
    "rus": ("ru", "Russian", "русский", False),
    "hin": ("hi", "Hindi", "हिन्दी", False),
}
EMOTIONS = ("anger", "disgust", "fear", "joy", "sadness", "surprise")
NEUTRAL = "neutral"
SCHEME: dict[str, Any] = {
    "name": "brighter7",
    "description": "BRIGHTER / SemEval-2025 Task 11 perceived emotions (Ekman's six minus none: anger, disgust, "
                   "fear, joy, sadness, surprise) plus neutral for a text with no emotion marked.",
    "labels": [*EMOTIONS, NEUTRAL],
    "positive": ["joy"],
    "negative": ["anger", "disgust", "fear", "sadness"],
    "descriptions": {
        "anger": "the speaker is annoyed, irritated or furious",
        "disgust": "the speaker finds something repulsive or distasteful",
        "fear": "the speaker is afraid, anxious or worried",
        "joy": "the speaker is happy, pleased or amused",
        "sadness": "the speaker is sad, sorry or grieving",
        "surprise": "the speaker is surprised or astonished",
        "neutral": "no emotion is perceived in the text",
    },
}


@dataclass
class LanguageReport:
    """What was read, dropped and kept for one language."""

    rows: int = 0
    multi_label: int = 0
    too_long: int = 0
    eligible: int = 0
    kept: Counter[str] = field(default_factory=Counter)
    splits: Counter[str] = field(default_factory=Counter)


def read_source(code: str, source: Path | None, git_dir: Path | None, commit: str) -> str:
    """The text of ``<code>.csv`` of Track A train, from a checkout folder or a git directory."""
    if source is not None:
        return (source / f"{code}.csv").read_text(encoding="utf-8")
    assert git_dir is not None
    out = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{TRACK_A_TRAIN}/{code}.csv"],
                         check=True, capture_output=True)
    return out.stdout.decode("utf-8")


def single_label(row: dict[str, str], columns: list[str]) -> str | None:
    """The row's one emotion, ``neutral`` when none is marked, None when two or more are."""
    marked = [c for c in columns if row[c].strip() == "1"]
    if not marked:
        return NEUTRAL
    return marked[0] if len(marked) == 1 else None


def convert_language(code: str, text: str, args: argparse.Namespace, report: LanguageReport
                     ) -> list[dict[str, Any]]:
    """The selected samples of one language, in output order (test, valid, train)."""
    culture = LANGUAGES[code][0]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [c for c in (reader.fieldnames or []) if c in EMOTIONS]
    eligible: list[tuple[str, str, str]] = []
    for row in reader:
        report.rows += 1
        label = single_label(row, columns)
        if label is None:
            report.multi_label += 1
            continue
        body = row["text"].strip()
        if len(body) > args.max_chars:
            report.too_long += 1
            continue
        eligible.append((row["id"], body, label))
    report.eligible = len(eligible)
    eligible.sort(key=lambda r: hashlib.sha1(r[0].encode("utf-8")).hexdigest())
    out: list[dict[str, Any]] = []
    for i, (sid, body, label) in enumerate(eligible[: args.per_language]):
        split = "test" if i < args.test else "valid" if i < args.test + args.valid else "train"
        report.kept[label] += 1
        report.splits[split] += 1
        out.append({
            "id": sid, "culture": culture, "label": label, "text": body, "split": split,
            "metadata": {"brighter_language": code, "language": culture, "western": LANGUAGES[code][3]},
        })
    return out


def write_json(path: Path, obj: Any) -> None:
    """Pretty JSON, UTF-8, newline at the end."""
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Convert, write the sample, the scheme and the cultures file, print the per-language report."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--source", type=Path, help="folder with the Track A train CSVs (eng.csv, deu.csv ...)")
    src.add_argument("--git-dir", type=Path, help="git directory of emotion-analysis-project/SemEval2025-Task11")
    ap.add_argument("--commit", default="HEAD", help="commit to read with --git-dir (default HEAD)")
    ap.add_argument("--out", type=Path, default=Path("culturekb/data/demo/brighter"))
    ap.add_argument("--per-language", type=int, default=400)
    ap.add_argument("--test", type=int, default=40)
    ap.add_argument("--valid", type=int, default=20)
    ap.add_argument("--max-chars", type=int, default=280)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    args.out.mkdir(parents=True, exist_ok=True)
    reports: dict[str, LanguageReport] = {}
    lines: list[str] = []
    for code in LANGUAGES:
        reports[code] = LanguageReport()
        rows = convert_language(code, read_source(code, args.source, args.git_dir, args.commit), args, reports[code])
        lines += [json.dumps(r, ensure_ascii=False) for r in rows]
    (args.out / "brighter_sample.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_json(args.out / "brighter_scheme.json", SCHEME)
    write_json(args.out / "brighter_cultures.json", {
        cid: {"name": name, "aliases": [code, name.lower(), native], "language": cid, "western": western}
        for code, (cid, name, native, western) in LANGUAGES.items()
    })
    for code, r in reports.items():
        log.info("%s: %d rows, %d multi-label dropped, %d too long dropped, %d eligible; kept %s; splits %s",
                 code, r.rows, r.multi_label, r.too_long, r.eligible, dict(r.kept), dict(r.splits))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
