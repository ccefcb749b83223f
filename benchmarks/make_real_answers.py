"""Write the whole real-answer sets (JSONL rows as benchmarks/_real_answers.py reads them) from mirrors of the
public repositories, outside this repository:

    python benchmarks/make_real_answers.py TOMBENCH_GIT_DIR HITOM_GIT_DIR OUT_DIR [MMLUPRO_GIT_DIR [EMOTION_GIT_DIR]]

TOMBENCH_GIT_DIR: a clone of joel-wu/ToMBench (MIT; ToMBench outputs of DeepSeek-R1-Distill, Qwen2.5, Llama-3.1);
HITOM_GIT_DIR: a clone of ying-hui-he/Hi-ToM_dataset (Apache-2.0) with its history (the responses of GPT-4,
GPT-3.5, Claude-instant and LLaMA-65B live in commit a139da24, before the "clean dataset" commit);
MMLUPRO_GIT_DIR (optional): a clone of TIGER-AI-Lab/MMLU-Pro (Apache-2.0), whose eval_results/ holds the published
5-shot chain-of-thought outputs of many models as zip files; a fixed-seed sample of MMLU_PRO_PER_MODEL answers of each
model in MMLU_PRO_MODELS is written (mmlupro.jsonl); EMOTION_GIT_DIR (optional): a clone of Huyoyo1/Emotion (no
licence file: measured, never shipped), whose evaluation_results/ hold the emotion words GPT-4o, GPT-3.5, Llama-3.1
and Gemma-2 answered for MELD utterances (one-utterance context window), written as meld_emotions.jsonl.
"""
import io
import json
import random
import re
import statistics
import subprocess
import sys
import zipfile


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

# ---------- MMLU-Pro model outputs (TIGER-AI-Lab/MMLU-Pro, eval_results/*.zip) ----------
MMLU_PRO_MODELS = ("Qwen1.5-7B-Chat", "Meta-Llama-3_1-8B-Instruct", "Mistral-7B-Instruct-v0.2",
                   "Phi-3-mini-4k-instruct", "Yi-6b-Chat", "Mixtral-8x7B-Instruct-v0.1", "gemini-1.5-flash-002",
                   "Llama-2-7b-hf")
MMLU_PRO_PER_MODEL = 1000
if len(sys.argv) > 4:
    MP = sys.argv[4]
    MP_COMMIT = git(MP, "rev-parse", "HEAD").strip()
    out = open(f"{OUT}/mmlupro.jsonl", "w", encoding="utf-8")
    n = 0
    for model in MMLU_PRO_MODELS:
        name = f"eval_results/model_outputs_{model}_5shots.zip"
        blob = subprocess.run(["git", "-C", MP, "show", f"HEAD:{name}"], capture_output=True).stdout
        with zipfile.ZipFile(io.BytesIO(blob)) as z:
            member = [m for m in z.namelist() if m.endswith(".json")][0]
            records = json.loads(z.read(member))
        picked = random.Random(f"mmlu-pro {model}").sample(records, min(MMLU_PRO_PER_MODEL, len(records)))
        for r in picked:
            options = r["options"] if isinstance(r["options"], list) else eval(r["options"])  # noqa: S307 (a list literal)
            text = r.get("model_outputs", r.get("generated_text"))
            if text is None or len(options) < 2:
                continue
            out.write(json.dumps({"set": "mmlu-pro-outputs", "source": f"TIGER-AI-Lab/MMLU-Pro@{MP_COMMIT}",
                                  "file": name, "id": f"{model}#{r['question_id']}", "model": model, "language": "en",
                                  "reasoning": "cot", "category": r.get("category"),
                                  "options": [str(o) for o in options],
                                  "gold": int(r["answer_index"]), "answer": text, "source_pred": r.get("pred")},
                                 ensure_ascii=False) + "\n")
            n += 1
    print("mmlu-pro", n)  # noqa: T201

# ---------- free-text emotion answers (Huyoyo1/Emotion, evaluation_results/*/MELD_*_1.csv) ----------
EMOTION_FILES = {"gpt-4o": "gpt4o/MELD_gpt4o_results_window_1.csv", "gpt-3.5-turbo": "gpt3.5/MELD_gpt3_5_results_1.csv",
                 "llama-3.1-8b": "Llama3.1/MELD_Llama_prediction_results_1.csv",
                 "gemma-2": "Gemma2/MELD_Gemma_prediction_results_1.csv"}
MELD_LABELS = ["neutral", "joy", "surprise", "anger", "sadness", "disgust", "fear"]
if len(sys.argv) > 5:
    import csv

    EM = sys.argv[5]
    EM_COMMIT = git(EM, "rev-parse", "HEAD").strip()
    out = open(f"{OUT}/meld_emotions.jsonl", "w", encoding="utf-8")
    n = 0
    for model, name in EMOTION_FILES.items():
        rows = list(csv.DictReader(io.StringIO(git(EM, "show", f"HEAD:evaluation_results/{name}"))))
        for i, r in enumerate(rows):
            gold_label = (r.get("Emotion") or r.get("true_emotion") or "").strip().lower()
            if gold_label not in MELD_LABELS:
                continue
            out.write(json.dumps({"set": "meld-llm-emotions", "source": f"Huyoyo1/Emotion@{EM_COMMIT}",
                                  "file": f"evaluation_results/{name}", "id": f"{model}#{i}", "model": model,
                                  "language": "en", "reasoning": "direct", "labels": MELD_LABELS, "gold": gold_label,
                                  "answer": r["Predicted_Emotion"]}, ensure_ascii=False) + "\n")
            n += 1
    print("meld-emotions", n)  # noqa: T201
