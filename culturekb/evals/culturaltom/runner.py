"""The CulturalToM-VQA run: prompting strategies as settings, each answer read as an option letter.

Settings (PAPERS.md section 4), with the model calls each makes per question:

- ``zero-shot`` (1 call per question): image, question and options; the answer is the letter only
  (`max_tokens`, default 32).
- ``cot`` (1 call): the same; the model reasons step by step, then writes ``Answer: X``
  (`reasoning_max_tokens`, at least 512).
- ``compositional`` (2 calls, +1 per re-ask): first a JSON scene graph of the image (`SceneGraph`), validated
  and re-asked when invalid (up to `graph_retries`); then the answer from image + scene graph, reasoned as in cot.
  After the last invalid graph the answer is still asked, without one (``scene_graph_status="invalid"``).
- ``<strategy>+kb-cues`` (as the strategy): any of the three with a block of cultural cues for the item's
  culture (else its region) from a KB, rendered by `KnowledgeService`, the path Cedar and RICE-VL use; the
  scene-graph call gets no cues. The block is the emotion-cue block for an emotion KB, notes per country for a
  regional KB.
- ``blind`` (1 call): ``zero-shot`` without the image (question, context and options only).
- ``positivity`` (0 calls): no model; the most positive option by a sentiment lexicon (`positivity`).

The number of calls actually made is recorded per answer (``calls``) and averaged per setting in the report.
Answers are read by `culturekb.inference.choices.parse_choice` (letter, ``(B)``, ``B.``, ``Answer: B``, the
option's text, answers in other languages); an unreadable answer is ``invalid`` and scored wrong. A failed call
is recorded as an error and asked again on a rerun; everything else is checkpointed per question.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from culturekb._records import LoadReport, parse_field_map
from culturekb.errors import ConfigError, CultureKBError
from culturekb.evals._cues import item_concepts
from culturekb.evals.context import RunContext
from culturekb.evals.culturaltom.command import culturaltom_options
from culturekb.evals.culturaltom.data import MAX_OPTIONS, MIN_OPTIONS, TEXT_ONLY_SOURCE, TaskMatrix, load_matrix
from culturekb.evals.culturaltom.positivity import positivity_pick
from culturekb.evals.culturaltom.scoring import culturaltom_plots, culturaltom_tables, score_culturaltom
from culturekb.evals.culturaltom.spec import CulturalToMSpec
from culturekb.evals.reports import Plot, Table, base_run_header
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.inference.base import Prediction
from culturekb.inference.choices import option_letters, parse_choice
from culturekb.inference.injection import CUES, REGIONAL_CUES, KnowledgeBlock, KnowledgeRequest, KnowledgeService
from culturekb.inference.injection import cue_budget as default_cue_budget
from culturekb.inference.messages import ask_each, build_messages
from culturekb.kb.schema import Sample
from culturekb.models.base import Message, ModelClient, ModelResponse
from culturekb.models.json_output import complete_json_each
from culturekb.retrieval.retriever import Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor
from culturekb.text.prompts import PromptTemplate, resolve_prompt, template_check_status

__all__ = ["STRATEGIES", "CUE_SUFFIX", "CulturalToMPrediction", "CulturalToMRunner", "SceneGraph",
           "culturaltom_settings"]

STRATEGIES: tuple[str, ...] = ("zero-shot", "cot", "compositional")
CUE_SUFFIX = "+kb-cues"
_OTHER = ("blind", "positivity")
MIN_REASONING_TOKENS = 512


def culturaltom_settings(with_cues: bool) -> list[str]:
    """Every setting the runner knows, in report order: the strategies, their kb-cues variants (when
    `with_cues`), blind, positivity."""
    cued = [f"{s}{CUE_SUFFIX}" for s in STRATEGIES] if with_cues else []
    return [*STRATEGIES, *cued, *_OTHER]


_ALL_SETTINGS = frozenset(culturaltom_settings(True))


class SceneEntity(BaseModel):
    """One entity of a scene graph: an id, a kind, and what can be seen about it."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    type: str = ""
    attributes: list[str] = Field(default_factory=list)


class SceneRelation(BaseModel):
    """A relation between two entities of a scene graph."""

    model_config = ConfigDict(extra="ignore")
    subject: str = Field(min_length=1)
    predicate: str = Field(min_length=1)
    object: str = Field(min_length=1)


