"""The regional cue KB (RICE-VL style), built with the same pipeline as the emotion KB.

RICE-VL-style training metadata gives one sample per fact: sub-culture as the (precomputed) concept, country as
the culture, category as the label, the fact as rationale evidence. Rationales are extractive, and two offline
judges (embedding prototypes and label words) check each tuple's category from its rationales. Reading the
metadata file is the benchmark loader's job (`culturekb.evals.ricevl.data.load_cue_metadata`); the job
`culturekb.workflows.build_ricevl_cue_kb` reads and then builds.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from culturekb.builders.judges import LexiconJudge, PrototypeJudge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, BuildResult, build_kb
from culturekb.builders.rationales import ExtractiveRationaleGenerator
from culturekb.kb.cultures import default_registry
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import get_scheme
from culturekb.models.base import Embedder
from culturekb.models.factory import make_embedder
from culturekb.text.concepts import PrecomputedConcepts

__all__ = ["build_cue_kb"]


def _fact_language(culture: str) -> str:
    """The language the judges read a country's facts in: the registry's, else English (declared countries)."""
    reg = default_registry()
    return reg.resolve(culture).language if culture in reg else "en"


def build_cue_kb(
    samples: Sequence[Sample],
    out: str | Path | None = None,
    *,
    scheme: str = "ricevl14",
    embedder: Embedder | str | None = None,
    policy: str = "keep",
    min_support: int = 1,
    max_rationales: int = 3,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> BuildResult:
    """Build the regional cue KB from RICE-VL-style samples (`load_cue_metadata`) through `build_kb`.

    Concepts are the precomputed sub-cultures, the label is the category (argmax over the rows that share the
    sub-culture in one country), rationales are the most central facts (extractive), and two offline judges
    (category prototypes and category words) check each tuple's category from its rationales. `policy` decides
    what happens to flagged tuples (``keep`` by default: the metadata is curated; verdicts are recorded).
    `embedder`: an embedder, or a spec for `make_embedder` (default: the embedder setting, ``minilm``).
    """
    from culturekb.config import load_settings

    emb = embedder if embedder is not None and not isinstance(embedder, str) else make_embedder(
        embedder or load_settings().embedder)
    sch = get_scheme(scheme)
    config = BuildConfig(scheme=scheme, split="train", concepts="precomputed", min_support=min_support,
                         rationales="extractive", max_rationales=max_rationales, judges=["prototype", "lexicon"],
                         policy=policy, embedder=str(getattr(emb, "spec", None) or emb.id))
    components = BuildComponents(
        PrecomputedConcepts(on_missing="error"),
        ExtractiveRationaleGenerator(emb, max_rationales=max_rationales),
        [PrototypeJudge(emb, sch, language_of=_fact_language), LexiconJudge(sch, language_of=_fact_language)],
    )
    return build_kb(list(samples), config, out=out, cache_dir=cache_dir, components=components, progress=progress)
