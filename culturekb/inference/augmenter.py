"""The Augmenter: retrieved knowledge for one sample (or prompt + culture + concepts) as a prompt block.

It is the plug-in face of culturekb, used by the predictors, the HTTP API and the harness adapters. It finds a
sample's test-time concepts and hands them to the `KnowledgeService` (`culturekb.inference.injection`), which
looks them up and renders the block; the Augmenter adds only the sample handling and the prompt after the block.
Test-time concepts come only from non-leaky inputs: precomputed concepts, the stimulus fields the build also
reads (`culturekb.text.concepts.STIMULUS_FIELDS`: title, text or narrative, question, in any language with word
lists) and the art style, never the test explanations or the label; a VLM can list them instead
(`concept_extractor=VLMConceptExtractor(...)`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.inference.injection import (
    KNOWLEDGE,
    BlockTemplate,
    Budget,
    KnowledgeBlock,
    KnowledgeRequest,
    KnowledgeService,
)
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.retrieval.filters import StatusFilter
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor
from culturekb.text.context import context_concepts

__all__ = ["Budget", "AugmentedPrompt", "Augmenter"]


@dataclass(frozen=True)
class AugmentedPrompt:
    """The knowledge block with its provenance (`knowledge`), and the prompt after it (None without a prompt)."""

    knowledge: KnowledgeBlock
    prompt: str | None = None

    def __bool__(self) -> bool:
        return bool(self.knowledge)

    @property
    def block(self) -> str:
        """The knowledge block ("" when nothing was retrieved)."""
        return self.knowledge.text

    @property
    def tuples(self) -> tuple[KnowledgeTuple, ...]:
        """The knowledge tuples in the block."""
        return self.knowledge.tuples

    @property
    def matches(self) -> tuple[Match, ...]:
        """How each tuple was found: query concept, exact or semantic match, score."""
        return self.knowledge.matches

    @property
    def concepts(self) -> tuple[str, ...]:
        """The concepts that were looked up."""
        return self.knowledge.concepts

    @property
    def culture(self) -> str:
        """The culture the knowledge was retrieved for."""
        return self.knowledge.culture

    @property
    def mode(self) -> str:
        """The paper's setting the block was made in (``know``, ``random-know`` ...)."""
        return self.knowledge.mode

    @property
    def template_id(self) -> str:
        """Id of the block's templates, recorded with every prediction."""
        return self.knowledge.template_id

    @property
    def scores(self) -> tuple[float, ...]:
        """Match score of each tuple (1.0 for exact, else cosine similarity)."""
        return self.knowledge.scores

    @property
    def tuple_ids(self) -> list[str]:
        """Ids (``culture::concept``) of the tuples in the block."""
        return self.knowledge.tuple_ids

    @property
    def status_filter(self) -> str:
        """Which tuples could be served: ``all``, ``accepted`` or ``pending``."""
        return self.knowledge.status_filter


