"""Write two more real-answer sets (JSONL rows as benchmarks/_real_answers.py reads them) from mirrors of public
repositories, outside this repository: Korean and Portuguese multiple-choice answers, so that the reader is measured
beyond the English and Chinese sets it was tuned on.

    python benchmarks/make_real_answers_ko_pt.py KOREAN_GIT_DIR ENEM_GIT_DIR OUT_DIR

KOREAN_GIT_DIR: a clone of hsr87/evaluate-llm-on-korean-dataset (MIT): results/[<benchmark>] <model>.csv hold the
raw answers (`response`), the gold letter (`answer`) and the repository's reading (`pred`) of many models on KMMLU,
KMMLU-HARD, CLIcK, KorMedMCQA and KoBALT (Korean questions; the options are not in the files, only their number is
known from the benchmark's parser). A fixed-seed sample of PER_FILE answers of each file in KOREAN_FILES is written
(korean.jsonl). ENEM_GIT_DIR: a clone of piresramon/gpt-4-enem (MIT): reports/*_2022.json hold the answers of
GPT-4, GPT-3.5-turbo and code-davinci-002 to the 118 text questions of ENEM 2022 (Brazilian Portuguese), zero-shot,
three-shot and three-shot chain of thought; the options come from data/enem/2022.json (enem.jsonl, every answer).
Then a small sample of both is written to tests/fixtures/real_answers/sample_ko_pt.jsonl (licences in the NOTICE
there), read by tests/inference/test_choices_real.py.
"""
import csv
import io
import json
import random
import re
import subprocess
import sys
from typing import Any

PER_FILE = 1000
# file -> number of options its benchmark's parser reads (util/custom_parser.py: Four, Five or Ten)
KOREAN_FILES = {
    "results/[KMMLU] llama-3-1-8b-instruct-5shot.csv": 4,
    "results/[KMMLU] llama-3-1-8b-instruct.csv": 4,
    "results/[KMMLU] gpt-35-turbo-230613.csv": 4,
    "results/[KMMLU] claude-haiku-4-5-2025-12-05.csv": 4,
    "results/[KMMLU-HARD] nova-2-pro-medium-2025-12-11.csv": 4,
    "results/[CLIcK] nova-2-pro-medium-2025-12-11.csv": 5,
    "results/[KorMedMCQA] nova-2-lite-2025-12-11.csv": 5,
    "results/[KoBALT] nova-2-lite-2025-12-05.csv": 10,
}


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, check=True).stdout.decode("utf-8")


def korean(repo, out):
    commit = git(repo, "rev-parse", "HEAD").strip()
    n = 0
    for path, k in KOREAN_FILES.items():
        rows = list(csv.DictReader(io.StringIO(git(repo, "show", f"HEAD:{path}"))))
        named = re.match(r"results/\[([^\]]+)\] (.+)\.csv$", path)
        assert named is not None, path  # (KOREAN_FILES names only such paths)
        bench, model = named.groups()
        # the prompt asked for reasoning then "### ANSWER X" when most answers hold that header; else one letter
        reasoning = "cot" if sum("### ANSWER" in (r["response"] or "") for r in rows) > len(rows) / 5 else "direct"
        keep = [i for i, r in enumerate(rows) if (r["answer"] or "").strip().upper()[:1] in "ABCDEFGHIJ"[:k]
                and (r["answer"] or "").strip()]
        picked = sorted(random.Random(f"korean {path}").sample(keep, min(PER_FILE, len(keep))))
        for i in picked:
            r = rows[i]
            out.write(json.dumps({
                "set": "korean-llm-eval", "source": f"hsr87/evaluate-llm-on-korean-dataset@{commit}", "file": path,
                "id": f"{bench}#{model}#{i}", "model": f"{model} ({bench})", "language": "ko", "reasoning": reasoning,
                "category": r.get("category", ""), "options": [""] * k,
                "gold": "ABCDEFGHIJ".index(r["answer"].strip().upper()[0]), "answer": r["response"] or "",
                "source_pred": r.get("pred", "")}, ensure_ascii=False) + "\n")
            n += 1
    return n


def enem(repo, out):
    commit = git(repo, "rev-parse", "HEAD").strip()
    questions = {q["id"]: q for q in json.loads(git(repo, "show", "HEAD:data/enem/2022.json"))}
    n = 0
    for path in sorted(p for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
                       if p.startswith("reports/") and p.endswith("_2022.json")):
        named = re.search(r"engine=(.+?)_numfewshot=(\d+)_task=(enem\w*)_2022", path)
        assert named is not None, path  # (every report of 2022 is named so)
        engine, shots, task = named.groups()
        for r in json.loads(git(repo, "show", f"HEAD:{path}")):
            q = questions[r["id"]]
            out.write(json.dumps({
                "set": "enem-2022-outputs", "source": f"piresramon/gpt-4-enem@{commit}", "file": path, "id": r["id"],
                "model": f"{engine} ({shots}-shot)", "language": "pt",
                "reasoning": "cot" if task.endswith("cot") else "direct", "category": r.get("area", ""),
                "options": q["options"], "gold": "ABCDE".index(r["gold"].strip(". ")), "answer": r["response"],
                "source_pred": r.get("pred", "")}, ensure_ascii=False) + "\n")
            n += 1
    return n


def main():
    ko_repo, enem_repo, out_dir = sys.argv[1:4]
    with open(f"{out_dir}/korean.jsonl", "w", encoding="utf-8") as out:
        print("korean.jsonl", korean(ko_repo, out))
    with open(f"{out_dir}/enem.jsonl", "w", encoding="utf-8") as out:
        print("enem.jsonl", enem(enem_repo, out))
    print("sample", write_sample(out_dir))


def write_sample(out_dir, per_cell=6):
    """The shipped sample (tests/fixtures/real_answers/sample_ko_pt.jsonl): per model x reasoning cell, `per_cell`
    answers drawn with a fixed seed, half of them among the answers longer than a letter (the rest at random), with
    what the set's own rule made of each (source_index, source_correct, source_invalid, source_guessed)."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from _real_answers import RULES

    cells: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for name in ("korean", "enem"):
        for line in open(f"{out_dir}/{name}.jsonl", encoding="utf-8"):
            row = json.loads(line)
            cells.setdefault((row["set"], row["model"], row["reasoning"]), []).append(row)
    target = Path(__file__).parent.parent / "tests" / "fixtures" / "real_answers" / "sample_ko_pt.jsonl"
    with open(target, "w", encoding="utf-8") as out:
        for key in sorted(cells):
            rng = random.Random(f"sample {key}")
            rows = cells[key]
            long = [r for r in rows if len(r["answer"].strip()) > 20]
            picked = rng.sample(long, min(per_cell // 2, len(long)))
            rest = [r for r in rows if r not in picked]
            picked += rng.sample(rest, per_cell - len(picked))
            for row in picked:
                v = RULES[row["set"]](row)
                out.write(json.dumps({**row, "source_index": v.index, "source_correct": v.correct,
                                      "source_invalid": v.invalid, "source_guessed": v.guessed},
                                     ensure_ascii=False) + "\n")
    return target


if __name__ == "__main__":
    main()
