"""One run context: the services a benchmark run needs, built once from its run spec.

A runner does not take a dozen keyword arguments wired by hand in a job: its class method
``from_context(ctx)`` asks the context for what it needs, in the order it needs it (data first, so that bad data is
refused before an index is opened or a model is reached)::

    @register_runner("mybench")
    class MyRunner(Runner):
        command = RunnerCommand(options=mybench_options)        # returns a MyBenchSpec

        @classmethod
        def from_context(cls, ctx: RunContext) -> MyRunner:
            spec = ctx.spec
            samples = load_mybench(spec.data)
            return cls(samples, client=ctx.client(), retriever=ctx.retriever(), limit=spec.limit)

The jobs layer (`culturekb.workflows.evaluate.JobContext`) implements this protocol; the retriever is opened with
the spec's embedder, backend, tau and status filter (tau lives in the retriever and nowhere else), the model
client through the one model wrapper with the response cache, the KB's cultures and scheme from its manifest.
Every method opens what it returns once per run and hands back the same object on a second call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from culturekb.config import Settings
    from culturekb.evals.specs import RunSpec
    from culturekb.inference.augmenter import Augmenter
    from culturekb.inference.base import Predictor
    from culturekb.kb.cultures import CultureRegistry
    from culturekb.kb.schema import Sample
    from culturekb.kb.schemes import EmotionScheme
    from culturekb.models.base import ModelClient
    from culturekb.retrieval.retriever import Retriever
    from culturekb.text.concepts import ConceptExtractor

__all__ = ["RunContext", "OFFLINE_MODELS"]

OFFLINE_MODELS: frozenset[str] = frozenset({"kb-prior", "reference", "full-image", "positivity", "offline"})
"""Model specs that name an offline baseline: `RunContext.client` answers None for them."""


class RunContext(Protocol):
    """What a runner may ask of its run (see the module docstring)."""

    spec: RunSpec
    """The run spec the command line (or a script) built."""

    @property
    def settings(self) -> Settings:
        """The resolved settings (flags > environment > TOML > defaults)."""
        ...

    def kb_samples(self, paths: Sequence[Path]) -> list[Sample]:
        """Samples of data files read with the label scheme and cultures of the spec's KB (its manifest); what the
        read did (files, rows skipped or aggregated) is then in `data_read`."""
        ...

    @property
    def data_read(self) -> dict[str, Any]:
        """What the last `kb_samples` did, for the run report's "Data read" table (empty before it)."""
        ...

    def retriever(self, kb_dir: Path | None = None) -> Retriever | None:
        """The retriever of `kb_dir` (default: the spec's KB); None without a KB."""
        ...

    def augmenter(self) -> Augmenter:
        """The augmenter over the spec's KB (a KB is required)."""
        ...

    def cultures(self) -> CultureRegistry:
        """The cultures of the run: the KB's registry (its manifest's descriptions) when there is a KB, else the
        packaged one. Languages and display names of prompts come from here."""
        ...

    def client(self, model: str | None = None, *, base_url: str | None = None, scope: str | None = None
               ) -> ModelClient | None:
        """The model client of `model` (default: the spec's), wrapped with the run's response cache; None for an
        offline baseline (`OFFLINE_MODELS`). `scope` keys the cache (default: the KB version)."""
        ...

    def predictor(self, samples: Sequence[Sample]) -> tuple[Predictor, dict[str, Any] | None]:
        """The spec's model as a predictor over the augmenter, and the kb-prior's calibration record (the KB's,
        else one fitted on the samples' valid split, else None)."""
        ...

    def image_concepts(self, client: ModelClient | None) -> ConceptExtractor | None:
        """The VLM concept extractor of the items' images when the spec asks for it (``image_concepts``) and a
        model answers; else None."""
        ...

    def build_cue_kb(self, metadata: Path, out: Path, *, scheme: str, allow_unknown_countries: bool = False) -> Path:
        """Build a regional cue KB from cue metadata into `out` (once per run); returns `out`."""
        ...

    def label_scheme(self, scheme: EmotionScheme) -> EmotionScheme:
        """The scheme the run's prompts show and its parser reads: `scheme` with the spec's label words
        (``--label-words FILE``, `culturekb.kb.label_words`) first; `scheme` itself without them."""
        ...

    @property
    def label_words_id(self) -> str:
        """'' without label words, else ``|label-words:<digest>``: what a predictor's id appends, so that answers
        read with other words are not reused from a checkpoint."""
        ...

    @property
    def parse_fallback(self) -> bool:
        """Whether answers naming no label word go to the embedding fallback (the spec's flag, else the setting)."""
        ...

    @property
    def max_concurrency(self) -> int:
        """Model calls (or stories) in flight at once."""
        ...

    @property
    def kb_version(self) -> str:
        """The version of the spec's KB ('' without one)."""
        ...
