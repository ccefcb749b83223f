"""How the label parser's time grows with noise before the JSON answer: 10x the noise should cost about 10x the
time (linear), never ~100x (quadratic scanning). Best-of-3 timings of 200 and 2,000 repetitions of three noise
patterns, measured side by side in one process; the ratio is printed and written to
benchmarks/results/parse_scaling.json. (This was a test until issue 21's session: a test asserts no wall-clock
ratio, since one failed on a loaded machine.)

    .venv/bin/python benchmarks/bench_parse_scaling.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from culturekb.inference.parsing import parse_prediction  # noqa: E402
from culturekb.kb.schemes import get_scheme  # noqa: E402

NOISES = ("blah { not json ", "{'broken': ", '{"k": [1, ')
TARGET = 40.0
"""10x the noise may take at most this many times the time (quadratic would be ~100x)."""


def _best(scheme: object, reps: int, noise: str) -> float:
    text = noise * reps + '{"emotion": "fear"}'
    times = []
    for _ in range(3):
        started = time.perf_counter()
        assert parse_prediction(text, scheme).label == "fear"  # type: ignore[arg-type]
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> dict[str, object]:
    scheme = get_scheme("artemis9")
    rows = []
    for noise in NOISES:
        small, large = _best(scheme, 200, noise), _best(scheme, 2000, noise)
        ratio = large / max(small, 1e-6)
        rows.append({"noise": noise, "s_200": round(small, 6), "s_2000": round(large, 6), "ratio": round(ratio, 1),
                     "meets_target": ratio < TARGET})
        print(f"{noise!r:24} 200x {small * 1e3:8.2f} ms  2000x {large * 1e3:8.2f} ms  ratio {ratio:6.1f}")
    out = Path(__file__).resolve().parent / "results" / "parse_scaling.json"
    result = {"target_ratio_below": TARGET, "rows": rows}
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"written {out}")
    return result


if __name__ == "__main__":
    main()
