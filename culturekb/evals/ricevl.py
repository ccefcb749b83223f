"""RICE-VL runs: cultural VQA scored with SEA-LAVE, visual grounding scored with IoU, and the regional cue KB.

VQA settings (PAPERS.md section 3): ``global`` (the question alone), ``sea`` (a regional framing that names the
region and its countries) and ``kb-cues`` (the framing plus regional cues from the cue KB). Cues are looked up for
the question's concepts (and the image's, with a VLM concept extractor) among the tuples of every country of the
region, so the block does not give the item's country away (``cue_scope="region"``, the default);
``cue_scope="country"`` is an oracle that retrieves within the item's own country and, when no concept matches,
falls back to that country's best-supported tuples. Each answer is scored by a judge with the rubric of its
question format (``sealave_<format>.en.txt``): text understanding TU in {0, 1}, cultural understanding CU in
{0, 1}, country identification CI in {0, 1, 2}; ``SEA-LAVE = (TU + CU + CI / 2) / 3``. A judge answer that stays
invalid JSON after the retries, and a failed call, score 0 and are counted; nothing is dropped. Tables per country,
per category and per question format.

Grounding: the model returns a box for a phrase; `culturekb.evals.boxes.parse_box` reads the usual forms; IoU with
the gold box, mean IoU per country and per category, accuracy at IoU >= 0.5. An unparseable, inverted or
outside box scores 0 and is counted by its status.

Offline (no model): the ``kb-prior`` VQA answerer answers from the cue KB alone, the ``reference`` judge scores by
matching the reference answer and country names (a lexical stand-in for a judge model), and the grounding baseline
predicts the whole image.

The cue KB is built with the same builders as the emotion KB (`build_cue_kb`): RICE-VL-style training metadata
(sub-culture as concept, country as culture, category as label, facts as rationale evidence), precomputed
concepts, extractive rationales, and two offline judges (embedding prototypes and label words) that check each
tuple's category from its rationales.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from culturekb.errors import ConfigError, CultureKBError, DataError, ModelOutputError
from culturekb.evals.boxes import ParsedBox, parse_box
from culturekb.evals.cedar import cue_block_for
from culturekb.evals.loaders import normalise_truth
from culturekb.evals.metrics import box_iou, iou_accuracy, mean_by_group, mean_score, sea_lave
from culturekb.evals.reports import BarPlot, Plot, Table
from culturekb.evals.runner import Runner, Setting, register_runner
from culturekb.inference.base import Prediction
from culturekb.kb.cultures import default_registry
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient
from culturekb.retrieval.cue_blocks import CueBlock, render_cues
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import ConceptExtractor, TextConceptExtractor

__all__ = [
    "SEA_COUNTRIES",
    "VQA_SETTINGS",
    "Region",
    "region_from_samples",
    "build_cue_kb",
    "VQAPrediction",
    "GroundingPrediction",
    "JudgeScores",
    "ReferenceJudge",
    "SeaLaveJudge",
    "parse_judge_scores",
    "token_f1",
    "KBPriorAnswerer",
    "RiceVLVQARunner",
    "RiceVLGroundingRunner",
    "vqa_tables",
    "vqa_plots",
    "grounding_tables",
    "grounding_plots",
]

log = logging.getLogger(__name__)

SEA_COUNTRIES: tuple[str, ...] = ("BN", "KH", "ID", "LA", "MY", "MM", "PH", "SG", "TH", "TL", "VN")
VQA_SETTINGS: tuple[str, ...] = ("global", "sea", "kb-cues")
_FORMATS = ("qa", "tf", "fill")
_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an the of and or in on at to for from is are was were be this that it its with by as".split())
_TRUTH = re.compile(r"\b(true|false|yes|no|correct|incorrect)\b", re.IGNORECASE)


# -- region and country names ----------------------------------------------------------------------------------


def _culture_terms(culture: str) -> tuple[str, list[str]]:
    """(display name, lower-case names that mention it) of a culture id or a declared country name."""
    reg = default_registry()
    if culture in reg:
        c = reg.resolve(culture)
        terms = {c.name.lower(), *(a.lower() for a in c.aliases if len(a) > 3)}
        return c.name, sorted(terms)
    return culture, [culture.lower()]


@dataclass(frozen=True)
class Region:
    """The region the ``sea`` framing names, and the countries that earn CI = 1 when named instead."""

    name: str = "Southeast Asia"
    countries: tuple[str, ...] = SEA_COUNTRIES

    @property
    def country_names(self) -> list[str]:
        return [_culture_terms(c)[0] for c in self.countries]

    def describe(self) -> str:
        return ", ".join(self.country_names)


def region_from_samples(samples: Sequence[Sample], name: str | None = None) -> Region:
    """The SEA region when every item's country is one of the 11, else a region of the data's own countries."""
    countries = sorted({s.culture for s in samples})
    if all(c in SEA_COUNTRIES for c in countries):
        return Region(name or "Southeast Asia", SEA_COUNTRIES)
    return Region(name or "the region", tuple(countries))


def _mentions(text: str, terms: Sequence[str]) -> bool:
    low = text.lower()
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", low) for t in terms if t)


# -- the cue KB -----------------------------------------------------------------------------------------------------


def _fact_language(culture: str) -> str:
    """The language the judges read a country's facts in: the registry's, else English (declared countries)."""
    reg = default_registry()
    return reg.resolve(culture).language if culture in reg else "en"


def build_cue_kb(
    metadata: str | Path | Sequence[Sample],
    out: str | Path | None = None,
    *,
    scheme: str = "ricevl14",
    embedder: Any = None,
    policy: str = "keep",
    min_support: int = 1,
    max_rationales: int = 3,
    allow_unknown_countries: bool = False,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> Any:
    """Build the regional cue KB from RICE-VL-style metadata through `culturekb.builders.build_kb`.

    Concepts are the precomputed sub-cultures, the label is the category (argmax over the rows that share the
    sub-culture in one country), rationales are the most central facts (extractive), and two offline judges
    (category prototypes and category words) check each tuple's category from its rationales. `policy` decides
    what happens to flagged tuples (``keep`` by default: the metadata is curated; verdicts are recorded).
    Returns the `BuildResult`.
    """
    from culturekb.builders.judges import LexiconJudge, PrototypeJudge
    from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
    from culturekb.builders.rationales import ExtractiveRationaleGenerator
    from culturekb.evals.loaders import load_cue_metadata
    from culturekb.kb.schemes import get_scheme
    from culturekb.models.factory import make_embedder
    from culturekb.text.concepts import PrecomputedConcepts

    if isinstance(metadata, str | Path):
        samples = load_cue_metadata(metadata, scheme=scheme, allow_unknown_countries=allow_unknown_countries)
    else:
        samples = list(metadata)
    emb = embedder if embedder is not None and not isinstance(embedder, str) else make_embedder(embedder or "minilm")
    sch = get_scheme(scheme)
    config = BuildConfig(scheme=scheme, split="train", concepts="precomputed", min_support=min_support,
                         rationales="extractive", max_rationales=max_rationales, judges=["prototype", "lexicon"],
                         policy=policy, embedder=str(getattr(emb, "id", "minilm")))
    components = BuildComponents(
        PrecomputedConcepts(on_missing="error"),
        ExtractiveRationaleGenerator(emb, max_rationales=max_rationales),
        [PrototypeJudge(emb, sch, language_of=_fact_language), LexiconJudge(sch, language_of=_fact_language)],
    )
    return build_kb(samples, config, out=out, cache_dir=cache_dir, components=components, progress=progress)


# -- records ------------------------------------------------------------------------------------------------------


class VQAPrediction(Prediction):
    """A VQA answer (`label` holds the answer text; None when the call failed) with its judge's scores."""

    format: str = ""
    cue_status: str = "not-used"
    tu: int | None = None
    cu: int | None = None
    ci: int | None = None
    sea_lave: float | None = None
    judge_status: Literal["ok", "invalid", "error", "skipped"] = "skipped"
    """ok: scored; invalid: no valid JSON after the retries (scored 0); error: the judge call failed (scored 0,
    judged again on a rerun); skipped: no answer to judge (scored 0)."""
    judge: str = ""
    justification: str = ""
    judge_error: str | None = None


