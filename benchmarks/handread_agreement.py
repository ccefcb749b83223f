"""How far two careful readers agree on the hand-read disagreements, and how often culturekb's reader is right
where they do.

Issue 21 asks that culturekb's multiple-choice reader be right on at least 90% of hand-read disagreements with a
set's own rule. A hand reading is itself a judgement: an answer half-buried in noise, a re-answer in turns the model
wrote itself, a thinking cut off after it leaned one way can be read two ways. So some rounds were read a second
time, blind (``draw_handread.py --show K --blind``: options and answer text only, no gold and neither reader's
letter), by readers who did not see the first reading. For every round with a second reading
(``results/parser_real_answers_handread_roundN_blind.json``) this prints and writes:

- how often the two careful readings agree (the ceiling on how well any reader can match "the" careful reading);
- culturekb's reading (as drawn, the reader of that round) right against the first, the second, and both where
  they agree (the consensus); the set's rule on the consensus;
- culturekb (as drawn) on the clear answers: those the two readings agree on and neither reader marked borderline;
- with ``--reread``: the CURRENT reader on the consensus answers (re-read from the set files named in the round;
  tuned on for rounds read before a change, so not a held-out figure).

    python benchmarks/handread_agreement.py [--reread] [--out results/parser_handread_agreement]

Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from draw_handread import rows_at  # noqa: E402

from culturekb.inference.choices import parse_choice  # noqa: E402

RESULTS = HERE / "results"
OUT = RESULTS / "parser_handread_agreement"


def rounds() -> list[int]:
    """The rounds that have a blind second reading, in order."""
    found = [int(p.name.removeprefix("parser_real_answers_handread_round").removesuffix("_blind.json"))
             for p in RESULTS.glob("parser_real_answers_handread_round*_blind.json")]
    return sorted(found)


def current_letters(sample: list[dict[str, Any]]) -> dict[int, str | None]:
    """The current reader's letter for each drawn answer (re-read from the set files the round names)."""
    letters: dict[int, str | None] = {}
    by_file: dict[str, list[dict[str, Any]]] = {}
    for a in sample:
        by_file.setdefault(a["file"], []).append(a)
    for name, answers in by_file.items():
        rows = rows_at([name], {(0, a["at"][1]) for a in answers})
        for a in answers:
            row = rows[(0, a["at"][1])]
            assert row["id"] == a["id"], (row["id"], a["id"])
            letters[a["n"]] = parse_choice(row["answer"], row["options"], thinking=row["reasoning"] == "think").letter
    return letters


def compare(r: int, reread: bool) -> dict[str, Any]:
    first = json.loads((RESULTS / f"parser_real_answers_handread_round{r}.json").read_text(encoding="utf-8"))
    second = json.loads((RESULTS / f"parser_real_answers_handread_round{r}_blind.json").read_text(encoding="utf-8"))
    other = {v["n"]: v for v in second["verdicts"]}
    now = current_letters(first["sample"]) if reread else {}
    t: Counter[str] = Counter()
    splits, misses = [], []
    for a in first["sample"]:
        b = other[a["n"]]
        c1, c2, ours, rule = a["careful"], b["careful"], a["ours"]["letter"], a["rule"]["letter"]
        t["answers"] += 1
        t["ours_first"] += ours == c1
        t["ours_second"] += ours == c2
        t["borderline_either"] += bool(a.get("borderline") or b["borderline"])
        if c1 != c2:
            splits.append({"n": a["n"], "first": c1, "second": c2, "ours": ours, "rule": rule})
            continue
        t["agree"] += 1
        t["ours_consensus"] += ours == c1
        t["rule_consensus"] += rule == c1
        t["neither_consensus"] += ours != c1 and rule != c1
        if not (a.get("borderline") or b["borderline"]):  # a clear answer: agreed on, borderline for neither reader
            t["clear"] += 1
            t["ours_clear"] += ours == c1
        if reread:
            t["current_consensus"] += now[a["n"]] == c1
        if ours != c1:
            misses.append({"n": a["n"], "careful": c1, "ours": ours, "path": a["ours"]["path"],
                           "borderline": [bool(a.get("borderline")), b["borderline"]], "note": b["note"]})
    return {"round": r, "reader_commit": first["draw"].get("reader_commit"), "seed": first["draw"]["seed"],
            "tally": dict(t), "splits": splits, "consensus_misses": misses}


def table(results: list[dict[str, Any]], reread: bool) -> str:
    head = ("| round | reader | answers | readers agree | culturekb right (1st / 2nd) | on the consensus: culturekb "
            "| rule | neither | clear answers: culturekb |" + (" current reader |" if reread else ""))
    rows = [head, "|" + "---|" * (9 + reread)]
    total: Counter[str] = Counter()
    for res in results:
        total.update(res["tally"])
        rows.append(_row(str(res["round"]), res["reader_commit"], res["tally"], reread, bold=False))
    if len(results) > 1:
        rows.append(_row("**all**", "", total, reread, bold=True))
    return "\n".join(rows) + "\n"


def _row(name: str, commit: str, t: Counter[str] | dict[str, int], reread: bool, *, bold: bool) -> str:
    """One line of the table: a round's tally, or (bold) the total."""
    def b(cell: str) -> str:
        return f"**{cell}**" if bold else cell
    return (f"| {name} |{f' {commit}' if commit else ''} | {t['answers']} | {t['agree']} | "
            f"{t['ours_first']} / {t['ours_second']} | "
            f"{b(_share(t['ours_consensus'], t['agree']))} | {t['rule_consensus']} | {t['neither_consensus']} | "
            f"{b(_share(t['ours_clear'], t['clear']))} |"
            + (f" {t['current_consensus']}/{t['agree']} |" if reread else ""))


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--reread", action="store_true",
                        help="also read the consensus answers with the current reader (needs the set files)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"output stem (default {OUT.name})")
    args = parser.parse_args(argv)
    found = rounds()
    if not found:
        raise SystemExit(f"no blind second reading in {RESULTS} (parser_real_answers_handread_roundN_blind.json)")
    results = [compare(r, args.reread) for r in found]
    md = table(results, args.reread)
    args.out.with_suffix(".json").write_text(json.dumps(results, ensure_ascii=False, indent=1) + "\n",
                                             encoding="utf-8")
    args.out.with_suffix(".md").write_text(md, encoding="utf-8")
    print(md, end="")


if __name__ == "__main__":
    main()