class SceneGraph(BaseModel):
    """The compositional strategy's scene graph: setting, entities (at least one), relations between them.

    Valid only when every relation's subject and object is an entity id and the ids are distinct.
    """

    model_config = ConfigDict(extra="ignore")
    setting: str = ""
    entities: list[SceneEntity] = Field(min_length=1)
    relations: list[SceneRelation] = Field(default_factory=list)

    @model_validator(mode="after")
    def _ids(self) -> SceneGraph:
        ids = [e.id for e in self.entities]
        if len(set(ids)) != len(ids):
            raise ValueError(f"entity ids repeat: {ids}; give each entity its own id")
        unknown = sorted({x for r in self.relations for x in (r.subject, r.object)} - set(ids))
        if unknown:
            raise ValueError(f"relations name {unknown}, which are not entity ids {ids}")
        return self


class CulturalToMPrediction(Prediction):
    """One answer: `label` holds the option letter (None when invalid or failed), with how it was obtained."""

    strategy: str = ""
    calls: int = 0
    """Model requests made for this answer (re-asks included, answers served by the response cache too; 0 for the
    positivity baseline)."""
    with_image: bool = False
    cue_status: str = "not-used"
    scene_graph: dict[str, Any] | None = None
    scene_graph_status: str = "not-used"
    """compositional: ``ok``, ``invalid`` (no valid graph after the re-asks; the answer is asked without one) or
    ``error`` (the call failed); else ``not-used``."""
    ambiguous: list[str] = Field(default_factory=list)
    """Letters an ambiguous answer named (it is invalid)."""


def _letters_text(n: int) -> str:
    """``A, B, C or D`` for four options (``A or B`` for two)."""
    letters = option_letters(n)
    return letters[0] if n == 1 else f"{', '.join(letters[:-1])} or {letters[-1]}"