class GroundingPrediction(Prediction):
    """A grounding answer with the box read from it (absolute pixels of the original image)."""

    box: list[float] | None = None
    box_status: str = "unparsed"
    box_form: str = ""
    sent_size: list[int] | None = None


# -- judges ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeScores:
    """One judge verdict: TU, CU, CI, and whether it could be read."""

    tu: int | None
    cu: int | None
    ci: int | None
    status: Literal["ok", "invalid", "error"] = "ok"
    justification: str = ""
    error: str | None = None

    @property
    def score(self) -> float:
        """SEA-LAVE of the item; a judge that failed scores 0."""
        if self.status != "ok" or self.tu is None or self.cu is None or self.ci is None:
            return 0.0
        return sea_lave(self.tu, self.cu, self.ci)


def _int_score(value: Any, name: str, allowed: tuple[int, ...]) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number in {list(allowed)}, got a boolean")
    if isinstance(value, str):
        value = value.strip()
        try:
            value = float(value)
        except ValueError as exc:
            raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}") from exc
    if not isinstance(value, int | float) or not math.isfinite(value) or value != int(value) \
            or int(value) not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return int(value)


def parse_judge_scores(obj: Any) -> tuple[int, int, int, str]:
    """(TU, CU, CI, justification) from a judge's JSON; raises ValueError naming what is wrong (for a re-ask)."""
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if not isinstance(obj, dict):
        raise ValueError('expected a JSON object {"TU": 0|1, "CU": 0|1, "CI": 0|1|2, "justification": "..."}')
    keys = {re.sub(r"[\s\-]+", "_", str(k).strip().lower()): v for k, v in obj.items()}

    def pick(*names: str) -> Any:
        for n in names:
            if n in keys:
                return keys[n]
        raise KeyError(f"missing {names[0].upper()}; give TU, CU and CI")

    tu = _int_score(pick("tu", "text_understanding"), "TU", (0, 1))
    cu = _int_score(pick("cu", "cultural_understanding"), "CU", (0, 1))
    ci = _int_score(pick("ci", "country_identification"), "CI", (0, 1, 2))
    why = next((str(keys[k]) for k in ("justification", "reason", "explanation", "rationale") if k in keys), "")
    return tu, cu, ci, why.strip()


def _tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in _STOP]


def token_f1(answer: str, reference: str) -> float:
    """Token-overlap F1 of two texts (lower case, articles and a few function words removed).

    Both empty: 1.0; one empty: 0.0. Repeated tokens count as often as they occur in both.
    """
    a, r = _tokens(answer), _tokens(reference)
    if not a and not r:
        return 1.0
    if not a or not r:
        return 0.0
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall)


