"""The resumable build: samples -> concepts -> association -> rationales -> dual-judge validation -> KB.

Every step caches its output per item, keyed by a hash of the step's inputs and the component id, in a
`StepCache`. Work is done in chunks and each chunk is committed, so an interrupted build loses at most one
chunk and an unchanged rebuild recomputes nothing (and so makes zero model calls).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from culturekb import registry
from culturekb._io import stable_hash
from culturekb.builders._faults import BAD_ANSWER_DETAIL, FaultLog, client_counts, model_report
from culturekb.builders._quality import check_coverage, rationale_topic_report
from culturekb.builders._stepcache import CachedEmbedder, StepCache
from culturekb.builders.base import ConceptExtractor, Judge, JudgeInput, RationaleGenerator, RationaleRequest
from culturekb.builders.config import BuildConfig
from culturekb.builders.validation import apply_verdicts, judge_inputs
from culturekb.errors import ConfigError, DataError
from culturekb.kb._checkpoints import kill_point
from culturekb.kb.ledger import reapply_ledger
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple, Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme
from culturekb.kb.stimulus import detect_stimulus_kind
from culturekb.kb.store import KnowledgeBase, versioned_config
from culturekb.models.base import Embedder
from culturekb.text.concepts import BUILD_FIELDS
from culturekb.text.context import context_concepts
from culturekb.text.drops import Extraction, ReportsDrops, summarise_drops

__all__ = ["BuildConfig", "BuildComponents", "BuildResult", "build_kb", "build_scheme", "make_components",
           "training_concepts"]

log = logging.getLogger(__name__)
T = TypeVar("T")
R = TypeVar("R")


def build_scheme(config: BuildConfig) -> EmotionScheme:
    """The label scheme a build uses and its KB keeps: `config.scheme` with `config.label_words` first in its
    translations (`EmotionScheme.with_words`)."""
    return get_scheme(config.scheme).with_words(config.label_words, source="the build's label words")


@dataclass
class BuildComponents:
    """The step backends. Built from a `BuildConfig` by `make_components`, or injected (tests, notebooks)."""

    extractor: ConceptExtractor
    generator: RationaleGenerator
    judges: list[Judge]
    clients: list[Any] = field(default_factory=list)

    def model_calls(self) -> int:
        """Model calls made so far by the clients behind the steps (for the build report)."""
        return sum(int(getattr(c, "calls", 0)) for c in self.clients)


@dataclass
class BuildResult:
    """What `build_kb` returns: the knowledge base and its build report (counts, kappa, flagged, timings)."""

    kb: KnowledgeBase
    report: dict[str, Any]


def make_components(config: BuildConfig, embedder: Embedder | None = None,
                    cache_dir: str | Path | None = None) -> BuildComponents:
    """Construct the backends named in the config (one client per spec).

    `embedder`: an embedder already loaded for `config.embedder`, used instead of loading another copy (a job that
    also indexes and retrieves loads its model once). `cache_dir`: OpenAI-compatible clients answer through the
    response cache ``<cache_dir>/build_responses.sqlite`` (keyed by model, messages and parameters), so a build
    resumed after a failure or a kill pays for no answer it already received."""
    from culturekb.builders.concepts import make_concept_extractor
    from culturekb.builders.judges import make_judge
    from culturekb.builders.rationales import ExtractiveRationaleGenerator, LLMRationaleGenerator
    from culturekb.models.factory import make_client, make_embedder

    scheme = build_scheme(config)
    clients: dict[str, Any] = {}

    def emb() -> Any:
        nonlocal embedder
        if embedder is None:
            embedder = make_embedder(config.embedder)
        return embedder

    responses: Any = None

    def client(spec: str) -> Any:
        nonlocal responses
        if spec not in clients:
            kw: dict[str, Any] = {"max_concurrency": config.max_concurrency}
            if cache_dir is not None and registry.split_spec(spec)[0] == "openai":
                from culturekb.models.cache import ResponseCache

                responses = responses or ResponseCache(Path(cache_dir) / BUILD_RESPONSES)
                kw["cache"] = responses
            clients[spec] = make_client(spec, base_url=config.base_url, **kw)
        return clients[spec]

    opts = _extractor_options(config)
    if config.concepts.startswith("vlm:"):
        extractor = make_concept_extractor("vlm", client=client(config.concepts[4:]), **opts)
    else:
        extractor = make_concept_extractor(config.concepts, **opts)

    generator: RationaleGenerator
    if config.rationales == "extractive":
        generator = ExtractiveRationaleGenerator(emb(), max_rationales=config.max_rationales)
    elif config.rationales in registry.CLIENTS:
        generator = LLMRationaleGenerator(client(config.rationales), scheme, max_rationales=config.max_rationales)
    else:
        forms = ", ".join(["extractive", *registry.CLIENTS.forms()])
        raise ConfigError(f"unknown rationale generator {config.rationales!r}; choose one of: {forms}")

    judges: list[Judge] = []
    for spec in config.judges:
        if spec == "prototype":  # the build's embedder, loaded once
            judges.append(make_judge(spec, scheme=scheme, embedder=emb()))
        elif spec not in registry.JUDGES and spec in registry.CLIENTS:  # one client (and cache) per spec
            judges.append(make_judge(spec, scheme=scheme, client=client(spec)))
        else:  # an offline judge, or an unknown spec that make_judge reports with every valid form
            judges.append(make_judge(spec, scheme=scheme))
    return BuildComponents(extractor, generator, judges, list(clients.values()))


BUILD_RESPONSES = "build_responses.sqlite"
"""The build's response cache file, in the cache directory."""


