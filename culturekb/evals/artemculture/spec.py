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
    image_template: str | None = None
    """Each item's image path, a format string over its fields under ``data_root`` (`artemculture.images`; ArtEmis
    CSVs default to ``{art_style}/{painting}.jpg``); None: the data's own layout."""
    text_only: bool = False
    """Run without images on purpose: every item gets the text prompt, and the report says so."""
    scheme: str | None = None
    """The scheme the data's labels are read against (``--scheme``; None: the KB's). It must have the KB's
    labels (its own synonyms and translations may differ): the run scores the KB's labels."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.image_template is not None and not self.image_template.strip():
            raise ConfigError("--image-template is empty; give a format string over the item's fields, e.g. "
                              "'{art_style}/{painting}.jpg', or leave it out")
        if self.text_only and self.image_template is not None:
            raise ConfigError("--text-only sends no image, so --image-template would be unused; give one of them")
        if self.kb_dir is None:
            raise ConfigError("the ArtECulture run needs the KB built from the data's training split; give kb_dir "
                              "(--kb DIR)")
        if not self.data:
            raise ConfigError("the ArtECulture run needs at least one data file")
