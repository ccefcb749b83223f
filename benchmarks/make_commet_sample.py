"""Build the shipped CoMMET StoryTurns sample (culturekb/data/demo/commet/) from real public data.

No copy of CoMMET's own data is public. The sample is assembled from:

- **ToMBench** (Chen et al., ACL 2024; GitHub ``zhchen18/ToMBench``, MIT licence): theory-of-mind stories with
  several multiple-choice questions each. Taken unchanged: the English story (``STORY``), each question
  (``QUESTION``), the right option's text (the expected answer) and the other options' texts (``wrong_answers``),
  and the ToMBench ability, which this script maps to a CoMMET category (`CATEGORY_OF`). Stories are picked per
  task file by the smallest SHA-1 of the English story among the eligible ones (every question answerable without
  its options, the wanted number of questions and abilities, and every "where" answer a place the story names:
  a few ToMBench false-belief rows give a place the story never mentions).
- **ArtELingo** (the package's ``culturekb/data/demo/artelingo_demo.csv``, research-use terms, see DATA_NOTICE.md):
  the per-language majority emotion of two WikiArt paintings, whose public-domain images
  (``../shared/data/wikiart_pd_images``) are shipped resized to at most 384 pixels.

Written for this sample (not from any dataset): the split into turns (the story in the first turn, one question
per turn), every feedback line, the branch answers ("yes"/"no") of the faux-pas detection questions, the story
culture ``zh`` (ToMBench's stories were written in Chinese, with Chinese names and settings), and the two
image-dependent stories' wording and answer alternatives. NOTICE.md in the output folder says the same.

Usage (from the repository root)::

    python benchmarks/make_commet_sample.py --tombench /path/to/ToMBench \
        --images ../shared/data/wikiart_pd_images --out culturekb/data/demo/commet

``--tombench`` is a checkout of the repository, or its bare git directory (read at ``--commit``).
"""

from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import math
import re
import subprocess
from pathlib import Path
from typing import Any

from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = "4f491f0784ed31ef93a8837615fbc48f885cf78d"
ABILITY = "能力\nABILITY"
ANSWER = "答案\nANSWER"

# (task file, how many stories, questions per story, abilities wanted (prefixes; None: any))
PLAN: list[tuple[str, int, int, tuple[str, ...] | None]] = [
    ("False Belief Task", 2, 6, None),
    ("Faux-pas Recognition Test", 2, 4, None),
    ("Hidden Emotions", 1, 4, None),
    ("Discrepant Emotions", 1, 2, None),
    ("Percepts-Knowledge Links", 2, 2, None),
    ("Discrepant Intentions", 1, 2, None),
    ("Moral Emotions", 1, 2, None),
    ("Strange Story Task", 1, 2, ("Non-Literal Communication: Irony",)),
    ("Strange Story Task", 1, 2, ("Desire: Desire-action contradiction",)),
    ("Ambiguous Story Task", 1, 2, ("Intention", "Belief")),
]
# ToMBench ability (prefix, lower case) -> CoMMET category; the first prefix that matches wins
CATEGORY_OF: list[tuple[str, str]] = [
    ("emotion: moral emotions", "moral reasoning"),
    ("belief", "belief"),
    ("emotion", "emotion"),
    ("desire", "desire"),
    ("intention", "intention"),
    ("knowledge: percepts-knowledge links", "percept"),
    ("non-literal communication", "non-literal communication"),
]
NEEDS_OPTIONS = ("following", "option", "above", "which statement", "choose")
"""Questions that only make sense with their options listed are not eligible."""
TASK_KEYS = {"False Belief Task": "fb", "Faux-pas Recognition Test": "fauxpas", "Hidden Emotions": "hidden",
             "Discrepant Emotions": "discrepant-emo", "Percepts-Knowledge Links": "percept",
             "Discrepant Intentions": "discrepant-int", "Moral Emotions": "moral", "Strange Story Task": "strange",
             "Ambiguous Story Task": "ambiguous"}

# The two image-dependent stories: painting -> (image path under --images, Chinese and English majority emotion,
# answer alternatives written for this sample)
PAINTINGS = {
    "willard-metcalf_havana-harbor": "Impressionism/willard-metcalf_havana-harbor.jpg",
    "viktor-vasnetsov_ivan-tsarevich-riding-the-grey-wolf-1889":
        "Romanticism/viktor-vasnetsov_ivan-tsarevich-riding-the-grey-wolf-1889.jpg",
}
ALTERNATIVES = {"contentment": "contentment; content; calm; peaceful; serene; at ease",
                "awe": "awe; wonder; amazement; admiration; in awe"}