def _extractor_options(config: BuildConfig) -> dict[str, Any]:
    opts = dict(config.concept_options)
    if config.concepts == "text":
        # training data: the stimulus fields that test time reads too, plus the annotators' explanations (the
        # richest text); titles weigh more inside the extractor; the scheme's own label words are never concepts
        opts.setdefault("fields", BUILD_FIELDS)
        opts.setdefault("scheme", build_scheme(config))
    return opts


OFFLINE_EXTRACTORS = ("text", "precomputed")
"""The concept extractors `training_concepts` can rerun without a model."""


def training_concepts(samples: Sequence[Sample], build_config: dict[str, Any]) -> list[list[str]] | None:
    """The concepts a build with `build_config` (a KB's recorded build config) counted for each sample: its
    extractor's output plus the context concepts, deduplicated; None when the extractor needs a model (vlm, clip).

    The calibration uses it to leave each training sample out of the tuples it supports (leave-one-out)."""
    from culturekb.builders.concepts import make_concept_extractor

    known = {k: v for k, v in build_config.items() if k in BuildConfig.model_fields}
    config = BuildConfig.model_validate(known)
    if config.concepts not in OFFLINE_EXTRACTORS:
        return None
    extractor = make_concept_extractor(config.concepts, **_extractor_options(config))
    found = extractor.extract(list(samples))
    return [list(dict.fromkeys([*cs, *context_concepts(s)])) for s, cs in zip(samples, found, strict=True)]


# -- the cached, chunked step runner -------------------------------------------------------------------------
@dataclass
class _StepStats:
    computed: int = 0
    cached: int = 0
    seconds: float = 0.0


def _run_cached(
    cache: StepCache,
    step: str,
    items: Sequence[T],
    keys: Sequence[str],
    compute: Callable[[list[T]], Sequence[Any]],
    chunk_size: int,
    stats: _StepStats,
    progress: bool,
    prepare: Callable[[list[T]], Any] | None = None,
    checkpoint: str | None = None,
) -> list[Any]:
    t0 = time.perf_counter()
    found = cache.get_many(step, keys)
    todo = [i for i, k in enumerate(keys) if k not in found]
    stats.cached += len(keys) - len(todo)
    if prepare is not None and todo:  # e.g. embed every distinct text of the step in one pass
        prepare([items[i] for i in todo])
    bar = tqdm(total=len(todo), desc=step, unit="item", disable=not progress or not todo, leave=True)  # summary
    try:
        for start in range(0, len(todo), chunk_size):
            idx = todo[start : start + chunk_size]
            outs = compute([items[i] for i in idx])
            if len(outs) != len(idx):
                raise DataError(f"step {step!r} returned {len(outs)} results for {len(idx)} inputs")
            # None: no valid answer (a bad-answer policy of skip or flag): not cached, a later build asks again
            cache.put_many(step, [(keys[i], o) for i, o in zip(idx, outs, strict=True) if o is not None])
            found.update((keys[i], o) for i, o in zip(idx, outs, strict=True))
            stats.computed += len(idx)
            bar.update(len(idx))
            kill_point(checkpoint or step)
    finally:
        bar.close()
    stats.seconds += time.perf_counter() - t0
    return [found[k] for k in keys]