def _answer_truth(answer: str) -> str | None:
    m = _TRUTH.search(answer)
    return normalise_truth(m.group(1)) if m else None


class ReferenceJudge:
    """Offline stand-in for a judge model, by matching against the reference and country names.

    TU: tf, the first truth word of the answer equals the reference; qa/fill, the reference occurs in the answer
    or token F1 >= `f1_threshold`. CU: tf, equals TU; qa/fill, the answer names the item's sub-culture (when the
    item has one), else equals TU. CI: 2 when the answer names the item's country (for tf, also a correct
    verdict on a question that names it), 1 when it names another country of the region or the region, else 0.
    """

    def __init__(self, f1_threshold: float = 0.5) -> None:
        if not 0.0 < f1_threshold <= 1.0:
            raise ConfigError(f"f1_threshold must be in (0, 1], got {f1_threshold}")
        self.f1_threshold = f1_threshold
        self.id = f"reference-match:v1:f1{f1_threshold:g}"

    def _ci(self, sample: Sample, answer: str, region: Region, tu: int) -> int:
        _, own = _culture_terms(sample.culture)
        if _mentions(answer, own):
            return 2
        fmt = sample.metadata.get("format")
        if fmt == "tf" and tu == 1 and _mentions(sample.question or "", own):
            return 2
        others = [t for c in region.countries if c != sample.culture for t in _culture_terms(c)[1]]
        if _mentions(answer, [*others, region.name.lower()]):
            return 1
        return 0

    def judge(self, items: Sequence[tuple[Sample, str]], region: Region) -> list[JudgeScores]:
        out = []
        for sample, answer in items:
            ref = str(sample.label or "")
            fmt = sample.metadata.get("format")
            if fmt == "tf":
                tu = int(_answer_truth(answer) == normalise_truth(ref))
                cu = tu
            else:
                norm_ref = " ".join(_tokens(ref))
                contains = bool(norm_ref) and norm_ref in " ".join(_tokens(answer))
                tu = int(contains or token_f1(answer, ref) >= self.f1_threshold)
                sub = str(sample.metadata.get("sub_culture") or "").strip().lower()
                cu = int(_mentions(answer, [sub])) if sub else tu
            ci = self._ci(sample, answer, region, tu)
            out.append(JudgeScores(tu, cu, ci, "ok", f"reference match (TU {tu}, CU {cu}, CI {ci})"))
        return out


class SeaLaveJudge:
    """A judge model scoring TU/CU/CI with the rubric of each question format, JSON validated with re-asks."""

    def __init__(self, client: ModelClient, *, retries: int = 2, template_dir: str | Path | None = None,
                 temperature: float = 0.0, max_tokens: int = 256) -> None:
        from culturekb._io import stable_hash

        if retries < 0:
            raise ConfigError(f"judge retries must be >= 0, got {retries}")
        self.client = client
        self.retries = retries
        self.template_dir = template_dir
        self.params = {"temperature": temperature, "max_tokens": max_tokens}
        self.templates = {fmt: self._template(fmt) for fmt in _FORMATS}
        self.id = f"sealave:{client.id}:{stable_hash([t.sha for t in self.templates.values()])[:10]}:r{retries}"

    def _template(self, fmt: str) -> Any:
        from culturekb.text.prompts import load_prompt

        return load_prompt(f"sealave_{fmt}", "en", required=("question", "reference", "answer", "country"),
                           allowed=("region", "region_countries", "category", "sub_culture"),
                           override_dir=self.template_dir)

    def messages(self, sample: Sample, answer: str, region: Region) -> list[dict[str, Any]]:
        fmt = str(sample.metadata.get("format", "qa"))
        if fmt not in self.templates:
            raise DataError(f"item {sample.id!r}: unknown question format {fmt!r}; load it with load_ricevl_vqa")
        text = self.templates[fmt].fill({
            "question": sample.question or "", "reference": sample.label or "", "answer": answer,
            "country": _culture_terms(sample.culture)[0], "region": region.name,
            "region_countries": region.describe(), "category": sample.metadata.get("category") or "unknown",
            "sub_culture": sample.metadata.get("sub_culture") or "not given",
        })
        return [{"role": "user", "content": text}]

    def _reask(self, messages: list[dict[str, Any]], text: str, problem: Exception) -> JudgeScores:
        from culturekb.models.json_output import complete_json

        conversation = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": (
            f"That reply could not be used ({problem}). Reply again with only the JSON object "
            '{"TU": 0 or 1, "CU": 0 or 1, "CI": 0, 1 or 2, "justification": "..."}.')}]
        try:
            tu, cu, ci, why = complete_json(self.client, conversation, parse_judge_scores, retries=self.retries - 1,
                                            **self.params)
        except ModelOutputError as exc:
            return JudgeScores(None, None, None, "invalid", error=str(exc))
        except CultureKBError as exc:
            return JudgeScores(None, None, None, "error", error=f"{type(exc).__name__}: {exc}")
        return JudgeScores(tu, cu, ci, "ok", why)

    def judge(self, items: Sequence[tuple[Sample, str]], region: Region) -> list[JudgeScores]:
        from culturekb.models.json_output import extract_json

        if not items:
            return []
        batch = [self.messages(s, a, region) for s, a in items]
        answers = self.client.complete_many(batch, return_exceptions=True, **self.params)
        out: list[JudgeScores] = []
        for messages, ans in zip(batch, answers, strict=True):
            if isinstance(ans, BaseException):
                out.append(JudgeScores(None, None, None, "error", error=f"{type(ans).__name__}: {ans}"))
                continue
            try:
                tu, cu, ci, why = parse_judge_scores(extract_json(ans.text))
                out.append(JudgeScores(tu, cu, ci, "ok", why))
            except (ValueError, TypeError, KeyError) as exc:
                if self.retries < 1:
                    out.append(JudgeScores(None, None, None, "invalid",
                                           error=f"no valid judge JSON ({exc}); answer starts {ans.text[:120]!r}"))
                else:
                    log.info("judge %s: invalid answer (%s); asking again", self.client.id, exc)
                    out.append(self._reask(messages, ans.text, exc))
        return out