ARTEMIS_LABELS = ("amusement", "awe", "contentment", "excitement", "anger", "disgust", "fear", "sadness")


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def read_task(source: Path, commit: str, name: str) -> list[dict[str, Any]]:
    """The rows of one ToMBench task file (its lines are JSON with NaN for missing options)."""
    folder = source / "data"
    if folder.is_dir():
        text = (folder / f"{name}.jsonl").read_text(encoding="utf-8")
    else:
        text = subprocess.run(["git", "--git-dir", str(source), "show", f"{commit}:data/{name}.jsonl"],
                              capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]


_LETTER = re.compile(r"^[A-D][.、:]\s*")


def _option(row: dict[str, Any], letter: str) -> str | None:
    """The English text of an option, without a leading "B. " that some rows carry."""
    value = row.get(f"OPTION-{letter}")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return _LETTER.sub("", str(value).strip()) or None


def category(ability: str) -> str:
    """The CoMMET category of a ToMBench ability (`CATEGORY_OF`)."""
    key = " ".join(ability.lower().split())
    for prefix, cat in CATEGORY_OF:
        if key.startswith(prefix):
            return cat
    raise SystemExit(f"no CoMMET category for the ToMBench ability {ability!r}; extend CATEGORY_OF")


def eligible(questions: list[dict[str, Any]], n: int, abilities: tuple[str, ...] | None, places: bool = False
             ) -> bool:
    """A story with exactly `n` questions, each answerable without its options, its abilities as wanted; with
    `places` (the false-belief task, whose answers are places), every "where" answer a place the story names."""
    if len(questions) != n:
        return False
    if any(any(w in str(q["QUESTION"]).lower() for w in NEEDS_OPTIONS) for q in questions):
        return False
    if any(_option(q, str(q[ANSWER]).strip()) is None for q in questions):
        return False
    story = str(questions[0]["STORY"]).lower()
    for q in questions if places else ():  # a few ToMBench false-belief answers name a place the story does not
        if "where" in str(q["QUESTION"]).lower() and str(_option(q, str(q[ANSWER]).strip())).lower() \
                not in story:
            return False
    if abilities is not None:
        found = [str(q[ABILITY]).lower() for q in questions]
        if not all(any(f.startswith(a.lower()) for f in found) for a in abilities):
            return False
        if not all(any(f.startswith(a.lower()) for a in abilities) for f in found):
            return False
    return True


def feedback(previous_answer: str) -> dict[str, str]:
    """Feedback lines written for the sample: right, or wrong with the expected answer."""
    return {"right": "That's right.", "wrong": f'Not quite: the answer was "{previous_answer.rstrip(". ")}".'}


def tombench_story(task: str, questions: list[dict[str, Any]], number: int, commit: str) -> dict[str, Any]:
    """One StoryTurn from a ToMBench story and its questions (in the file's order)."""
    turns: list[dict[str, Any]] = []
    previous = ""
    for i, q in enumerate(questions):
        letter = str(q[ANSWER]).strip()
        right = str(_option(q, letter))
        wrong = [o for x in "ABCD" if x != letter and (o := _option(q, x)) is not None]
        turn: dict[str, Any] = {"question": str(q["QUESTION"]).strip(), "category": category(str(q[ABILITY]))}
        if i == 0:
            turn["text"] = str(q["STORY"]).strip()
        else:
            turn["feedback"] = feedback(previous)
        detection = task == "Faux-pas Recognition Test" and i == 0
        if detection:  # branches: did the model say that someone said something inappropriate?
            said = "no one" not in right.lower()
            turn["branches"] = {
                "someone-did": {"answers": "; ".join(["yes", right if said else wrong[0]]), "correct": said},
                "no-one-did": {"answers": "; ".join(["no", wrong[0] if said else right]), "correct": not said},
            }
        else:
            turn["answer"] = right
            if wrong:
                turn["wrong_answers"] = wrong
        turns.append(turn)
        previous = right
    if task == "Faux-pas Recognition Test" and len(turns) > 1:
        turns[1]["feedback"] = {
            "someone-did": "Yes, someone did.", "no-one-did": "Look again at what each person says.",
            "right": "That's right.", "wrong": "Not quite."}
    cats = {t["category"] for t in turns}
    return {
        "id": f"tombench-{TASK_KEYS[task]}-{number:02d}",
        "culture": "zh",
        "modality": "text-complete",
        "category": cats.pop() if len(cats) == 1 else "combinations",
        "turns": turns,
        "source": {"dataset": "ToMBench", "repository": "zhchen18/ToMBench", "commit": commit,
                   "file": f"data/{task}.jsonl", "index": int(questions[0].get("序号\nINDEX", 0) or 0),
                   "abilities": sorted({str(q[ABILITY]) for q in questions})},
    }


