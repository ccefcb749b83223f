"""Jobs of the human review: export a queue, import decisions into the ledger, apply the ledger to a KB.

The decisions live in the ledger beside the KB (`culturekb.kb.ledger`, ``<kb>.review.jsonl``). Importing adds
to the ledger, then applies it: the KB is saved again only when its tuples change, with every other file of the
folder carried over (index/, build report, run.log, calibration.json, the card's notes). A review changes labels
and statuses, never the tuple ids or concepts an index holds vectors of, so the index is re-sealed for the new
KB version, not rebuilt; so is calibration.json (its ``fitted_on.carried_over`` says so: run `culturekb
calibrate` again to fit on the reviewed KB).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

__all__ = ["export_review", "import_review", "apply_review_ledger", "review_status"]


def _same(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def export_review(kb_dir: str | Path, queue: str | Path, include_all_flagged: bool = False) -> int:
    """Write a KB's pending (or all flagged) tuples to a review queue: .csv, .jsonl, or .json Label Studio tasks
    (with the ledger's decisions on each tuple as annotations, and the labeling config beside it as .xml)."""
    from culturekb.builders.review import export_label_studio, export_review_queue, queue_tuples
    from culturekb.kb.ledger import ledger_path, read_ledger
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(kb_dir)
    if Path(queue).suffix == ".json":
        return export_label_studio(kb, queue, queue_tuples(kb, include_all_flagged), read_ledger(ledger_path(kb_dir)))
    return export_review_queue(kb, queue, include_all_flagged=include_all_flagged)


def import_review(kb_dir: str | Path, decisions: str | Path, out: str | Path | None = None,
                  reviewer: str | None = None) -> dict[str, Any]:
    """Check every row of a reviewed queue (CSV, JSONL, Label Studio JSON), add its decisions to the ledger and
    apply the ledger to the KB (saved to `out`, default in place). A queue without decisions writes nothing."""
    from culturekb._io import exclusive_lock
    from culturekb.builders.review import read_review_decisions
    from culturekb.kb.ledger import append_decisions, ledger_path, read_ledger
    from culturekb.kb.store import KnowledgeBase, check_kb_target

    target = Path(out) if out is not None else Path(kb_dir)
    if not _same(target, kb_dir):
        check_kb_target(target)
    kb = KnowledgeBase.load(kb_dir)
    ledger = read_ledger(ledger_path(kb_dir))
    new, summary = read_review_decisions(kb, decisions, reviewer or "unnamed", ledger)
    result: dict[str, Any] = {**summary, "ledger": str(ledger_path(target)), "written": False}
    if not new and _same(target, kb_dir):
        return result
    with exclusive_lock(target, "review import", "wait for the build or import writing there to finish"):
        if not _same(target, kb_dir):
            _merge_ledger(ledger_path(kb_dir), ledger_path(target))
        append_decisions(ledger_path(target), new)
        applied = _apply(kb, target)
    return {**result, **applied}


def _merge_ledger(source: Path, target: Path) -> None:
    """The target ledger gets the source ledger's records it lacks (a KB reviewed into a new --out)."""
    from culturekb.kb.ledger import append_decisions, read_ledger

    if not source.is_file():
        return
    if not target.exists():
        shutil.copy2(source, target)
        return
    have = {d.model_dump_json() for d in read_ledger(target)}
    append_decisions(target, [d for d in read_ledger(source) if d.model_dump_json() not in have])


def apply_review_ledger(kb_dir: str | Path, out: str | Path | None = None) -> dict[str, Any]:
    """Apply the ledger beside `kb_dir` to the KB (saved to `out`, default in place): what `review import` and the
    review page's Apply do, and what every build does on its own."""
    from culturekb._io import exclusive_lock
    from culturekb.kb.store import KnowledgeBase, check_kb_target

    target = Path(out) if out is not None else Path(kb_dir)
    if not _same(target, kb_dir):
        check_kb_target(target)
    kb = KnowledgeBase.load(kb_dir)
    with exclusive_lock(target, "review apply", "wait for the build or import writing there to finish"):
        if not _same(target, kb_dir):
            from culturekb.kb.ledger import ledger_path

            _merge_ledger(ledger_path(kb_dir), ledger_path(target))
        return _apply(kb, target)


def _apply(kb: Any, target: Path) -> dict[str, Any]:
    from culturekb.kb.ledger import apply_ledger, ledger_path, read_ledger
    from culturekb.kb.store import write_card
    from culturekb.retrieval.index import carry_index

    source = Path(kb.path)
    new, state = apply_ledger(kb, read_ledger(ledger_path(target)))
    out: dict[str, Any] = {"kb_version": new.version, "previous_version": kb.version, **state.to_dict(),
                           "written": True, "index": [], "calibration": None}
    if new is kb and _same(target, source):
        write_card(target)  # the reviewers and their agreement may have changed; the tuples did not
        out.update(written=False)
        return out
    new.save(target, keep_files_of=source)
    out["index"] = carry_index(target, new, kb.version)
    out["calibration"] = _carry_calibration(target, kb.version, new.version, state.applied)
    return out


def _carry_calibration(kb_dir: Path, old: str, new: str, applied: Any) -> str | None:
    from culturekb.kb.calibration import read_calibration, write_calibration

    cal = read_calibration(kb_dir)
    if cal is None or cal.kb_version != old or old == new:
        return None
    carried = {"from_kb_version": old, "review": dict(applied),
               "note": "re-sealed after a review (labels and statuses changed, distributions did not); run "
                       "`culturekb calibrate` again to fit on the reviewed KB"}
    write_calibration(kb_dir, cal.model_copy(update={"kb_version": new,
                                                     "fitted_on": {**cal.fitted_on, "carried_over": carried}}))
    log.warning("calibration.json re-sealed for the reviewed KB %s; refit it with `culturekb calibrate` to include "
                "the review", new)
    return new


def review_status(kb_dir: str | Path) -> dict[str, Any]:
    """The review facts of a KB and its ledger (`culturekb.kb.ledger.review_facts`), with the ledger's path."""
    from culturekb.kb.ledger import ledger_path, read_ledger, review_facts
    from culturekb.kb.store import KnowledgeBase

    kb = KnowledgeBase.load(kb_dir)
    return {"ledger": str(ledger_path(kb_dir)), **review_facts(kb, read_ledger(ledger_path(kb_dir)))}