# -- answering ------------------------------------------------------------------------------------------------------


class KBPriorAnswerer:
    """Offline VQA baseline that answers from the cue KB alone.

    ``kb-cues``: the top retrieved tuple: "<sub-culture>, from <its country>" (tf: "True" when the question names
    that sub-culture or country, else "False"); with no cue it answers as in ``sea``. ``sea``: the best-supported
    tuple of the region's countries; ``global``: the best-supported tuple of the whole KB (tf: "True").
    """

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever
        self.id = f"kb-prior:{retriever.kb.version}"

    def _top(self, cultures: Sequence[str] | None) -> Any:
        pool = [t for t in self.retriever.kb.tuples if cultures is None or t.culture in cultures]
        return max(pool, key=lambda t: (t.support, -len(t.concept), t.id), default=None)

    def answer(self, sample: Sample, setting: str, block: CueBlock, region: Region) -> str:
        fmt = sample.metadata.get("format")
        if setting == "kb-cues" and block.matches:
            t = block.matches[0].tuple
            name = _culture_terms(t.culture)[0]
            if fmt == "tf":
                hit = _mentions(sample.question or "", [t.concept.lower(), *_culture_terms(t.culture)[1]])
                return f"{'True' if hit else 'False'}. Related: {t.concept}, from {name}."
            return f"{t.concept}, from {name}."
        t = self._top(list(region.countries) if setting == "sea" else None)
        if fmt == "tf":
            return "True."
        if t is None:
            return "I do not know."
        return f"{t.concept}, from {_culture_terms(t.culture)[0]}."


def _fallback_block(retriever: Retriever, culture: str, k: int) -> CueBlock:
    """The country's `k` best-supported tuples as a cue block (used when no concept matched)."""
    pool = sorted(retriever.kb.for_culture(culture), key=lambda t: (-t.support, t.id))[:k]
    matches = [Match(query="", tuple=t, score=0.0, kind="exact") for t in pool]
    text, tid = render_cues(matches, culture, "en", "regional_cues", "regional_cue_item")
    return CueBlock(text, tuple(matches), (), tid)


def _template(name: str, required: tuple[str, ...], allowed: tuple[str, ...], template_dir: str | Path | None
              ) -> Any:
    from culturekb.text.prompts import load_prompt

    return load_prompt(name, "en", required=required, allowed=allowed, override_dir=template_dir)