def _options_text(options: Sequence[str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip(option_letters(len(options)), options, strict=True))


def _tidy(text: str) -> str:
    """A rendered prompt without the blank runs that empty placeholders leave."""
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


@register_runner("culturaltom")
class CulturalToMRunner(Runner):
    """CulturalToM-VQA: zero-shot, chain of thought, compositional chain of thought (each also with KB cues), the
    blind run and the positivity baseline; accuracy and macro-F1 per task, level, image source and region."""

    command = RunnerCommand(culturaltom_options)
    record_type = CulturalToMPrediction

    def __init__(
        self,
        samples: Sequence[Sample],
        *,
        client: ModelClient | None = None,
        retriever: Retriever | None = None,
        setting_names: Sequence[str] | None = None,
        matrix: TaskMatrix | None = None,
        concept_extractor: ConceptExtractor | None = None,
        image_concepts: ConceptExtractor | None = None,
        max_cues: int = 5,
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 32,
        reasoning_max_tokens: int = 1024,
        graph_retries: int = 2,
        max_image_side: int = 1024,
        positivity_seed: int = 0,
        thinking: bool = False,
        **kw: Any,
    ) -> None:
        self.samples = list(samples)
        with_cues = retriever is not None
        names = list(setting_names) if setting_names else (
            setting_names_default(client is not None, with_cues))
        bad = [n for n in names if n not in _ALL_SETTINGS]
        if bad:
            raise ConfigError(f"unknown CulturalToM-VQA settings {bad}; use any of {culturaltom_settings(True)}")
        needs_model = [n for n in names if n != "positivity"]
        if needs_model and client is None:
            raise ConfigError(f"the settings {needs_model} need a model; pass --model openai:NAME (with --base-url) "
                              "or run --settings positivity")
        cued = [n for n in names if n.endswith(CUE_SUFFIX)]
        if cued and retriever is None:
            raise ConfigError(f"the settings {cued} need a KB for the cues; pass --kb DIR or drop them")
        if reasoning_max_tokens < MIN_REASONING_TOKENS:
            raise ConfigError(f"reasoning_max_tokens is {reasoning_max_tokens}; chain of thought needs at least "
                              f"{MIN_REASONING_TOKENS} new tokens (PAPERS.md section 4); raise it")
        if max_tokens < 1 or graph_retries < 0:
            raise ConfigError(f"max_tokens must be >= 1 and graph_retries >= 0 (got {max_tokens}, {graph_retries})")
        self.setting_names = names
        self.client = client
        self.retriever = retriever
        self.matrix = matrix or load_matrix()
        self.concept_extractor = concept_extractor or TextConceptExtractor(fields=STIMULUS_FIELDS)
        self.image_concepts = image_concepts
        self.max_cues = max_cues
        self.cue_template = CUES
        if retriever is not None:
            from culturekb.text.languages import is_emotion_scheme

            self.cue_template = CUES if is_emotion_scheme(retriever.kb.scheme) else REGIONAL_CUES
        self.cue_service = None if retriever is None else KnowledgeService(
            retriever, budget=default_cue_budget(max_cues), template=self.cue_template)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.reasoning_max_tokens = reasoning_max_tokens
        self.graph_retries = graph_retries
        self.max_image_side = max_image_side
        self.positivity_seed = positivity_seed
        self.thinking = thinking
        answer = ("knowledge", "context", "question", "options", "letters")
        self.templates: dict[str, PromptTemplate] = {
            "zero-shot": resolve_prompt("culturaltom_zero_shot", "en", required=answer[2:], allowed=answer,
                                        template_dir=template_dir),
            "cot": resolve_prompt("culturaltom_cot", "en", required=answer[2:], allowed=answer,
                                  template_dir=template_dir),
            "scene-graph": resolve_prompt("culturaltom_scene_graph", "en", required=(), allowed=("context",),
                                          template_dir=template_dir),
            "compositional": resolve_prompt("culturaltom_from_graph", "en", required=("scene_graph", *answer[2:]),
                                            allowed=("scene_graph", *answer), template_dir=template_dir),
        }
        super().__init__(None, client=client, **kw)

    # -- the Runner hooks -----------------------------------------------------------------------------------------
    def _tau(self) -> float | None:
        return self.retriever.tau if self.retriever is not None else None

    @classmethod
    def from_context(cls, ctx: RunContext) -> CulturalToMRunner:
        """The spec's items (read first; images checked unless only image-free settings run), the +kb-cues
        settings with the spec's KB, the model (``positivity``: only the offline baseline)."""
        from culturekb.evals.culturaltom.data import load_culturaltom

        spec = ctx.spec
        assert isinstance(spec, CulturalToMSpec)
        matrix = load_matrix(spec.matrix)
        with_model = spec.model != "positivity"
        image_free = spec.setting_names is not None and set(spec.setting_names) <= {"blind", "positivity"}
        report = LoadReport()
        samples = load_culturaltom(spec.data, data_root=spec.data_root, matrix=matrix,
                                   check_images=with_model and not image_free,
                                   field_map=parse_field_map(spec.field_map), on_bad_row=spec.on_bad_row,
                                   report=report)
        retriever = ctx.retriever()
        client = ctx.client()
        return cls(samples, client=client, retriever=retriever, setting_names=spec.setting_names, matrix=matrix,
                   image_concepts=ctx.image_concepts(client), max_cues=spec.max_cues,
                   template_dir=spec.template_dir, max_tokens=spec.max_tokens,
                   reasoning_max_tokens=spec.reasoning_max_tokens, graph_retries=spec.graph_retries,
                   positivity_seed=spec.positivity_seed, thinking=spec.thinking, limit=spec.limit,
                   progress=spec.progress,
                   load_report=report.to_dict())

    def load(self) -> list[Sample]:
        """The questions; each must carry 2-26 options, an answer letter, task, level, image source and region."""
        for s in self.samples:
            meta = s.metadata
            if (not s.options or not MIN_OPTIONS <= len(s.options) <= MAX_OPTIONS
                    or s.label not in option_letters(len(s.options))
                    or any(k not in meta for k in ("task", "level", "image_source", "region"))):
                raise ConfigError(f"CulturalToM-VQA item {s.id!r} lacks its options, answer letter, task, level, "
                                  "image source or region; load it with load_culturaltom")
            if meta.get("in_matrix", True) and not self.matrix.allows(str(meta["task"]), int(meta["level"])):
                raise ConfigError(f"CulturalToM-VQA item {s.id!r}: ({meta['task']}, level {meta['level']}) is not "
                                  f"in the task x complexity matrix {self.matrix.source}")
        return list(self.samples)

    def default_settings(self) -> list[Setting]:
        """One setting per configured name."""
        return [Setting(n) for n in self.setting_names]

    def config(self) -> dict[str, Any]:
        """What changes an answer: model, KB, templates, cue and decoding parameters, matrix, positivity seed."""
        return {"runner": self.label, "model": getattr(self.client, "id", None),
                "kb_version": self.retriever.kb.version if self.retriever is not None else None,
                "templates": {k: t.id for k, t in self.templates.items()}, "cue_template": str(self.cue_template.item),
                "max_cues": self.max_cues, "tau": self._tau(),
                "concepts": self.concept_extractor.id,
                "image_concepts": getattr(self.image_concepts, "id", None),
                "decoding": [self.temperature, self.max_tokens, self.reasoning_max_tokens, self.graph_retries,
                             self.max_image_side],
                "matrix": self.matrix.to_dict(), "positivity_seed": self.positivity_seed,
                **({"thinking": True} if self.thinking else {})}

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        """Answer one chunk in one setting (see the module docstring)."""
        name = setting.mode
        if name not in _ALL_SETTINGS:
            raise ConfigError(f"unknown CulturalToM-VQA setting {name!r}; use one of {culturaltom_settings(True)}")
        if name == "positivity":
            return [self._positivity(s) for s in samples]
        strategy = name.removesuffix(CUE_SUFFIX)
        blocks = (self._cue_blocks(samples) if name.endswith(CUE_SUFFIX)
                  else [KnowledgeBlock("", status="not-used")] * len(samples))
        with_image = name != "blind"
        if strategy == "compositional":
            return self._compositional(samples, name, blocks)
        template = self.templates["zero-shot" if strategy in ("zero-shot", "blind") else "cot"]
        max_tokens = self.max_tokens if strategy in ("zero-shot", "blind") else self.reasoning_max_tokens
        prompts = [(self._answer_prompt(template, s, b), s.image if with_image else None, f"question {s.id!r}")
                   for s, b in zip(samples, blocks, strict=True)]
        assert self.client is not None
        answers = ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                           max_tokens=max_tokens)
        return [self._record(s, name, strategy, a, b, template.id, calls=0 if isinstance(a, str) else 1,
                             with_image=with_image and bool(s.image))
                for s, a, b in zip(samples, answers, blocks, strict=True)]

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Accuracy and macro-F1 per setting and group, blind and positivity diagnostics, calls per question."""
        model = getattr(self.client, "id", None) or "none"
        return score_culturaltom(samples, {s.key: list(p) for s, p in predictions_by_setting.items()}, model=model,
                                 positivity_seed=self.positivity_seed, matrix=self.matrix)

    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the model (none for the positivity baseline alone), the baselines, the cue KB, the images."""
        header = base_run_header(self)
        names = list(results.get("settings") or {})
        model_settings = [n for n in names if n != "positivity"]
        with_image = sum(1 for s in self.samples if s.image)
        if self.client is None:
            header["model"] = "none (only the positivity baseline ran: the most positive option, no model call)"
            header["prompt languages"] = "none sent (no model call)"
        else:
            header["model"] = f"{self.client.id} (settings {', '.join(model_settings)})"
        sent = [n for n in model_settings if n != "blind"]
        header.update({
            "judge": "none (the chosen option letter against the gold letter)",
            "baseline": (f"positivity (the most positive option by NRC polarity, seed {self.positivity_seed}; no model "
                         f"call){' - run' if 'positivity' in names else ' - not run'}; chance "
                         f"{results['chance_accuracy']:.3f}; human {results['human_accuracy']:.3f} (the paper's, "
                         "overall; not per task)"),
            "images sent": (f"{with_image} of {len(self.samples)} questions have an image, sent in "
                            f"{', '.join(sent)}" + ("; blind sends none" if "blind" in names else "")) if sent and
                           self.client is not None else
                           f"none (no model call; {with_image} of {len(self.samples)} questions have an image)",
        })
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """The report's Markdown tables."""
        return culturaltom_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """The report's PNG plots."""
        return culturaltom_plots(results)

    # -- the pieces -----------------------------------------------------------------------------------------------
    def _cue_blocks(self, samples: Sequence[Sample]) -> list[KnowledgeBlock]:
        """One cue block per item for its culture (its region when the KB has that and not the culture)."""
        assert self.cue_service is not None and self.retriever is not None
        concepts = item_concepts(samples, self.concept_extractor, self.image_concepts)
        kb_cultures = set(self.retriever.cultures)
        requests = []
        for s, cs in zip(samples, concepts, strict=True):
            culture = s.culture
            region = str(s.metadata.get("region", ""))
            if culture not in kb_cultures and region in kb_cultures:
                culture = region
            requests.append(KnowledgeRequest(cs, culture, "know", "en", s.id))
        return self.cue_service.inject_many(requests, on_unknown_culture="skip")

    def _answer_prompt(self, template: PromptTemplate, s: Sample, block: KnowledgeBlock,
                       scene_graph: str | None = None) -> str:
        values = {"knowledge": block.text.strip(), "context": f"Context: {s.text.strip()}" if s.text else "",
                  "question": s.question or "", "options": _options_text(s.options or []),
                  "letters": _letters_text(len(s.options or []))}
        if scene_graph is not None:
            values["scene_graph"] = scene_graph
        return _tidy(template.fill(values))

    def _positivity(self, s: Sample) -> CulturalToMPrediction:
        pick = positivity_pick(s.options or [], str(s.metadata.get("language", "en")), seed=self.positivity_seed,
                               item_id=s.id)
        letter = option_letters(len(s.options or []))[pick.pick]
        return CulturalToMPrediction(
            sample_id=s.id, culture=s.culture, mode="positivity", label=letter, parse_status="text",
            parse_path="positivity", model=f"positivity:{self.positivity_seed}", strategy="positivity",
            explanation=f"option scores {[round(x, 4) for x in pick.scores]}; tied {list(pick.tied)}")

    def _record(self, s: Sample, name: str, strategy: str, answer: ModelResponse | str, block: KnowledgeBlock,
                template_id: str, *, calls: int, with_image: bool, **extra: Any) -> CulturalToMPrediction:
        assert self.client is not None
        common: dict[str, Any] = {
            "sample_id": s.id, "culture": s.culture, "mode": name, "strategy": strategy, "model": self.client.id,
            "template_id": template_id, "template_status": template_check_status(template_id), "calls": calls,
            "with_image": with_image, "cue_status": block.status, "tuples_used": [m.tuple.id for m in block.matches],
            **extra}
        if isinstance(answer, str):
            return CulturalToMPrediction(label=None, parse_status="error", error=answer, **common)
        parsed = parse_choice(answer.text, s.options or [], thinking=self.thinking)
        status = "invalid" if not parsed.valid else "json" if parsed.path == "json" else "text"
        return CulturalToMPrediction(label=parsed.letter, raw=answer.text, parse_status=status,
                                     parse_path=parsed.path, cached=answer.cached, ambiguous=list(parsed.ambiguous),
                                     **common)

    def _compositional(self, samples: Sequence[Sample], name: str, blocks: Sequence[KnowledgeBlock]
                       ) -> list[Prediction]:
        """Two calls per item: the scene graph (validated, re-asked when invalid), then the answer from it."""
        assert self.client is not None
        graph_t, answer_t = self.templates["scene-graph"], self.templates["compositional"]
        convs: list[list[Message] | str] = []
        for s in samples:
            text = _tidy(graph_t.fill({"context": f"Text: {s.text.strip()}" if s.text else ""}))
            try:
                convs.append(build_messages(text, s.image, self.max_image_side, where=f"question {s.id!r}"))
            except CultureKBError as exc:  # the image cannot be read: the item is not sent
                convs.append(str(exc))
        sent = [i for i, c in enumerate(convs) if not isinstance(c, str)]
        graphs = complete_json_each(self.client, [convs[i] for i in sent], SceneGraph,  # type: ignore[misc]
                                    retries=self.graph_retries, temperature=self.temperature,
                                    max_tokens=self.reasoning_max_tokens)
        by_index = dict(zip(sent, graphs, strict=True))
        graph_calls = {i: g.asks for i, g in by_index.items()}  # the first ask and every re-ask, sent or cached
        prompts: list[tuple[str, str | None, str]] = []
        to_ask: list[int] = []
        for i, s in enumerate(samples):
            g = by_index.get(i)
            if g is None or g.status == "error":
                continue
            graph_text = (json.dumps(g.value.model_dump(mode="json"), ensure_ascii=False) if g.status == "ok"
                          else "(no valid scene graph could be made; answer from the image and the text)")
            prompts.append((self._answer_prompt(answer_t, s, blocks[i], graph_text), s.image, f"question {s.id!r}"))
            to_ask.append(i)
        answers = dict(zip(to_ask, ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                                            max_tokens=self.reasoning_max_tokens), strict=True))
        tid = f"{graph_t.id}+{answer_t.id}"
        out: list[Prediction] = []
        for i, s in enumerate(samples):
            g = by_index.get(i)
            calls = graph_calls.get(i, 0)
            if g is None or g.status == "error":
                error = convs[i] if isinstance(convs[i], str) else (g.error if g is not None else "not sent")
                out.append(self._record(s, name, "compositional", str(error), blocks[i], tid, calls=calls,
                                        with_image=bool(s.image), scene_graph_status="error"))
                continue
            answer = answers[i]
            out.append(self._record(
                s, name, "compositional", answer, blocks[i], tid, calls=calls + (0 if isinstance(answer, str) else 1),
                with_image=bool(s.image), scene_graph_status=g.status,
                scene_graph=g.value.model_dump(mode="json") if g.status == "ok" else None))
        return out


def setting_names_default(with_model: bool, with_cues: bool) -> list[str]:
    """The settings run when none are chosen: every setting the given model and KB allow (the positivity
    baseline alone without a model)."""
    if not with_model:
        return ["positivity"]
    return culturaltom_settings(with_cues)


def is_text_only(sample: Sample) -> bool:
    """Whether a question has no image (its image source is ``none``)."""
    return not sample.image or str(sample.metadata.get("image_source", "")).lower() == TEXT_ONLY_SOURCE
