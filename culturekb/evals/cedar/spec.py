"""The run spec of ``culturekb eval cedar``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.evals.specs import ParseSpec, RetrievalSpec, RunSpec

__all__ = ["CedarSpec"]


@dataclass(frozen=True, kw_only=True)
class CedarSpec(RunSpec, RetrievalSpec, ParseSpec):
    """``culturekb eval cedar``: orig and know, per language and modality (the KB is needed for know)."""

    data: Path
    scheme: str = "cedar14"
    modes: tuple[str, ...] | None = None
    prompt_languages: tuple[str, ...] | None = None
    languages: tuple[str, ...] | None = None
    modalities: tuple[str, ...] | None = None
    image_concepts: bool = False
    """Also ask the model for the image's concepts (cue queries)."""
    max_cues: int = 5
    max_tokens: int = 128
    template_dir: Path | None = None