@register_runner("ricevl-vqa")
class RiceVLVQARunner(Runner):
    """RICE-VL VQA in the ``global``, ``sea`` and ``kb-cues`` settings, each answer scored by the judge."""

    default_modes = VQA_SETTINGS
    record_type = VQAPrediction

    def __init__(
        self,
        samples: Sequence[Sample],
        *,
        client: ModelClient | None = None,
        retriever: Retriever | None = None,
        judge: Any = None,
        region: Region | None = None,
        setting_names: Sequence[str] | None = None,
        concept_extractor: ConceptExtractor | None = None,
        image_concepts: ConceptExtractor | None = None,
        cue_scope: str = "region",
        max_cues: int = 5,
        fallback_cues: int = 3,
        tau: float | None = None,
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        max_image_side: int = 1024,
        **kw: Any,
    ) -> None:
        self.samples = list(samples)
        if cue_scope not in ("region", "country"):
            raise ConfigError(f"cue_scope must be 'region' or 'country' (an oracle that uses the item's country), "
                              f"got {cue_scope!r}")
        self.cue_scope = cue_scope
        names = list(setting_names or VQA_SETTINGS)
        bad = [n for n in names if n not in VQA_SETTINGS]
        if bad:
            raise ConfigError(f"unknown RICE-VL VQA settings {bad}; use any of {list(VQA_SETTINGS)}")
        if client is None and retriever is None:
            raise ConfigError("the kb-prior VQA answerer needs a cue KB; pass a KB (or cue metadata) or a model")
        if "kb-cues" in names and retriever is None:
            raise ConfigError("the kb-cues setting needs a cue KB; pass --kb or --cue-metadata, or drop kb-cues")
        self.setting_names = names
        self.client = client
        self.retriever = retriever
        self.judge = judge if judge is not None else ReferenceJudge()
        self.region = region or region_from_samples(self.samples)
        self.concept_extractor = concept_extractor or TextConceptExtractor(fields=("question",))
        self.image_concepts = image_concepts
        self.max_cues = max_cues
        self.fallback_cues = fallback_cues
        self.tau = tau
        self.template_dir = template_dir
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        self.answerer = KBPriorAnswerer(retriever) if client is None and retriever is not None else None
        frame = ("question", "answer_format")
        region_fields = ("region", "region_countries")
        self.templates = {
            "global": _template("ricevl_global", frame, (), template_dir),
            "sea": _template("ricevl_sea", (*frame, *region_fields), (), template_dir),
            "kb-cues": _template("ricevl_cues", (*frame, *region_fields, "cues"), (), template_dir),
        }
        self.formats = {f: _template(f"ricevl_answer_{f}", (), (), template_dir) for f in _FORMATS}
        super().__init__(None, **kw)

    def load(self) -> list[Sample]:
        for s in self.samples:
            if s.metadata.get("format") not in _FORMATS or s.label is None:
                raise ConfigError(f"VQA item {s.id!r} lacks its format or reference answer; load it with "
                                  "load_ricevl_vqa")
        return list(self.samples)

    def default_settings(self) -> list[Setting]:
        return [Setting(n) for n in self.setting_names]

    def config(self) -> dict[str, Any]:
        kb = self.retriever.kb.version if self.retriever is not None else None
        answerer = self.client.id if self.client is not None else getattr(self.answerer, "id", None)
        return {"runner": self.label, "answerer": answerer, "judge": getattr(self.judge, "id", str(self.judge)),
                "kb_version": kb, "region": [self.region.name, list(self.region.countries)],
                "templates": {k: t.id for k, t in {**self.templates, **self.formats}.items()},
                "cue_scope": self.cue_scope, "max_cues": self.max_cues, "fallback_cues": self.fallback_cues,
                "tau": self.tau,
                "concepts": self.concept_extractor.id,
                "image_concepts": getattr(self.image_concepts, "id", None),
                "decoding": [self.temperature, self.max_tokens, self.max_image_side]}

    def _is_done(self, prediction: Prediction | None) -> bool:
        if not super()._is_done(prediction):
            return False
        return not (self.retry_errors and getattr(prediction, "judge_status", "") == "error")

    # -- one chunk: cues, answers, judge ----------------------------------------------------------------------
    def _concepts(self, chunk: Sequence[Sample]) -> list[list[str]]:
        concepts = [list(c) for c in self.concept_extractor.extract(list(chunk))]
        if self.image_concepts is not None:
            idx = [i for i, s in enumerate(chunk) if s.image]
            if idx:
                try:
                    found = self.image_concepts.extract([chunk[i] for i in idx])
                except CultureKBError as exc:
                    log.warning("image concept extraction failed for %d items (%s); using question concepts only",
                                len(idx), exc)
                    found = [[] for _ in idx]
                for i, cs in zip(idx, found, strict=True):
                    concepts[i] = list(dict.fromkeys([*cs, *concepts[i]]))
        return concepts

    def _region_scope(self) -> list[str]:
        assert self.retriever is not None
        kb_cultures = list(self.retriever.cultures)
        inside = [c for c in kb_cultures if c in self.region.countries]
        return inside or kb_cultures

    def _region_block(self, concepts: Sequence[str], scope: Sequence[str]) -> tuple[CueBlock, str]:
        """Cues for the concepts from any country of the region (the item's country is not used)."""
        assert self.retriever is not None
        if not concepts:
            return CueBlock("", (), ()), "no-concepts"
        if not scope:
            return CueBlock("", (), tuple(concepts)), "culture-not-in-kb"
        found = self.retriever.lookup(list(concepts), scope[0], tau=self.tau, cross_culture=list(scope),
                                      on_invalid="skip")
        matches: list[Match] = []
        seen: set[str] = set()
        for m in found:
            if m is not None and m.tuple.id not in seen:
                seen.add(m.tuple.id)
                matches.append(m)
            if len(matches) >= self.max_cues:
                break
        if not matches:
            return CueBlock("", (), tuple(concepts)), "no-match"
        parts: list[str] = []
        tid = ""
        for culture in dict.fromkeys(m.tuple.culture for m in matches):
            text, tid = render_cues([m for m in matches if m.tuple.culture == culture], culture, "en",
                                    "regional_cues", "regional_cue_item")
            parts.append(text.strip())
        return CueBlock("\n".join(parts) + "\n", tuple(matches), tuple(concepts), tid), "matched"

    def _blocks(self, chunk: Sequence[Sample]) -> list[tuple[CueBlock, str]]:
        assert self.retriever is not None
        concepts = self._concepts(chunk)
        out = []
        scope = self._region_scope()
        for s, cs in zip(chunk, concepts, strict=True):
            if self.cue_scope == "region":
                out.append(self._region_block(cs, scope))
                continue
            block, status = cue_block_for(cs, s.culture, self.retriever, max_items=self.max_cues, tau=self.tau,
                                          block_template="regional_cues", item_template="regional_cue_item")
            if not block and self.fallback_cues > 0 and status != "culture-not-in-kb":
                block, status = _fallback_block(self.retriever, s.culture, self.fallback_cues), "fallback"
            out.append((block, status))
        return out

    def _prompt(self, sample: Sample, setting: str, block: CueBlock) -> tuple[str, str]:
        fmt = str(sample.metadata["format"])
        template = self.templates[setting]
        cue_text = block.text.strip()
        if setting == "kb-cues" and not cue_text:
            template = self.templates["sea"]  # nothing retrieved: the regional framing without a block
        text = template.fill({"question": sample.question or "", "answer_format": self.formats[fmt].text.strip(),
                              "region": self.region.name, "region_countries": self.region.describe(),
                              "cues": cue_text})
        return text, f"{template.id}+{self.formats[fmt].id}"

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        from culturekb.inference.messages import ask_each

        mode = setting.mode
        if mode not in VQA_SETTINGS:
            raise ConfigError(f"unknown RICE-VL VQA setting {mode!r}; use one of {list(VQA_SETTINGS)}")
        blocks = self._blocks(samples) if mode == "kb-cues" else [(CueBlock("", (), ()), "not-used")] * len(samples)
        answers: list[str | None] = []
        errors: list[str | None] = []
        cached: list[bool] = []
        tids: list[str] = []
        if self.client is None:
            assert self.answerer is not None
            for s, (block, _) in zip(samples, blocks, strict=True):
                answers.append(self.answerer.answer(s, mode, block, self.region))
                errors.append(None)
                cached.append(False)
                tids.append(block.template_id)
            model_id = self.answerer.id
        else:
            prompts: list[tuple[str, str | None, str]] = []
            for s, (block, _) in zip(samples, blocks, strict=True):
                text, tid = self._prompt(s, mode, block)
                tids.append(tid)
                prompts.append((text, s.image, f"sample {s.id!r}"))
            for ans in ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                                max_tokens=self.max_tokens):
                if isinstance(ans, str):  # the image could not be read, or the call failed
                    answers.append(None)
                    errors.append(ans)
                    cached.append(False)
                else:
                    answers.append(ans.text)
                    errors.append(None)
                    cached.append(bool(ans.cached))
            model_id = self.client.id
        to_judge = [i for i, a in enumerate(answers) if a is not None and a.strip()]
        verdicts = dict(zip(to_judge, self.judge.judge([(samples[i], str(answers[i])) for i in to_judge],
                                                       self.region), strict=True))
        out: list[Prediction] = []
        judge_id = getattr(self.judge, "id", str(self.judge))
        for i, s in enumerate(samples):
            block, status = blocks[i]
            v = verdicts.get(i)
            answer = answers[i]
            common: dict[str, Any] = {
                "sample_id": s.id, "culture": s.culture, "mode": mode, "format": str(s.metadata["format"]),
                "tuples_used": [m.tuple.id for m in block.matches], "template_id": tids[i], "prompt_language": "en",
                "model": model_id, "cue_status": status, "judge": judge_id, "cached": cached[i]}
            if answer is None:
                out.append(VQAPrediction(label=None, parse_status="error", error=errors[i], **common))
            elif v is None:  # an empty answer: nothing to judge, scored 0
                out.append(VQAPrediction(label=None, raw=answer, parse_status="invalid", **common))
            else:
                out.append(VQAPrediction(
                    label=answer.strip(), raw=answer, parse_status="text", tu=v.tu, cu=v.cu, ci=v.ci,
                    sea_lave=v.score if v.status == "ok" else None, judge_status=v.status,
                    justification=v.justification, judge_error=v.error, **common))
        return out

    # -- scoring ------------------------------------------------------------------------------------------------
    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        countries = [s.culture for s in samples]
        categories = [str(s.metadata.get("category")) for s in samples]
        formats = [str(s.metadata.get("format")) for s in samples]
        per_setting: dict[str, Any] = {}
        for setting, preds in predictions_by_setting.items():
            by_id = {p.sample_id: p for p in preds}
            missing = [s.id for s in samples if s.id not in by_id]
            if missing:
                raise DataError(f"ricevl-vqa/{setting.key}: {len(missing)} items have no prediction (first: "
                                f"{missing[:5]}); rerun to resume")
            recs = [by_id[s.id] for s in samples]
            scores = [float(getattr(p, "sea_lave", None) or 0.0) for p in recs]
            ok = [p for p in recs if getattr(p, "judge_status", "") == "ok"]
            per_setting[setting.key] = {
                "sea_lave": mean_score(scores),
                "sea_lave_judged_only": mean_score([float(p.sea_lave or 0.0) for p in ok]),  # type: ignore[attr-defined]
                "tu": mean_score([float(p.tu or 0) for p in recs]),  # type: ignore[attr-defined]
                "cu": mean_score([float(p.cu or 0) for p in recs]),  # type: ignore[attr-defined]
                "ci": mean_score([float(p.ci or 0) for p in recs]),  # type: ignore[attr-defined]
                "per_country": mean_by_group(scores, countries),
                "per_category": mean_by_group(scores, categories),
                "per_format": mean_by_group(scores, formats),
                "n": len(recs),
                "judged": len(ok),
                "answer_errors": sum(p.parse_status == "error" for p in recs),
                "empty_answers": sum(p.parse_status == "invalid" for p in recs),
                "judge_invalid": sum(getattr(p, "judge_status", "") == "invalid" for p in recs),
                "judge_errors": sum(getattr(p, "judge_status", "") == "error" for p in recs),
                "with_cues": sum(bool(p.tuples_used) for p in recs),
                "cue_status": dict(sorted(Counter(getattr(p, "cue_status", "") for p in recs).items())),
            }
        return {
            "n_samples": len(samples),
            "judge": getattr(self.judge, "id", str(self.judge)),
            "region": {"name": self.region.name, "countries": self.region.country_names},
            "country_names": {c: _culture_terms(c)[0] for c in sorted(set(countries))},
            "n_per_country": dict(sorted(Counter(countries).items())),
            "n_per_category": dict(sorted(Counter(categories).items())),
            "n_per_format": dict(sorted(Counter(formats).items())),
            "settings": per_setting,
        }

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        return vqa_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        return vqa_plots(results)


