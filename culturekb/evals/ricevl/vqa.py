"""RICE-VL cultural VQA: the ``global``, ``sea`` and ``kb-cues`` settings, each answer scored by a SEA-LAVE judge.

Settings (PAPERS.md section 3): ``global`` (the question alone), ``sea`` (a regional framing that names the
region and its countries) and ``kb-cues`` (the framing plus regional cues from the cue KB). Cues are looked up for
the question's concepts (and the image's, with a VLM concept extractor) among the tuples of every country of the
region, so the block does not give the item's country away (``cue_scope="region"``, the default);
``cue_scope="country"`` is an oracle that retrieves within the item's own country and, when no concept matches,
falls back to that country's best-supported tuples. Each answer is scored by a judge (`culturekb.evals.ricevl.judges`)
with the rubric of its question format. Tables per country, per category and per question format.

Offline (no model): the ``kb-prior`` answerer answers from the cue KB alone, and the ``reference`` judge scores by
matching the reference answer and country names. The cue KB itself is built by `culturekb.builders.cue_kb`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from culturekb._records import LoadReport, parse_field_map
from culturekb.errors import ConfigError, DataError
from culturekb.evals._cues import item_concepts
from culturekb.evals.context import RunContext
from culturekb.evals.metrics import mean_by_group, mean_score
from culturekb.evals.reports import IntervalPlot, Plot, Table, base_run_header, interval_text
from culturekb.evals.ricevl.command import ricevl_vqa_options
from culturekb.evals.ricevl.common import (
    FORMATS,
    Region,
    item_counts,
    load_template,
    mentions,
    region_from_samples,
)
from culturekb.evals.ricevl.judges import ReferenceJudge
from culturekb.evals.ricevl.spec import RiceVLVQASpec
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.evals.stats import bootstrap_interval
from culturekb.inference.base import Prediction
from culturekb.inference.injection import (
    REGIONAL_CUES,
    BlockTemplate,
    Budget,
    KnowledgeBlock,
    KnowledgeRequest,
    KnowledgeService,
)
from culturekb.inference.injection import cue_budget as default_cue_budget
from culturekb.inference.messages import ask_each
from culturekb.kb.cultures import CultureRegistry, packaged_registry
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor

__all__ = ["VQA_SETTINGS", "VQAPrediction", "KBPriorAnswerer", "RiceVLVQARunner", "vqa_tables", "vqa_plots"]

VQA_SETTINGS: tuple[str, ...] = ("global", "sea", "kb-cues")


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

    def answer(self, sample: Sample, setting: str, block: KnowledgeBlock, region: Region) -> str:
        """The answer to one item in `setting`, built from the cue block or the best-supported tuple."""
        fmt = sample.metadata.get("format")
        if setting == "kb-cues" and block.matches:
            t = block.matches[0].tuple
            name = region.terms(t.culture)[0]
            if fmt == "tf":
                hit = mentions(sample.question or "", [t.concept.lower(), *region.terms(t.culture)[1]])
                return f"{'True' if hit else 'False'}. Related: {t.concept}, from {name}."
            return f"{t.concept}, from {name}."
        t = self._top(list(region.countries) if setting == "sea" else None)
        if fmt == "tf":
            return "True."
        if t is None:
            return "I do not know."
        return f"{t.concept}, from {region.terms(t.culture)[0]}."



@register_runner("ricevl-vqa")
class RiceVLVQARunner(Runner):
    """RICE-VL VQA in the ``global``, ``sea`` and ``kb-cues`` settings, each answer scored by the judge.

    `cultures`: the registry that names the countries in prompts, judging and reports (the run's); default: the
    cue KB's, else the packaged cultures (`culturekb.kb.cultures.packaged_registry`).
    """

    command = RunnerCommand(ricevl_vqa_options)

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
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        max_image_side: int = 1024,
        cue_template: BlockTemplate = REGIONAL_CUES,
        cue_budget: Budget | None = None,
        cultures: CultureRegistry | None = None,
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
        self.cultures = cultures if cultures is not None else (  # names of countries, in prompts and reports
            retriever.kb.culture_registry if retriever is not None else packaged_registry())
        region = region or region_from_samples(self.samples)
        self.region = region if region.cultures is not None else replace(region, cultures=self.cultures)
        self.concept_extractor = concept_extractor or TextConceptExtractor(  # the KB's scheme: names are cues here
            fields=STIMULUS_FIELDS, scheme=None if retriever is None else retriever.kb.scheme)
        self.image_concepts = image_concepts
        self.max_cues = max_cues
        self.fallback_cues = fallback_cues
        self.cue_service = None if retriever is None else KnowledgeService(
            retriever, budget=cue_budget or default_cue_budget(max_cues), template=cue_template)
        self.template_dir = template_dir
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        self.answerer = KBPriorAnswerer(retriever) if client is None and retriever is not None else None
        frame = ("question", "answer_format")
        region_fields = ("region", "region_countries")
        self.templates = {
            "global": load_template("ricevl_global", frame, (), template_dir),
            "sea": load_template("ricevl_sea", (*frame, *region_fields), (), template_dir),
            "kb-cues": load_template("ricevl_cues", (*frame, *region_fields, "cues"), (), template_dir),
        }
        self.formats = {f: load_template(f"ricevl_answer_{f}", (), (), template_dir) for f in FORMATS}
        super().__init__(None, client=client, **kw)

    @classmethod
    def from_context(cls, ctx: RunContext) -> RiceVLVQARunner:
        """The spec's VQA items (read first); the cue KB of the spec, or one built from its cue metadata into
        ``<out>/cue_kb``; the answering model and the SEA-LAVE judge (``reference``: offline)."""
        from culturekb.evals.ricevl.data import load_ricevl_vqa
        from culturekb.evals.ricevl.judges import SeaLaveJudge

        spec = ctx.spec
        assert isinstance(spec, RiceVLVQASpec)
        report = LoadReport()
        samples = load_ricevl_vqa(spec.data, scheme=spec.scheme, data_root=spec.data_root,
                                  check_images=spec.model != "kb-prior",
                                  allow_unknown_countries=spec.allow_unknown_countries,
                                  field_map=parse_field_map(spec.field_map), on_bad_row=spec.on_bad_row, report=report)
        kb_dir = spec.kb_dir
        if kb_dir is None and spec.cue_metadata is not None:
            kb_dir = ctx.build_cue_kb(spec.cue_metadata, spec.out / "cue_kb", scheme=spec.scheme,
                                      allow_unknown_countries=spec.allow_unknown_countries)
        retriever = ctx.retriever(kb_dir)
        client = ctx.client(scope=retriever.kb.version if retriever is not None else "")
        judge = None
        if spec.judge != "reference":
            judge_client = ctx.client(spec.judge, base_url=spec.judge_base_url, scope="")
            if judge_client is None:
                raise ConfigError(f"unknown judge {spec.judge!r}; use 'reference' (offline) or 'openai:MODEL'")
            judge = SeaLaveJudge(judge_client, retries=spec.judge_retries, template_dir=spec.template_dir)
        cultures = retriever.kb.culture_registry if retriever is not None else ctx.cultures()
        region = (Region(spec.region or "the region", spec.region_countries, cultures) if spec.region_countries
                  else region_from_samples(samples, spec.region, cultures))
        return cls(samples, client=client, retriever=retriever, judge=judge, region=region, cultures=cultures,
                   setting_names=spec.setting_names, image_concepts=ctx.image_concepts(client),
                   cue_scope=spec.cue_scope, max_cues=spec.max_cues, fallback_cues=spec.fallback_cues,
                   template_dir=spec.template_dir, max_tokens=spec.max_tokens, limit=spec.limit,
                   progress=spec.progress, load_report=report.to_dict())

    def load(self) -> list[Sample]:
        """The VQA items; each must carry its format and reference answer."""
        for s in self.samples:
            if s.metadata.get("format") not in FORMATS or s.label is None:
                raise ConfigError(f"VQA item {s.id!r} lacks its format or reference answer; load it with "
                                  "load_ricevl_vqa")
        return list(self.samples)

    def default_settings(self) -> list[Setting]:
        """One setting per configured RICE-VL setting (``global``, ``sea``, ``kb-cues``)."""
        return [Setting(n) for n in self.setting_names]

    def config(self) -> dict[str, Any]:
        """Everything that changes an answer or its score (answerer, judge, KB, region, templates, cues, decoding)."""
        kb = self.retriever.kb.version if self.retriever is not None else None
        answerer = self.client.id if self.client is not None else getattr(self.answerer, "id", None)
        return {"runner": self.label, "answerer": answerer, "judge": getattr(self.judge, "id", str(self.judge)),
                "kb_version": kb, "region": [self.region.name, list(self.region.countries)],
                "templates": {k: t.id for k, t in {**self.templates, **self.formats}.items()},
                "cue_scope": self.cue_scope, "max_cues": self.max_cues, "fallback_cues": self.fallback_cues,
                "tau": self.retriever.tau if self.retriever is not None else None,
                "concepts": self.concept_extractor.id,
                "image_concepts": getattr(self.image_concepts, "id", None),
                "decoding": [self.temperature, self.max_tokens, self.max_image_side]}

    def _is_done(self, prediction: Prediction | None) -> bool:
        if not super()._is_done(prediction):
            return False
        return not (self.retry_errors and getattr(prediction, "judge_status", "") == "error")

    # -- one chunk: cues, answers, judge ----------------------------------------------------------------------
    def _concepts(self, chunk: Sequence[Sample]) -> list[list[str]]:
        return item_concepts(chunk, self.concept_extractor, self.image_concepts)

    def _region_scope(self) -> list[str]:
        assert self.retriever is not None
        kb_cultures = list(self.retriever.cultures)
        inside = [c for c in kb_cultures if c in self.region.countries]
        return inside or kb_cultures

    def cue_blocks(self, chunk: Sequence[Sample]) -> list[tuple[KnowledgeBlock, str]]:
        """(cue block, status) per item from one batched lookup: in the region's countries (``cue_scope="region"``,
        one note per country) or in the item's own country, with its best-supported tuples as a ``fallback``
        when no concept matched."""
        assert self.cue_service is not None
        concepts = self._concepts(chunk)
        if self.cue_scope == "region":
            scope = self._region_scope()
            if not scope:  # a KB without cultures
                empty = [KnowledgeBlock("", concepts=tuple(cs), status="culture-not-in-kb" if cs else "no-concepts")
                         for cs in concepts]
                return [(b, b.status) for b in empty]
            requests = [KnowledgeRequest(cs, scope[0], "know", "en", s.id, scope=scope)
                        for s, cs in zip(chunk, concepts, strict=True)]
        else:
            requests = [KnowledgeRequest(cs, s.culture, "know", "en", s.id)
                        for s, cs in zip(chunk, concepts, strict=True)]
        out = []
        for s, block in zip(chunk, self.cue_service.inject_many(requests, on_unknown_culture="skip"), strict=True):
            if (self.cue_scope == "country" and not block and self.fallback_cues > 0
                    and block.status != "culture-not-in-kb"):
                block = self._fallback_block(s.culture)
            out.append((block, block.status))
        return out

    def _fallback_block(self, culture: str) -> KnowledgeBlock:
        """The country's best-supported tuples as its cue block (when no concept matched)."""
        assert self.cue_service is not None and self.retriever is not None
        k = self.fallback_cues
        pool = sorted((t for t in self.retriever.kb.for_culture(culture) if t.status != "rejected"),
                      key=lambda t: (-t.support, t.id))[:k]
        matches = [Match(query="", tuple=t, score=0.0, kind="exact") for t in pool]
        return self.cue_service.render(matches, culture, budget=default_cue_budget(k), language="en", status="fallback")

    def _prompt(self, sample: Sample, setting: str, block: KnowledgeBlock) -> tuple[str, str]:
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
        """Answer the chunk in the setting's framing (cues in ``kb-cues``), then have the judge score each answer."""
        mode = setting.mode
        if mode not in VQA_SETTINGS:
            raise ConfigError(f"unknown RICE-VL VQA setting {mode!r}; use one of {list(VQA_SETTINGS)}")
        blocks = (self.cue_blocks(samples) if mode == "kb-cues"
                  else [(KnowledgeBlock("", status="not-used"), "not-used")] * len(samples))
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
        """Mean SEA-LAVE (and TU, CU, CI) per setting, per country, category and format, with error and cue counts."""
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
            ci = bootstrap_interval(scores)
            per_setting[setting.key] = {
                "sea_lave": mean_score(scores),
                "sea_lave_interval": [ci.low, ci.high],
                "per_country_interval": _group_intervals(scores, countries),
                "per_category_interval": _group_intervals(scores, categories),
                "per_format_interval": _group_intervals(scores, formats),
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
            **item_counts(samples, self.cultures),
            "n_per_format": dict(sorted(Counter(formats).items())),
            "settings": per_setting,
        }

    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the answerer (a model, or the offline kb-prior), the judge (a model, or the offline
        reference match), the no-cue baseline setting, the cue KB, the images sent."""
        header = base_run_header(self)
        with_image = sum(1 for s in self.samples if s.image)
        offline = False
        if self.client is not None:
            model = str(self.client.id)
            images = f"{with_image} of {len(self.samples)} items sent with their image, in every setting"
        else:
            model = (f"{getattr(self.answerer, 'id', 'kb-prior')} (offline, no --model: each answer is the top cue "
                     "tuple's concept and country (kb-cues) or the KB's best-supported tuple (sea: of the region; "
                     "global: of the whole KB); tf questions answer True; no model call)")
            images = f"none (offline: no model sees an image; {with_image} of {len(self.samples)} items have one)"
            offline = True
        judge = str(results.get("judge") or getattr(self.judge, "id", self.judge))
        if judge.startswith("reference-match"):
            judge += (" (offline, no --judge: TU/CU/CI by matching the reference answer, the sub-culture and country "
                      "names; not SEA-LAVE's judge model)")
        settings = list(results.get("settings") or {})
        header.update({
            "model": model,
            "judge": judge,
            "baseline": ("the global setting (no regional framing, no cues) is the reference for "
                         + ", ".join(k for k in settings if k != "global")) if "global" in settings else
                        "none (the global setting was not run)",
            "images sent": images,
        })
        if offline:
            header["prompt languages"] = "none sent (offline: no model call)"
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """Markdown tables of the VQA results."""
        return vqa_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """PNG plots of the VQA results."""
        return vqa_plots(results)


def _group_intervals(scores: Sequence[float], groups: Sequence[str]) -> dict[str, list[float]]:
    """Per group, the 95% percentile-bootstrap interval of its items' mean score."""
    out = {}
    for g in sorted(set(groups)):
        b = bootstrap_interval([x for x, h in zip(scores, groups, strict=True) if h == g])
        out[g] = [b.low, b.high]
    return out


