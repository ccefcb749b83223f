"""CoMMET end to end on the shipped StoryTurns sample, with a scripted model over real HTTP, twice: judged by the
offline judge, and by a scripted judge model (also over HTTP). Writes the report tables and the model and judge
calls per story and per question of each setting.

The scripted "model" is a few rules, not a VLM: its numbers test the pipeline (multi-turn messages, feedback
choice, judging, re-asks, diagnostics, call counting), not any model. Its rules, per turn:

- a turn whose image was not sent (the blind run) gets "I cannot see the picture, so I cannot tell.";
- right after wrong feedback ("Not quite ..."), the right answer (a model that learns from the feedback);
- otherwise, by a hash of (story, turn): 1 in 6 a known wrong answer, 1 in 6 "I am not sure.", the rest
  "I think: <the first expected answer>.".

The scripted judge: right when the answer contains one of the rubric's right answers and none of its wrong ones
(normalised), the answer class whose example it contains as the branch; one first verdict in 5 comes as prose, so
the re-ask path runs. The kb-cues setting reads a KB built from the package's ArtELingo demo rows with the
multilingual USE embedder (English story concepts meet Chinese KB concepts); the scripted model ignores the cues.

Usage (from the repository root)::

    python benchmarks/run_commet_sample.py --out benchmarks/results/commet_sample
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from culturekb.evals.commet import Story, load_story_turns, normalise_answer  # noqa: E402
from culturekb.evals.commet.spec import CommetSpec  # noqa: E402
from culturekb.evals.reports import render_markdown_table  # noqa: E402
from culturekb.testing import ScriptedOpenAIServer  # noqa: E402
from culturekb.workflows import build_from_files, index_kb, run_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "culturekb" / "data" / "demo" / "commet" / "commet_sample.jsonl"


def _h(text: str) -> int:
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16)


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content
                                                               if p.get("type") == "text")


def make_model(stories: list[Story]) -> Any:
    """The scripted model (see the module docstring)."""

    def model(body: dict[str, Any]) -> str:
        messages = body["messages"]
        first = _text(messages[1])
        story = next(s for s in stories if s.turns[0].text in first)
        k = sum(m["role"] == "user" for m in messages) - 1
        turn = story.turns[k]
        has_image = any(isinstance(m["content"], list) for m in messages if m["role"] == "user")
        if turn.image and not has_image:
            return "I cannot see the picture, so I cannot tell."
        right = (turn.expected_for(None) or ("",))[0]
        if _text(messages[-1]).startswith("Not quite"):
            return right
        h = _h(f"{story.id}:{k}") % 6
        if h == 0:
            return turn.wrong_answers[0] if turn.wrong_answers else "I am not sure."
        if h == 1:
            return "I am not sure."
        return f"I think: {right}."

    return model


def _section(prompt: str, head: str) -> list[str]:
    m = re.search(rf"{re.escape(head)}[^:]*: (.*)", prompt)
    if m is None or m.group(1).startswith("(none"):
        return []
    return [a.strip() for a in m.group(1).split(";") if a.strip()]


def make_judge() -> Any:
    """The scripted judge model (see the module docstring)."""
    seen: set[str] = set()

    def judge(body: dict[str, Any]) -> str:
        prompt = _text(body["messages"][0])
        answer_m = re.search(r"Answer to check:\n<<<\n(.*?)\n>>>", prompt, re.S)
        answer = normalise_answer(answer_m.group(1) if answer_m else "")
        key = prompt
        if len(body["messages"]) == 1 and _h(key) % 5 == 0 and key not in seen:
            seen.add(key)
            return "The answer looks fine to me."
        right = [normalise_answer(a) for a in _section(prompt, "Right answers")]
        wrong = [normalise_answer(a) for a in _section(prompt, "Known wrong answers")]

        def has(x: str) -> bool:
            return bool(x) and f" {x} " in f" {answer} "

        branch, correct = None, any(has(a) for a in right) and not any(has(w) for w in wrong)
        for name, side, examples in re.findall(r"^- (\S+) \(counts as (right|wrong)\): (.*)$", prompt, re.M):
            if any(has(normalise_answer(e)) for e in examples.split(";")):
                branch, correct = name, side == "right"
                break
        return json.dumps({"correct": correct, "branch": branch, "reason": "scripted rule"})

    return judge


def cue_kb(folder: Path) -> Path:
    """A KB from the package's ArtELingo demo rows, indexed with the multilingual USE embedder."""
    kb = folder / "kb"
    if not (kb / "manifest.json").is_file():
        build_from_files([ROOT / "culturekb" / "data" / "demo" / "artelingo_demo.csv"], kb, cache_dir=folder / "cache",
                         progress=False, embedder="use", min_support=1)
        index_kb(kb, backend="numpy", embedder="use")
    return kb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "commet_sample")
    ap.add_argument("--kb", type=Path, default=None, help="cue KB (default: built from the ArtELingo demo rows)")
    args = ap.parse_args()
    stories = load_story_turns(SAMPLE)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["# CoMMET on the shipped sample (scripted model over HTTP)", "",
             "Made by `benchmarks/run_commet_sample.py`; the scripted model's and judge's rules are in its docstring. "
             "The numbers test the pipeline, not any model.", ""]
    summary: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer(make_model(stories)) as model_srv, \
            ScriptedOpenAIServer(make_judge()) as judge_srv:
        kb = args.kb or cue_kb(ROOT / ".culturekb-cache" / "bench-commet")
        for name, judge in (("offline judge", "offline"), ("scripted judge model", "openai:scripted-judge")):
            t0 = time.perf_counter()
            calls0, judge0 = model_srv.calls, judge_srv.calls
            spec = CommetSpec(data=SAMPLE, out=Path(tmp) / judge.replace(":", "_"), model="openai:scripted",
                              base_url=model_srv.base_url, judge=judge, judge_base_url=judge_srv.base_url, kb_dir=kb,
                              cache_dir=Path(tmp) / f"cache-{judge.replace(':', '_')}", concurrency=4, progress=False)
            result = run_benchmark("commet", spec)
            seconds = time.perf_counter() - t0
            lines += [f"## Judged by the {name} (`{result.metrics['judge']}`)", "",
                      f"{result.n_samples} stories; {model_srv.calls - calls0} model requests and "
                      f"{judge_srv.calls - judge0} judge requests over HTTP in {seconds:.1f} s.", ""]
            for table in result.tables.values():
                lines += [f"### {table.title}", "", render_markdown_table(table)]
                if table.note:
                    lines += [f"_{table.note}_", ""]
            summary[name] = {"judge": result.metrics["judge"], "seconds": round(seconds, 2),
                             "model_requests": model_srv.calls - calls0, "judge_requests": judge_srv.calls - judge0,
                             "settings": {k: {f: v[f] for f in ("story_accuracy", "question_accuracy", "calls",
                                                                "feedback", "cue_status")}
                                          for k, v in result.metrics["settings"].items()},
                             "diagnostics": result.metrics["diagnostics"]}
    (args.out / "commet_sample.md").write_text("\n".join(lines), encoding="utf-8")
    (args.out / "commet_sample.json").write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
