"""The run spec of ``culturekb eval knowledge``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.evals.specs import RetrievalSpec, RunSpec

__all__ = ["KnowledgeSpec", "check_report_numbers", "MAX_RESAMPLES"]

MAX_RESAMPLES = 100_000
"""Most bootstrap resamples per interval (each interval holds this many means; 2,000 are plenty)."""


def check_report_numbers(n_resamples: int, confidence: float, seed: int, n_bins: int, top_concepts: int) -> None:
    """The knowledge report's numbers, checked before any data is read: a ConfigError naming the option and its
    valid range."""
    if not 100 <= n_resamples <= MAX_RESAMPLES:
        raise ConfigError(f"--resamples {n_resamples}: bootstrap resamples per interval must be between 100 and "
                          f"{MAX_RESAMPLES:,} (1,000 to 10,000 is usual); give a number in that range")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")
    if not 0 <= seed < 2**32:
        raise ConfigError(f"--seed {seed}: the bootstrap seed must be between 0 and 2**32 - 1; give a non-negative "
                          "integer")
    if not 1 <= n_bins <= 1000:
        raise ConfigError(f"--bins {n_bins}: the reliability diagram needs between 1 and 1000 bins")
    if top_concepts < 1:
        raise ConfigError(f"--top {top_concepts}: list at least 1 concept as helping and as hurting")


@dataclass(frozen=True, kw_only=True)
class KnowledgeSpec(RunSpec, RetrievalSpec):
    """``culturekb eval knowledge``: the knowledge report of the KB in `kb_dir` on the labelled `split` of `data`,
    predicted by the offline kb-prior."""

    data: tuple[Path, ...]
    split: str = "test"
    n_resamples: int = 2000
    """Bootstrap resamples per interval."""
    confidence: float = 0.95
    seed: int = 0
    """Seed of the bootstrap resamples (the same seed gives the same intervals)."""
    n_bins: int = 10
    """Confidence bins of the reliability diagram and the ECE."""
    top_concepts: int = 10
    scheme: str | None = None
    """The scheme the data's labels are read against (``--scheme``; None: the KB's). It must have the KB's
    labels (its own synonyms and translations may differ): the report scores the KB's labels."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kb_dir is None:
            raise ConfigError("the knowledge report needs a KB; give kb_dir (--kb DIR)")
        if not self.data:
            raise ConfigError("the knowledge report needs at least one labelled data file with a split column")
        check_report_numbers(self.n_resamples, self.confidence, self.seed, self.n_bins, self.top_concepts)
        if self.model != "kb-prior":
            raise ConfigError(f"the knowledge report predicts with the offline kb-prior, not {self.model!r}; run "
                              "`culturekb eval artemculture --model ...` to evaluate a model with the KB")