def _through_vector_cache(cache: StepCache, generator: RationaleGenerator, judges: Sequence[Judge]
                          ) -> tuple[RationaleGenerator, list[Judge], list[CachedEmbedder]]:
    """The generator and judges that embed (they have `embedder` and `with_embedder`) rewired through one
    `CachedEmbedder` per embedder over the build's vector cache; the others as they are."""
    wrapped: dict[int, CachedEmbedder] = {}

    def wrap(component: Any) -> Any:
        emb = getattr(component, "embedder", None)
        rewire = getattr(component, "with_embedder", None)
        if emb is None or rewire is None or isinstance(emb, CachedEmbedder):
            return component
        if id(emb) not in wrapped:
            wrapped[id(emb)] = CachedEmbedder(emb, cache)
        return rewire(wrapped[id(emb)])

    return wrap(generator), [wrap(j) for j in judges], list(wrapped.values())


_PREFETCH_SLICE = 4096
"""Texts per `encode` call of a prefetch pass: the progress bar moves once per slice."""


def _prefetch(component: Any, progress: bool = False, step: str = "embed") -> Callable[[list[Any]], Any] | None:
    """For a component embedding through a `CachedEmbedder` and naming its texts (`embedding_texts`): embed all
    the distinct texts of a step's pending items in one pass (slices of `_PREFETCH_SLICE`, with a progress bar),
    before the step runs chunk by chunk."""
    texts = getattr(component, "embedding_texts", None)
    emb = getattr(component, "embedder", None)
    if texts is None or not isinstance(emb, CachedEmbedder):
        return None

    def run(items: list[Any]) -> None:
        wanted = texts(items)
        with tqdm(total=len(wanted), desc=f"{step}: embed", unit="text", disable=not progress or not wanted,
                  leave=True) as bar:
            for start in range(0, len(wanted), _PREFETCH_SLICE):
                part = wanted[start : start + _PREFETCH_SLICE]
                emb.encode(part)
                bar.update(len(part))

    return run


def _verdicts_as_json(judge: Judge) -> Callable[[list[JudgeInput]], list[Any]]:
    def run(batch: list[JudgeInput]) -> list[Any]:
        return [None if _no_answer(v) else v.model_dump(mode="json") for v in judge.judge(batch)]

    return run


def _no_answer(verdict: JudgeVerdict) -> bool:
    """A verdict a model judge gave for lack of a valid answer (not cached; the tuple is flagged)."""
    return verdict.label is None and verdict.detail.startswith(BAD_ANSWER_DETAIL)


def _sample_key(s: Sample) -> dict[str, Any]:
    key = {"id": s.id, "title": s.title, "text": s.text, "image": s.image, "concepts": s.concepts,
           "explanations": s.explanations, "culture": s.culture}
    if s.metadata.get("artist"):  # the text extractor drops the artist's name
        key["artist"] = s.metadata["artist"]
    return key


def _extract_concepts(cache: StepCache, ex: ConceptExtractor, samples: Sequence[Sample], chunk_size: int,
                      stats: _StepStats, progress: bool) -> tuple[list[list[str]], list[Extraction] | None]:
    """Step 1, cached per sample: the concepts of each sample and, from an extractor that reports them
    (`ReportsDrops`), what it dropped and why (None otherwise)."""
    if not isinstance(ex, ReportsDrops):
        lists: list[list[str]] = _run_cached(
            cache, "concepts", samples, [stable_hash([ex.id, _sample_key(s)]) for s in samples],
            lambda batch: ex.extract(batch), chunk_size, stats, progress,
        )
        return lists, None
    detailed = ex
    raw = _run_cached(
        cache, "concepts", samples, [stable_hash([ex.id, "dropped", _sample_key(s)]) for s in samples],
        lambda batch: [e.as_json() for e in detailed.extract_detailed(batch)], chunk_size, stats, progress,
    )
    extractions = [Extraction.from_json(r) for r in raw]
    return [e.concepts for e in extractions], extractions


