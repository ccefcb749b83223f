"""`culturekb kb ...`: describe a KB (info: version, counts by review status, kappa, harness arguments; card).

Registered by `culturekb.cli`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from culturekb._cli_errors import guard as _guard

__all__ = ["kb_app"]

kb_app = typer.Typer(no_args_is_help=True, help="Describe a KB: its card, version, counts and harness arguments.")
out = Console(soft_wrap=True)


@kb_app.command("info")
def kb_info(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Print a KB's version, label scheme, cultures, counts by review status, judges' kappa, card path and the
    ready-to-paste lmms-eval model_args, inspect_ai solver args and VLMEvalKit kwargs."""
    from culturekb.workflows import kb_info as info_job

    info = _guard(lambda: info_job(kb))
    if as_json:
        out.print_json(json.dumps(info, ensure_ascii=False))
        return
    r, j, args = info["review"], info["judges"], info["harness_args"]
    lines = [f"KB {info['kb_dir']}", f"  version: {info['kb_version']}",
             f"  label scheme: {info['label_scheme']} ({', '.join(info['labels'])})",
             f"  tuples: {info['tuples']} over {info['concepts']} concepts; accepted {r['accepted']}, approved "
             f"{r['approved']}, relabelled {r['relabelled']}, pending {r['pending']}, rejected {r['rejected']} "
             f"(flagged {r['flagged']}); to re-check {r['to_recheck']}", f"  review ledger: {info['ledger']}: "
             f"{r['decisions']} decisions by {', '.join(r['reviewers']) or 'nobody'}; reviewers' Cohen's kappa "
             + (f"{r['agreement']['overall']['kappa']} over {r['agreement']['overall']['tuples']} tuples"
                if r["agreement"] else "not known"), "  cultures:"]
    lines += [f"    {c['id']} ({c['name']}): {c['tuples']} tuples (accepted {c['accepted']}, approved {c['approved']}, "
              f"relabelled {c['relabelled']}, pending {c['pending']}, rejected {c['rejected']}, to re-check "
              f"{c['to_recheck']}; reviewers' kappa {c['reviewer_kappa'] if c['reviewer_kappa'] is not None else '-'})"
              for c in info["cultures"]]
    kappa = "unknown" if j["kappa"] is None else f"{j['kappa']} ({j['kappa_band']})"
    lines += [f"  judges: {', '.join(map(str, j['judges'])) or 'none recorded'}; Cohen's kappa {kappa}",
              f"  card: {info['card'] or 'none (write one with `culturekb kb card KB`)'}", "",
              "lmms-eval --model culturekb --model_args:", f"  {args['lmms_eval']}",
              "inspect eval ... --solver culturekb/culturekb_knowledge:", f"  {args['inspect_ai']}",
              "VLMEvalKit (run_vlmevalkit / CultureKBVLM keyword arguments):", f"  {args['vlmevalkit']}"]
    out.print("\n".join(lines), markup=False, highlight=False, soft_wrap=True)


@kb_app.command("card")
def kb_card(kb: Annotated[Path, typer.Argument(help="KB directory")]) -> None:
    """(Re)write the KB card, KB_CARD.md, from the KB and its build report; your text outside the generated
    markers is kept."""
    from culturekb.workflows import kb_card as card_job

    path = _guard(lambda: card_job(kb))
    out.print(f"KB card written to {path}", markup=False, highlight=False, soft_wrap=True)
