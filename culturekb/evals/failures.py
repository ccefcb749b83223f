"""A run whose calls mostly failed: its failed predictions grouped by cause (`failure_causes`) and the check that
turns more than ``--max-failed-share`` of them into exit status 3 (`check_failed_share`, after the reports are
written)."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from culturekb.errors import ConfigError, RunFailedError

if TYPE_CHECKING:
    from culturekb.evals.runner import RunResult

__all__ = ["MAX_FAILED_SHARE", "check_failed_share", "failure_causes"]

MAX_FAILED_SHARE = 0.2
"""The default share of a run's predictions that may be failed calls (``parse_status == "error"``: no answer came,
or the item's image could not be read) before the run counts as failed (`check_failed_share`; ``culturekb eval
... --max-failed-share``, exit status 3)."""

_VARYING = re.compile(r"(https?://[^\s;,'\"()\[\]]+|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b)"
                      r"|(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"|(?<![\w.])/[^\s;,:'\"]+|\d+(?:\.\d+)?")
"""What varies per item in a failure's text (blanked out to group failures by cause: the group key, never shown);
URLs and IP addresses, the same for every item of a run, are kept. A quote is a value only when it does not
touch a word (the apostrophe of "the sample's" is not)."""
_CAUSE_CHARS = 400


def failure_causes(result: RunResult, top: int = 3) -> tuple[int, int, list[tuple[str, int, str]]]:
    """(failed predictions, all predictions, the `top` most frequent causes as (text, count, first item id)):
    failures are grouped by their text with what varies per item (quoted names, paths, numbers) blanked out, and
    each group is shown by its first failure's own text (whole sentences or words, at most 400 characters), which reads
    as a sentence where the blanked key would not ("model … at")."""
    failed: Counter[str] = Counter()
    first: dict[str, tuple[str, str]] = {}
    total = 0
    for preds in result.predictions.values():
        for p in preds:
            total += 1
            if getattr(p, "parse_status", None) != "error":
                continue
            text = " ".join(str(getattr(p, "error", None) or "no answer").split())
            key = _VARYING.sub(lambda m: m.group(1) or "\0", text)
            failed[key] += 1
            first.setdefault(key, (_shortened(text), str(getattr(p, "sample_id", "?"))))
    return sum(failed.values()), total, [(*first[k][:1], n, first[k][1]) for k, n in failed.most_common(top)]


def _shortened(text: str) -> str:
    """`text`, or when longer than `_CAUSE_CHARS` its first sentences that fit (else its first whole words), marked
    " [...]" where it was cut."""
    if len(text) <= _CAUSE_CHARS:
        return text
    head = text[:_CAUSE_CHARS]
    end = max(head.rfind(". "), head.rfind("; "))
    return (head[:end + 1] if end > _CAUSE_CHARS // 2 else head.rsplit(" ", 1)[0]) + " [...]"


def check_failed_share(result: RunResult, max_share: float = MAX_FAILED_SHARE) -> None:
    """Raise RunFailedError when more than `max_share` of the run's predictions are failed calls, naming how many
    failed, the most frequent causes and the fix; the run's reports are written before this is called."""
    if not 0.0 <= max_share <= 1.0:
        raise ConfigError(f"--max-failed-share must be between 0 and 1, got {max_share}")
    failed, total, causes = failure_causes(result)
    if total == 0 or failed / total <= max_share:
        return
    listed = "; ".join(f"{n} x {cause} (first: {sid})" for cause, n, sid in causes)
    raise RunFailedError(
        f"eval {result.runner}: {failed} of {total} predictions failed ({failed / total:.0%}, more than "
        f"--max-failed-share {max_share:g}): {listed}. The reports in {result.out_dir} score them wrong (run.json "
        "lists them); fix the cause (the server, --base-url, --data-root) and run the same command again: it retries "
        "only the failed items"
    )
