"""The run spec of ``culturekb eval artemculture``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.evals.specs import ParseSpec, RetrievalSpec, RunSpec

__all__ = ["ArtECultureSpec"]


@dataclass(frozen=True, kw_only=True)
class ArtECultureSpec(RunSpec, RetrievalSpec, ParseSpec):
    """``culturekb eval artemculture``: the held-out split of ArtEmis/ArtELingo-style data, with the KB built from
    its training split."""

    data: tuple[Path, ...]
    modes: tuple[str, ...] | None = None
    prompt_languages: tuple[str, ...] | None = None
    judges: tuple[str, ...] = ()
    """Judge models for explanation alignment (two, for agreement)."""
    split: str = "test"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.kb_dir is None:
            raise ConfigError("the ArtECulture run needs the KB built from the data's training split; give kb_dir "
                              "(--kb DIR)")
        if not self.data:
            raise ConfigError("the ArtECulture run needs at least one data file")
