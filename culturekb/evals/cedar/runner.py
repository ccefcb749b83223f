"""The Cedar run: culture-specific emotion answers to narratives (multimodal and text-only), with regional cues.

Settings: ``orig`` (the model alone) and ``know`` (plus a cue block retrieved for the item's culture from any KB:
concepts from the narrative and the question, and from the image when a VLM concept extractor is given). Each
setting runs in the item's own language by default; `prompt_languages` adds the prompt-language x data-language
grid. Decoding: temperature 0, at most 128 new tokens.

Metrics (PAPERS.md section 2), for all items and for the multimodal and text-only subsets apart: accuracy per
language, macro average and cross-lingual variance; emotion prediction propensity globally (GEPP) and per language
(LSEPP); Russell quadrant bias globally (GRQB) and per language (LSRQB); the prompt-language x data-language grid.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from culturekb._records import LoadReport, parse_field_map
from culturekb.errors import ConfigError
from culturekb.evals._cues import cue_block_for, item_concepts
from culturekb.evals.cedar.command import cedar_options
from culturekb.evals.cedar.data import load_cedar
from culturekb.evals.cedar.metrics import (
    prediction_propensity,
    prediction_propensity_by_group,
    quadrant_bias,
    quadrant_bias_by_group,
)
from culturekb.evals.cedar.report import SUBSETS, cedar_plots, cedar_tables, majority_share
from culturekb.evals.cedar.spec import CedarSpec
from culturekb.evals.context import RunContext
from culturekb.evals.metrics import (
    accuracy,
    accuracy_by_group,
    accuracy_grid,
    align_predictions,
    cross_lingual_variance,
    macro_average,
)
from culturekb.evals.reports import Plot, Table, base_run_header
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.inference.base import Prediction
from culturekb.inference.injection import (
    CUES,
    BlockTemplate,
    Budget,
    KnowledgeBlock,
    KnowledgeRequest,
    KnowledgeService,
)
from culturekb.inference.injection import cue_budget as default_cue_budget
from culturekb.kb.cultures import Culture, CultureRegistry, packaged_registry
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme, map_distribution
from culturekb.models.base import ModelClient
from culturekb.retrieval.retriever import Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor
from culturekb.text.prompts import PromptTemplate, joint_language_status, resolve_prompt

if TYPE_CHECKING:
    from culturekb.inference.parsing import EmbeddingFallback

__all__ = ["CEDAR_MODES", "CedarPrediction", "CedarPredictor", "CedarRunner", "cedar_tables", "cedar_plots",
           "cedar_template", "cue_block_for"]

CEDAR_MODES: tuple[str, ...] = ("orig", "know")
_CEDAR_FIELDS = {"orig": ("culture", "narrative", "question", "labels"),
                 "know": ("culture", "narrative", "question", "labels", "cues")}


class CedarPrediction(Prediction):
    """A Cedar answer plus how its cues were found: ``matched``, ``no-match``, ``no-concepts``,
    ``culture-not-in-kb`` or ``not-used`` (orig)."""

    cue_status: str = "not-used"
    concepts: list[str] = Field(default_factory=list)


def cedar_template(mode: str, language: str, template_dir: str | Path | None = None) -> PromptTemplate:
    """The Cedar prompt for `mode` (orig | know) in `language`, validated for its placeholders; in English, marked
    ``language_status="fallback:en"``, where `language` has none (`culturekb.text.prompts.resolve_prompt`)."""
    if mode not in CEDAR_MODES:
        raise ConfigError(f"unknown Cedar mode {mode!r}; use one of {list(CEDAR_MODES)}")
    return resolve_prompt(f"cedar_{mode}", language, required=_CEDAR_FIELDS[mode], allowed=("culture_id",),
                          template_dir=template_dir)


class CedarPredictor:
    """Cedar answers in mode orig or know: from a chat model (`client`), or offline from the KB (`client=None`,
    the kb-prior baseline: the culture's training label prior, mixed with the retrieved tuples' distributions in
    ``know``).

    `retriever`: the KB the cues come from (needed for ``know`` and for kb-prior); `concept_extractor`: test-time
    concepts from the narrative and question (default: the offline English text extractor); `image_concepts`: a
    VLM concept extractor for the images of multimodal items (optional). The cue block is the knowledge
    service's, rendered with `cue_template` (default `CUES`) within `cue_budget` (default: `max_cues` tuples in
    concept order). `parse_fallback`: read model answers that name no label word through the multilingual
    embedder (`culturekb.inference.parsing.EmbeddingFallback`; True: the default one, loaded on the first such
    answer); off by default, and named in the predictor's id when on. `cultures`: where each item's culture gets
    its prompt language and display name: the run's registry (`RunContext.cultures`); default: the KB's
    (`retriever.kb.culture_registry`), else the packaged cultures (`packaged_registry`).
    """

    def __init__(
        self,
        scheme: str | EmotionScheme = "cedar14",
        retriever: Retriever | None = None,
        client: ModelClient | None = None,
        *,
        concept_extractor: ConceptExtractor | None = None,
        image_concepts: ConceptExtractor | None = None,
        max_cues: int = 5,
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        max_image_side: int = 1024,
        prior_weight: float = 0.05,
        cue_template: BlockTemplate = CUES,
        cue_budget: Budget | None = None,
        parse_fallback: bool | EmbeddingFallback | None = False,
        cultures: CultureRegistry | None = None,
    ) -> None:
        from culturekb.inference.parsing import embedding_fallback

        self.cultures = cultures if cultures is not None else (
            retriever.kb.culture_registry if retriever is not None else packaged_registry())
        self.scheme = get_scheme(scheme)
        self.retriever = retriever
        self.client = client
        self.concept_extractor = concept_extractor or TextConceptExtractor(fields=STIMULUS_FIELDS)
        self.image_concepts = image_concepts
        self.max_cues = max_cues
        self.cue_template = cue_template
        self.cue_budget = cue_budget or default_cue_budget(max_cues)
        self.cue_service = None if retriever is None else KnowledgeService(
            retriever, budget=self.cue_budget, template=cue_template)
        self.template_dir = template_dir
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        self.prior_weight = prior_weight
        self.parse_fallback = embedding_fallback(parse_fallback) if client is not None else None
        kb_part = f"|kb:{retriever.kb.version}" if retriever is not None else ""
        if client is None:
            if retriever is None:
                raise ConfigError("the kb-prior Cedar predictor needs a KB (retriever); pass one, or a model client")
            self._check_kb_scheme()
            from culturekb.inference.predictors import label_prior

            self._prior = {c: self._to_scheme(d) for c, d in label_prior(retriever.kb).items()}
            self.id = f"kb-prior:{retriever.kb.version}:pw{prior_weight}"
        else:
            self.id = f"{client.id}{kb_part}:t{temperature}:m{max_tokens}"
            if self.parse_fallback is not None:
                self.id += f"|parse:{self.parse_fallback.id}"
        self.id += f"|concepts:{self.concept_extractor.id}" + (f"|img:{image_concepts.id}" if image_concepts else "")

    # -- the KB's labels in the Cedar scheme ------------------------------------------------------------------
    def _check_kb_scheme(self) -> None:
        assert self.retriever is not None
        kb_scheme = self.retriever.kb.scheme
        if tuple(kb_scheme.labels) != tuple(self.scheme.labels) and self.scheme.name not in kb_scheme.mappings:
            raise ConfigError(
                f"kb-prior predicts from the KB's labels, but the KB uses scheme {kb_scheme.name!r} and the data "
                f"{self.scheme.name!r} with no mapping between them; build the KB with --scheme {self.scheme.name}, "
                "add a mapping to the KB's scheme file, or use a model"
            )

    def _to_scheme(self, dist: Mapping[str, float]) -> dict[str, float]:
        assert self.retriever is not None
        kb_scheme = self.retriever.kb.scheme
        if tuple(kb_scheme.labels) == tuple(self.scheme.labels):
            return {lab: float(dist.get(lab, 0.0)) for lab in self.scheme.labels}
        return map_distribution(dict(dist), kb_scheme, self.scheme)

    def _prior_for(self, culture: str) -> dict[str, float]:
        if culture in self._prior:
            return self._prior[culture]
        pooled: Counter[str] = Counter()
        for d in self._prior.values():
            pooled.update(d)
        total = sum(pooled.values()) or 1.0
        return {lab: pooled.get(lab, 0.0) / total for lab in self.scheme.labels}

    def _argmax(self, dist: Mapping[str, float]) -> str:
        order = list(self.scheme.labels)
        return max(order, key=lambda lab: (dist.get(lab, 0.0), -order.index(lab)))

    # -- concepts and cues --------------------------------------------------------------------------------------
    def concepts(self, samples: Sequence[Sample]) -> list[list[str]]:
        """Test-time concepts: from the narrative and question, plus the image's when `image_concepts` is set."""
        return item_concepts(samples, self.concept_extractor, self.image_concepts)

    def _culture(self, sample: Sample) -> Culture | None:
        """The item's culture as the run's registry describes it (None for a culture it lacks): the one lookup
        that gives the prompt its language and the culture its name."""
        return self.cultures.resolve(sample.culture) if sample.culture in self.cultures else None

    def _template(self, culture: Culture | None, requested: str | None, mode: str) -> PromptTemplate:
        """The item's Cedar template: in `requested`, else in its culture's language (English for a culture the
        registry lacks); English where that language has no template (its `language_status` says so)."""
        return cedar_template(mode, requested or (culture.language if culture is not None else "en"),
                              self.template_dir)

    def cue_blocks(self, samples: Sequence[Sample], concepts: Sequence[Sequence[str]], languages: Sequence[str],
                   cultures: Sequence[Culture | None] | None = None) -> list[tuple[KnowledgeBlock, str]]:
        """(cue block, status) per item from one batched lookup: status ``matched``, ``no-match``,
        ``no-concepts`` or ``culture-not-in-kb`` (the item then goes without cues; it is never dropped).
        `cultures`: the items' cultures as `_culture` resolved them, which the requests carry, so that the
        knowledge service does not look them up again (default: resolved here)."""
        if self.cue_service is None:
            raise ConfigError("Cedar mode 'know' needs a KB to retrieve cues from; pass --kb (a retriever)")
        known = list(cultures) if cultures is not None else [self._culture(s) for s in samples]
        requests = [KnowledgeRequest(cs, c if c is not None else s.culture, "know", lang, s.id)
                    for s, cs, lang, c in zip(samples, concepts, languages, known, strict=True)]
        blocks = self.cue_service.inject_many(requests, on_unknown_culture="skip")
        return [(b, b.status) for b in blocks]

    # -- prediction --------------------------------------------------------------------------------------------
    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[CedarPrediction]:
        """Cedar predictions in `mode`, each in its item's language unless `prompt_language` is given."""
        if mode not in CEDAR_MODES:
            raise ConfigError(f"unknown Cedar mode {mode!r}; use one of {list(CEDAR_MODES)}")
        if mode == "know" and self.retriever is None:
            raise ConfigError("Cedar mode 'know' needs a KB to retrieve cues from; pass --kb (a retriever)")
        cultures = [self._culture(s) for s in samples]
        templates = [self._template(c, prompt_language, mode) for c in cultures]
        langs = [t.language for t in templates]
        concepts = self.concepts(samples) if mode == "know" else [[] for _ in samples]
        blocks = (self.cue_blocks(samples, concepts, langs, cultures) if mode == "know"
                  else [(KnowledgeBlock("", status="not-used"), "not-used") for _ in samples])
        statuses = [t.language_status for t in templates]
        if self.client is None:
            return self._predict_prior(samples, mode, langs, concepts, blocks)
        return self._predict_model(samples, mode, langs, concepts, blocks, statuses, cultures)

    def _predict_prior(self, samples: Sequence[Sample], mode: str, langs: Sequence[str],
                       concepts: Sequence[list[str]], blocks: Sequence[tuple[KnowledgeBlock, str]]
                       ) -> list[CedarPrediction]:
        out = []
        for s, lang, cs, (block, status) in zip(samples, langs, concepts, blocks, strict=True):
            prior = self._prior_for(s.culture)
            if block.matches:
                mix = {lab: self.prior_weight * prior.get(lab, 0.0) for lab in self.scheme.labels}
                for m in block.matches:
                    for lab, p in self._to_scheme(m.tuple.distribution).items():
                        mix[lab] = mix.get(lab, 0.0) + m.score * p
                label = self._argmax(mix)
                why = "retrieved: " + ", ".join(f"{m.tuple.concept} -> {m.tuple.label}" for m in block.matches)
            else:
                label = self._argmax(prior)
                why = "the culture's most frequent training label"
            out.append(CedarPrediction(
                sample_id=s.id, culture=s.culture, mode=mode, label=label, explanation=why,
                tuples_used=[m.tuple.id for m in block.matches], raw=label, parse_status="json",
                template_id=block.template_id, prompt_language=lang, model=self.id, cue_status=status, concepts=cs,
                language_status=block.language_status if block.template_id else ""))
        return out

    def _predict_model(self, samples: Sequence[Sample], mode: str, langs: Sequence[str],
                       concepts: Sequence[list[str]], blocks: Sequence[tuple[KnowledgeBlock, str]],
                       statuses: Sequence[str], cultures: Sequence[Culture | None]) -> list[CedarPrediction]:
        from culturekb.inference.messages import ask_each, prediction_from_answer
        from culturekb.inference.prompts import culture_display_name, format_labels

        assert self.client is not None
        prompts: list[tuple[str, str | None, str]] = []
        tids: list[str] = []
        used: list[str] = []
        for i, (s, lang, (block, _)) in enumerate(zip(samples, langs, blocks, strict=True)):
            # the paper's rule: with no cue retrieved, the item is asked without a block
            use_mode = "know" if mode == "know" and block.text else "orig"
            template = cedar_template(use_mode, lang, self.template_dir)
            culture = cultures[i]
            name = culture_display_name(culture, lang) if culture is not None else s.culture
            values = {"culture": name, "culture_id": s.culture, "narrative": (s.text or "").strip(),
                      "question": (s.question or "").strip(), "labels": format_labels(self.scheme, lang),
                      "cues": block.text.strip()}
            tid = template.id + (f"+{block.template_id}" if use_mode == "know" else "")
            used.append(joint_language_status(statuses[i], template.language_status,
                                              block.language_status if use_mode == "know" else ""))
            prompts.append((template.fill(values), s.image, f"sample {s.id!r}"))
            tids.append(tid)
        answers = ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                           max_tokens=self.max_tokens)
        out = []
        for i, (s, lang, cs, (block, status)) in enumerate(zip(samples, langs, concepts, blocks, strict=True)):
            common: dict[str, Any] = {
                "sample_id": s.id, "culture": s.culture, "mode": mode, "template_id": tids[i],
                "language_status": used[i],
                "tuples_used": [m.tuple.id for m in block.matches], "prompt_language": lang,
                "model": self.client.id, "cue_status": status, "concepts": cs}
            out.append(prediction_from_answer(answers[i], self.scheme, lang, CedarPrediction,
                                              fallback=self.parse_fallback, **common))
        return out


