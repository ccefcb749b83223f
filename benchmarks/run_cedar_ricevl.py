"""Cedar and RICE-VL runs end to end on the files `make_cedar_ricevl_data.py` makes from real data.

Each benchmark runs twice: offline (``kb-prior``; the ``reference`` judge; the whole-image grounding baseline) and
with the local scripted OpenAI-compatible server (`culturekb.testing.ScriptedOpenAIServer`) as the model and as the
SEA-LAVE judge, over real HTTP. The scripted "model" is a few rules, not a VLM: its numbers test the pipeline
(prompts, parsing, retries, failure counting, tables), not any model. Its rules:

- Cedar: with a cue block, the label of the first cue line; else an emotion word of the narrative; else
  "contentment". One answer in 9 comes as free text, one in 23 as unusable text (counted invalid). Image concepts
  for multimodal items are answered with a fixed list.
- RICE-VL VQA: with regional notes, "<first noted concept>, from <its country>" (tf: "True" when the question names
  it, else "False"); without, "True" for tf and a guess of "a painting tradition of Japan" otherwise.
- Judge: TU/CU/CI by matching the reference and the expected country in the rubric prompt; one verdict in 6 is
  first sent as invalid JSON, so the re-ask path runs; one in 40 stays invalid (counted as a judge failure).
- Grounding: the gold panel box, in rotating output forms (Qwen2-VL box tokens, Qwen2.5-VL ``bbox_2d`` JSON,
  normalised list, x/y/w/h object), shifted by a rule-based offset; one in 9 unparseable, one in 13 inverted.

Usage (from the repository root, after the data script):

    python benchmarks/make_cedar_ricevl_data.py --out .culturekb-cache/bench-data
    python benchmarks/run_cedar_ricevl.py --data .culturekb-cache/bench-data \
        --images ../shared/data/wikiart_pd_images --out benchmarks/results/cedar_ricevl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from culturekb.evals.reports import render_markdown_table  # noqa: E402
from culturekb.evals.ricevl.boxes import format_box_token  # noqa: E402
from culturekb.kb.schemes import get_scheme  # noqa: E402
from culturekb.testing import ScriptedOpenAIServer  # noqa: E402

log = logging.getLogger("run_cedar_ricevl")
CEDAR14 = get_scheme("cedar14")


def _h(text: str) -> int:
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16)


def _text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return str(content)


# -- the scripted model ---------------------------------------------------------------------------------------------


def cedar_answer(prompt: str) -> str:
    m = re.search(r"^- .+? -> (.+?) \(\d+% of", prompt, flags=re.MULTILINE)
    if m:
        label = m.group(1).strip()
    else:
        situation = re.search(r"(?:Situation|情境|الموقف)[:：]\s*(.*)", prompt)
        words = re.findall(r"[a-z]+", (situation.group(1) if situation else "").lower())
        label = next((found for w in words if (found := CEDAR14.match(w))), "contentment")
    k = _h(prompt)
    if k % 23 == 0:
        return "Hard to say; it depends on the person."
    if k % 9 == 0:
        return f"Most of them would feel {label} here."
    return json.dumps({"emotion": label, "explanation": "scripted rule"})


def vqa_answer(prompt: str) -> str:
    question = re.search(r"Question: (.*)", prompt)
    q = question.group(1) if question else ""
    notes = re.search(r"Notes on (.+?):\n- (.+?) \(", prompt)
    is_tf = "true or false" in prompt.lower() and 'Start your reply with "True"' in prompt
    if notes:
        country, concept = notes.group(1), notes.group(2)
        if is_tf:
            hit = concept.lower() in q.lower() or country.lower() in q.lower()
            return f"{'True' if hit else 'False'}. It relates to {concept} from {country}."
        return f"{concept}, from {country}."
    if is_tf:
        return "True. It is a well-known tradition."
    return "I believe it is a painting tradition of Japan."


def judge_answer(body: dict[str, Any], prompt: str) -> str:
    def field(name: str) -> str:
        m = re.search(rf"{name}: (.*)", prompt)
        return m.group(1).strip() if m else ""

    reference = field("Reference answer") or field("Reference filler") or field("Correct truth value")
    country = field("Expected country")
    answer_m = re.search(r"<<<\n(.*?)\n>>>", prompt, flags=re.DOTALL)
    answer = answer_m.group(1) if answer_m else ""
    k = _h(prompt)
    if len(body["messages"]) == 1 and k % 6 == 0:
        return "The answer looks partly right to me."  # not JSON: the runner re-asks
    if k % 40 == 0:
        return "Scores: TU=1, CU=1, CI=2"  # stays invalid: a counted judge failure
    ref_low, ans_low = reference.lower(), answer.lower()
    if reference in ("true", "false"):
        tu = int(ans_low.startswith(reference))
    else:
        ref_words = set(re.findall(r"\w+", ref_low)) - {country.lower()}
        tu = int(bool(ref_words) and ref_words <= set(re.findall(r"\w+", ans_low)))
    ci = 2 if country.lower() in ans_low else (1 if re.search(r"\bfrom [A-Z]", answer) else 0)
    return json.dumps({"TU": tu, "CU": tu, "CI": ci, "justification": "scripted rule"})


class GroundingOracle:
    """Gold boxes by (phrase, sent size), answered in rotating forms with a rule-based error."""

    def __init__(self, rows: list[dict[str, Any]], max_side: int = 1024) -> None:
        from culturekb.evals.ricevl.grounding import sent_size

        self.gold: dict[tuple[str, int, int], tuple[list[float], tuple[int, int]]] = {}
        for r in rows:
            w, h = sent_size(r["width"], r["height"], max_side)
            f = w / r["width"]
            self.gold[(r["phrase"], w, h)] = ([v * f for v in r["bbox"]], (w, h))

    def __call__(self, prompt: str) -> str:
        m = re.search(r"Find this in the image: (.*)\n", prompt)
        size = re.search(r"The image is (\d+) pixels wide and (\d+) pixels high", prompt)
        if not m or not size:
            return "I cannot find it."
        w, h = int(size.group(1)), int(size.group(2))
        found = self.gold.get((m.group(1).strip(), w, h))
        if found is None:
            return "I cannot find it."
        (x1, y1, x2, y2), _ = found
        k = _h(prompt)
        if k % 9 == 0:
            return "The painting is on the left side of the picture."
        shift = (k % 5) * 0.06 * (x2 - x1)  # 0 to 24% of the box width
        x1, x2 = x1 + shift, x2 + shift
        if k % 13 == 0:
            return json.dumps({"bbox_2d": [round(x2), round(y1), round(x1), round(y2)]})
        form = k % 4
        if form == 0:
            return format_box_token((x1, y1, min(x2, w), y2), w, h)
        if form == 1:
            return "```json\n" + json.dumps([{"bbox_2d": [round(x1), round(y1), round(x2), round(y2)],
                                               "label": "painting"}]) + "\n```"
        if form == 2:
            return f"[{x1 / w:.3f}, {y1 / h:.3f}, {min(x2 / w, 1):.3f}, {y2 / h:.3f}]"
        return json.dumps({"x": round(x1), "y": round(y1), "w": round(x2 - x1), "h": round(y2 - y1)})


class Responder:
    def __init__(self, grounding: GroundingOracle) -> None:
        self.grounding = grounding

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = _text(body)
        if body["messages"][-1]["content"] and prompt.startswith("That reply could not be used"):
            prompt = _text({"messages": body["messages"][:1]})
            return judge_answer(body, prompt)
        if "You grade one answer" in prompt:
            return judge_answer(body, prompt)
        if "list the salient visual concepts" in prompt:
            return '["harbor", "boat", "wolf", "forest"]'
        if "Find this in the image:" in prompt:
            return self.grounding(prompt)
        if '{"emotion"' in prompt:
            return cedar_answer(prompt)
        return vqa_answer(prompt)


# -- the runs -------------------------------------------------------------------------------------------------------


def _tables_md(title: str, tables: dict[str, Any], keep: tuple[str, ...] | None = None) -> str:
    parts = [f"### {title}", ""]
    for key, table in tables.items():
        if keep is not None and key not in keep:
            continue
        parts += [f"**{table.title}**", "", render_markdown_table(table)]
        if table.note:
            parts += [table.note, ""]
    return "\n".join(parts)


def main() -> None:
    from culturekb.evals.cedar import cedar_tables
    from culturekb.evals.cedar.spec import CedarSpec
    from culturekb.evals.ricevl import grounding_tables, vqa_tables
    from culturekb.evals.ricevl.spec import RiceVLGroundingSpec, RiceVLVQASpec
    from culturekb.workflows import build_from_files, run_benchmark

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path(".culturekb-cache/bench-data"))
    ap.add_argument("--images", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared/data/wikiart_pd_images")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/cedar_ricevl"))
    ap.add_argument("--work", type=Path, default=Path(".culturekb-cache/bench-runs"))
    args = ap.parse_args()
    data, work, out = args.data, args.work, args.out
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    md: list[str] = ["# Cedar and RICE-VL runs on files made from real data", "",
                     "Made by `benchmarks/run_cedar_ricevl.py`; data by `benchmarks/make_cedar_ricevl_data.py` "
                     "(see their docstrings). The scripted server's numbers test the pipeline, not a model.", ""]
    summary = json.loads((data / "summary.json").read_text(encoding="utf-8"))
    md += ["```json", json.dumps(summary, indent=1, ensure_ascii=False), "```", ""]

    t0 = time.perf_counter()
    kb_dir = work / "cedar_kb"
    if not (kb_dir / "manifest.json").is_file():
        build_from_files([data / "cedar/cedar_kb_train.jsonl"], kb_dir, cache_dir=work / "cache", scheme="cedar14",
                         concepts="precomputed", split="train", progress=False)
    timings["cedar kb build"] = time.perf_counter() - t0
    cue_kb = work / "cue_kb"
    rows = [json.loads(x) for x in (data / "ricevl/grounding.jsonl").read_text(encoding="utf-8").splitlines()]
    with ScriptedOpenAIServer(Responder(GroundingOracle(rows))) as server:
        runs: list[tuple[str, Any]] = [
            ("cedar kb-prior", lambda: run_benchmark("cedar", CedarSpec(
                data=data / "cedar/cedar_test.jsonl", out=work / "cedar-kbprior", kb_dir=kb_dir, model="kb-prior",
                prompt_languages=("en", "zh", "ar"), data_root=args.images, progress=False,
                cache_dir=work / "cache"))),
            ("cedar scripted", lambda: run_benchmark("cedar", CedarSpec(
                data=data / "cedar/cedar_test.jsonl", out=work / "cedar-scripted", kb_dir=kb_dir,
                model="openai:scripted", base_url=server.base_url, prompt_languages=("en", "zh", "ar"),
                image_concepts=True, data_root=args.images, progress=False, cache_dir=work / "cache-scripted"))),
            ("ricevl-vqa kb-prior", lambda: run_benchmark("ricevl-vqa", RiceVLVQASpec(
                data=data / "ricevl/vqa_test.jsonl", out=work / "vqa-kbprior",
                **({"kb_dir": cue_kb} if (cue_kb / "manifest.json").is_file()
                   else {"cue_metadata": data / "ricevl/cue_metadata.jsonl"}),
                region="Asia", allow_unknown_countries=True, progress=False, cache_dir=work / "cache"))),
            ("ricevl-vqa scripted", lambda: run_benchmark("ricevl-vqa", RiceVLVQASpec(
                data=data / "ricevl/vqa_test.jsonl", out=work / "vqa-scripted", kb_dir=cue_kb,
                model="openai:scripted", judge="openai:scripted-judge", base_url=server.base_url, region="Asia",
                allow_unknown_countries=True, progress=False, cache_dir=work / "cache-scripted"))),
            ("ricevl-grounding full-image", lambda: run_benchmark("ricevl-grounding", RiceVLGroundingSpec(
                data=data / "ricevl/grounding.jsonl", out=work / "ground-full", model="full-image",
                data_root=data / "ricevl", allow_unknown_countries=True, progress=False))),
            ("ricevl-grounding scripted", lambda: run_benchmark("ricevl-grounding", RiceVLGroundingSpec(
                data=data / "ricevl/grounding.jsonl", out=work / "ground-scripted", model="openai:scripted",
                base_url=server.base_url, data_root=data / "ricevl", allow_unknown_countries=True, progress=False,
                cache_dir=work / "cache-scripted"))),
        ]
        for name, job in runs:
            t0 = time.perf_counter()
            res = job()
            if name == "ricevl-vqa kb-prior" and not (cue_kb / "manifest.json").is_file():
                import shutil

                shutil.copytree(work / "vqa-kbprior" / "cue_kb", cue_kb)
            timings[name] = time.perf_counter() - t0
            if name.startswith("cedar"):
                tables = cedar_tables(res.metrics)
                text = _tables_md(name, tables, ("accuracy", "gepp", "grqb", "grid"))
                text += "\n" + _tables_md(f"{name}: per language", tables, ("lsrqb",))
            elif name.startswith("ricevl-vqa"):
                text = _tables_md(name, vqa_tables(res.metrics))
            else:
                text = _tables_md(name, grounding_tables(res.metrics))
            md += [text, f"Reports: `{res.out_dir}`; {timings[name]:.1f} s", ""]
            target = out / name.replace(" ", "-")
            target.mkdir(parents=True, exist_ok=True)
            for f in res.files:
                if f.suffix in (".md", ".json", ".png") and f.name not in ("checkpoint.json",):
                    (target / f.name).write_bytes(f.read_bytes())
        md += [f"Scripted server: {server.chat_calls} chat calls, max {server.max_in_flight} in flight.", ""]
    md += ["Timings (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()), ""]
    (out / "README.md").write_text("\n".join(md), encoding="utf-8")
    print("\n".join(md))


if __name__ == "__main__":
    main()
