"""Draw a fresh, held-out sample of real answers that culturekb's multiple-choice reader and a set's own rule read
differently, as a JSON skeleton to read by hand; and show one drawn answer's text to read it.

Input: the part files of a run of ``benchmarks/bench_parser.py --real-only --part K/N --out PART_K.json SET.jsonl
...`` (each holds ``files`` and ``all_disagreements``; ``at`` = [file index, row index] into ``files``). Every
answer id already read by hand is left out: ``sample`` and ``round3_changed`` of each ``--exclude JSON``
(repeatable; default ``results/parser_real_answers_handread.json``, ``..._handread_fresh.json``,
``..._handread_round5.json``, ``..._handread_round6.json``, ``..._handread_round7.json``,
``..._handread_round8.json`` to ``..._handread_round16.json``). The rest are
shuffled with a fixed seed and taken in that order; each taken row is read again from its JSONL file with the
CURRENT reader (``parse_choice(answer, options, thinking=reasoning == "think")``) and the set's own rule
(``_real_answers.RULES``), and kept only when the two still disagree (so a reader change since the run cannot put
agreeing answers in the sample; the next ones in the shuffled order replace them). The skeleton holds, per answer:
its place (``at``, ``file``), id, set, model, language, reasoning, options, gold letter, the rule's reading (letter
or None, right, guessed), culturekb's (letter, path, ambiguous) and empty ``right``/``note`` for the hand reading
("ours" = culturekb's reading is the careful one, "source" = the rule's, "neither").

    python benchmarks/draw_handread.py [--n 100] [--seed 20261203] [--out JSON] [--exclude JSON ...] [--force] \\
        PART_0.json PART_1.json
    python benchmarks/draw_handread.py --show K [--tail] [--blind] [--out JSON]   # answer K's text
        # --tail: only the last 2,000 characters; --blind: no gold and no readings (a second reader's view)

``--show`` re-reads the row from the JSONL file named in the skeleton and prints its options, gold, both readings and
the text. The answer texts are never written into the skeleton (the sets stay outside the repository). A skeleton
that already holds verdicts is not overwritten without --force.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from _real_answers import RULES, read_rows  # noqa: E402

from culturekb.inference.choices import option_letters, parse_choice  # noqa: E402

EARLIER = HERE / "results" / "parser_real_answers_handread.json"
FRESH = HERE / "results" / "parser_real_answers_handread_fresh.json"
LAST_ROUND = 56
"""The last hand-reading round; a new round adds its file and raises this."""
ROUNDS = [HERE / "results" / f"parser_real_answers_handread_round{n}.json" for n in range(5, LAST_ROUND + 1)]
# every earlier hand reading: none of their answers is drawn again
EXCLUDE = [EARLIER, FRESH, *ROUNDS]
OUT = HERE / "results" / "parser_real_answers_handread_fresh.json"
SEED = 20261203


def earlier_ids(paths: list[Path] | Path = EARLIER) -> set[str]:
    """Every answer id of the given hand readings (each one's `sample` and, where it has one, `round3_changed`)."""
    ids: set[str] = set()
    for path in [paths] if isinstance(paths, Path) else paths:
        earlier = json.loads(path.read_text(encoding="utf-8"))
        ids |= {a["id"] for a in earlier["sample"]}
        ids |= {a["id"] for a in earlier.get("round3_changed", {}).get("answers", [])}
    return ids


def rows_at(files: list[str], wanted: set[tuple[int, int]]) -> dict[tuple[int, int], dict[str, Any]]:
    """The rows at the given (file index, row index) places, row index counted as bench_parser counts it."""
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for f, name in enumerate(files):
        lines = sorted(i for g, i in wanted if g == f)
        if not lines:
            continue
        last = lines[-1]
        keep = set(lines)
        for i, row in enumerate(read_rows(Path(name))):
            if i in keep:
                found[(f, i)] = row
            if i >= last:
                break
    return found


def readings(row: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], bool]:
    """(the rule's reading, culturekb's reading, whether they disagree), as bench_parser decides agreement."""
    source = RULES[row["set"]](row)
    ours = parse_choice(row["answer"], row["options"], thinking=row["reasoning"] == "think")
    letters = option_letters(len(row["options"]))
    ours_right = ours.index == row["gold"]
    agree = source.agrees(ours.index, ours_right)
    rule = {"letter": None if source.index is None else letters[source.index], "right": source.correct,
            "guessed": source.guessed, "invalid": source.invalid}
    mine = {"letter": ours.letter, "path": ours.path, "ambiguous": list(ours.ambiguous), "right": ours_right}
    return rule, mine, not agree


