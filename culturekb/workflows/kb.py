"""Jobs on a built KB: inspect it, its info and card, the build report, the review queue, its index."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from culturekb.config import Settings
from culturekb.workflows.data import _settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from culturekb.kb.store import KnowledgeBase


class KBInspection(TypedDict):
    """What `inspect_kb` gives: the loaded KB, JSON-ready stats and divergence, and the same as Markdown."""

    kb: KnowledgeBase
    json: dict[str, Any]
    markdown: str



class IndexSummary(TypedDict):
    """What `index_kb` gives: the index built for a KB version, its backend, embedder and size."""

    kb_version: str
    backend: str
    embedder: str
    embedder_spec: str
    count: int
    directory: str



def inspect_kb(path: str | Path, top: int = 10) -> KBInspection:
    """Stats per culture and the most divergent concepts, as JSON-ready data and as Markdown."""
    from culturekb.kb.stats import divergence, kb_stats, render_stats_markdown
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(path)
    stats = kb_stats(kb)
    divs = divergence(kb, top=top)
    return {
        "kb": kb,
        "json": {"kb_version": kb.version, "stats": stats, "divergence": [_plain(d) for d in divs]},
        "markdown": f"# KB {kb.version} ({kb.scheme.name})\n\n" + render_stats_markdown(stats, divs),
    }



def _plain(obj: Any) -> Any:
    import dataclasses

    return dataclasses.asdict(obj) if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else obj



def kb_info(kb_dir: str | Path) -> dict[str, Any]:
    """What `culturekb kb info` shows: version, scheme, cultures with tuples by review status, judges and their
    kappa, the card's path (None when the KB has none) and the ready-to-paste harness arguments
    (`culturekb.inference.adapters.harness_args_for`: lmms-eval model_args, inspect_ai -S args, VLMEvalKit
    kwargs)."""
    from culturekb.inference.adapters import harness_args_for
    from culturekb.kb.card import CARD, card_facts, read_report
    from culturekb.kb.ledger import ledger_path, read_ledger
    from culturekb.kb.store import KnowledgeBase

    directory = Path(kb_dir)
    kb = KnowledgeBase.load(directory)
    facts = card_facts(kb, read_report(directory), read_ledger(ledger_path(directory)))
    card = directory / CARD
    return {
        "kb_dir": str(directory),
        **{k: facts[k] for k in ("kb_version", "label_scheme", "labels", "tuples", "concepts", "cultures", "review",
                                 "judges", "sources")},
        "card": str(card) if card.is_file() else None,
        "ledger": str(ledger_path(directory)),
        "harness_args": harness_args_for(directory),
    }



def kb_card(kb_dir: str | Path) -> Path:
    """(Re)generate `KB_CARD.md` of an existing KB, keeping the user's text outside the generated markers."""
    from culturekb.kb.store import write_card

    return write_card(kb_dir)



def render_build_report(report: dict[str, Any]) -> str:
    """The Markdown page of a build report (what `culturekb build` prints)."""
    from culturekb.builders.report import render_report_markdown

    return render_report_markdown(report)



def export_review(kb_dir: str | Path, queue: str | Path, include_all_flagged: bool = False) -> int:
    """Write a KB's pending (or all flagged) tuples to a review queue (`culturekb.workflows.review`)."""
    from culturekb.workflows.review import export_review as job

    return job(kb_dir, queue, include_all_flagged)



def apply_review(kb_dir: str | Path, decisions: str | Path, out: str | Path | None = None,
                 reviewer: str | None = None) -> dict[str, Any]:
    """Add a reviewed queue's decisions to the ledger beside the KB and apply it (`culturekb.workflows.review.
    import_review`); returns the decision counts and what was written."""
    from culturekb.workflows.review import import_review

    return import_review(kb_dir, decisions, out, reviewer)



def index_kb(
    kb_dir: str | Path, backend: str | None = None, embedder: str | None = None, *,
    settings: Settings | None = None, **store_kw: Any,
) -> IndexSummary:
    """Build (or rebuild) the vector index of a KB under `<kb>/index/<backend>`.

    `backend` and `embedder` default to the configured ones (`culturekb.config`); a rebuild of an existing
    index without a configured embedder keeps that index's embedder.
    """
    from culturekb.kb.store import KnowledgeBase
    from culturekb.models.factory import make_embedder
    from culturekb.retrieval.index import INDEX_META, build_index, index_dir, read_index_meta

    settings = _settings(settings)
    kb = KnowledgeBase.load(kb_dir)
    backend = backend or settings.backend
    previous = index_dir(kb, backend)
    spec = embedder or (settings.embedder if settings.is_set("embedder") else None)
    if spec is None and (previous / INDEX_META).is_file():
        spec = read_index_meta(previous).embedder_spec
    spec = spec or settings.embedder
    index = build_index(kb, make_embedder(spec), backend, embedder_spec=spec, **store_kw)
    meta = index.meta
    return {"kb_version": kb.version, "backend": backend, "embedder": meta.embedder, "embedder_spec": spec,
            "count": meta.count, "directory": str(index.directory or "")}