def _by_group_table(title: str, results: Mapping[str, Any], field: str, counts: str, label: str,
                    names: Mapping[str, str] | None = None) -> Table:
    settings = results["settings"]
    rows: dict[str, dict[str, Any]] = {}
    for group, n in results[counts].items():
        name = names.get(group, group) if names else group
        rows[name] = {**{k: v[field].get(group) for k, v in settings.items()}, "n": n}
    return Table.from_nested(title, rows, row_label=label, precision=3)


def vqa_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """SEA-LAVE per setting with its parts and failure counts; per country, category and question format."""
    settings = results["settings"]
    summary = {k: {"SEA-LAVE": v["sea_lave"], "TU": v["tu"], "CU": v["cu"], "CI (0-2)": v["ci"],
                   "judged only": v["sea_lave_judged_only"], "n": v["n"], "judged": v["judged"],
                   "answer errors": v["answer_errors"], "empty answers": v["empty_answers"],
                   "judge invalid": v["judge_invalid"], "judge errors": v["judge_errors"],
                   "with cues": v["with_cues"]} for k, v in settings.items()}
    return {
        "summary": Table.from_nested(
            "SEA-LAVE per setting", summary, row_label="setting", precision=3,
            note=f"judge {results['judge']}; (TU + CU + CI/2) / 3 per item; failed answers and judge failures "
                 "score 0 and are counted"),
        "country": _by_group_table("SEA-LAVE per country", results, "per_country", "n_per_country", "country",
                                   results.get("country_names")),
        "category": _by_group_table("SEA-LAVE per category", results, "per_category", "n_per_category", "category"),
        "format": _by_group_table("SEA-LAVE per question format", results, "per_format", "n_per_format", "format"),
    }


