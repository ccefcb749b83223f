"""Typed run specs: everything one benchmark job needs, as one frozen value instead of a long argument list.

The command line (`culturekb.evals.commands`) builds a spec from the parsed options; the job in
`culturekb.workflows` (``eval_artemculture``, ``eval_cedar``, ``eval_ricevl_vqa``, ``eval_ricevl_grounding``)
takes it and assembles the KB, the model and the runner. A script builds the same spec in code::

    from culturekb.evals.specs import RiceVLVQASpec
    from culturekb.workflows import eval_ricevl_vqa

    result = eval_ricevl_vqa(RiceVLVQASpec(data="vqa.jsonl", out="runs/vqa", kb_dir="cue_kb"))

Paths may be given as strings (they become `Path`s) and lists as lists (they become tuples), so a spec is
hashable and prints as what was run. Every field is keyword-only; `dataclasses.replace` makes a variant.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError

__all__ = ["RunSpec", "RetrievalSpec", "ParseSpec", "ArtECultureSpec", "CedarSpec", "RiceVLVQASpec",
           "RiceVLGroundingSpec", "KnowledgeSpec"]
__all__ += ["CommetSpec"]


def _normalise(annotation: str, value: Any) -> Any:
    """A field's value in its declared form: str -> Path for path fields, a list -> a tuple for sequence fields."""
    if value is None:
        return None
    if annotation.startswith("tuple[Path"):
        items = [value] if isinstance(value, str | Path) else list(value)
        return tuple(Path(v) for v in items)
    if annotation.startswith("tuple[") and not isinstance(value, tuple):
        return (value,) if isinstance(value, str) else tuple(value)
    if annotation.startswith("Path") and isinstance(value, str):
        return Path(value)
    return value


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What every benchmark job needs: the run folder, the answering model, and how much of the data to run."""

    out: Path
    """Run folder: reports and resumable predictions."""
    model: str = "kb-prior"
    """``kb-prior`` (offline), ``openai:MODEL``, ``hf:PATH`` or any registered model client."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (default: the configured one)."""
    limit: int | None = None
    """Run only the first N items (None: all)."""
    data_root: Path | None = None
    """Folder the data's image paths are relative to (default: the data file's folder)."""
    cache_dir: Path | None = None
    """Response cache folder (default: the configured one)."""
    progress: bool = True

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            normalised = _normalise(str(f.type), value)
            if normalised is not value:
                object.__setattr__(self, f.name, normalised)
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1 (or None for all items), got {self.limit}")


@dataclass(frozen=True, kw_only=True)
class RetrievalSpec:
    """Where the knowledge comes from: a KB directory and how to query it (left out: the index's own embedder and
    backend, and the configured tau and status filter)."""

    kb_dir: Path | None = None
    backend: str | None = None
    embedder: str | None = None
    tau: float | None = None
    status: str | None = None
    """Which tuples are served: ``all``, ``accepted`` or ``pending`` (None: the ``status`` setting, ``all``)."""


@dataclass(frozen=True, kw_only=True)
class ParseSpec:
    """How model answers are read: `parse_fallback` sends answers that name no label word to the multilingual
    embedder (None: the ``parse_fallback`` setting, off by default)."""

    parse_fallback: bool | None = None


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
class CommetSpec(RunSpec, RetrievalSpec):
    """``culturekb eval commet``: StoryTurns played as multi-turn chats, each answer judged before the next turn's
    feedback is chosen; settings orig, blind and (with `kb_dir`) kb-cues."""

    data: Path
    model: str = ""
    """The chat model (``openai:MODEL`` ...); CoMMET has no offline answerer."""
    judge: str = "offline"
    """``offline`` (string match, then embedding similarity; weaker) or a judge model (``openai:MODEL``)."""
    judge_base_url: str | None = None
    judge_embedder: str = "minilm"
    """Embedder of the offline judge."""
    judge_threshold: float = 0.6
    """Least cosine similarity for the offline judge's embedding match."""
    judge_retries: int = 2
    setting_names: tuple[str, ...] | None = None
    """Which of orig, kb-cues, blind to run (None: orig, blind when a story is image-dependent, kb-cues with a KB)."""
    concurrency: int | None = None
    """Stories played at once (None: the max_concurrency setting)."""
    max_cues: int = 5
    max_tokens: int = 256
    template_dir: Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model in ("", "kb-prior"):
            raise ConfigError("the CoMMET run needs a chat model: --model openai:NAME --base-url URL (offline: a local "
                              "OpenAI-compatible server, such as culturekb.testing.ScriptedOpenAIServer)")


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
    template_dir: Path | None = None


__all__ += ["CulturalToMSpec"]

