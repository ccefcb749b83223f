"""Write a Japanese real-answer set (JSONL rows as benchmarks/_real_answers.py reads them) from a mirror of a public
repository, outside this repository, so that the multiple-choice reader is measured on Japanese answers:

    python benchmarks/make_real_answers_ja.py IGAKUQA_EVAL_GIT_DIR OUT_DIR

IGAKUQA_EVAL_GIT_DIR: a clone of aki-wada/IgakuQA-evaluation (no licence file: measured, never shipped), whose
results/*_2022_[A-F].json hold the raw answers (`response`) of many local models (gpt-oss, Qwen3, Gemma-3,
MedGemma, Phi-4, Llama, Mistral, llm-jp, ELYZA ...) to the Japanese medical licensing examination of 2022 under
several prompts (`details[<prompt>]`), with the repository's reading (`prediction`); the questions, their five
options (a-e) and the gold come from data/2022/116-[A-F].jsonl. Questions with more than one right option are left
out (the reader reads one option), and so are answers of 200 characters: the repository stores only the first 200
characters of an answer (its prediction was made on the whole text), so those are cut. At most PER_CELL answers
per model x prompt, fixed seed (igakuqa.jsonl).
"""
import json
import random
import re
import sys
from typing import Any

from make_real_answers_ko_pt import git

PER_CELL = 150


def main():
    repo, out_dir = sys.argv[1:3]
    commit = git(repo, "rev-parse", "HEAD").strip()
    questions = {}
    for block in "ABCDEF":
        for line in git(repo, "show", f"HEAD:data/2022/116-{block}.jsonl").splitlines():
            if line.strip():
                q = json.loads(line)
                questions[q["problem_id"]] = q
    cells: dict[tuple[str, str], list[tuple[str, dict[str, Any], dict[str, Any]]]] = {}
    for path in sorted(p for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
                       if re.fullmatch(r"results/.+_2022_[A-F]\.json", p)):
        data = json.loads(git(repo, "show", f"HEAD:{path}"))
        model = str(data.get("model") or re.sub(r"_2022_[A-F]\.json$", "", path.split("/")[-1]))
        for prompt, answers in (data.get("details") or {}).items():
            for a in answers:
                q = questions.get(a.get("problem_id"))
                if q is None or len(q.get("answer") or []) != 1 or len(q.get("choices") or []) != 5:
                    continue
                if len(a.get("response") or "") >= 200:  # a stored preview of a longer answer
                    continue
                cells.setdefault((model, prompt), []).append((path, q, a))
    n = 0
    with open(f"{out_dir}/igakuqa.jsonl", "w", encoding="utf-8") as out:
        for (model, prompt), rows in sorted(cells.items()):
            picked = random.Random(f"igakuqa {model} {prompt}").sample(rows, min(PER_CELL, len(rows)))
            for path, q, a in picked:
                out.write(json.dumps({
                    "set": "igakuqa-outputs", "source": f"aki-wada/IgakuQA-evaluation@{commit}", "file": path,
                    "id": f"{model}#{prompt}#{q['problem_id']}", "model": f"{model} ({prompt})", "language": "ja",
                    "reasoning": "cot" if prompt == "chain_of_thought" else "direct", "options": q["choices"],
                    "gold": "abcde".index(q["answer"][0]), "answer": a.get("response") or "",
                    "source_pred": a.get("prediction", "")}, ensure_ascii=False) + "\n")
                n += 1
    print("igakuqa.jsonl", n, "answers in", len(cells), "cells")


if __name__ == "__main__":
    main()