def draw(parts: list[Path], n: int, seed: int, out: Path, exclude: list[Path] | None = None) -> dict[str, Any]:
    exclude = EXCLUDE if exclude is None else exclude
    loaded = [json.loads(p.read_text(encoding="utf-8")) for p in parts]
    files = loaded[0]["files"]
    if any(p["files"] != files for p in loaded):
        raise SystemExit("the part files were made from different set files")
    pool = [d for p in loaded for d in p["all_disagreements"]]
    seen = earlier_ids(exclude)
    fresh = [d for d in pool if d["id"] not in seen]
    fresh.sort(key=lambda d: (d["at"][0], d["at"][1]))  # the parts' order must not matter
    random.Random(seed).shuffle(fresh)
    sample: list[dict[str, Any]] = []
    skipped: list[str] = []
    start = 0
    while len(sample) < n and start < len(fresh):
        batch = fresh[start:start + 2 * (n - len(sample)) + 10]
        start += len(batch)
        rows = rows_at(files, {tuple(d["at"]) for d in batch})
        for d in batch:
            row = rows[tuple(d["at"])]
            assert row["id"] == d["id"], (row["id"], d["id"])
            rule, mine, differ = readings(row)
            if not differ:
                skipped.append(d["id"])
                continue
            letters = option_letters(len(row["options"]))
            sample.append({"n": len(sample), "at": d["at"], "file": files[d["at"][0]], "id": row["id"],
                           "set": row["set"], "model": row["model"], "language": row["language"],
                           "reasoning": row["reasoning"], "options": row["options"],
                           "gold": letters[row["gold"]], "rule": rule, "ours": mine, "right": "", "note": ""})
            if len(sample) == n:
                break
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=HERE.parent).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "culturekb/inference"], capture_output=True,
                           text=True, cwd=HERE.parent).stdout.strip()
    result = {
        "about": "A fresh, held-out hand reading of disagreements between culturekb's multiple-choice reader "
                 "(parse_choice) and each set's own rule (benchmarks/_real_answers.py), drawn by "
                 "benchmarks/draw_handread.py. right: 'ours' = culturekb's reading is the careful reader's, "
                 "'source' = the rule's, 'neither'. Read by an AI model (Claude), not by an independent annotator.",
        "draw": {"seed": seed, "n": n, "parts": [str(p) for p in parts], "files": files,
                 "excluded": [str(p.relative_to(HERE.parent)) if p.is_relative_to(HERE.parent) else str(p)
                              for p in exclude], "excluded_ids": len(seen),
                 "disagreements": len(pool), "after_dropping_earlier": len(fresh),
                 "taken": len(sample) + len(skipped), "agree_now_skipped": skipped,
                 "reader_commit": commit, "reader_dirty": bool(dirty)},
        "sample": sample,
    }
    out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return result


def show(k: int, tail: bool, out: Path, blind: bool = False) -> None:
    """Print drawn answer `k`: its options, gold and both readings (`blind`: none of the three, for a second
    reader who must not know what either reader or the gold says) and its text."""
    drawn = json.loads(out.read_text(encoding="utf-8"))
    a = drawn["sample"][k]
    row = rows_at([a["file"]], {(0, a["at"][1])})[(0, a["at"][1])]
    assert row["id"] == a["id"]
    letters = option_letters(len(row["options"]))
    print(f"#{k} {a['set']} | {a['model']} | {a['language']} | {a['reasoning']}" + ("" if blind else f" | {a['id']}"))
    for letter, option in zip(letters, row["options"], strict=True):
        print(f"  {letter}{' *' if letter == a['gold'] and not blind else '  '} {option}")
    if not blind:
        rule, mine, _ = readings(row)
        print(f"rule: {rule}\nours: {mine}")
    text = row["answer"]
    print(f"--- {len(text)} chars" + (" (last 2,000)" if tail and len(text) > 2000 else "") + " ---")
    print(text[-2000:] if tail else text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("parts", nargs="*", type=Path, help="bench_parser --part outputs (all_disagreements)")
    parser.add_argument("--n", type=int, default=100, help="answers to draw (default 100)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"shuffle seed (default {SEED})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the skeleton to write / read (default {OUT.name})")
    parser.add_argument("--show", type=int, metavar="K", help="print drawn answer K's options, readings and text")
    parser.add_argument("--tail", action="store_true", help="with --show: only the last 2,000 characters")
    parser.add_argument("--blind", action="store_true",
                        help="with --show: leave out the gold and both readings (for a second, blind reader)")
    parser.add_argument("--exclude", type=Path, action="append", metavar="JSON",
                        help="an earlier hand reading whose answers (sample, round3_changed) are not drawn again; "
                             "repeatable (default: " + ", ".join(p.name for p in EXCLUDE) + ")")
    parser.add_argument("--force", action="store_true", help="overwrite a skeleton that already holds verdicts")
    args = parser.parse_args(argv)
    if args.show is not None:
        show(args.show, args.tail, args.out, args.blind)
        return
    if not args.parts:
        parser.error("give the part files to draw from (or --show K)")
    if args.out.exists() and not args.force and any(
            a.get("right") for a in json.loads(args.out.read_text(encoding="utf-8")).get("sample", [])):
        parser.error(f"{args.out} holds hand-read verdicts; give another --out (or --force to overwrite it)")
    r = draw(args.parts, args.n, args.seed, args.out, args.exclude)
    info = r["draw"]
    print(f"{len(r['sample'])} drawn from {info['after_dropping_earlier']} of {info['disagreements']} "
          f"disagreements (seed {info['seed']}, reader {info['reader_commit']}"
          f"{', dirty' if info['reader_dirty'] else ''}); {len(info['agree_now_skipped'])} agree now, "
          f"replaced -> {args.out}")


if __name__ == "__main__":
    main()
