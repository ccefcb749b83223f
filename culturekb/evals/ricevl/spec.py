"""The run specs of ``culturekb eval ricevl-vqa`` and ``ricevl-grounding``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.evals.specs import RetrievalSpec, RunSpec

__all__ = ["RiceVLVQASpec", "RiceVLGroundingSpec"]


@dataclass(frozen=True, kw_only=True)
class RiceVLVQASpec(RunSpec, RetrievalSpec):
    """``culturekb eval ricevl-vqa``: global, sea and kb-cues, each answer scored by a SEA-LAVE judge. The cue KB
    is `kb_dir`, or is built from `cue_metadata` into ``<out>/cue_kb``."""

    data: Path
    cue_metadata: Path | None = None
    judge: str = "reference"
    """``reference`` (offline) or a judge model (``openai:MODEL``)."""
    judge_base_url: str | None = None
    setting_names: tuple[str, ...] | None = None
    """Which of global, sea, kb-cues to run (None: all three)."""
    scheme: str = "ricevl14"
    region: str | None = None
    region_countries: tuple[str, ...] | None = None
    allow_unknown_countries: bool = False
    image_concepts: bool = False
    cue_scope: str = "region"
    max_cues: int = 5
    fallback_cues: int = 3
    judge_retries: int = 2
    max_tokens: int = 128
    template_dir: Path | None = None


@dataclass(frozen=True, kw_only=True)
class RiceVLGroundingSpec(RunSpec):
    """``culturekb eval ricevl-grounding``: a box per phrase, mean IoU per country and category."""

    data: Path
    model: str = "full-image"
    """``full-image`` (the offline whole-image baseline), or a model."""
    bbox_format: str = "xyxy"
    scale: str = "auto"
    layout: str = "auto"
    scheme: str = "ricevl14"
    allow_unknown_countries: bool = False
    max_tokens: int = 128
    template_dir: Path | None = None
