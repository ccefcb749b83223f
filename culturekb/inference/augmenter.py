"""The Augmenter: retrieved knowledge for one sample (or prompt + culture + concepts) as a prompt block.

It is the plug-in face of culturekb: the predictor, the HTTP API and the harness adapters all call `augment`.
Test-time concepts come only from non-leaky inputs: precomputed concepts, the title and the art style (never
the test explanations); a VLM can list them instead (`concept_extractor=VLMConceptExtractor(...)`).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.inference.base import check_mode
from culturekb.kb.cultures import default_registry
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import ConceptExtractor
from culturekb.text.normalise import normalise_concept
from culturekb.text.prompts import load_prompt

__all__ = ["Budget", "AugmentedPrompt", "Augmenter"]

log = logging.getLogger(__name__)

_ITEM_FIELDS = ("concept", "label", "share", "support", "rationales")


@dataclass(frozen=True)
class Budget:
    """How much knowledge one prompt may carry."""

    max_tuples: int = 5
    max_rationales: int = 2
    max_chars: int = 1200

    def __post_init__(self) -> None:
        if self.max_tuples < 1 or self.max_rationales < 0 or self.max_chars < 40:
            raise ConfigError(f"invalid knowledge budget {self}; need max_tuples >= 1, max_rationales >= 0, "
                              "max_chars >= 40")


@dataclass(frozen=True)
class AugmentedPrompt:
    """The knowledge block ("" when nothing was retrieved), the tuples in it, and the prompt with it."""

    block: str
    tuples: tuple[KnowledgeTuple, ...]
    matches: tuple[Match, ...]
    concepts: tuple[str, ...]
    culture: str
    mode: str
    prompt: str | None = None
    template_id: str = ""
    scores: tuple[float, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(self.tuples)

    @property
    def tuple_ids(self) -> list[str]:
        return [t.id for t in self.tuples]


class Augmenter:
    """Finds a sample's concepts, retrieves tuples for its culture in the given mode, renders the block."""

    def __init__(
        self,
        retriever: Retriever,
        concept_extractor: ConceptExtractor | None = None,
        budget: Budget | None = None,
        item_template: str | Path = "knowledge_item",
        tau: float | None = None,
    ) -> None:
        self.retriever = retriever
        self.concept_extractor = concept_extractor
        self.budget = budget or Budget()
        self.item_template = item_template
        self.tau = tau

    @property
    def kb_version(self) -> str:
        return self.retriever.kb.version

    # -- concepts ------------------------------------------------------------------------------------------
    def concepts_for(self, samples: Sequence[Sample]) -> list[list[str]]:
        """Test-time concepts: precomputed ones, else the extractor's, else title words + art style."""
        out: list[list[str] | None] = [list(s.concepts) if s.concepts else None for s in samples]
        todo = [i for i, c in enumerate(out) if c is None]
        if todo:
            if self.concept_extractor is not None:
                found = self.concept_extractor.extract([samples[i] for i in todo])
            else:
                from culturekb.text.concepts import TextConceptExtractor

                ext = TextConceptExtractor(fields=("title",))
                found = ext.extract([samples[i] for i in todo])
            for i, cs in zip(todo, found, strict=True):
                style = samples[i].metadata.get("art_style")
                extra = [normalise_concept(str(style).replace("_", " "))] if style else []
                out[i] = list(dict.fromkeys([*cs, *(e for e in extra if e)]))
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
    ) -> AugmentedPrompt:
        """Knowledge for a sample, or for (prompt, culture, concepts). With `prompt`, the block is put before it."""
        if sample is None:
            if culture is None:
                raise ConfigError("augment needs a sample, or a culture (with concepts or a prompt to take them from)")
            sample = Sample(id="query", culture=culture, text=prompt, concepts=list(concepts) if concepts else None)
        elif culture is not None or concepts is not None:
            sample = sample.model_copy(update={k: v for k, v in (("culture", culture), ("concepts", concepts))
                                               if v is not None})
        if concepts is None and sample.concepts is None and prompt and not sample.title:
            from culturekb.text.concepts import TextConceptExtractor

            sample = sample.model_copy(update={"concepts": TextConceptExtractor(fields=("text",)).extract([sample])[0]})
        return self.augment_many([sample], mode=mode, seed=seed, language=language, prompts=[prompt])[0]

    def augment_many(
        self,
        samples: Sequence[Sample],
        mode: str = "know",
        seed: int = 0,
        language: str | None = None,
        prompts: Sequence[str | None] | None = None,
    ) -> list[AugmentedPrompt]:
        """`augment` for a batch: one batched lookup for all samples."""
        check_mode(mode)
        concept_lists = self.concepts_for(samples)
        cultures = [self.retriever.resolve_culture(s.culture) for s in samples]
        matches: list[list[Match]]
        single_culture = len(self.retriever.cultures) < 2
        if mode in ("orig", "internal-know") or (mode == "cross-culture-know" and single_culture):
            if mode == "cross-culture-know":
                log.warning("cross-culture-know: the KB has one culture only (%s); no tuples to give",
                            self.retriever.cultures)
            matches = [[] for _ in samples]
        else:
            cross = mode == "cross-culture-know"
            raw = self.retriever.lookup_many(
                [(cs, c) for cs, c in zip(concept_lists, cultures, strict=True)],
                tau=self.tau, cross_culture=cross, on_invalid="skip",
            ) if any(concept_lists) else [[] for _ in samples]
            matches = [[m for m in row if m is not None] for row in raw]
            if mode == "random-know":
                matches = [self._random(c, max(1, len(ms)), seed, s.id) for s, c, ms in
                           zip(samples, cultures, matches, strict=True)]
        out = []
        for i in range(len(samples)):
            lang = language or default_registry().resolve(cultures[i]).language
            chosen = self._dedup(matches[i])
            block, used, tid = self._render(chosen, lang)
            prompt = prompts[i] if prompts else None
            full = None if prompt is None else (f"{block}\n{prompt}" if block else prompt)
            out.append(AugmentedPrompt(block, tuple(m.tuple for m in used), tuple(used), tuple(concept_lists[i]),
                                       cultures[i], mode, full, tid, tuple(m.score for m in used)))
        return out

    def _random(self, culture: str, n: int, seed: int, sample_id: str) -> list[Match]:
        pool = self.retriever.kb.for_culture(culture)
        rng = random.Random(f"{seed}:{sample_id}")
        picks = rng.sample(pool, min(n, len(pool), self.budget.max_tuples))
        return [Match(t.concept, t, 1.0, "exact") for t in picks]

    def _dedup(self, matches: Sequence[Match]) -> list[Match]:
        best: dict[str, Match] = {}
        for m in matches:
            if m.tuple.status == "rejected":
                continue
            if m.tuple.id not in best or m.score > best[m.tuple.id].score:
                best[m.tuple.id] = m
        return sorted(best.values(), key=lambda m: -m.score)[: self.budget.max_tuples]

    def _render(self, matches: Sequence[Match], language: str) -> tuple[str, list[Match], str]:
        """Lines within the character budget; a tuple that does not fit is left out, never cut in half."""
        from culturekb.inference.prompts import normalise_language

        lang = normalise_language(language)
        try:
            item = load_prompt(self.item_template, lang, required=("concept", "label"), allowed=_ITEM_FIELDS)
        except ConfigError:
            item = load_prompt(self.item_template, "en", required=("concept", "label"), allowed=_ITEM_FIELDS)
        scheme = self.retriever.kb.scheme
        lines: list[str] = []
        used: list[Match] = []
        total = 0
        for m in matches:
            t = m.tuple
            rats = " ".join(r.strip() for r in t.rationales[: self.budget.max_rationales])
            line = item.fill({
                "concept": t.concept,
                "label": scheme.translate(t.label, lang) if lang != "en" else t.label,
                "share": f"{t.distribution.get(t.label, 0.0):.0%}",
                "support": t.support,
                "rationales": rats,
            }).strip()
            if total + len(line) + 1 > self.budget.max_chars:
                continue
            lines.append(line)
            used.append(m)
            total += len(line) + 1
        return "\n".join(lines), used, item.id