def _evidence(samples: Sequence[Sample], concept: str, label: str) -> tuple[list[str], str]:
    """(evidence, source) for one tuple: real explanations that chose `label` (per-explanation labels when the
    loader kept them, else the sample's), source "explanations"; for data without explanations, the sentences of
    the stimulus texts labelled `label` that name the concept, source "stimuli"; else nothing, source "none"."""
    from culturekb.builders.rationales import stimulus_evidence

    out: list[str] = []
    for s in samples:
        per = s.metadata.get("explanation_labels")
        if isinstance(per, list) and len(per) == len(s.explanations):
            out.extend(e for e, lab in zip(s.explanations, per, strict=True) if lab == label)
        elif s.label == label:
            out.extend(s.explanations)
    if out:
        return out, "explanations"
    stimuli = stimulus_evidence(samples, concept, label)
    return stimuli, "stimuli" if stimuli else "none"


def build_kb(
    samples: Sequence[Sample],
    config: BuildConfig | None = None,
    *,
    out: str | Path | None = None,
    cache_dir: str | Path | None = None,
    components: BuildComponents | None = None,
    progress: bool = True,
    extra_report: dict[str, Any] | None = None,
    vector_cache: bool = True,
    into: Path | None = None,
) -> BuildResult:
    """Build a KB from labelled samples (the training split of `config.split`); save it to `out` if given.

    Nothing is written to `out` unless the whole build succeeds. `into`: the temporary folder of the caller's
    `culturekb.kb.store.kb_writer(out)` block, where the KB is written instead (the build job indexes and
    calibrates it there before it replaces `out`); `out` is still read for what the KB keeps of the one it
    replaces (the reviewers' ledger, the runs of its build report, the user's text of its card).

    `vector_cache`: embed each distinct text of the build once, in one pass, through the step cache's vector table
    (reused by later builds over the same `cache_dir`); False embeds through the components' embedders chunk by
    chunk (the old path, kept for the build benchmark).
    """
    from culturekb.builders.association import associate

    config = config or BuildConfig()
    scheme = build_scheme(config)
    t_start = time.perf_counter()
    timings: dict[str, float] = {}

    chosen = [s for s in samples if config.split is None or s.split == config.split]
    if config.cultures:
        from culturekb.kb.cultures import resolve_culture

        wanted = {resolve_culture(c) for c in config.cultures}
        chosen = [s for s in chosen if s.culture in wanted]
    labelled = [s for s in chosen if s.label is not None]
    if not labelled:
        raise DataError(
            f"no labelled samples in split {config.split!r}"
            + (f" for cultures {config.cultures}" if config.cultures else "")
            + f" (got {len(samples)} samples); check the split column or pass --split all"
        )
    for s in labelled:
        if s.label not in scheme.labels:
            raise DataError(f"sample {s.id}: label {s.label!r} is not in scheme {scheme.name!r}: {list(scheme.labels)}")

    components = components or make_components(config, cache_dir=cache_dir)
    calls_before = components.model_calls()
    counts_before = client_counts(components.clients)
    faults = FaultLog(policy=config.on_bad_answer)
    for component in (components.generator, *components.judges):
        if isinstance(getattr(component, "faults", None), FaultLog):
            component.faults = faults  # type: ignore[attr-defined]
    cache = StepCache(Path(cache_dir) / "steps.sqlite" if cache_dir else None)
    stats: dict[str, _StepStats] = defaultdict(_StepStats)
    gen, judges = components.generator, list(components.judges)
    vector_embedders: list[CachedEmbedder] = []
    if vector_cache:
        gen, judges, vector_embedders = _through_vector_cache(cache, gen, judges)
    try:
        # 1. concept extraction
        ex = components.extractor
        concept_lists, extractions = _extract_concepts(cache, ex, labelled, config.chunk_size, stats["concepts"],
                                                       progress)
        # 2. frequency association, Eq. (1)
        t0 = time.perf_counter()
        occurrences: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        samples_by: dict[tuple[str, str], list[Sample]] = defaultdict(list)
        for s, concepts in zip(labelled, concept_lists, strict=True):
            for c in dict.fromkeys([*concepts, *context_concepts(s)]):
                occurrences[s.culture].append((c, s.image_id, str(s.label)))
                samples_by[(s.culture, c)].append(s)
        associations = associate(occurrences, scheme, min_support=config.min_support, tie_break=config.tie_break)
        no_tuples = check_coverage(labelled, concept_lists, associations, config.min_support)  # warns, or exit 2
        timings["association"] = time.perf_counter() - t0

        # 3. rationales
        evidence = [_evidence(samples_by[(a.culture, a.concept)], a.concept, a.label) for a in associations]
        requests = [RationaleRequest(a.concept, a.culture, a.label, dict(a.distribution), a.support, tuple(ev))
                    for a, (ev, _) in zip(associations, evidence, strict=True)]
        rationales: list[list[str] | None] = _run_cached(
            cache, "rationales", requests,
            [stable_hash([gen.id, r.concept, r.culture, r.label, r.distribution, r.evidence]) for r in requests],
            lambda batch: gen.generate(batch), config.chunk_size, stats["rationales"], progress,
            _prefetch(gen, progress, "rationales"),
        )
        # content, not paths: the scheme by what it holds (not its file's path), no batch size or endpoint
        build_id = stable_hash([versioned_config(config.model_dump(mode="json")), scheme.to_dict(), ex.id, gen.id,
                                [j.id for j in components.judges]])[:12]
        tuples = [
            KnowledgeTuple(
                concept=a.concept, culture=a.culture, label=a.label, distribution=dict(a.distribution),
                support=a.support, rationales=list(r or []),
                provenance={"split": config.split, "build_id": build_id, "extractor": ex.id, "generator": gen.id,
                            "judges": [j.id for j in components.judges],
                            "evidence": "no valid answer" if r is None else source if r or not ev else "off topic"},
            )
            for a, r, (ev, source) in zip(associations, rationales, evidence, strict=True)
            if r is not None or config.on_bad_answer != "skip"  # skip: no tuple; flag: kept, flagged (no evidence)
        ]

        # 4. dual-judge reverse validation
        per_judge: list[list[JudgeVerdict]] = []
        inputs = judge_inputs(tuples)
        for n, j in enumerate(judges, start=1):
            raw = _run_cached(
                cache, f"judge:{j.id}", inputs,
                [stable_hash([j.id, i.concept, i.culture, list(i.rationales), i.label]) for i in inputs],
                _verdicts_as_json(j), config.chunk_size, stats["judges"], progress,
                _prefetch(j, progress, f"judge{n}"), f"judge{n}",
            )
            per_judge.append([
                JudgeVerdict(judge=j.id, label=None, agrees=False,
                             detail=f"{BAD_ANSWER_DETAIL} ({config.on_bad_answer})")
                if v is None else JudgeVerdict.model_validate(v) for v in raw
            ])
        verdicts = [[pj[i] for pj in per_judge] for i in range(len(tuples))]
        outcome = apply_verdicts(tuples, verdicts, config.policy)
    finally:
        cache.close()

    kb = KnowledgeBase(
        outcome.tuples, scheme,
        build_config={**config.model_dump(mode="json"), "cultures": sorted({s.culture for s in labelled}),
                      "stimulus_kind": config.stimulus_kind or detect_stimulus_kind(labelled)},
        embedder=None,
        extra_counts={
            "flagged_total": outcome.flagged,
            "dropped_by_policy": outcome.dropped,
            # the training label distribution per culture: the KB-prior predictor's fallback
            "label_prior": {c: dict(Counter(str(s.label) for s in labelled if s.culture == c))
                            for c in sorted({s.culture for s in labelled})},
        },
    )
    kb, review = reapply_ledger(kb, out)  # the reviewers' decisions kept beside `out` (culturekb.kb.ledger)
    extra_report = {**(extra_report or {}), "review": review}
    for name, st in stats.items():
        timings[name] = round(st.seconds, 3)
    report = _report(kb, labelled, outcome, stats, timings, components.model_calls() - calls_before,
                     time.perf_counter() - t_start, extra_report or {})
    report["rationale_topic"], report["cultures_without_tuples"] = rationale_topic_report(kb.tuples, report), no_tuples
    if extractions is not None:
        report["dropped_concepts"] = summarise_drops(labelled, extractions)
    report["model"] = model_report(components.clients, faults, counts_before)
    report["runs"] = _runs(out, report)
    report["model_calls_all_runs"] = sum(int(r.get("model_calls", 0)) for r in report["runs"])
    if vector_embedders:
        report["embeddings"] = {"embedded": sum(e.encoded for e in vector_embedders),
                                "from_vector_cache": sum(e.from_cache for e in vector_embedders),
                                "encode_calls": sum(e.calls for e in vector_embedders)}
    if out is not None:
        from culturekb.builders.report import render_report_markdown

        kb.save(out, extra_files={"build_report.json": report, "build_report.md": render_report_markdown(report)},
                into=into)
    return BuildResult(kb, report)


