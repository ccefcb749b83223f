"""`calibration.json`: what was chosen on the valid split for one KB version, saved beside its tuples.

The file is a sidecar: it does not change the KB's content hash, and it names the `kb_version` it was fitted
for, so a calibration of another build is refused rather than applied; it is sealed with a digest of its content,
so a hand edit (a weight, the filter) is refused too rather than served. It holds

* the **concept filter** (`min_support`, `min_informativeness`): tuples below either are not served (the
  retriever hides them; `culturekb.retrieval.filters.TupleFilter`), with what it dropped and why;
* the **KB-prior weights** (`alpha`, `beta`, `gamma`, `pool`), see `culturekb.inference.calibration` and
  docs/knowledge-model.md;
* the fit report: the grid, the valid split's size and accuracy of the prior and of the chosen setting.

It is written by `culturekb calibrate` (and by `eval artemculture` when a KB has none and the data has a valid
split, which then records it in the run's report instead).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from culturekb._io import atomic_write_json, read_text_utf8, stable_hash
from culturekb.errors import DataError

__all__ = ["CALIBRATION", "Calibration", "calibration_digest", "read_calibration", "write_calibration"]

CALIBRATION = "calibration.json"


class Calibration(BaseModel):
    """The choices fitted on a valid split for one KB version (see the module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kb_version: str
    min_support: int = Field(default=1, ge=1)
    min_informativeness: float = Field(default=0.0, ge=0.0)
    alpha: float = Field(default=2.0, ge=0.0, description="Dirichlet shrinkage of each tuple toward the prior")
    beta: float = Field(default=1.0, ge=0.0, description="weight of the concepts' evidence; 0 = the prior alone")
    gamma: float = Field(default=1.0, ge=0.0, description="match-score exponent: weight of a tuple = score**gamma")
    pool: Literal["sum", "mean"] = "mean"
    prior_only_cultures: list[str] = Field(default_factory=list)
    """Cultures whose valid log-loss with the chosen weights was worse than their own prior's (and whose fallback
    keeps the overall valid accuracy at least the prior's): predicted from the prior alone."""
    fitted_on: dict[str, Any] = Field(default_factory=dict)
    """The split and data it was fitted on: split name, samples, samples per culture, data files."""
    valid: dict[str, Any] = Field(default_factory=dict)
    """Valid-split figures: accuracy of the prior, of the chosen setting, coverage, log-loss."""
    grid: list[dict[str, Any]] = Field(default_factory=list)
    """Every setting tried with its valid accuracy and log-loss (the record of the choice)."""
    dropped: dict[str, Any] = Field(default_factory=dict)
    """Counts per reason and per culture of the tuples the filter hides, and examples of each."""
    digest: str = Field(default="", exclude=True)
    """Hash of every other field, written into the file by `write_calibration`; `read_calibration` refuses a file
    whose content does not match it (an edited weight or filter), or that has none, and returns the rest ("" here).
    Left out of `model_dump`, so reports that show a calibration do not show it."""

    @property
    def is_prior_only(self) -> bool:
        """True when the evidence weight is 0: the predictor falls back to the culture prior."""
        return self.beta == 0.0


def read_calibration(kb_dir: str | Path, kb_version: str | None = None) -> Calibration | None:
    """The calibration saved in a KB directory, or None when it has none.

    With `kb_version`, a calibration fitted for another version is an error that says how to refit it."""
    path = Path(kb_dir) / CALIBRATION
    if not path.is_file():
        return None
    try:
        raw = json.loads(read_text_utf8(path, fix="delete it and run `culturekb calibrate` again"))
        cal = Calibration.model_validate(raw)
    except (json.JSONDecodeError, ValidationError) as exc:
        raise DataError(f"{path}: not a valid calibration ({exc}); delete it and run `culturekb calibrate` again"
                        ) from exc
    if not cal.digest or cal.digest != calibration_digest(cal):
        why = "it has no digest" if not cal.digest else "its digest does not match its content"
        raise DataError(
            f"{path} was edited after `culturekb calibrate` wrote it ({why}): its weights and filter change "
            "predictions, so an edit is not served. "
            f"Run `culturekb calibrate DATA --kb {kb_dir}` again, or delete the file to serve uncalibrated"
        )
    if kb_version is not None and cal.kb_version != kb_version:
        raise DataError(
            f"{path} was fitted for KB version {cal.kb_version}, but the KB is {kb_version}; run "
            f"`culturekb calibrate DATA --kb {kb_dir}` again (or delete the file to serve uncalibrated)"
        )
    return cal.model_copy(update={"digest": ""})  # the seal belongs to the file: what was written comes back


def calibration_digest(calibration: Calibration) -> str:
    """The seal of a calibration: the hash of all its fields but `digest` (as JSON, key order aside)."""
    return stable_hash(calibration.model_dump(mode="json", exclude={"digest"}))


def write_calibration(kb_dir: str | Path, calibration: Calibration) -> Path:
    """Write `calibration.json` into a KB directory atomically, sealed with its digest."""
    path = Path(kb_dir) / CALIBRATION
    atomic_write_json(path, {**calibration.model_dump(mode="json"), "digest": calibration_digest(calibration)})
    return path