class Augmenter:
    """Finds a sample's concepts and asks the knowledge service for its culture's block in the given mode.

    `budget`: how much knowledge a block carries; `template`: how it reads (default: the bare lines of
    `item_template`, which fill {knowledge} in the prediction prompts); `tau`: the semantic-match threshold;
    `status`: which tuples are served (``all``: every tuple but rejected ones, pending ones marked unreviewed in
    the block; ``accepted``: reviewed knowledge only; ``pending``; default: the retriever's filter, itself
    ``all`` unless opened otherwise). A call may ask for another filter (``augment(..., status=...)``).
    """

    def __init__(
        self,
        retriever: Retriever,
        concept_extractor: ConceptExtractor | None = None,
        budget: Budget | None = None,
        item_template: str | Path = "knowledge_item",
        tau: float | None = None,
        *,
        template: BlockTemplate | None = None,
        status: StatusFilter | None = None,
    ) -> None:
        self.concept_extractor = concept_extractor
        self.budget = budget or Budget()
        self.template = template or (KNOWLEDGE if item_template == "knowledge_item" else BlockTemplate(item_template))
        self.service = KnowledgeService(retriever.with_tau(tau), budget=self.budget, template=self.template,
                                        status=status)
        self.retriever = self.service.retriever  # with the status filter applied
        self._text_extractor: TextConceptExtractor | None = None

    @property
    def tau(self) -> float:
        """The semantic-match threshold: the retriever's (`tau` given here made a retriever with it)."""
        return self.retriever.tau

    @property
    def kb_version(self) -> str:
        """Version of the KB the knowledge comes from."""
        return self.retriever.kb.version

    @property
    def status(self) -> StatusFilter:
        """The status filter of calls that do not pass their own (``all``, ``accepted`` or ``pending``)."""
        return self.service.status

    # -- concepts ------------------------------------------------------------------------------------------
    def text_concepts(self, samples: Sequence[Sample]) -> list[list[str]]:
        """The offline text concepts of the samples' stimulus fields (`STIMULUS_FIELDS`), each text read in its
        own language: what the build's text extractor reads, less the training explanations."""
        if self._text_extractor is None:
            # the KB's scheme decides, as in the build, which label words and whether people's names are concepts
            self._text_extractor = TextConceptExtractor(fields=STIMULUS_FIELDS, scheme=self.retriever.kb.scheme)
        return self._text_extractor.extract(samples)

    def concepts_for(self, samples: Sequence[Sample]) -> list[list[str]]:
        """Test-time concepts: precomputed ones, else the extractor's, else the stimulus fields' (`text_concepts`);
        then the art style."""
        out: list[list[str] | None] = [list(s.concepts) if s.concepts else None for s in samples]
        todo = [i for i, c in enumerate(out) if c is None]
        if todo:
            if self.concept_extractor is not None:
                found = self.concept_extractor.extract([samples[i] for i in todo])
            else:
                found = self.text_concepts([samples[i] for i in todo])
            for i, cs in zip(todo, found, strict=True):
                out[i] = list(dict.fromkeys([*cs, *context_concepts(samples[i])]))
        return [c or [] for c in out]

    # -- retrieval -----------------------------------------------------------------------------------------
    def augment(
        self,
        sample: Sample | None = None,
        *,
        prompt: str | None = None,
        culture: str | None = None,
        concepts: Sequence[str] | None = None,
        mode: str = "know",
        seed: int = 0,
        language: str | None = None,
        status: str | None = None,
    ) -> AugmentedPrompt:
        """Knowledge for a sample, or for (prompt, culture, concepts). With `prompt`, the block is put before it.
        `status`: the status filter of this call (default: the Augmenter's)."""
        if sample is None:
            if culture is None:
                raise ConfigError("augment needs a sample, or a culture (with concepts or a prompt to take them from)")
            sample = Sample(id="query", culture=culture, text=prompt, concepts=list(concepts) if concepts else None)
        elif culture is not None or concepts is not None:
            sample = sample.model_copy(update={k: v for k, v in (("culture", culture), ("concepts", concepts))
                                               if v is not None})
        return self.augment_many([sample], mode=mode, seed=seed, language=language, prompts=[prompt],
                                 status=status)[0]

    def augment_many(
        self,
        samples: Sequence[Sample],
        mode: str = "know",
        seed: int = 0,
        language: str | None = None,
        prompts: Sequence[str | None] | None = None,
        status: str | None = None,
    ) -> list[AugmentedPrompt]:
        """`augment` for a batch: one batched lookup for all samples (`status`: this call's status filter)."""
        from culturekb.inference.base import check_mode

        check_mode(mode)
        concept_lists = self.concepts_for(samples)
        requests = [KnowledgeRequest(cs, s.culture, mode, language, s.id)
                    for s, cs in zip(samples, concept_lists, strict=True)]
        blocks = self.service.inject_many(requests, seed=seed, status_filter=status)
        out = []
        for i, block in enumerate(blocks):
            prompt = prompts[i] if prompts else None
            full = None if prompt is None else (f"{block.text}\n{prompt}" if block.text else prompt)
            out.append(AugmentedPrompt(block, full))
        return out