def vqa_plots(results: Mapping[str, Any]) -> list[Plot]:
    names = results.get("country_names", {})
    per_country = {k: {names.get(c, c): x for c, x in v["per_country"].items()}
                   for k, v in results["settings"].items()}
    per_category = {k: v["per_category"] for k, v in results["settings"].items()}
    return [BarPlot.from_nested("country", "SEA-LAVE per country", per_country, ylabel="SEA-LAVE", ylim=(0.0, 1.0)),
            BarPlot.from_nested("category", "SEA-LAVE per category", per_category, ylabel="SEA-LAVE",
                                ylim=(0.0, 1.0))]


# -- grounding -------------------------------------------------------------------------------------------------------


def _sent_size(width: float, height: float, max_side: int) -> tuple[int, int]:
    """The size of the image the model sees after `build_messages` shrinks it (longer side <= max_side)."""
    if max(width, height) <= max_side:
        return int(round(width)), int(round(height))
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


@register_runner("ricevl-grounding")
class RiceVLGroundingRunner(Runner):
    """RICE-VL visual grounding: one setting (``ground``); a model's box, or the whole-image baseline without one."""

    default_modes = ("ground",)
    record_type = GroundingPrediction

    def __init__(
        self,
        samples: Sequence[Sample],
        *,
        client: ModelClient | None = None,
        scale: str = "auto",
        layout: str = "auto",
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        max_image_side: int = 1024,
        iou_threshold: float = 0.5,
        **kw: Any,
    ) -> None:
        self.samples = list(samples)
        self.client = client
        parse_box("", scale=scale, layout=layout)  # checks the options
        self.scale = scale
        self.layout = layout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        if not 0.0 <= iou_threshold <= 1.0:
            raise ConfigError(f"iou_threshold must be in [0, 1], got {iou_threshold}")
        self.iou_threshold = iou_threshold
        self.template = _template("ricevl_grounding", ("phrase",), ("width", "height"), template_dir)
        super().__init__(None, **kw)

    def load(self) -> list[Sample]:
        for s in self.samples:
            if not isinstance(s.metadata.get("bbox"), list | tuple):
                raise ConfigError(f"grounding item {s.id!r} has no gold box; load it with load_ricevl_grounding")
        return list(self.samples)

    def config(self) -> dict[str, Any]:
        return {"runner": self.label, "model": self.client.id if self.client is not None else "full-image",
                "template": self.template.id, "scale": self.scale, "layout": self.layout,
                "decoding": [self.temperature, self.max_tokens, self.max_image_side]}

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        from culturekb.inference.messages import ask_each

        out: list[Prediction] = []
        if self.client is None:
            for s in samples:
                w, h = s.metadata.get("width"), s.metadata.get("height")
                box, status = ([0.0, 0.0, float(w), float(h)], "ok") if w and h else (None, "unparsed")
                out.append(GroundingPrediction(
                    sample_id=s.id, culture=s.culture, mode=setting.mode, label=None if box is None else str(box),
                    raw="", parse_status="json" if box else "invalid", model="full-image", box=box,
                    box_status=status, box_form="baseline", template_id=""))
            return out
        prompts: list[tuple[str, str | None, str]] = []
        sizes: list[tuple[int, int] | None] = []
        for s in samples:
            w, h = s.metadata.get("width"), s.metadata.get("height")
            size = _sent_size(float(w), float(h), self.max_image_side) if w and h else None
            sizes.append(size)
            text = self.template.fill({"phrase": s.text or "", "width": size[0] if size else "unknown",
                                       "height": size[1] if size else "unknown"})
            prompts.append((text, s.image, f"sample {s.id!r}"))
        answers = ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                           max_tokens=self.max_tokens)
        for i, (s, ans) in enumerate(zip(samples, answers, strict=True)):
            common: dict[str, Any] = {"sample_id": s.id, "culture": s.culture, "mode": setting.mode,
                                      "model": self.client.id, "template_id": self.template.id,
                                      "sent_size": list(sizes[i] or ()) or None}
            if isinstance(ans, str):  # the image could not be read, or the call failed: IoU 0, counted
                out.append(GroundingPrediction(label=None, parse_status="error", box_status="error", error=ans,
                                               **common))
                continue
            size = sizes[i]
            parsed: ParsedBox = parse_box(ans.text, width=size[0] if size else None,
                                          height=size[1] if size else None, scale=self.scale, layout=self.layout)
            box = None
            if parsed.box is not None:
                fx = float(s.metadata["width"]) / size[0] if size else 1.0
                fy = float(s.metadata["height"]) / size[1] if size else 1.0
                box = [parsed.box[0] * fx, parsed.box[1] * fy, parsed.box[2] * fx, parsed.box[3] * fy]
            out.append(GroundingPrediction(
                label=None if box is None else str([round(v, 1) for v in box]), raw=ans.text,
                parse_status="text" if parsed.scored else "invalid", box=box, box_status=parsed.status,
                box_form=parsed.form, cached=ans.cached, error=parsed.detail or None, **common))
        return out

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        countries = [s.culture for s in samples]
        categories = [str(s.metadata.get("category")) for s in samples]
        per_setting: dict[str, Any] = {}
        for setting, preds in predictions_by_setting.items():
            by_id = {p.sample_id: p for p in preds}
            recs = [by_id[s.id] for s in samples]
            ious = [box_iou(p.box if getattr(p, "box_status", "") in ("ok", "clipped") else None,  # type: ignore[attr-defined]
                            s.metadata["bbox"]) for s, p in zip(samples, recs, strict=True)]
            hits = [1.0 if v >= self.iou_threshold else 0.0 for v in ious]
            per_setting[setting.key] = {
                "mean_iou": mean_score(ious),
                "accuracy_at_iou": iou_accuracy(ious, self.iou_threshold),
                "per_country": mean_by_group(ious, countries),
                "per_category": mean_by_group(ious, categories),
                "accuracy_per_country": mean_by_group(hits, countries),
                "accuracy_per_category": mean_by_group(hits, categories),
                "n": len(recs),
                "box_status": dict(sorted(Counter(getattr(p, "box_status", "") for p in recs).items())),
                "box_forms": dict(sorted(Counter(getattr(p, "box_form", "") or "-" for p in recs).items())),
                "ious": {s.id: v for s, v in zip(samples, ious, strict=True)},
            }
        return {
            "n_samples": len(samples),
            "iou_threshold": self.iou_threshold,
            "country_names": {c: _culture_terms(c)[0] for c in sorted(set(countries))},
            "n_per_country": dict(sorted(Counter(countries).items())),
            "n_per_category": dict(sorted(Counter(categories).items())),
            "settings": per_setting,
        }

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        return grounding_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        return grounding_plots(results)


