"""The three SQLite caches (response cache, query-embedding cache, build step cache) against diskcache doing the
same work, side by side in one run: the measured figures quoted at the top of each cache module.

    pip install diskcache   # not a culturekb dependency; only this comparison needs it
    python benchmarks/bench_sqlite_caches.py [--n 2000]

Work per cache, on a fresh folder each (what the code does per build, lookup batch or model run):
* response cache: N answers put one by one (each committed: a killed run keeps them), then N gets;
* step cache / embedding cache: N 384-d float32 vectors put in one transaction, then read back in one batch
  (culturekb: one `IN (...)` query per 500 keys; diskcache has no multi-get, so one `get` per key inside a
  `transact()`), plus, for the embedding cache, keeping the newest M rows.
Writes benchmarks/results/sqlite_caches.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from culturekb.builders._stepcache import StepCache, text_key
from culturekb.models.cache import ResponseCache
from culturekb.models.embedding_cache import EmbeddingCache

HERE = Path(__file__).parent


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def _side_by_side(rows: list[dict[str, object]], cache: str, ops: tuple[str, str],
                  culturekb: tuple[Callable[[], object], Callable[[], object]],
                  diskcache: tuple[Callable[[], object], Callable[[], object]]) -> None:
    """Time the put then the get of culturekb's cache, then diskcache's; one row per operation."""
    put, get = _time(culturekb[0]), _time(culturekb[1])
    dput, dget = _time(diskcache[0]), _time(diskcache[1])
    rows.append({"cache": cache, "op": ops[0], "culturekb_s": put, "diskcache_s": dput})
    rows.append({"cache": cache, "op": ops[1], "culturekb_s": get, "diskcache_s": dget})


def main() -> int:  # noqa: D103
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args()
    try:
        import diskcache
    except ImportError:
        raise SystemExit("this comparison needs diskcache: pip install diskcache") from None
    n = args.n
    rng = np.random.default_rng(0)
    keys = [text_key(f"text {i}") for i in range(n)]
    vecs = rng.standard_normal((n, 384)).astype(np.float32)
    answer = json.dumps({"label": "awe", "why": "x" * 200})
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # response cache: commit per put
        rc = ResponseCache(root / "responses.sqlite")
        dc = diskcache.Cache(str(root / "dc_responses"))
        _side_by_side(rows, "response cache", (f"{n} puts (each committed)", f"{n} gets"),
                      (lambda: [rc.put(k, answer, {"model": "m"}) or 0 for k in keys],  # type: ignore[func-returns-value]
                       lambda: [rc.get(k) for k in keys]),
                      (lambda: [dc.set(k, (answer, {"model": "m"})) for k in keys], lambda: [dc.get(k) for k in keys]))
        rc.close()
        dc.close()
        # step cache vectors: one transaction, batched read
        sc = StepCache(root / "steps.sqlite")
        ds = diskcache.Cache(str(root / "dc_steps"))

        def ds_put() -> None:
            with ds.transact():
                for k, v in zip(keys, vecs, strict=True):
                    ds.set(("emb", k), v.tobytes())

        def ds_get() -> None:
            with ds.transact():
                for k in keys:
                    np.frombuffer(ds.get(("emb", k)), dtype=np.float32)

        _side_by_side(rows, "step cache (vectors)", (f"{n} vectors put in one transaction",
                                                     f"{n} vectors read in one batch"),
                      (lambda: sc.put_vectors("emb", zip(keys, vecs, strict=True)),
                       lambda: sc.get_vectors("emb", keys, 384)),
                      (ds_put, ds_get))
        ds.close()
        # embedding cache: bounded (keeps the newest rows)
        ec = EmbeddingCache(root / "query.sqlite", max_entries=n // 2)
        texts = [f"text {i}" for i in range(n)]
        dq = diskcache.Cache(str(root / "dc_query"), size_limit=(n // 2) * (384 * 4 + 200),
                             eviction_policy="least-recently-stored")

        def dq_put() -> None:
            with dq.transact():
                for t, v in zip(texts, vecs, strict=True):
                    dq.set(("emb", t), v.tobytes())
            dq.cull()

        def dq_get() -> None:
            with dq.transact():
                for t in texts:
                    dq.get(("emb", t))

        _side_by_side(rows, "query-embedding cache", (f"{n} vectors put, newest {n // 2} kept",
                                                      f"{n} texts looked up"),
                      (lambda: ec.put("emb", dict(zip(texts, vecs, strict=True))),
                       lambda: ec.get("emb", texts, 384)),
                      (dq_put, dq_get))
        ec.close()
        dq.close()
    for r in rows:
        r["diskcache_over_culturekb"] = round(float(r["diskcache_s"]) / max(float(r["culturekb_s"]), 1e-9), 2)  # type: ignore[arg-type]
        r["culturekb_s"] = round(float(r["culturekb_s"]), 4)  # type: ignore[arg-type]
        r["diskcache_s"] = round(float(r["diskcache_s"]), 4)  # type: ignore[arg-type]
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {"n": n, "diskcache": diskcache.__version__}
    (out / "sqlite_caches.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n",
                                            encoding="utf-8")
    lines = [f"# SQLite caches vs diskcache {diskcache.__version__} (n = {n}, same run)", "",
             "| cache | operation | culturekb s | diskcache s | diskcache / culturekb |", "|---|---|---|---|---|"]
    lines += [f"| {r['cache']} | {r['op']} | {r['culturekb_s']} | {r['diskcache_s']} | "
              f"{r['diskcache_over_culturekb']}x |" for r in rows]
    (out / "sqlite_caches.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
