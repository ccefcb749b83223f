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
                      r"|'[^']*'|\"[^\"]*\"|(?<![\w.])/[^\s;,:'\"]+|\d+(?:\.\d+)?")
"""What varies per item in a failure's text (blanked out to group failures by cause); URLs and IP addresses, the
same for every item of a run, are kept."""
_CAUSE_CHARS = 240


def failure_causes(result: RunResult, top: int = 3) -> tuple[int, int, list[tuple[str, int, str]]]:
    """(failed predictions, all predictions, the `top` most frequent causes as (cause, count, first item id)): a
    cause is the failure's text with what varies per item (quoted names, paths, numbers) blanked out."""
    failed: Counter[str] = Counter()
    first: dict[str, str] = {}
    total = 0
    for preds in result.predictions.values():
        for p in preds:
            total += 1
            if getattr(p, "parse_status", None) != "error":
                continue
            text = " ".join(str(getattr(p, "error", None) or "no answer").split())
            cause = _VARYING.sub(lambda m: m.group(1) or "…", text)
            if len(cause) > _CAUSE_CHARS:
                cause = cause[:_CAUSE_CHARS].rsplit(" ", 1)[0] + " …"
            failed[cause] += 1
            first.setdefault(cause, str(getattr(p, "sample_id", "?")))
    return sum(failed.values()), total, [(c, n, first[c]) for c, n in failed.most_common(top)]


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
