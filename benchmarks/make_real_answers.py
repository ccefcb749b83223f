"""Write the whole real-answer sets (JSONL rows as benchmarks/_real_answers.py reads them) from mirrors of the
public repositories, outside this repository:

    python benchmarks/make_real_answers.py TOMBENCH_GIT_DIR HITOM_GIT_DIR OUT_DIR

TOMBENCH_GIT_DIR: a clone of joel-wu/ToMBench (MIT; ToMBench outputs of DeepSeek-R1-Distill, Qwen2.5, Llama-3.1);
HITOM_GIT_DIR: a clone of ying-hui-he/Hi-ToM_dataset (Apache-2.0) with its history (the responses of GPT-4,
GPT-3.5, Claude-instant and LLaMA-65B live in commit a139da24, before the "clean dataset" commit).
"""
import json
import re
import statistics
import subprocess
import sys


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], capture_output=True).stdout.decode("utf-8", "replace")

def cjk(s):
    return sum('\u4e00' <= c <= '\u9fff' for c in s) / max(1, len(s))

# ---------- ToMBench outputs (joel-wu/ToMBench) ----------
TB, HT, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
TB_COMMIT = git(TB, "rev-parse", "HEAD").strip()
out = open(f"{OUT}/tombench.jsonl", "w", encoding="utf-8")
files = [f for f in git(TB, "ls-tree", "-r", "--name-only", "HEAD").splitlines() if f.endswith("_results.jsonl")]
n = 0
for f in files:
    recs = []
    for line in git(TB, "show", f"HEAD:{f}").splitlines():
        try:
            recs.append(json.loads(line))
        except Exception:
            pass
    if not recs:
        continue
    d = f.split("/")[0] if "/" in f else "root"
    model = re.sub(r"_results\.jsonl$", "", f.split("/")[-1]).split("_", 1)[1]
    med = statistics.median(len(r["output"]) for r in recs)
    task = f.split("/")[-1].split("_")[0]
    for r in recs:
        data, mp = r["data"], r["map"]
        lang = "zh" if d.endswith("-zh") else "en" if d.endswith("-eg") else ("zh" if cjk(r["output"]) > 0.15 else "en")
        key = "选项{}" if lang == "zh" else "OPTION-{}"
        orig = {}
        for L in "ABCD":
            v = data.get(key.format(L))
            if v is None or (isinstance(v, float)) or str(v).strip() in ("", "nan"):
                continue
            v = str(v).strip()
            if lang == "zh":
                v = re.sub(r"^[A-D][\.．、]\s*", "", v)
            orig[L] = v
        letters = [L for L in "ABCD" if L in mp and mp[L] in orig]
        if len(letters) < 2:
            continue
        options = [orig[mp[L]] for L in letters]
        gold = [i for i, L in enumerate(letters) if mp[L] == r["answer"]]
        if len(gold) != 1:
            continue
        think = "<think>" in r["output"] or "</think>" in r["output"] or "DeepSeek-R1" in model
        reasoning = "think" if think else ("cot" if med > 60 else "direct")
        out.write(json.dumps({"set": "tombench-outputs", "source": f"joel-wu/ToMBench@{TB_COMMIT}", "file": f,
                              "id": f"{f}#{r['idx']}.{r.get('number', 0)}", "model": model, "language": lang,
                              "reasoning": reasoning, "task": task, "options": options, "gold": gold[0],
                              "answer": r["output"], "map": {L: mp[L] for L in letters}, "gold_original": r["answer"]},
                             ensure_ascii=False) + "\n")
        n += 1
print("tombench", n)  # noqa: T201

# ---------- Hi-ToM responses (ying-hui-he/Hi-ToM_dataset, history) ----------
HC = "a139da246911a7a4f25f1b48f04bf89d7fe51fa1"
out = open(f"{OUT}/hitom.jsonl", "w", encoding="utf-8")
names = git(HT, "ls-tree", "-r", "--name-only", HC).splitlines()
folders = {"API_responses": "gpt-4-0314 (azure gpt4-8k)", "result_gpt-3.5-turbo-v0": "gpt-3.5-turbo (prompt v0)",
           "result_gpt-3.5-turbo-v1": "gpt-3.5-turbo (prompt v1)", "result_Claude-instant": "claude-instant",
           "result_llama65b-v1": "llama-65b"}
n = 0
gold_cache = {}
for name in names:
    top = name.split("/")[0]
    if top not in folders or not name.endswith(".txt"):
        continue
    rel = name[len(top):]
    gpath = "data_ToMh_old" + rel
    if gpath not in gold_cache:
        gold_cache[gpath] = git(HT, "show", f"{HC}:{gpath}")
    g = gold_cache[gpath]
    m = re.search(r"Choices: (.*)", g)
    if m is None:
        raise SystemExit(f"{gpath}: no 'Choices:' line; is this the Hi-ToM release the script was written for?")
    a = g[g.find("Answer: "):].split("\n")[0].split()[-1]
    opts = re.findall(r"([A-Z])\. ([^,\n]+)", m.group(1))
    options = [t.strip() for _, t in opts]
    if a not in options:
        continue
    prompt = rel.split("/")[2]
    out.write(json.dumps({"set": "hi-tom-responses", "source": f"ying-hui-he/Hi-ToM_dataset@{HC}", "file": name,
                          "id": name, "model": folders[top], "folder": top, "language": "en",
                          "reasoning": "cot" if prompt == "CoT" else "direct", "options": options,
                          "gold": options.index(a), "answer": git(HT, "show", f"{HC}:{name}"), "gold_file": g},
                         ensure_ascii=False) + "\n")
    n += 1
print("hitom", n)  # noqa: T201