def majority(rows: list[dict[str, str]], painting: str, language: str) -> tuple[str, collections.Counter[str]]:
    """The most frequent emotion of `painting` among the annotators of `language`, and the vote counts."""
    votes = collections.Counter(r["emotion"] for r in rows if r["painting"] == painting and r["language"] == language)
    label, count = votes.most_common(1)[0]
    if sum(1 for v in votes.values() if v == count) > 1:
        raise SystemExit(f"{painting}/{language}: no single majority emotion ({dict(votes)})")
    return label, votes


def image_story(painting: str, rows: list[dict[str, str]], image_rel: str, number: int) -> dict[str, Any]:
    """An image-dependent story: which feeling a Chinese-writing and an English-writing annotator report."""
    zh, zh_votes = majority(rows, painting, "chinese")
    en, en_votes = majority(rows, painting, "english")

    def unvoted(votes: collections.Counter[str]) -> list[str]:
        return [lab for lab in ARTEMIS_LABELS if votes.get(lab, 0) == 0]

    return {
        "id": f"artelingo-painting-{number:02d}",
        "culture": "zh",
        "modality": "image-dependent",
        "category": "emotion",
        "turns": [
            {"text": "Lin writes descriptions of paintings in Chinese for an art study. She stops in front of the "
                     "painting in the image.",
             "image": image_rel,
             "question": "Which feeling is Lin most likely to report for this painting?",
             "answer": ALTERNATIVES.get(zh, zh), "wrong_answers": unvoted(zh_votes)},
            {"feedback": {"right": f"Yes: most people writing in Chinese in the study reported {zh}.",
                          "wrong": f"Not quite: most people writing in Chinese in the study reported {zh}."},
             "text": "Emma writes descriptions of paintings in English for the same study, and looks at the same "
                     "painting.",
             "question": "Which feeling is Emma most likely to report?",
             "answer": ALTERNATIVES.get(en, en), "wrong_answers": unvoted(en_votes)},
        ],
        "source": {"dataset": "ArtELingo (via culturekb/data/demo/artelingo_demo.csv)", "painting": painting,
                   "votes": {"chinese": dict(zh_votes), "english": dict(en_votes)}},
    }


def resize(src: Path, dst: Path, side: int = 384) -> None:
    """A JPEG copy of `src` whose longer side is at most `side` pixels."""
    with Image.open(src) as original:
        rgb = original.convert("RGB")
    rgb.thumbnail((side, side))
    dst.parent.mkdir(parents=True, exist_ok=True)
    rgb.save(dst, "JPEG", quality=85, optimize=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tombench", type=Path, required=True, help="ToMBench checkout or bare git directory")
    ap.add_argument("--commit", default=SNAPSHOT, help="commit to read from a bare git directory")
    ap.add_argument("--images", type=Path, default=ROOT.parent / "shared" / "data" / "wikiart_pd_images")
    ap.add_argument("--out", type=Path, default=ROOT / "culturekb" / "data" / "demo" / "commet")
    args = ap.parse_args()

    stories: list[dict[str, Any]] = []
    for task, count, n, abilities in PLAN:
        rows = read_task(args.tombench, args.commit, task)
        by_story: dict[str, list[dict[str, Any]]] = collections.OrderedDict()
        for r in rows:
            by_story.setdefault(str(r["STORY"]).strip(), []).append(r)
        places = task == "False Belief Task"
        chosen = sorted((s for s, qs in by_story.items() if eligible(qs, n, abilities, places)), key=_sha1)[:count]
        if len(chosen) < count:
            raise SystemExit(f"{task}: only {len(chosen)} eligible stories, wanted {count}")
        taken = sum(1 for s in stories if s["id"].startswith(f"tombench-{TASK_KEYS[task]}-"))
        for k, story in enumerate(chosen, start=taken + 1):
            stories.append(tombench_story(task, by_story[story], k, args.commit))

    with open(ROOT / "culturekb" / "data" / "demo" / "artelingo_demo.csv", encoding="utf-8", newline="") as fh:
        art = list(csv.DictReader(fh))
    for k, (painting, rel) in enumerate(PAINTINGS.items(), start=1):
        image_rel = f"images/{Path(rel).name}"
        resize(args.images / rel, args.out / image_rel)
        stories.append(image_story(painting, art, image_rel, k))

    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "commet_sample.jsonl"
    path.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in stories), encoding="utf-8")
    n_q = sum(len(s["turns"]) for s in stories)
    print(f"{path}: {len(stories)} stories, {n_q} questions; "
          f"categories {dict(collections.Counter(s['category'] for s in stories))}")


if __name__ == "__main__":
    main()