_MAX_RUNS = 50


def _runs(out: str | Path | None, report: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-run history of the KB directory `out`: the runs its previous build report recorded (a report older
    than the history counts as one run), then this one. A rerun that computes nothing so keeps what earlier runs
    paid for instead of overwriting it with zeros."""
    import datetime as dt
    import json

    previous: list[dict[str, Any]] = []
    path = Path(out) / "build_report.json" if out is not None else None
    if path is not None and path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old = None
        if isinstance(old, dict):
            runs = old.get("runs")
            if isinstance(runs, list):
                previous = [r for r in runs if isinstance(r, dict)]
            else:
                previous = [{"kb_version": old.get("kb_version"), "model_calls": old.get("model_calls", 0)}]
    model = report.get("model", {})
    this = {
        "finished_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "kb_version": report["kb_version"],
        "model_calls": report["model_calls"],
        "cache_hits": model.get("cache_hits", 0),
        "retries_by_cause": {k: v for k, v in model.get("retries_by_cause", {}).items() if v},
        "reasks": model.get("reasks", 0),
        "bad_answers": len(model.get("bad_answers", [])),
        "computed": {k: v["computed"] for k, v in report["steps"].items()},
        "wall_time_s": report["wall_time_s"],
    }
    return [*previous, this][-_MAX_RUNS:]


def _report(
    kb: KnowledgeBase,
    samples: Sequence[Sample],
    outcome: Any,
    stats: dict[str, _StepStats],
    timings: dict[str, float],
    model_calls: int,
    wall: float,
    extra: dict[str, Any],
) -> dict[str, Any]:
    per_culture: dict[str, dict[str, Any]] = {}
    flagged = Counter(t.culture for t in kb.tuples if t.flagged)
    samples_per = Counter(s.culture for s in samples)
    for c in sorted({t.culture for t in kb.tuples} | set(samples_per)):
        ts = kb.for_culture(c)
        per_culture[c] = {
            "samples": samples_per.get(c, 0),
            "tuples": len(ts),
            "rationales": sum(len(t.rationales) for t in ts),
            "flagged": flagged.get(c, 0),
        }
    judged = max(outcome.judged, 1)
    return {
        "kb_version": kb.version,
        "label_scheme": kb.scheme.name,
        "stimulus_kind": kb.build_config.get("stimulus_kind"),
        "samples": len(samples),
        "tuples": len(kb),
        "rationales": sum(len(t.rationales) for t in kb.tuples),
        "flagged": outcome.flagged,
        "flagged_rate": round(outcome.flagged / judged, 4),
        "dropped_by_policy": outcome.dropped,
        "policy": kb.build_config.get("policy"),
        "judge_kappa": None if outcome.kappa is None else round(outcome.kappa, 4),
        "judge_kappa_tuples": outcome.kappa_items,
        "flagged_disagreement": outcome.disagreed,
        "no_evidence": outcome.no_evidence,
        "no_evidence_by_judge": dict(outcome.no_evidence_by_judge),
        "evidence_sources": dict(Counter(str(t.provenance.get("evidence", "explanations")) for t in kb.tuples)),
        "judges": kb.build_config.get("judges"),
        "per_culture": per_culture,
        "model_calls": model_calls,
        "steps": {k: {"computed": v.computed, "cached": v.cached, "seconds": round(v.seconds, 3)}
                  for k, v in stats.items()},
        "timings_s": timings,
        "wall_time_s": round(wall, 3),
        **extra,
    }
