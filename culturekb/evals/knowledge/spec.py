"""The run spec of ``culturekb eval knowledge``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.evals.specs import RetrievalSpec, RunSpec

__all__ = ["KnowledgeSpec"]


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

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kb_dir is None:
            raise ConfigError("the knowledge report needs a KB; give kb_dir (--kb DIR)")
        if not self.data:
            raise ConfigError("the knowledge report needs at least one labelled data file with a split column")
        if self.model != "kb-prior":
            raise ConfigError(f"the knowledge report predicts with the offline kb-prior, not {self.model!r}; run "
                              "`culturekb eval artemculture --model ...` to evaluate a model with the KB")
