"""Jobs on a built KB: inspect it, its info and card, the build report, the review queue, its index."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from culturekb.config import Settings
from culturekb.workflows._common import job_settings

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



def inspect_kb(path: str | Path, top: int = 10, *, min_support: int = 2, settings: Settings | None = None
               ) -> KBInspection:
    """Stats per culture and the concepts on which cultures diverge, as JSON-ready data and as Markdown.

    Divergence is `compare`'s (`culturekb.retrieval.compare.compare_cultures`): concepts aligned across cultures by
    identical strings and by translation (the multilingual embedder the KB's index records, mutual nearest
    neighbours by CSLS), tuples of support >= `min_support`. A KB without an index aligns identical strings only,
    and says so."""
    from culturekb.kb.stats import kb_stats, render_stats_markdown
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(path)
    stats = kb_stats(kb)
    comparison, why = cross_culture_comparison(path, kb, min_support=min_support, settings=settings)
    markdown = f"# KB {kb.version} ({kb.scheme.name})\n\n" + render_stats_markdown(stats)
    divs: list[dict[str, Any]] = []
    if comparison is not None:
        from culturekb.retrieval.compare import render_comparison_markdown

        divs = comparison.to_dict()["disagreements"][:top]
        markdown += ("\n## Where the cultures diverge\n\n" + render_comparison_markdown(comparison, top=top)
                     + (f"\n\n{why}" if why else "") + "\n")
    elif why:
        markdown += f"\n## Where the cultures diverge\n\n{why}\n"
    return {
        "kb": kb,
        "json": {"kb_version": kb.version, "stats": stats, "divergence": divs,
                 "alignment": comparison.settings if comparison is not None else {"note": why}},
        "markdown": markdown,
    }


def cross_culture_comparison(path: str | Path, kb: KnowledgeBase, *, min_support: int = 2,
                             settings: Settings | None = None) -> tuple[Any, str]:
    """`compare`'s comparison of a saved KB's cultures with the embedder its index records (identical strings only
    when it has no index), and a note to show with it; (None, why) for a KB of fewer than two cultures."""
    from culturekb.errors import CultureKBError
    from culturekb.retrieval.compare import compare_cultures
    from culturekb.retrieval.retriever import open_retriever

    if len({t.culture for t in kb.tuples}) < 2:
        return None, "One culture only: nothing to compare."
    try:
        source: Any = open_retriever(kb, build=False, settings=job_settings(settings), calibrated=False)
        note = ""
    except CultureKBError as exc:
        source = kb
        note = (f"The KB has no index ({str(exc).splitlines()[0]}), so concepts were aligned by identical strings "
                f"only; `culturekb index --kb {path}` lets translations align too.")
    return compare_cultures(source, min_support=min_support), note



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

    settings = job_settings(settings)
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
