"""What a build does with a model's bad answers, and what it records about its model calls.

A model step (LLM rationales, an LLM judge) gets, per item, a validated answer, a bad answer (no valid JSON after
the transport retries and the re-asks: `JSONAnswer.status == "invalid"`) or a failed call (the server could not
be reached or kept failing: ``"error"``). `settle` turns a batch of them into values:

- a failed call stops the build (after the whole batch has been tried, so every answer received is in the build's
  response cache and a rerun re-pays none of them), with a message naming the item and the requests spent;
- a bad answer (also a 200 page that is no chat completion after its retries, e.g. HTML) follows the policy
  `on_bad_answer`: ``fail`` stops the build the same way, ``skip`` and ``flag`` give
  None for the item (the build then drops the tuple, or keeps it flagged for review; nothing is cached for it, so
  a later build asks again) and record it in the `FaultLog`, which the build report shows.

`model_report` sums the clients' own counters (`OpenAICompatClient.fault_counts`: attempts, answers, cache hits,
retries and failures by cause) with the log's re-asks and bad answers.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from culturekb.errors import ModelOutputError, ProviderError
from culturekb.models._retry import counts_since
from culturekb.models.json_output import JSONAnswer

__all__ = ["BAD_ANSWER_POLICIES", "BadAnswer", "FaultLog", "settle", "model_report", "client_counts",
           "BAD_ANSWER_DETAIL"]

BAD_ANSWER_POLICIES = ("fail", "skip", "flag")
"""What a build does with an item whose model gave no valid answer: stop, drop the item, or keep it flagged."""

BAD_ANSWER_DETAIL = "no valid answer"
"""How a judge's verdict for an item without a valid answer begins (the build does not cache such a verdict)."""


@dataclass(frozen=True)
class BadAnswer:
    """One item a model step could not get a valid answer for, and what the policy did with it."""

    step: str
    item: str
    action: str
    error: str
    asks: int
    requests: int


@dataclass
class FaultLog:
    """The re-asks, requests and bad answers of a build's model steps (thread-safe)."""

    policy: str = "fail"
    reasks: int = 0
    items: int = 0
    requests: int = 0
    bad: list[BadAnswer] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, answers: Sequence[JSONAnswer]) -> None:
        """Add a batch's asks and requests."""
        with self._lock:
            self.items += len(answers)
            self.reasks += sum(max(a.asks - 1, 0) for a in answers)
            self.requests += sum(a.requests for a in answers)

    def add(self, bad: BadAnswer) -> None:
        """Record one bad answer."""
        with self._lock:
            self.bad.append(bad)


def _is_bad_answer(answer: JSONAnswer) -> bool:
    """A bad answer (not a failed call): no valid JSON after the re-asks, or a page that was no answer after the
    retries (HTML 200)."""
    return answer.status == "invalid" or isinstance(answer.exception, ModelOutputError)


def settle(answers: Sequence[JSONAnswer], items: Sequence[str], step: str, log: FaultLog) -> list[Any]:
    """The value of each answer, or None for a bad answer that the policy skips or flags; raises for a failed call
    (ProviderError) and, under ``fail``, for a bad answer (ModelOutputError), naming the item."""
    log.record(answers)
    out: list[Any] = []
    failed: list[tuple[str, JSONAnswer]] = []
    for item, answer in zip(items, answers, strict=True):
        if answer.status == "ok":
            out.append(answer.value)
            continue
        if not _is_bad_answer(answer) or log.policy == "fail":
            failed.append((item, answer))
            out.append(None)
            continue
        log.add(BadAnswer(step, item, log.policy, answer.error or "", answer.asks, answer.requests))
        out.append(None)
    if failed:
        item, answer = failed[0]
        more = f" ({len(failed) - 1} more item(s) of this batch failed too)" if len(failed) > 1 else ""
        where = (f"{step}: {item}: {answer.error} [{answer.asks} answer(s) asked, {answer.requests} request(s) to "
                 f"the server]{more}")
        if not _is_bad_answer(answer):
            raise ProviderError(f"{where}. The answers already received are in the build's response cache: rerun "
                                "the same build to resume without paying for them again") from answer.exception
        raise ModelOutputError(f"{where}. Fix: rerun to resume (answers received are cached), or pass "
                               "--on-bad-answer skip (drop such tuples) or flag (keep them for review)"
                               ) from answer.exception
    return out


def client_counts(clients: Sequence[Any]) -> dict[str, Any]:
    """The clients' summed counters now (`fault_counts`; a client without them counts its `calls` as attempts),
    to subtract at the end of a build."""
    total: dict[str, Any] = {"attempts": 0, "answers": 0, "cache_hits": 0, "retries": 0, "retries_by_cause": {},
                             "failures": 0, "failures_by_cause": {}}
    for client in clients:
        counts = client.fault_counts() if hasattr(client, "fault_counts") else {"attempts": getattr(client, "calls", 0)}
        for key, value in counts.items():
            if isinstance(value, dict):
                into = total.setdefault(key, {})
                for cause, n in value.items():
                    into[cause] = into.get(cause, 0) + int(n)
            elif isinstance(value, int):
                total[key] = total.get(key, 0) + value
    return total


def model_report(clients: Sequence[Any], log: FaultLog, before: dict[str, Any] | None = None) -> dict[str, Any]:
    """This build's model accounting: the clients' counts (less `before`, what they had counted before the build),
    the re-asks, and each bad answer with the action the policy took."""
    counts = counts_since(client_counts(clients), before or {})
    return {**counts, "reasks": log.reasks, "items_asked": log.items, "on_bad_answer": log.policy,
            "bad_answers": [asdict(b) for b in log.bad],
            "skipped": sum(1 for b in log.bad if b.action == "skip"),
            "flagged": sum(1 for b in log.bad if b.action == "flag")}

