"""Fault injection: a build (LLM rationales and an LLM judge) and an eval (Cedar, orig) against the scripted
OpenAI-compatible server with a mix of faults, a build killed midway and one failed midway, both resumed.

    python benchmarks/fault_injection.py [--rate 0.12] [--rows 200] [--out benchmarks/results]

The server (`culturekb.testing.openai_server`) answers through a `responder` that, for the first two requests of
each distinct conversation, injects a fault with probability `rate`: a timeout (the answer comes after the
client's timeout), 429 with Retry-After, 500, an HTML page with status 200, or (for a first ask) an answer that is
not JSON (the build re-asks). The schedule is a hash of the conversation, so runs are repeatable. Every answer is
deterministic, so the faulty build must give the reference build's KB byte for byte.

Build: a reference build against a fault-free server (its request count is the minimum), then the faulty build:
run 1 is killed after its second chunk of rationales (`CULTUREKB_TEST_KILL_AT`), run 2 meets a server that goes
down (503 to everything) midway and fails, run 3 finishes. Reported: items lost (tuples missing or different
from the reference: must be 0), bytes identical, requests spent against the minimum, requests for a conversation
the server had already answered (a resume that re-pays nothing: must be 0), and the build report's counts.
Eval: the same with `culturekb eval cedar` (in process): a run with the fault mix and a down window, then a
rerun; reported: items without an answer after the rerun (must be 0), requests against the minimum, re-paid.
Results: benchmarks/results/fault_injection.{json,md}. `run_fault_injection` is what tests/test_fault_injection.py
runs on a smaller sample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from culturekb.testing.openai_server import ScriptedOpenAIServer, ScriptedReply  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "culturekb" / "data" / "demo" / "artemis_demo.csv"
CEDAR = ROOT / "tests" / "fixtures" / "cedar_ricevl" / "cedar_sample.jsonl"
MODEL = "fi-model"
TIMEOUT_S = 1.0
FAULTS = ("timeout", "429", "500", "html", "not_json")
_CONCEPT = re.compile(r'the concept "(.+?)"')
_DOMINANT = re.compile(r'most common emotion was\s+"(.+?)"')
_LABEL_LINE = re.compile(r"^- (.+)$", re.MULTILINE)


def _key(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()


def _answer(body: dict[str, Any]) -> str:
    """The model's deterministic answer: rationales naming the dominant emotion, a judge verdict naming the first
    listed emotion its statements mention, or a Cedar label."""
    text = str(body["messages"][-1]["content"])
    first = str(body["messages"][0]["content"])
    if "Write up to" in first:
        concept = (_CONCEPT.search(first) or [None, "it"])[1]
        emotion = (_DOMINANT.search(first) or [None, "awe"])[1]
        return json.dumps([f"For these viewers, {concept} recalls {emotion}.",
                           f"In everyday life {concept} goes with {emotion}."])
    if "Statements:" in first:
        statements, _, labels_part = first.partition("Which single emotion")
        labels = _LABEL_LINE.findall(labels_part)
        chosen = next((lab for lab in labels if lab in statements), labels[0] if labels else "awe")
        return json.dumps({"emotion": chosen, "reason": "the statements name it"})
    del text
    return json.dumps({"emotion": "joy", "explanation": "a scripted answer"})


class _Switch:
    """A responder that passes each request to `target` (switched between the fault-free and the faulty one)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __call__(self, body: dict[str, Any]) -> Any:
        return self.target(body)


