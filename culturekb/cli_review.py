"""`culturekb review ...`: export a queue, import decisions, apply the ledger, serve the review page.

Registered by `culturekb.cli`; the decisions live in the review ledger beside the KB (``<kb>.review.jsonl``,
`culturekb.kb.ledger`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from culturekb._cli_errors import guard as _guard

__all__ = ["review_app"]

review_app = typer.Typer(no_args_is_help=True, help="Review flagged tuples: the review page, queue files (CSV, JSONL, "
                         "Label Studio JSON) and the review ledger beside the KB.")
out = Console(soft_wrap=True)


def _say(text: str) -> None:
    out.print(text, markup=False, highlight=False)


def _counts(counts: dict[str, int], keys: tuple[str, ...] = ()) -> str:
    """``{'approved': 1, 'already_in_ledger': 0}`` -> ``approved 1, already in ledger 0`` (none: ``nothing``)."""
    items = [(k, counts.get(k, 0)) for k in keys] if keys else list(counts.items())
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in items) or "nothing"


def _say_not_applied(res: dict[str, object], ledger: object) -> None:
    """One line per ledger decision that was not applied (to re-check, or its tuple gone), with why and the fix."""
    entries = [*(res.get("to_recheck") or []), *(res.get("gone") or [])]  # type: ignore[misc]
    for e in entries[:20]:
        label = f" to {e['label']!r}" if e.get("label") else ""
        _say(f"  not applied: {ledger}: {e['decision']}{label} of tuple {e['tuple_id']!r} by {e['reviewer']!r} at "
             f"{e['time']}: {e['reason']}; decide on it again (culturekb review serve, or export and import a queue)")
    if len(entries) > 20:
        _say(f"  ... and {len(entries) - 20} more (culturekb review status)")


@review_app.command("export")
def review_export(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    queue: Annotated[Path, typer.Option("--out", "-o", help="queue file: .csv, .jsonl, or .json (Label Studio tasks, "
                                        "with the labeling config written beside it as .xml)")],
    all_flagged: Annotated[bool, typer.Option(help="include every flagged tuple, not only pending ones")] = False,
) -> None:
    """Write the pending (flagged) tuples to a review queue."""
    from culturekb.workflows.review import export_review

    n = _guard(lambda: export_review(kb, queue, include_all_flagged=all_flagged))
    _say(f"{n} tuples written to {queue}; fill in 'decision' (approve/reject/relabel) and import it, or review "
         f"them in the page: culturekb review serve {kb}")


@review_app.command("import")
def review_import(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    decisions: Annotated[Path, typer.Argument(help="the reviewed queue (.csv, .jsonl, or a Label Studio .json "
                                              "export)")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="new KB directory (default: in place)")] = None,
    reviewer: Annotated[str | None, typer.Option(help="name for rows without a reviewer cell")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Add reviewed decisions to the ledger beside the KB and apply it; every row is checked first, and a bad row
    (unknown tuple or label, edited cell, stale evidence) writes nothing. The KB's other files are kept."""
    from culturekb.workflows.review import import_review

    res = _guard(lambda: import_review(kb, decisions, out_dir, reviewer))
    if as_json:
        out.print_json(json.dumps(res, ensure_ascii=False))
        return
    keys = ("approved", "rejected", "relabelled", "undecided", "already_in_ledger")
    counts = _counts(res, keys)
    if not res["written"] and not any(res[k] for k in ("approved", "rejected", "relabelled")):
        _say(f"review applied: {counts}; no decision in {decisions}: nothing written")
        return
    _say(f"review applied: {counts}; ledger {res['ledger']}; KB {out_dir or kb} version {res['kb_version']}"
         + (f"; index re-sealed: {', '.join(res['index'])}" if res.get("index") else "")
         + (f"; to re-check: {len(res['to_recheck'])}" if res.get("to_recheck") else ""))
    _say_not_applied(res, res["ledger"])


@review_app.command("apply")
def review_apply(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="new KB directory (default: in place)")] = None,
) -> None:
    """Apply the review ledger beside the KB to it (what every build does on its own)."""
    from culturekb.kb.ledger import ledger_path
    from culturekb.workflows.review import apply_review_ledger

    res = _guard(lambda: apply_review_ledger(kb, out_dir))
    _say(f"applied {_counts(res['applied'])}; to re-check {len(res['to_recheck'])}, gone {len(res['gone'])}; KB "
         f"version {res['kb_version']}" + ("" if res["written"] else " (unchanged)"))
    _say_not_applied(res, ledger_path(kb))


@review_app.command("status")
def review_status(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Counts of the review: approved, relabelled, rejected, to re-check, reviewers and their kappa."""
    from culturekb.workflows.review import review_status as job

    res = _guard(lambda: job(kb))
    if as_json:
        out.print_json(json.dumps(res, ensure_ascii=False))
        return
    overall = (res["agreement"] or {}).get("overall")
    _say(f"ledger {res['ledger']}: {res['decisions']} decisions by {', '.join(res['reviewers']) or 'nobody'}; "
         f"approved {res['approved']}, relabelled {res['relabelled']}, rejected {res['rejected']}, to re-check "
         f"{res['to_recheck']}, not applied {res['not_applied']}; reviewers' kappa "
         + (f"{overall['kappa']} over {overall['tuples']} tuples" if overall else "not known"))


@review_app.command("serve")
def review_serve(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    data: Annotated[list[Path] | None, typer.Option("--data", help="the training data the KB was built from (repeat "
                                                     "for several files): shows the images and texts behind each "
                                                     "tuple")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder the data's image paths are relative to")] = None,
    reviewer: Annotated[str | None, typer.Option(help="your name (else the page asks)")] = None,
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8765,
    apply: Annotated[bool, typer.Option("--apply/--no-apply", help="apply the ledger to the KB when the page "
                                        "stops")] = True,
) -> None:
    """Open the review page: one flagged tuple at a time, approve / reject / relabel by key, each decision written
    to the ledger at once."""
    from culturekb.api import _require_api_extra

    def start() -> None:
        _require_api_extra()
        from culturekb.api.review_page import serve_review
        from culturekb.workflows import load_kb_samples

        samples = load_kb_samples(kb, data, data_root) if data else []
        _say(f"review page on http://{host}:{port}/ (Ctrl-C to stop); decisions go to the ledger beside {kb}")
        serve_review(kb, host=host, port=port, reviewer=reviewer, samples=samples)

    _guard(start)
    if apply:
        from culturekb.workflows.review import apply_review_ledger

        res = _guard(lambda: apply_review_ledger(kb))
        _say(f"ledger applied to {kb}: {_counts(res['applied'])}; KB version {res['kb_version']}")
