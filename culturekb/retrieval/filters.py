"""Which tuples a retriever serves: by review status, and by the concept filter chosen on the valid split.

* ``status``: ``"all"`` (default: accepted, pending and human-approved tuples), ``"accepted"`` (both judges
  agreed, or a human approved: reviewed knowledge only) or ``"pending"`` (flagged and not yet reviewed, for
  reviewers). Rejected tuples are never served.
* ``min_support``: hide tuples seen on fewer images/texts than this.
* ``min_informativeness``: hide tuples whose n * KL(P || culture prior) is below this
  (`culturekb.kb.distribution.informativeness`): concepts that say nothing the culture's prior does not say.

The KB's `calibration.json` supplies the last two (`TupleFilter.from_calibration`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from culturekb.errors import ConfigError
from culturekb.kb.calibration import Calibration
from culturekb.kb.distribution import informativeness
from culturekb.kb.schema import KnowledgeTuple

__all__ = ["STATUS_FILTERS", "StatusFilter", "TupleFilter", "check_status"]

StatusFilter = Literal["all", "accepted", "pending"]
STATUS_FILTERS: tuple[str, ...] = ("all", "accepted", "pending")
_ADMITTED: dict[str, frozenset[str]] = {
    "all": frozenset({"accepted", "pending", "approved"}),
    "accepted": frozenset({"accepted", "approved"}),
    "pending": frozenset({"pending"}),
}


def check_status(status: str) -> StatusFilter:
    """`status` when it is a status filter; a ConfigError naming the choices otherwise."""
    if status not in STATUS_FILTERS:
        raise ConfigError(
            f"unknown status filter {status!r}; use 'all' (default: every tuple but rejected ones), 'accepted' "
            "(reviewed: both judges agreed or a human approved) or 'pending' (flagged, awaiting review)"
        )
    return status  # type: ignore[return-value]


@dataclass(frozen=True)
class TupleFilter:
    """Decides whether a tuple is served (see the module docstring)."""

    status: StatusFilter = "all"
    min_support: int = 1
    min_informativeness: float = 0.0

    def __post_init__(self) -> None:
        check_status(self.status)
        if isinstance(self.min_support, bool) or not isinstance(self.min_support, int) or self.min_support < 1:
            raise ConfigError(f"min_support must be an integer >= 1, got {self.min_support!r}")
        if not self.min_informativeness >= 0:
            raise ConfigError(f"min_informativeness must be >= 0, got {self.min_informativeness!r}")

    @classmethod
    def from_calibration(cls, calibration: Calibration | None, status: StatusFilter = "all") -> TupleFilter:
        """The filter a calibration chose (none: only the status filter)."""
        if calibration is None:
            return cls(status=status)
        return cls(status, calibration.min_support, calibration.min_informativeness)

    @property
    def is_open(self) -> bool:
        """True when it hides only rejected tuples."""
        return self.status == "all" and self.min_support <= 1 and self.min_informativeness <= 0

    def reason(self, t: KnowledgeTuple, prior: Mapping[str, float] | None = None) -> str | None:
        """Why `t` is hidden (``rejected``, ``status``, ``support``, ``informativeness``), or None if served.

        `prior` is the tuple's culture prior; without it the informativeness test is skipped."""
        if t.status == "rejected":
            return "rejected"
        if t.status not in _ADMITTED[self.status]:
            return "status"
        if t.support < self.min_support:
            return "support"
        if self.min_informativeness > 0 and prior is not None and \
                informativeness(t.distribution, t.support, prior) < self.min_informativeness:
            return "informativeness"
        return None

    def describe(self) -> str:
        """One line for logs and reports."""
        return (f"status={self.status}, min_support={self.min_support}, "
                f"min_informativeness={self.min_informativeness:g}")