def grounding_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Mean IoU and accuracy at the threshold overall, per country and per category; box outcomes counted."""
    thr = results["iou_threshold"]
    settings = results["settings"]
    names = results.get("country_names", {})
    statuses = ("ok", "clipped", "outside", "invalid", "unparsed", "error")
    summary = {k: {"mean IoU": v["mean_iou"], f"acc@{thr:g}": v["accuracy_at_iou"], "n": v["n"],
                   **{s: v["box_status"].get(s, 0) for s in statuses}} for k, v in settings.items()}
    tables = {"summary": Table.from_nested(
        "Grounding: mean IoU and accuracy", summary, row_label="setting", precision=3,
        note="unparsed, invalid (x2 <= x1), outside and failed answers score IoU 0 and are counted; clipped boxes "
             "are scored after clipping to the image")}
    for key, v in settings.items():
        suffix = "" if len(settings) == 1 else f" ({key})"
        tables[f"country-{key}"] = Table.from_nested(
            f"Mean IoU per country{suffix}",
            {names.get(c, c): {"mean IoU": v["per_country"][c], f"acc@{thr:g}": v["accuracy_per_country"][c],
                               "n": results["n_per_country"][c]} for c in v["per_country"]},
            row_label="country", precision=3)
        tables[f"category-{key}"] = Table.from_nested(
            f"Mean IoU per category{suffix}",
            {c: {"mean IoU": v["per_category"][c], f"acc@{thr:g}": v["accuracy_per_category"][c],
                 "n": results["n_per_category"][c]} for c in v["per_category"]},
            row_label="category", precision=3)
    return tables


def grounding_plots(results: Mapping[str, Any]) -> list[Plot]:
    names = results.get("country_names", {})
    nested = {k: {names.get(c, c): x for c, x in v["per_country"].items()} for k, v in results["settings"].items()}
    return [BarPlot.from_nested("country", "Mean IoU per country", nested, ylabel="mean IoU", ylim=(0.0, 1.0))]
