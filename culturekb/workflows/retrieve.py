"""Jobs that read a KB: open an augmenter, look concepts up, the label prior, compare cultures, predict."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from culturekb.config import Settings
from culturekb.errors import ConfigError
from culturekb.kb.schema import Sample
from culturekb.workflows._common import check_base_url, job_settings, response_cache

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from culturekb.inference.augmenter import Augmenter
    from culturekb.inference.base import Prediction


class LookupRow(TypedDict):
    """One row of `lookup_concepts`: the query, its match (None when nothing passed tau) and the status filter
    that served it."""

    query: str
    match: dict[str, Any] | None
    status_filter: str



def open_augmenter(
    kb_dir: str | Path, backend: str | None = None, embedder: str | None = None, tau: float | None = None,
    build_index: bool = True, *, settings: Settings | None = None, status: str | None = None, **store_kw: Any,
) -> Augmenter:
    """An Augmenter over a saved KB, its index loaded read-only (built first when missing and `build_index`).

    Left out, the embedder is the one the index records, and backend, tau and the status filter (``all``,
    ``accepted``, ``pending``) come from the settings (see `culturekb.retrieval.open_retriever`).
    """
    from culturekb.inference.augmenter import Augmenter
    from culturekb.retrieval.filters import check_status
    from culturekb.retrieval.retriever import open_retriever

    settings = job_settings(settings)
    chosen = check_status(status if status is not None else settings.status)
    retriever = open_retriever(kb_dir, embedder, backend, build=build_index, tau=tau, settings=settings,
                               status=chosen, **store_kw)
    return Augmenter(retriever)



def lookup_concepts(
    kb_dir: str | Path, concepts: Sequence[str], culture: str, *, tau: float | None = None, k: int = 1,
    backend: str | None = None, embedder: str | None = None, cross_culture: bool = False,
    settings: Settings | None = None, status: str | None = None,
) -> list[LookupRow]:
    """Exact-then-semantic lookup of concepts in one culture of a saved KB, as plain dicts: each match with its
    label distribution, counts, the 95% Wilson interval of its dominant share, a summary (``fear (7/10), awe
    (2/10)``) and its review status (`culturekb.inference.evidence`). `status`: the status filter (default: the
    ``status`` setting)."""
    from culturekb.inference.evidence import tuple_evidence
    from culturekb.kb.lines import kb_tie_break

    retriever = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status).retriever
    served = retriever.tuple_filter.status
    rows: list[LookupRow] = []
    for query, m in zip(concepts, retriever.lookup(list(concepts), culture, tau=tau, k=k, cross_culture=cross_culture),
                        strict=True):
        if m is None:
            rows.append({"query": query, "match": None, "status_filter": served})
            continue
        t = m.tuple
        evidence = tuple_evidence(t, retriever.kb.scheme, tie_break=kb_tie_break(retriever.kb)).to_dict()
        rows.append({"query": query, "status_filter": served,
                     "match": {"concept": t.concept, "culture": t.culture, "label": t.label, "kind": m.kind,
                               "score": round(float(m.score), 4), "support": t.support,
                               "rationales": t.rationales[:2], **evidence}})
    return rows



def kb_label_prior(kb_dir: str | Path, culture: str | None = None) -> dict[str, dict[str, float]]:
    """Each culture's label prior (its training label distribution, `KnowledgeBase.label_prior`), or only that of
    `culture` (an id or alias); an unknown culture raises ConfigError naming the KB's."""
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(kb_dir)
    priors = kb.label_prior()
    if culture is None:
        return priors
    found = culture if culture in priors else None
    if found is None:
        try:
            found = kb.culture(culture).id
        except ConfigError:
            found = None
    if found is None or found not in priors:
        raise ConfigError(f"culture {culture!r} is not in KB {kb_dir}; its cultures are: "
                          f"{', '.join(priors) or '(none)'}")
    return {found: priors[found]}



class ComparisonPage(TypedDict):
    """What `compare_kb` gives: the comparison as JSON-ready data and as Markdown."""

    json: dict[str, Any]
    markdown: str



def compare_kb(
    kb_dir: str | Path, cultures: Sequence[str] | None = None, *, min_support: int = 3, tau: float | None = None,
    min_margin: float | None = 0.25, top: int = 20, status: str | None = None, backend: str | None = None,
    settings: Settings | None = None,
) -> ComparisonPage:
    """Concepts on which a saved KB's cultures disagree (`culturekb.retrieval.compare`), aligned with the embedder
    its index records; `status` filters tuples by review status (default: the status setting)."""
    from culturekb.retrieval.compare import compare_cultures, render_comparison_markdown
    from culturekb.retrieval.filters import check_status
    from culturekb.retrieval.retriever import DEFAULT_TAU, open_retriever

    settings = job_settings(settings)
    chosen = check_status(status if status is not None else settings.status)
    retriever = open_retriever(kb_dir, backend=backend, settings=settings, status=chosen)
    tau_ = tau if tau is not None else settings.tau if settings.tau is not None else DEFAULT_TAU
    found = compare_cultures(retriever, cultures, min_support=min_support, tau=tau_, min_margin=min_margin)
    data = found.to_dict()
    data["disagreements"] = data["disagreements"][:top]
    return {"json": data,
            "markdown": f"# Where cultures disagree: KB {retriever.kb.version}\n\n"
                        + render_comparison_markdown(found, top=top)}



def predict_job(
    kb_dir: str | Path, model: str, *, samples: Sequence[Sample], mode: str = "know",
    prompt_language: str | None = None, base_url: str | None = None, backend: str | None = None,
    embedder: str | None = None, cache_dir: str | Path | None = None, tau: float | None = None,
    settings: Settings | None = None, status: str | None = None,
) -> list[Prediction]:
    """Predictions for samples (an image + culture, or a file of samples) with any backend; what is left out
    (the status filter too) comes from the settings (`culturekb.config`) and the KB's index."""
    from culturekb.inference.predictors import make_predictor

    check_base_url(base_url)
    settings = job_settings(settings)
    augmenter = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status)
    kw: dict[str, Any] = {}
    if model != "kb-prior":
        kw["cache"] = response_cache(cache_dir, settings)
        kw["max_concurrency"] = settings.max_concurrency
        kw["parse_fallback"] = settings.parse_fallback
    predictor = make_predictor(model, augmenter, base_url=base_url or settings.base_url, **kw)
    return list(predictor.predict(samples, mode=mode, prompt_language=prompt_language))
