"""Rebuild the shipped CulturalToM-VQA sample (culturekb/data/demo/culturaltom/) from its real public sources.

No copy of the CulturalToM-VQA data is public. The sample is assembled from real public data in its format:

1. ToMBench (GitHub zhchen18/ToMBench, MIT): real four-option theory-of-mind questions (stories in Chinese with
   English translations). Taken unchanged (story -> context, question, options, answer letter); mapped by us to
   the six CulturalToM task types and a complexity level (`TOMBENCH` below). Text-only: image_source "none".
   A few questions are also taken in their original Chinese (language zh).
2. ArtELingo annotations (shared/data/artelingo_sample) of two public-domain WikiArt paintings
   (shared/data/wikiart_pd_images): which emotion most English-, Chinese- and Arabic-speaking viewers reported.
   The question and distractors are ours; the answer is the real per-language majority (ties skipped). The two
   JPEGs are copied, resized to at most 384 px.
3. FindingEmo annotations (shared/data/findingemo, CC BY-NC-SA 4.0): the emotion an annotator gave a scene whose
   file name names a country, as a four-option question (distractors: other Plutchik families, ours). Image
   paths only (FindingEmo distributes no pixels): a separate file, runnable with --data-root pointing at the
   images, or blind / with the positivity baseline without them.

Usage (the ToMBench folder is a checkout, or `git archive` of its data/ folder)::

    python benchmarks/make_culturaltom_sample.py --tombench /tmp/tombench --shared ../shared/data \
        --out culturekb/data/demo/culturaltom
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from PIL import Image

# (ToMBench file, ability (exact, or prefix when it ends with '*'), task, level, how many, question filter regex)
TOMBENCH: list[tuple[str, str, str, int, int, str]] = [
    ("False Belief Task", "Belief: Location false beliefs", "false_belief", 2, 3, r"\blook"),
    ("False Belief Task", "Belief: Location false beliefs Belief: Second-order beliefs", "false_belief", 3, 2,
     r"\bthink"),
    ("Hidden Emotions", "Emotion: Hidden emotions", "mental_state_attribution", 2, 3, ""),
    ("Unexpected Outcome Test", "Emotion: Typical emotional reactions", "mental_state_attribution", 1, 2, ""),
    ("Unexpected Outcome Test", "Emotion: Atypical emotional reactions", "mental_state_attribution", 3, 2, ""),
    ("Hinting Task Test", "Intention: Intentions explanations", "non_literal_communication", 2, 3, ""),
    ("Hinting Task Test", "Non-Literal Communication: Irony/Sarcasm", "non_literal_communication", 3, 2, ""),
    ("Moral Emotions", "Emotion: Moral emotions", "social_norm_violation", 2, 3, ""),
    ("Faux-pas Recognition Test", "Non-Literal Communication: Faux pas", "social_norm_violation", 3, 2,
     r"inappropriate"),
    ("Discrepant Emotions", "Emotion: Discrepant emotions", "perspective_coordination", 2, 2, ""),
    ("Percepts-Knowledge Links", "Knowledge: Percepts-knowledge links", "perspective_coordination", 2, 2, ""),
    ("Discrepant Desires", "Desire: Discrepant desires", "perspective_coordination", 3, 2, ""),
    ("Knowledge-Attention Links", "Knowledge: Knowledge-attention links", "multi_agent_reasoning", 3, 2, ""),
    ("Emotion Regulation", "Emotion: Emotion regulation", "multi_agent_reasoning", 4, 2, ""),
]
CHINESE_FROM = ("Hidden Emotions", "Unexpected Outcome Test", "False Belief Task", "Moral Emotions")
"""One question of each of these groups is also taken in its original Chinese."""

ARTEMIS = ("amusement", "awe", "contentment", "excitement", "anger", "disgust", "fear", "sadness")
LANGUAGES = {"english": ("en", "English"), "chinese": ("zh", "Chinese"), "arabic": ("ar", "Arabic")}
PAINTINGS = {  # painting -> (art style folder, region of the scene)
    "willard-metcalf_havana-harbor": ("Impressionism", "CU"),
    "viktor-vasnetsov_ivan-tsarevich-riding-the-grey-wolf-1889": ("Romanticism", "RU"),
}
PLUTCHIK = {  # FindingEmo's 24 emotions -> Plutchik family
    "serenity": "joy", "joy": "joy", "ecstasy": "joy", "acceptance": "trust", "trust": "trust",
    "admiration": "trust", "apprehension": "fear", "fear": "fear", "terror": "fear", "distraction": "surprise",
    "surprise": "surprise", "amazement": "surprise", "pensiveness": "sadness", "sadness": "sadness",
    "grief": "sadness", "boredom": "disgust", "disgust": "disgust", "loathing": "disgust", "annoyance": "anger",
    "anger": "anger", "rage": "anger", "interest": "anticipation", "anticipation": "anticipation",
    "vigilance": "anticipation",
}
COUNTRIES = {"india": "IN", "china": "CN", "chinese": "CN", "japan": "JP", "kenya": "KE", "nigeria": "NG",
             "mexico": "MX", "afghanistan": "AF", "philippines": "PH", "haiti": "HT", "egypt": "EG"}
FINDINGEMO_PER_COUNTRY = 1
MAX_SIDE = 384


def _digest(*parts: str) -> int:
    return int(hashlib.sha256("|".join(parts).encode()).hexdigest()[:12], 16)


def _four(row: dict[str, Any], prefix: str, answer_key: str) -> tuple[list[str], str] | None:
    opts = [row.get(f"{prefix}{k}") for k in "ABCD"]
    if not all(isinstance(o, str) and o.strip() and o.strip().lower() != "nan" for o in opts):
        return None
    texts = [str(o).strip() for o in opts]
    if len({t.lower() for t in texts}) != 4:
        return None
    answer = str(row.get(answer_key, "")).strip().upper()
    return (texts, answer) if answer in ("A", "B", "C", "D") else None


def tombench_items(root: Path) -> list[dict[str, Any]]:
    """The ToMBench questions of `TOMBENCH`, in English, plus one Chinese question per `CHINESE_FROM` group."""
    items: list[dict[str, Any]] = []
    zh_taken: set[str] = set()
    for fname, ability, task, level, n, pattern in TOMBENCH:
        path = root / "data" / f"{fname}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        taken = 0
        for i, row in enumerate(rows, start=1):
            if taken >= n:
                break
            ab = str(row.get("能力\nABILITY", "")).strip()
            if ab != ability:
                continue
            en = _four(row, "OPTION-", "答案\nANSWER")
            if en is None or (pattern and not re.search(pattern, row["QUESTION"], re.IGNORECASE)):
                continue
            stem = re.sub(r"[^a-z0-9]+", "-", fname.lower()).strip("-")
            base = {"task": task, "level": level, "image": "", "image_source": "none", "region": "CN",
                    "culture": "zh", "source": f"ToMBench data/{fname}.jsonl line {i}", "tombench_ability": ab}
            items.append({"id": f"tombench-{stem}-{i}", **base, "context": row["STORY"].strip(),
                          "question": row["QUESTION"].strip(), "options": en[0], "answer": en[1], "language": "en"})
            taken += 1
            zh = _four(row, "选项", "答案\nANSWER")
            if fname in CHINESE_FROM and fname not in zh_taken and zh is not None:
                zh_taken.add(fname)
                items.append({"id": f"tombench-{stem}-{i}-zh", **base, "context": row["故事"].strip(),
                              "question": row["问题"].strip(), "options": zh[0], "answer": zh[1], "language": "zh"})
        if taken < n:
            raise SystemExit(f"{path}: only {taken} of {n} questions with ability {ability!r}")
    return items


def artelingo_items(shared: Path, out: Path) -> list[dict[str, Any]]:
    """Per public-domain painting and viewer language with a clear majority: which emotion most viewers gave."""
    rows = list(csv.DictReader((shared / "artelingo_sample" / "artelingo_release_sample.csv").open(encoding="utf-8")))
    (out / "images").mkdir(parents=True, exist_ok=True)
    items: list[dict[str, Any]] = []
    for painting, (style, region) in PAINTINGS.items():
        src = shared / "wikiart_pd_images" / style / f"{painting}.jpg"
        with Image.open(src) as opened:
            img = opened.convert("RGB")
            img.thumbnail((MAX_SIDE, MAX_SIDE))
            img.save(out / "images" / f"{painting}.jpg", quality=85)
        for language, (code, name) in LANGUAGES.items():
            votes = Counter(r["emotion"] for r in rows if r["painting"] == painting and r["language"] == language)
            ranked = votes.most_common()
            if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]) or ranked[0][0] not in ARTEMIS:
                continue
            gold = ranked[0][0]
            others = [e for e in ARTEMIS if e not in votes]
            others.sort(key=lambda e: _digest(painting, code, e))
            options = [gold, *others[:3]]
            options.sort(key=lambda e: _digest(painting, code, "order", e))
            items.append({
                "id": f"artelingo-{painting}-{code}", "task": "perspective_coordination", "level": 3,
                "image": f"images/{painting}.jpg", "image_source": "WikiArt", "region": region, "culture": code,
                "language": "en",
                "question": f"Viewers who wrote about this painting in {name} were asked which emotion it made them "
                            "feel. Which emotion did most of them report?",
                "options": options, "answer": "ABCD"[options.index(gold)],
                "source": f"ArtELingo ({language} annotators, {sum(votes.values())} of them: {dict(ranked)})"})
    return items


def findingemo_items(shared: Path) -> list[dict[str, Any]]:
    """One FindingEmo annotation per country named in an image's file name (unambiguous, decided annotations)."""
    rows = list(csv.DictReader((shared / "findingemo" / "annotations_single.ann").open(encoding="utf-8")))
    families = sorted(set(PLUTCHIK.values()))
    middle = {f: next(e for e, g in PLUTCHIK.items() if g == f and e == f) for f in families}
    per_country: Counter[str] = Counter()
    items: list[dict[str, Any]] = []
    for r in rows:
        name = r["image_path"].rsplit("/", 1)[-1].lower()
        words = re.split(r"[^a-z]+", name)
        country = next((COUNTRIES[w] for w in words if w in COUNTRIES), None)
        gold = r["emotion"].strip().lower()
        if (country is None or per_country[country] >= FINDINGEMO_PER_COUNTRY or gold not in PLUTCHIK
                or r["ambiguity"] not in ("0", "0.0")):
            continue
        per_country[country] += 1
        others = [middle[f] for f in families if f != PLUTCHIK[gold]]
        others.sort(key=lambda e: _digest(r["image_path"], e))
        options = [gold, *others[:3]]
        options.sort(key=lambda e: _digest(r["image_path"], "order", e))
        valence = int(float(r["valence"]))
        items.append({
            "id": f"findingemo-{r['index']}", "task": "mental_state_attribution", "level": 1,
            "image": r["image_path"].lstrip("/"), "image_source": "FindingEmo", "region": country,
            "language": "en",
            "question": "An annotator looked at the people in this scene and named the emotion the scene shows. "
                        "Which emotion did they name?",
            "options": [o.capitalize() for o in options], "answer": "ABCD"[options.index(gold)],
            "source": f"FindingEmo annotations_single.ann index {r['index']} (valence {valence}, arousal "
                      f"{r['arousal']}, cues {r['dec_factors']})"})
    return items


def main() -> None:
    """Write culturaltom_sample.jsonl (+ images/) and findingemo_items.jsonl into --out."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tombench", type=Path, required=True, help="ToMBench checkout (with data/*.jsonl)")
    ap.add_argument("--shared", type=Path, required=True, help="the shared data folder (artelingo_sample, ...)")
    ap.add_argument("--out", type=Path, default=Path("culturekb/data/demo/culturaltom"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sample = tombench_items(args.tombench) + artelingo_items(args.shared, args.out)
    fe = findingemo_items(args.shared)
    for name, rows in (("culturaltom_sample.jsonl", sample), ("findingemo_items.jsonl", fe)):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (args.out / name).write_text(text, encoding="utf-8")
        tasks = Counter(f"{r['task']}@{r['level']}" for r in rows)
        print(f"{name}: {len(rows)} questions; {dict(sorted(tasks.items()))}")  # noqa: T201


if __name__ == "__main__":
    main()