class FaultyResponder:
    """The scripted server's responder: faults for the first two requests of a conversation (probability `rate`,
    kind and decision by hash), a `down` switch (503 to everything, or after `down_after` requests), and the
    accounting: requests per fault kind, conversations answered, and requests for an already-answered one."""

    def __init__(self, rate: float, seed: str = "fi") -> None:
        self.rate, self.seed = rate, seed
        self.lock = threading.Lock()
        self.seen: Counter[str] = Counter()
        self.answered: set[str] = set()
        self.kinds: Counter[str] = Counter()
        self.repaid = 0
        self.requests = 0
        self.down = False
        self.down_after: int | None = None

    def _fault(self, key: str, attempt: int, first_ask: bool) -> str | None:
        if attempt >= 2 or self.rate <= 0:
            return None
        h = int(hashlib.sha256(f"{self.seed}:{key}:{attempt}".encode()).hexdigest()[:12], 16)
        if (h % 10_000) / 10_000 >= self.rate:
            return None
        kinds = FAULTS if first_ask else FAULTS[:-1]  # a re-ask is never answered with prose again
        return kinds[(h // 10_000) % len(kinds)]

    def __call__(self, body: dict[str, Any]) -> Any:
        key = _key(body)
        with self.lock:
            self.requests += 1
            if self.down_after is not None and self.requests > self.down_after:
                self.down = True
            if self.down:
                self.kinds["down"] += 1
                return ScriptedReply(status=503, body='{"error": {"message": "service unavailable"}}')
            attempt = self.seen[key]
            self.seen[key] += 1
            if key in self.answered:
                self.repaid += 1
        fault = self._fault(key, attempt, len(body.get("messages") or []) == 1)
        with self.lock:
            self.kinds[fault or "ok"] += 1
        if fault == "timeout":
            return ScriptedReply(content=_answer(body), delay_s=TIMEOUT_S + 0.5)
        if fault == "429":
            return ScriptedReply(status=429, body='{"error": {"message": "slow down"}}', headers={"Retry-After": "0"})
        if fault == "500":
            return (500, '{"error": {"message": "internal error"}}')
        if fault == "html":
            return ScriptedReply(status=200, body="<html><body><h1>502 Bad Gateway</h1></body></html>",
                                 headers={"Content-Type": "text/html"})
        with self.lock:
            self.answered.add(key)
        if fault == "not_json":
            return "Sure! Here is what I think about it, in a few words."
        return _answer(body)

    def phase(self) -> dict[str, Any]:
        """Counts since the last call (then reset, except the conversations answered)."""
        with self.lock:
            out = {"requests": self.requests, "repaid": self.repaid, "by_kind": dict(self.kinds)}
            self.requests, self.repaid, self.kinds = 0, 0, Counter()
            self.down, self.down_after = False, None
        return out


def _sample(rows: int, workdir: Path) -> Path:
    lines = DEMO.read_text(encoding="utf-8").splitlines(keepends=True)
    if rows >= len(lines) - 1:
        return DEMO
    path = workdir / "train.csv"
    import csv
    import io

    reader = list(csv.reader(io.StringIO(DEMO.read_text(encoding="utf-8"))))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(reader[: rows + 1])
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def _build(data: Path, out: Path, cache: Path, base_url: str, kill_at: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1767225600", "CULTUREKB_MODEL_TIMEOUT_S": str(TIMEOUT_S),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("CULTUREKB_TEST_KILL_AT", None)
    if kill_at:
        env["CULTUREKB_TEST_KILL_AT"] = kill_at
    return subprocess.run(
        [sys.executable, "-m", "culturekb.cli", "build", str(data), "--out", str(out), "--cache-dir", str(cache),
         "--rationales", f"openai:{MODEL}", "--judges", f"openai:{MODEL},lexicon", "--base-url", base_url,
         "--json"],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )


def _tuples(kb: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = [json.loads(line) for line in (kb / "tuples.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return {(r["concept"], r["culture"]): r for r in rows}


def _kb_bytes(kb: Path) -> dict[str, bytes]:
    """The KB's files, its index included (not its index.json, which records when it was made), but the per-run
    ones (the build report with its timings and counts, the run log)."""
    return {str(p.relative_to(kb)): p.read_bytes() for p in sorted(kb.rglob("*"))
            if p.is_file() and not p.name.startswith(("build_report", "run.")) and p.name != "index.json"}


def run_build(rate: float, rows: int, workdir: Path, down_after: int, kill_at: str = "rationales@2"
              ) -> dict[str, Any]:
    """The build part: reference, then killed / failed / finished runs with the fault mix."""
    data = _sample(rows, workdir)
    clean, faulty = FaultyResponder(0.0), FaultyResponder(rate)
    switch = _Switch(clean)  # one server (one base_url, which the KB records) for both builds
    runs: list[dict[str, Any]] = []
    out, cache = workdir / "kb", workdir / "cache"
    with ScriptedOpenAIServer(switch, responder_threads=16) as server:
        ref = _build(data, workdir / "ref", workdir / "cache-ref", server.base_url)
        if ref.returncode != 0:
            raise RuntimeError(f"reference build failed: {ref.stderr[-2000:]}")
        minimum = clean.phase()["requests"]
        switch.target = faulty
        t0 = time.perf_counter()
        killed = _build(data, out, cache, server.base_url, kill_at=kill_at)
        runs.append({"run": f"killed at {kill_at}", "exit": killed.returncode,
                     "seconds": round(time.perf_counter() - t0, 1), **faulty.phase()})
        faulty.down_after = down_after
        t0 = time.perf_counter()
        failed = _build(data, out, cache, server.base_url)
        tail = failed.stderr.strip().splitlines()[-1:] if failed.returncode else []
        runs.append({"run": f"server down after {down_after} requests", "exit": failed.returncode,
                     "seconds": round(time.perf_counter() - t0, 1), "message": tail[0][:400] if tail else "",
                     **faulty.phase()})
        t0 = time.perf_counter()
        final = _build(data, out, cache, server.base_url)
        runs.append({"run": "resumed to the end", "exit": final.returncode,
                     "seconds": round(time.perf_counter() - t0, 1), **faulty.phase()})
    if final.returncode != 0:
        raise RuntimeError(f"the resumed build failed: {final.stderr[-2000:]}")
    ref_t, got_t = _tuples(workdir / "ref"), _tuples(out)
    lost = [k for k in ref_t if k not in got_t or got_t[k]["rationales"] != ref_t[k]["rationales"]]
    report = json.loads((out / "build_report.json").read_text(encoding="utf-8"))
    spent = sum(r["requests"] for r in runs)
    down = sum(r["by_kind"].get("down", 0) for r in runs)
    return {
        "samples": rows, "tuples": len(ref_t), "fault_rate": rate,
        "minimum_requests": minimum, "requests_spent": spent, "requests_while_down": down,
        "overhead": round(spent / minimum, 3) if minimum else None,
        "overhead_without_down_window": round((spent - down) / minimum, 3) if minimum else None,
        "repaid_answers": sum(r["repaid"] for r in runs),
        "items_lost": len(lost), "lost_examples": [list(k) for k in lost[:10]],
        "kb_bytes_identical": _kb_bytes(out) == _kb_bytes(workdir / "ref"),
        "runs": runs,
        "final_report_model": {k: v for k, v in report.get("model", {}).items() if k != "bad_answers"},
        "report_runs": report.get("runs"),
    }


def run_eval(rate: float, workdir: Path, down_after: int) -> dict[str, Any]:
    """The eval part: `eval cedar` (orig) with the fault mix and a down window, then a rerun."""
    os.environ["CULTUREKB_MODEL_TIMEOUT_S"] = str(TIMEOUT_S)
    from culturekb.evals.cedar.spec import CedarSpec
    from culturekb.workflows import run_benchmark

    def spec(out: Path, cache: Path, url: str) -> CedarSpec:
        return CedarSpec(out=out, data=CEDAR, model=f"openai:{MODEL}", base_url=url, cache_dir=cache,
                         modes=("orig",), progress=False)

    clean = FaultyResponder(0.0)
    with ScriptedOpenAIServer(clean, responder_threads=16) as server:
        run_benchmark("cedar", spec(workdir / "eval-ref", workdir / "eval-cache-ref", server.base_url))
    minimum = clean.phase()["requests"]
    faulty = FaultyResponder(rate)
    runs = []
    with ScriptedOpenAIServer(faulty, responder_threads=16) as server:
        faulty.down_after = down_after
        first = run_benchmark("cedar", spec(workdir / "eval", workdir / "eval-cache", server.base_url))
        errors_first = sum(p.parse_status == "error" for ps in first.predictions.values() for p in ps)
        runs.append({"run": f"server down after {down_after} requests", "items_failed": errors_first,
                     **faulty.phase()})
        second = run_benchmark("cedar", spec(workdir / "eval", workdir / "eval-cache", server.base_url))
        runs.append({"run": "rerun (failed items retried)", **faulty.phase()})
    items = sum(len(ps) for ps in second.predictions.values())
    lost = sum(p.parse_status == "error" for ps in second.predictions.values() for p in ps)
    ref_items = sum(1 for line in (workdir / "eval-ref" / "predictions.jsonl").read_text().splitlines() if line)
    run_json = json.loads((workdir / "eval" / "run.json").read_text(encoding="utf-8"))
    spent = sum(r["requests"] for r in runs)
    down = sum(r["by_kind"].get("down", 0) for r in runs)
    return {"items": items, "reference_items": ref_items, "items_lost": lost + max(ref_items - items, 0),
            "minimum_requests": minimum, "requests_spent": spent, "requests_while_down": down,
            "overhead_without_down_window": round((spent - down) / minimum, 3) if minimum else None,
            "repaid_answers": sum(r["repaid"] for r in runs), "runs": runs,
            "run_json_model": {k: v for k, v in run_json.get("model", {}).items() if k != "runs"}}


def run_fault_injection(rate: float = 0.12, rows: int = 200, workdir: Path | None = None,
                        down_after: int = 60, eval_down_after: int = 8, kill_at: str = "rationales@2",
                        backoff_s: float | None = None) -> dict[str, Any]:
    """Both parts in `workdir` (a temporary folder when None); `backoff_s` sets $CULTUREKB_MODEL_BACKOFF_S (the
    first retry's wait) for the builds and the eval."""
    if backoff_s is not None:
        os.environ["CULTUREKB_MODEL_BACKOFF_S"] = str(backoff_s)
    with tempfile.TemporaryDirectory() as tmp:
        wd = Path(workdir or tmp)
        wd.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        build = run_build(rate, rows, wd, down_after, kill_at)
        evaluation = run_eval(rate, wd, eval_down_after)
        return {"build": build, "eval": evaluation, "seconds": round(time.perf_counter() - t0, 1)}


def _markdown(res: dict[str, Any]) -> str:
    b, e = res["build"], res["eval"]
    lines = [
        "# Fault injection",
        "",
        "`python benchmarks/fault_injection.py` (scripted OpenAI-compatible server; fault rate "
        f"{b['fault_rate']:.0%} on each of the first two requests of a conversation: timeout, 429 with Retry-After, "
        "500, an HTML page with status 200, prose instead of JSON on a first ask). Client timeout "
        f"{TIMEOUT_S:g} s, 4 retries, 2 re-asks. Total {res['seconds']} s.",
        "",
        f"## Build ({b['samples']} ArtEmis demo rows, {b['tuples']} tuples, LLM rationales + LLM judge + lexicon)",
        "",
        f"- **items lost: {b['items_lost']}**; KB bytes identical to the fault-free build: {b['kb_bytes_identical']}",
        f"- **answers re-paid by the resumes: {b['repaid_answers']}**",
        f"- requests: minimum (fault-free build) {b['minimum_requests']}, spent {b['requests_spent']} "
        f"({b['overhead']}x), of which {b['requests_while_down']} while the server was down; without them "
        f"{b['overhead_without_down_window']}x",
        "",
        "| run | exit | seconds | requests | re-paid | by kind |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in b["runs"]:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items()))
        lines.append(f"| {r['run']} | {r['exit']} | {r['seconds']} | {r['requests']} | {r['repaid']} | {kinds} |")
    failed = next((r for r in b["runs"] if r.get("message")), None)
    if failed:
        lines += ["", f"The failed run's message: `{failed['message']}`"]
    m = b["final_report_model"]
    lines += ["", "The last run's build report (`model` section): " + json.dumps(m, sort_keys=True), "",
              f"Runs recorded in the build report: {len(b['report_runs'] or [])} (a completed run each; killed and "
              "failed runs write no report)", "",
              "## Eval (`eval cedar`, orig, 18 items)", "",
              f"- **items without an answer after the rerun: {e['items_lost']}** (of {e['items']})",
              f"- **answers re-paid: {e['repaid_answers']}**",
              f"- requests: minimum {e['minimum_requests']}, spent {e['requests_spent']}, of which "
              f"{e['requests_while_down']} while the server was down; without them "
              f"{e['overhead_without_down_window']}x",
              "", "| run | requests | re-paid | by kind |", "|---|---:|---:|---|"]
    for r in e["runs"]:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(r["by_kind"].items()))
        lines.append(f"| {r['run']} | {r['requests']} | {r['repaid']} | {kinds} |")
    lines += ["", "run.json `model` section after the rerun: " + json.dumps(e["run_json_model"], sort_keys=True)]
    return "\n".join(lines) + "\n"


def main() -> dict[str, Any]:
    """Run both parts and write benchmarks/results/fault_injection.{json,md}."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=0.12)
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = ap.parse_args()
    res = run_fault_injection(args.rate, args.rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fault_injection.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n")
    (args.out / "fault_injection.md").write_text(_markdown(res))
    sys.stdout.write(_markdown(res))
    return res


if __name__ == "__main__":
    main()