# -- the runner ---------------------------------------------------------------------------------------------------


@register_runner("cedar")
class CedarRunner(Runner):
    """Cedar items predicted in ``orig`` and ``know`` (in each item's language), plus the prompt-language grid."""

    command = RunnerCommand(cedar_options)
    reads_label_words = True

    default_modes = CEDAR_MODES
    record_type = CedarPrediction

    def __init__(
        self,
        samples: Sequence[Sample],
        predictor: Any,
        scheme: str | EmotionScheme = "cedar14",
        *,
        modes: Sequence[str] | None = None,
        prompt_languages: Sequence[str] | None = None,
        grid_mode: str = "know",
        kb_version: str = "",
        **kw: Any,
    ) -> None:
        self.samples = list(samples)
        self.scheme = get_scheme(scheme)
        self.modes = list(modes or CEDAR_MODES)
        for m in [*self.modes, grid_mode]:
            if m not in CEDAR_MODES:
                raise ConfigError(f"unknown Cedar mode {m!r}; use any of {list(CEDAR_MODES)}")
        self.prompt_languages = list(prompt_languages or [])
        self.grid_mode = grid_mode
        self.kb_version = kb_version
        kw.setdefault("client", predictor.client if isinstance(predictor, CedarPredictor) else None)
        super().__init__(predictor, **kw)

    @classmethod
    def from_context(cls, ctx: RunContext) -> CedarRunner:
        """The Cedar items of the spec's file (read first), cues from the spec's KB (needed for ``know`` and the
        prompt-language grid), the spec's model."""
        spec = ctx.spec
        assert isinstance(spec, CedarSpec)
        report = LoadReport()
        samples = load_cedar(spec.data, scheme=spec.scheme, languages=spec.languages, modalities=spec.modalities,
                             data_root=spec.data_root, check_images=spec.model != "kb-prior",
                             field_map=parse_field_map(spec.field_map), on_bad_row=spec.on_bad_row, report=report)
        retriever = ctx.retriever()
        chosen = list(spec.modes or CEDAR_MODES)
        if retriever is None and ("know" in chosen or spec.prompt_languages):
            raise ConfigError("Cedar mode 'know' and the prompt-language grid need a KB for the cues; pass --kb DIR "
                              "or run --modes orig")
        client = ctx.client()
        scheme = ctx.label_scheme(get_scheme(spec.scheme)) if client is not None else spec.scheme
        predictor = CedarPredictor(scheme, retriever, client, image_concepts=ctx.image_concepts(client),
                                   max_cues=spec.max_cues, template_dir=spec.template_dir,
                                   max_tokens=spec.max_tokens, parse_fallback=ctx.parse_fallback,
                                   cultures=ctx.cultures())
        if client is not None:
            predictor.id += ctx.label_words_id
        return cls(samples, predictor, spec.scheme, modes=chosen, prompt_languages=spec.prompt_languages,
                   kb_version=ctx.kb_version, limit=spec.limit, progress=spec.progress,
                   load_report=report.to_dict())

    def load(self) -> list[Sample]:
        """The Cedar items; every one must carry its gold emotion."""
        for s in self.samples:
            if s.label is None:
                raise ConfigError(f"Cedar item {s.id!r} has no gold label; load the data with labels")
        return list(self.samples)

    def default_settings(self) -> list[Setting]:
        """One setting per mode, then the grid mode in each prompt language."""
        return [Setting(m) for m in self.modes] + [Setting(self.grid_mode, lang) for lang in self.prompt_languages]

    def config(self) -> dict[str, Any]:
        """The base config plus the KB version and label scheme, so a rerun with either changed starts over."""
        return {**super().config(), "kb_version": self.kb_version, "scheme": self.scheme.name}

    # -- scoring -------------------------------------------------------------------------------------------------
    def _block(self, golds: Sequence[str], preds: Sequence[str | None], langs: Sequence[str],
               records: Sequence[Prediction]) -> dict[str, Any]:
        labels = list(self.scheme.labels)
        per_language = accuracy_by_group(preds, golds, langs)
        block: dict[str, Any] = {
            "n": len(golds),
            "n_per_language": dict(sorted(Counter(langs).items())),
            "accuracy": accuracy(preds, golds),
            "per_language": per_language,
            "macro_average": macro_average(per_language),
            "cross_lingual_variance": cross_lingual_variance(per_language),
            "gepp": prediction_propensity(preds, golds, labels),
            "lsepp": prediction_propensity_by_group(preds, golds, langs, labels),
            "invalid": sum(p.parse_status == "invalid" for p in records),
            "errors": sum(p.parse_status == "error" for p in records),
            "parse_paths": dict(sorted(Counter(p.parse_path for p in records if p.parse_path).items())),
            "with_cues": sum(bool(p.tuples_used) for p in records),
            "cue_status": dict(sorted(Counter(getattr(p, "cue_status", "") for p in records).items())),
            "majority": majority_share(golds),
        }
        if self.scheme.quadrants:
            block["grqb"] = quadrant_bias(preds, golds, self.scheme.quadrants)
            block["lsrqb"] = quadrant_bias_by_group(preds, golds, langs, self.scheme.quadrants)
        return block

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Accuracy per setting over all items and per modality, by language, and the prompt-language grid."""
        langs_all = [s.culture for s in samples]
        modality = [str(s.metadata.get("modality", "multimodal" if s.image else "text")) for s in samples]
        per_setting: dict[str, Any] = {}
        grid_rows: list[str] = []
        grid_cols: list[str] = []
        grid_preds: list[str | None] = []
        grid_golds: list[str] = []
        for setting, preds in predictions_by_setting.items():
            golds, labels = align_predictions(samples, preds, where=f"cedar/{setting.key}")
            by_id = {p.sample_id: p for p in preds}
            records = [by_id[s.id] for s in samples]
            entry: dict[str, Any] = {"mode": setting.mode, "prompt_language": setting.prompt_language}
            for subset in SUBSETS:
                idx = [i for i, m in enumerate(modality) if subset == "all" or m == subset]
                if not idx or (subset != "all" and len(idx) == len(samples)):
                    continue  # a subset equal to all items would repeat the "all" rows
                entry[subset] = self._block([golds[i] for i in idx], [labels[i] for i in idx],
                                            [langs_all[i] for i in idx], [records[i] for i in idx])
            per_setting[setting.key] = entry
            if setting.prompt_language is not None and setting.mode == self.grid_mode:
                grid_rows += [setting.prompt_language] * len(samples)
                grid_cols += langs_all
                grid_preds += labels
                grid_golds += golds
        results: dict[str, Any] = {
            "n_samples": len(samples),
            "scheme": self.scheme.name,
            "n_labels": len(self.scheme.labels),
            "languages": sorted(set(langs_all)),
            "n_per_language": dict(sorted(Counter(langs_all).items())),
            "n_per_modality": dict(sorted(Counter(modality).items())),
            "quadrants": {q: list(v) for q, v in self.scheme.quadrants.items()},
            "grid_mode": self.grid_mode,
            "settings": per_setting,
        }
        if grid_rows:
            results["grid"] = accuracy_grid(grid_preds, grid_golds, grid_rows, grid_cols)
        return results

    # -- report --------------------------------------------------------------------------------------------------
    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the model (or the offline kb-prior), the cue KB, the prompt languages, the images sent."""
        header = base_run_header(self)
        predictor = self.predictor
        client = getattr(predictor, "client", None)
        model = str(getattr(predictor, "id", "") or "none")
        with_image = sum(1 for s in self.samples if s.image)
        if client is None:
            model += " (offline: each language's label prior from the KB, moved by the cues' labels; no model call)"
            images = f"none (offline: no model sees an image; {with_image} of {len(self.samples)} items have one)"
        else:
            images = (f"{with_image} of {len(self.samples)} items sent with their image (the multimodal ones; an "
                      "image that cannot be read fails its call, counted under errors)")
        retriever = getattr(predictor, "retriever", None)
        kb_path = getattr(getattr(retriever, "kb", None), "path", None)
        header.update({
            "model": model,
            "judge": "none (the parsed label against the gold label)",
            "baseline": "none (Cedar reports no baseline; the offline kb-prior run is the reference a model is "
                        "compared with)",
            "KB": f"{self.kb_version}" + (f" ({kb_path})" if kb_path else "") if self.kb_version
                  else "none (orig only: no cues)",
            "images sent": images,
        })
        if client is None:
            header["prompt languages"] = ("none sent (offline: no model call; the cue blocks were built in "
                                          f"{header['prompt languages']})")
        tf = getattr(retriever, "tuple_filter", None)
        if tf is not None:
            header["KB calibration"] = (f"concept filter min_support={tf.min_support}, min_informativeness="
                                        f"{tf.min_informativeness:g}, status={tf.status} (from the KB's calibration."
                                        "json when it has one; the cues' weights are not calibrated)")
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """Markdown tables of the Cedar results."""
        return cedar_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """PNG plots of the Cedar results."""
        return cedar_plots(results)
