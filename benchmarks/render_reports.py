"""Every runner's report (JSON, Markdown, PNG) on the packaged samples, offline, into one folder: what
`benchmarks/results/plots_before_after/` compares and what a reviewer opens to look at every plot.

artemculture and knowledge run on ``sample:artemis`` (a KB built from it), cedar on ``sample:cedar`` with the
prompt-language grid (en, zh, ar), ricevl-vqa and ricevl-grounding on their samples, culturaltom on its sample
(the positivity baseline), and commet on its sample with the scripted model of `run_commet_sample.py` over HTTP
and the offline judge (orig and blind). Each report opens with what was run.

Usage (from the repository root)::

    python benchmarks/render_reports.py --out /tmp/reports

Two runs took 74 s and 115 s of wall time on two cores, at 1-minute load averages of 6.3-7.2 and 7.1-9.1
(`uptime` before and after each).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parents[1]
RUNS: list[tuple[str, list[str]]] = [
    ("artemculture", ["eval", "artemculture", "sample:artemis", "--kb", "{kbs}/artemis-kb"]),
    ("knowledge", ["eval", "knowledge", "sample:artemis", "--kb", "{kbs}/artemis-kb"]),
    ("cedar", ["eval", "cedar", "sample:cedar", "--kb", "{kbs}/cedar-kb", "--prompt-languages", "en,zh,ar"]),
    ("ricevl-vqa", ["eval", "ricevl-vqa", "sample:ricevl-vqa", "--cue-metadata", "sample:ricevl-cues",
                    "--any-country"]),
    ("ricevl-grounding", ["eval", "ricevl-grounding", "sample:ricevl-grounding", "--any-country"]),
    ("culturaltom", ["eval", "culturaltom", "sample:culturaltom"]),
]
KBS: list[tuple[str, list[str]]] = [
    ("artemis-kb", ["build", "sample:artemis"]),
    ("cedar-kb", ["build", "sample:cedar-kb", "--scheme", "cedar14", "--concepts", "precomputed", "--min-support",
                  "1"]),
]


def _cli(args: list[str]) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    code = "import sys; from culturekb.cli import main; sys.argv = ['culturekb', *sys.argv[1:]]; main()"
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"culturekb {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")


def commet(out: Path) -> None:
    """CoMMET with the scripted model over HTTP (run_commet_sample.make_model) and the offline judge."""
    from run_commet_sample import SAMPLE, make_model

    from culturekb.evals.commet import load_story_turns
    from culturekb.evals.commet.spec import CommetSpec
    from culturekb.testing import ScriptedOpenAIServer
    from culturekb.workflows import run_benchmark

    with ScriptedOpenAIServer(make_model(load_story_turns(SAMPLE))) as srv:
        spec = CommetSpec(data=SAMPLE, out=out, model="openai:scripted", base_url=srv.base_url, judge="offline",
                          cache_dir=out / "cache", concurrency=4, progress=False)
        run_benchmark("commet", spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="a new folder: one subfolder per runner")
    args = ap.parse_args()
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"--out {args.out} is not empty; give a new folder (runs resume from what is there)")
    kbs = args.out / "_kbs"
    for name, cmd in KBS:
        _cli([*cmd, "--out", str(kbs / name)])
    for name, cmd in RUNS:
        t0 = time.perf_counter()
        _cli([*(c.format(kbs=kbs) for c in cmd), "--out", str(args.out / name)])
        print(f"{name}: {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    commet(args.out / "commet")
    print(f"commet: {time.perf_counter() - t0:.1f} s")
    for png in sorted(args.out.glob("*/*.png")):
        print(png.relative_to(args.out))


if __name__ == "__main__":
    main()