def _by_group_table(title: str, results: Mapping[str, Any], field: str, counts: str, label: str,
                    names: Mapping[str, str] | None = None) -> Table:
    settings = results["settings"]
    rows: dict[str, dict[str, Any]] = {}
    for group, n in results[counts].items():
        name = names.get(group, group) if names else group
        cells: dict[str, Any] = {}
        for k, v in settings.items():
            low, high = (v.get(f"{field}_interval") or {}).get(group) or (None, None)
            cells[k] = (interval_text(v[field][group], n, low, high) if low is not None else v[field][group]) \
                if group in v[field] else "n/a (no item)"
        rows[name] = {**cells, "n": n}
    note = "SEA-LAVE [95% percentile-bootstrap interval over the group's items] n=items" \
        if any(f"{field}_interval" in v for v in settings.values()) else ""
    return Table.from_nested(title, rows, row_label=label, precision=3, note=note)


def vqa_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """SEA-LAVE per setting with its parts and failure counts; per country, category and question format."""
    settings = results["settings"]
    def sea(v: Mapping[str, Any]) -> str:
        low, high = v.get("sea_lave_interval") or (None, None)
        return interval_text(v["sea_lave"], v["n"], low, high)

    summary = {k: {"SEA-LAVE": sea(v), "TU": interval_text(v["tu"], v["n"]), "CU": interval_text(v["cu"], v["n"]),
                   "CI (0-2)": v["ci"],
                   "judged only": v["sea_lave_judged_only"], "n": v["n"], "judged": v["judged"],
                   "answer errors": v["answer_errors"], "empty answers": v["empty_answers"],
                   "judge invalid": v["judge_invalid"], "judge errors": v["judge_errors"],
                   "with cues": v["with_cues"]} for k, v in settings.items()}
    return {
        "summary": Table.from_nested(
            "SEA-LAVE per setting", summary, row_label="setting", precision=3,
            note=f"judge {results['judge']}; (TU + CU + CI/2) / 3 per item; failed answers and judge failures "
                 "score 0 and are counted. SEA-LAVE [95% percentile-bootstrap interval over items]; TU, CU "
                 "[95% Wilson interval] n=items"),
        "country": _by_group_table("SEA-LAVE per country", results, "per_country", "n_per_country", "country",
                                   results.get("country_names")),
        "category": _by_group_table("SEA-LAVE per category", results, "per_category", "n_per_category", "category"),
        "format": _by_group_table("SEA-LAVE per question format", results, "per_format", "n_per_format", "format"),
    }


def vqa_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Bar plots of SEA-LAVE per country and per category, one bar per setting."""
    names = results.get("country_names", {})
    settings = results["settings"]
    plots: list[Plot] = []
    for name, title, field, counts in (("country", "SEA-LAVE per country", "per_country", "n_per_country"),
                                       ("category", "SEA-LAVE per category", "per_category", "n_per_category")):
        groups = list(results[counts])
        est = {k: [v[field].get(g, math.nan) for g in groups] for k, v in settings.items()}
        nan2 = [math.nan, math.nan]
        bounds = {k: [(v.get(f"{field}_interval") or {}).get(g, nan2) for g in groups] for k, v in settings.items()}
        base = settings.get("global", {}).get("sea_lave")
        plots.append(IntervalPlot(
            name, f"{title} (95% bootstrap intervals)",
            [f"{names.get(g, g)} (n={results[counts][g]})" for g in groups], est,
            {k: [b[0] for b in v] for k, v in bounds.items()}, {k: [b[1] for b in v] for k, v in bounds.items()},
            ylabel="SEA-LAVE", ylim=(0.0, 1.0),
            baselines={"global setting, all items": base} if base is not None and not math.isnan(base) and
            len(settings) > 1 else {}))
    return plots
