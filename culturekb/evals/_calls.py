"""A run's model accounting: the ``model`` section of run.json, from the counters of the one model wrapper
(`culturekb.models.Model.fault_counts`) before and after the run.

Per-item counts (the calls one story or question made) are the wrapper's too: ``with client.tally() as calls:``
(`culturekb.models.tally`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from culturekb.models._retry import counts_since
from culturekb.models.base import ModelClient
from culturekb.models.model import Model

__all__ = ["client_counts", "run_accounting"]


# -- a run's model accounting (run.json) ----------------------------------------------------------------------
_MAX_LISTED = 50
_MAX_RUNS = 50


def client_counts(client: ModelClient | None) -> dict[str, Any]:
    """The model wrapper's counters now (`Model.fault_counts`); {} offline, or for a client built by hand that is
    not a `Model` (every client `make_client` returns is one: a plug-in's full client goes behind the wrapper)."""
    return client.fault_counts() if isinstance(client, Model) else {}


def run_accounting(client: ModelClient | None, before: dict[str, Any], predictions: dict[str, Sequence[Any]],
                   previous: dict[str, Any] | None) -> dict[str, Any]:
    """The ``model`` section of run.json: this run's requests, answers, cache hits, retries and failures by cause
    (the client's counters less `before`), the items whose call failed (``error``) or whose answer could not be
    parsed (``invalid``) per setting, and the history of runs into this folder (`previous`: the last run.json's
    section), so that a rerun that calls nothing keeps what earlier runs paid for instead of overwriting it."""
    import datetime as dt

    this = counts_since(client_counts(client), before) if client is not None else {}
    failed: dict[str, dict[str, Any]] = {}
    for setting, preds in predictions.items():
        for status in ("error", "invalid"):
            ids = [str(getattr(p, "sample_id", "?")) for p in preds if getattr(p, "parse_status", None) == status]
            if ids:
                failed.setdefault(setting, {})[status] = {"count": len(ids), "items": ids[:_MAX_LISTED]}
    runs = list((previous or {}).get("runs") or [])
    runs.append({"finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **this})
    runs = runs[-_MAX_RUNS:]
    totals: dict[str, int] = {}
    for run in runs:
        for key in ("attempts", "answers", "cache_hits", "retries", "failures"):
            totals[key] = totals.get(key, 0) + int(run.get(key, 0) or 0)
    return {"model": client.id if client is not None else None, "this_run": this, "failed_items": failed,
            "all_runs": totals, "runs": runs}
