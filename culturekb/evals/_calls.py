"""Per-item model-call counts: a `ModelClient` wrapper that tallies the requests one item (a question, a story)
makes, sent and served from the response cache apart.

The model wrapper's counters (`culturekb.models.Model.calls`, `cache_hits`, `fault_counts`) cover every item of a
run at once, and a run answers many items concurrently; a runner that reports how many calls each item took wraps
the shared client once per item: ``counted = CountingClient(client, tally)``. The wrapper only delegates and
counts; retries inside the client are not counted again (a request that the client retried is one call here).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from culturekb.models._retry import counts_since
from culturekb.models.base import Message, ModelClient, ModelResponse
from culturekb.models.model import Model

__all__ = ["CallTally", "CountingClient", "run_client", "client_counts", "run_accounting"]


@dataclass
class CallTally:
    """Calls one item made: `sent` (answered by the model) and `cached` (served from the response cache)."""

    sent: int = 0
    cached: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def total(self) -> int:
        """Every answer the item received, sent or cached."""
        return self.sent + self.cached

    def add(self, response: Any) -> None:
        """Count one answer (a `ModelResponse`; anything else, such as a failure in a batch, counts as sent)."""
        with self._lock:
            if isinstance(response, ModelResponse) and response.cached:
                self.cached += 1
            else:
                self.sent += 1


class CountingClient:
    """A `ModelClient` that delegates to `client` and adds every answer (or failure) to `tally`."""

    def __init__(self, client: ModelClient, tally: CallTally) -> None:
        self.client = client
        self.tally = tally
        self.id = client.id

    async def acomplete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One chat completion, counted."""
        try:
            response = await self.client.acomplete(messages, **params)
        except Exception:
            self.tally.add(None)
            raise
        self.tally.add(response)
        return response

    def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """Synchronous `acomplete`, counted."""
        try:
            response = self.client.complete(messages, **params)
        except Exception:
            self.tally.add(None)
            raise
        self.tally.add(response)
        return response

    def complete_many(self, batch: Sequence[list[Message]], *, return_exceptions: bool = False, **params: Any
                      ) -> list[Any]:
        """A batch of completions, each counted (a failed one as sent)."""
        try:
            answers = self.client.complete_many(batch, return_exceptions=return_exceptions, **params)
        except Exception:
            self.tally.add(None)
            raise
        for answer in answers:
            self.tally.add(answer)
        return answers


# -- a run's model accounting (run.json) ----------------------------------------------------------------------
_MAX_LISTED = 50
_MAX_RUNS = 50


def run_client(runner: Any) -> ModelClient | None:
    """The model client a runner calls (its own `client`, or its predictor's), or None (an offline run)."""
    for owner in (runner, getattr(runner, "predictor", None)):
        client = getattr(owner, "client", None) if owner is not None else None
        if client is not None:
            return client  # type: ignore[no-any-return]
    return None


def client_counts(client: ModelClient | None) -> dict[str, Any]:
    """The model wrapper's counters now (`Model.fault_counts`); {} offline, or for a plug-in's own full client
    (one that `make_client` did not wrap), which keeps none the run could read."""
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
