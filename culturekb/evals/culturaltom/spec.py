"""The run spec of ``culturekb eval culturaltom``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.evals.specs import RetrievalSpec, RunSpec

__all__ = ["CulturalToMSpec"]


@dataclass(frozen=True, kw_only=True)
class CulturalToMSpec(RunSpec, RetrievalSpec):
    """``culturekb eval culturaltom``: CulturalToM-VQA under zero-shot, cot, compositional (each also with KB cues
    when `kb_dir` is given), blind and the positivity baseline. Without a model (``model="positivity"``) only the
    positivity baseline runs."""

    data: Path
    model: str = "positivity"
    """``positivity`` (the offline baseline alone) or a model (``openai:MODEL``, ``hf:PATH`` ...)."""
    setting_names: tuple[str, ...] | None = None
    """Which settings to run (None: every one the model and KB allow)."""
    matrix: Path | None = None
    """A task x complexity matrix JSON (None: the packaged one)."""
    image_concepts: bool = False
    max_cues: int = 5
    max_tokens: int = 32
    """New tokens of a zero-shot (letter-only) answer."""
    reasoning_max_tokens: int = 1024
    """New tokens of chain-of-thought answers and scene graphs (at least 512)."""
    graph_retries: int = 2
    positivity_seed: int = 0
    thinking: bool = False
    """The model is a reasoning model whose answers start inside its thinking (its chat template opens ``<think>``):
    an answer that never closes its thinking counts only an explicit answer in it (`parse_choice(thinking=True)`)."""
    template_dir: Path | None = None
