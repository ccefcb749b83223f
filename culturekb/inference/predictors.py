"""Predictors for the paper's modes: the offline KB-prior predictor and a predictor over any `ModelClient`."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from culturekb import registry
from culturekb.errors import ConfigError
from culturekb.inference.augmenter import AugmentedPrompt, Augmenter
from culturekb.inference.base import Prediction, Predictor, check_mode
from culturekb.inference.calibration import MAX_TUPLES
from culturekb.kb.calibration import Calibration
from culturekb.kb.schema import Sample
from culturekb.kb.stimulus import kb_stimulus_kind
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import ModelClient
from culturekb.text.prompts import PromptTemplate, joint_language_status

if TYPE_CHECKING:
    from culturekb.inference.calibration import PriorModel
    from culturekb.inference.parsing import EmbeddingFallback

__all__ = ["KBPriorPredictor", "ModelPredictor", "make_predictor", "kb_prior_predictor", "label_prior",
           "predictor_client"]

log = logging.getLogger(__name__)


def label_prior(kb: KnowledgeBase) -> dict[str, dict[str, float]]:
    """Per culture, the training label distribution (`KnowledgeBase.label_prior`)."""
    return kb.label_prior()


class KBPriorPredictor:
    """Offline predictor: the culture's label prior, updated by the retrieved concepts' evidence.

    The model (log-linear pooling of support-shrunk likelihood ratios, weighted by match score) is in
    `culturekb.inference.calibration` and docs/knowledge-model.md. Its weights and concept filter come from
    `calibration` (default: the KB's `calibration.json`, fitted on a valid split by `culturekb calibrate`), else
    from `model` (default: `UNCALIBRATED`). With nothing retrieved, and in `orig` / `internal-know`, it predicts
    the culture's prior, i.e. the majority class of that culture's training labels.
    """

    def __init__(self, augmenter: Augmenter, model: PriorModel | None = None, *,
                 calibration: Calibration | None = None, seed: int = 0) -> None:
        from culturekb.inference.calibration import UNCALIBRATED, PriorModel, smoothed_prior
        from culturekb.inference.injection import Budget, KnowledgeService
        from culturekb.kb.calibration import read_calibration
        from culturekb.retrieval.filters import TupleFilter

        self.augmenter = augmenter
        self.kb = augmenter.retriever.kb
        self.scheme = self.kb.scheme
        if calibration is None and model is None and self.kb.path is not None:
            calibration = read_calibration(self.kb.path, self.kb.version)
        if calibration is not None and calibration.kb_version != self.kb.version:
            raise ConfigError(f"the calibration was fitted for KB {calibration.kb_version}, not {self.kb.version}; "
                              "refit it with `culturekb calibrate`")
        self.calibration = calibration
        self.model = model or (PriorModel.from_calibration(calibration) if calibration else UNCALIBRATED)
        retriever = augmenter.retriever
        if calibration is not None:
            retriever = retriever.with_filter(TupleFilter.from_calibration(calibration, retriever.tuple_filter.status))
        self.service = KnowledgeService(retriever,
                                        budget=Budget(max_tuples=MAX_TUPLES, max_rationales=0, max_chars=None))
        self.prior = smoothed_prior(self.kb)
        self.seed = seed
        m = self.model
        self.id = (f"kb-prior:{self.kb.version}:a{m.alpha}:b{m.beta}:g{m.gamma}:{m.pool}"
                   f":{retriever.tuple_filter.describe().replace(' ', '')}"
                   + (f":prior-only={','.join(sorted(m.prior_only_cultures))}" if m.prior_only_cultures else ""))

    def predict(
        self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
    ) -> list[Prediction]:
        """Per sample, the argmax of prior x evidence (see the class docstring), with the full distribution."""
        from culturekb.inference.injection import KnowledgeRequest

        check_mode(mode)
        concepts = self.augmenter.concepts_for(samples)
        blocks = self.service.inject_many(
            [KnowledgeRequest(cs, s.culture, mode, None, s.id) for s, cs in zip(samples, concepts, strict=True)],
            seed=self.seed)
        order = list(self.scheme.labels)
        uniform = np.full(len(order), 1.0 / len(order))
        out = []
        for s, block in zip(samples, blocks, strict=True):
            prior = self.prior.get(block.culture, uniform)
            ratios = [self.model.log_ratio(m.tuple, self.prior.get(m.tuple.culture, uniform), order)
                      for m in block.matches]
            q = self.model.combine(prior, ratios, [m.score for m in block.matches], block.culture)
            label = order[int(np.argmax(q))]
            if block.matches:
                why = "retrieved: " + ", ".join(f"{m.tuple.concept} -> {m.tuple.label}" for m in block.matches)
            else:
                why = "no knowledge retrieved; the culture's most frequent label"
            out.append(Prediction(
                sample_id=s.id, culture=block.culture, mode=mode, label=label, explanation=why,
                tuples_used=block.tuple_ids, raw=label, parse_status="json", template_id=block.template_id,
                prompt_language=prompt_language or "en", model=self.id,
                probabilities={lab: round(float(p), 6) for lab, p in zip(order, q, strict=True)},
            ))
        return out


class ModelPredictor:
    """Knowledge-conditioned prediction with a chat model (OpenAI-compatible server or local transformers VLM)."""

    def __init__(
        self,
        client: ModelClient,
        augmenter: Augmenter,
        template_dir: str | None = None,
        max_tokens: int = 256,
        cot_max_tokens: int = 768,
        temperature: float = 0.0,
        max_image_side: int = 1024,
        seed: int = 0,
        parse_fallback: bool | EmbeddingFallback | None = False,
    ) -> None:
        """`parse_fallback`: read answers that name no label word through the multilingual embedder
        (`culturekb.inference.parsing.EmbeddingFallback`; True: the default one, loaded on the first such answer).
        Off by default; when on, the predictor's id says so, so a run's checkpoint made without it is not reused."""
        from culturekb.inference.parsing import embedding_fallback

        self.client = client
        self.augmenter = augmenter
        self.scheme = augmenter.retriever.kb.scheme
        self.template_dir = template_dir
        self.max_tokens = max_tokens
        self.cot_max_tokens = cot_max_tokens
        self.temperature = temperature
        self.max_image_side = max_image_side
        self.seed = seed
        self.parse_fallback = embedding_fallback(parse_fallback)
        self.id = f"{client.id}|kb:{augmenter.kb_version}"
        served = augmenter.retriever.tuple_filter
        if not served.is_open:  # another status or concept filter serves other knowledge: never reuse answers
            self.id += f"|{served.describe().replace(' ', '')}"
        if self.parse_fallback is not None:
            self.id += f"|parse:{self.parse_fallback.id}"

    def _language(self, culture: str, requested: str | None) -> str:
        from culturekb.inference.prompts import normalise_language

        if requested:
            return normalise_language(requested)
        return normalise_language(self.augmenter.retriever.kb.culture(culture).language)

    def prompt(self, sample: Sample, aug: AugmentedPrompt, mode: str, language: str) -> tuple[str, str]:
        """The rendered prompt text for one sample, and the template id."""
        text, template = self._prompt(sample, aug, mode, language)
        return text, template.id

    def _prompt(self, sample: Sample, aug: AugmentedPrompt, mode: str, language: str) -> tuple[str, PromptTemplate]:
        """The prompt text and its template, in `language` or, where the template lacks it, in English (the
        template's `language` and `language_status` say which). An item without an image gets the text variant
        of the template (`culturekb.inference.prompts.TEXT_PREDICTION_TEMPLATES`: its text, no artwork), an image
        of a KB whose samples are no artworks the image variant (`IMAGE_PREDICTION_TEMPLATES`)."""
        from culturekb.inference.prompts import prediction_template, prediction_values

        text = not sample.image
        kind = kb_stimulus_kind(self.augmenter.retriever.kb)  # a photo is no artwork
        template = prediction_template(mode, language, self.template_dir, text=text, kind=kind)
        if mode in ("know", "random-know", "cross-culture-know") and not aug.block:
            # the paper: with no tuple retrieved, the model predicts without a block
            template = prediction_template("orig", language, self.template_dir, text=text, kind=kind)
        culture = self.augmenter.retriever.kb.culture(aug.culture)
        values = prediction_values(culture, self.scheme, template.language, knowledge=aug.block, title=sample.title,
                                   text=sample.text)
        return template.fill(values), template

    def build(self, sample: Sample, aug: AugmentedPrompt, mode: str, language: str) -> tuple[list[dict[str, Any]], str]:
        """The chat messages for one sample, and the template id."""
        from culturekb.inference.messages import build_messages

        text, tid = self.prompt(sample, aug, mode, language)
        return build_messages(text, sample.image, self.max_image_side, where=f"sample {sample.id!r}"), tid

    def predict(
        self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
    ) -> list[Prediction]:
        """Per sample, the model's answer to the mode's prompt (knowledge block included), parsed to a scheme label."""
        from culturekb.inference.messages import ask_each, prediction_from_answer

        check_mode(mode)
        augs = self.augmenter.augment_many(samples, mode=mode, seed=self.seed)
        prompts: list[tuple[str, str | None, str]] = []
        meta: list[tuple[str, str, str]] = []
        for s, aug in zip(samples, augs, strict=True):
            text, template = self._prompt(s, aug, mode, self._language(aug.culture, prompt_language))
            prompts.append((text, s.image, f"sample {s.id!r}"))
            status = joint_language_status(template.language_status,
                                           aug.knowledge.language_status if aug.block else "")
            meta.append((template.language, template.id, status))
        max_tokens = self.cot_max_tokens if mode == "internal-know" else self.max_tokens
        answers = ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                           max_tokens=max_tokens)
        out = []
        for s, aug, (lang, tid, status), ans in zip(samples, augs, meta, answers, strict=True):
            common: dict[str, Any] = {"sample_id": s.id, "culture": aug.culture, "mode": mode,
                                      "tuples_used": aug.tuple_ids, "template_id": tid, "language_status": status,
                                      "prompt_language": lang, "model": self.client.id,
                                      "with_image": bool(s.image)}
            out.append(prediction_from_answer(ans, self.scheme, lang, Prediction, fallback=self.parse_fallback,
                                              **common))
        return out


_CLIENT_OPTIONS = ("max_concurrency", "cache", "timeout_s", "max_retries")
_MODEL_PREDICTOR_OPTIONS = ("template_dir", "max_tokens", "temperature", "seed", "parse_fallback")
_KB_PRIOR_OPTIONS = ("model", "calibration", "seed")


def kb_prior_predictor(argument: str, *, augmenter: Augmenter, base_url: str | None = None, **kw: Any
                       ) -> KBPriorPredictor:
    """Factory of ``kb-prior`` (registered in `culturekb.registry.PREDICTORS`).

    It calls no model, so the model-call options one command line passes to every spec (cache, concurrency,
    base_url, max_tokens ...) are left aside; `model`, `calibration` and `seed` are its own.
    """
    if argument:
        raise ConfigError(f"predictor 'kb-prior' takes no value after ':', got {argument!r}")
    ignored = sorted(k for k in kw if k not in _KB_PRIOR_OPTIONS)
    if ignored or base_url is not None:
        log.debug("kb-prior calls no model; ignoring %s", [*ignored, *(["base_url"] if base_url else [])])
    return KBPriorPredictor(augmenter, **{k: v for k, v in kw.items() if k in _KB_PRIOR_OPTIONS})


def predictor_client(predictor: object) -> ModelClient | None:
    """The model client a `ModelPredictor` calls; None for any other predictor (the kb-prior calls none; a
    plug-in predictor's runner is given its client as ``client=``)."""
    return predictor.client if isinstance(predictor, ModelPredictor) else None


def make_predictor(spec: str, augmenter: Augmenter, base_url: str | None = None, **kw: Any) -> Predictor:
    """A predictor by spec: a `culturekb.registry.PREDICTORS` name (``kb-prior``), else any model-client spec
    (``openai:MODEL`` with base_url, ``hf:PATH``, or a plug-in client), which makes a `ModelPredictor`.

    For a client, `max_concurrency`, `cache`, `timeout_s` and `max_retries` go to the client (its cached answers
    are scoped to the KB version) and `template_dir`, `max_tokens`, `temperature`, `seed` and `parse_fallback` to
    the predictor.
    """
    source = registry.which(spec, registry.PREDICTORS, registry.CLIENTS, kind="model")
    if source is registry.PREDICTORS:
        predictor: Predictor = registry.PREDICTORS.create(spec, augmenter=augmenter, base_url=base_url, **kw)
        return predictor
    from culturekb.models.factory import make_client

    client_kw = {k: v for k, v in kw.items() if k in _CLIENT_OPTIONS}
    client_kw["cache_scope"] = augmenter.kb_version  # cached answers are never reused across KBs
    client = make_client(spec, base_url=base_url, **client_kw)
    pred_kw = {k: v for k, v in kw.items() if k in _MODEL_PREDICTOR_OPTIONS}
    return ModelPredictor(client, augmenter, **pred_kw)
