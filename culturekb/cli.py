"""The `culturekb` command line. It parses arguments and calls library functions; it holds no logic."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from culturekb.errors import CultureKBError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build, inspect and serve cultural knowledge bases.")
review_app = typer.Typer(no_args_is_help=True, help="Export flagged tuples for human review; import decisions.")
app.add_typer(review_app, name="review")

out = Console()
err = Console(stderr=True)


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="debug logging")] = False) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


@app.command()
def build(
    data: Annotated[list[Path], typer.Argument(help="training data: ArtEmis/ArtELingo CSV or culturekb JSONL files")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="KB directory to write")],
    data_root: Annotated[Path | None, typer.Option(help="folder the image paths are relative to")] = None,
    scheme: Annotated[str, typer.Option(help="label scheme: artemis9, cedar14, a file, or a comma list")] = "artemis9",
    cultures: Annotated[str | None, typer.Option(help="comma list of cultures to build (default: all in the data)")] = None,
    split: Annotated[str, typer.Option(help="split to build from; 'all' for every sample")] = "train",
    concepts: Annotated[str, typer.Option(help="concept extractor: text | precomputed | vlm:openai:MODEL")] = "text",
    rationales: Annotated[str, typer.Option(help="rationale generator: extractive | openai:MODEL")] = "extractive",
    judges: Annotated[str, typer.Option(help="two judges: lexicon, prototype or openai:MODEL")] = "lexicon,prototype",
    policy: Annotated[str, typer.Option(help="flagged tuples: pending | drop | keep")] = "pending",
    min_support: Annotated[int, typer.Option(help="minimum number of images per (concept, culture)")] = 2,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint for openai:MODEL backends")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="step and response cache (default .culturekb-cache)")] = None,
    config: Annotated[Path | None, typer.Option(help="TOML settings file")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
) -> None:
    """Build a knowledge base from a labelled training split (offline by default)."""
    from culturekb.workflows import build_from_files

    def run() -> Any:
        return build_from_files(
            data, out_dir, data_root=data_root, cache_dir=cache_dir, settings_file=config,
            scheme=scheme, cultures=_csv(cultures), split=None if split == "all" else split, concepts=concepts,
            rationales=rationales, judges=_csv(judges) or [], policy=policy, min_support=min_support,
            base_url=base_url,
        )

    result = _guard(run)
    if as_json:
        out.print_json(json.dumps(result.report, ensure_ascii=False))
    else:
        from culturekb.builders.report import render_report_markdown

        out.print(render_report_markdown(result.report), markup=False)
        out.print(f"KB written to {out_dir}")


@app.command()
def inspect(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    top: Annotated[int, typer.Option(help="how many divergent concepts to list")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of Markdown")] = False,
) -> None:
    """Show a KB's stats per culture and the concepts on which cultures diverge most."""
    from culturekb.workflows import inspect_kb

    res = _guard(lambda: inspect_kb(kb, top=top))
    if as_json:
        out.print_json(json.dumps(res["json"], ensure_ascii=False))
    else:
        out.print(res["markdown"], markup=False)


@review_app.command("export")
def review_export(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    queue: Annotated[Path, typer.Option("--out", "-o", help="queue file, .csv or .jsonl")],
    all_flagged: Annotated[bool, typer.Option(help="include every flagged tuple, not only pending ones")] = False,
) -> None:
    """Write the pending (flagged) tuples to a review queue."""
    from culturekb.builders.review import export_review_queue
    from culturekb.kb.store import KnowledgeBase

    n = _guard(lambda: export_review_queue(KnowledgeBase.load(kb), queue, include_all_flagged=all_flagged))
    out.print(f"{n} tuples written to {queue}; fill in 'decision' (approve/reject/relabel) and import it")


@review_app.command("import")
def review_import(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    decisions: Annotated[Path, typer.Argument(help="the reviewed queue file (.csv or .jsonl)")],
    out_dir: Annotated[Path | None, typer.Option("--out", "-o", help="write the new KB here (default: in place)")] = None,
) -> None:
    """Apply human decisions to a KB; all rows are checked before anything is written."""
    from culturekb.workflows import apply_review

    summary = _guard(lambda: apply_review(kb, decisions, out_dir or kb))
    out.print(f"review applied: {dict(summary)}; KB written to {out_dir or kb}")


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="where the demo KB goes")] = Path("demo-output"),
) -> None:
    """Run the main job offline on the small real sample shipped with the package."""
    from culturekb.workflows import run_demo

    res = _guard(lambda: run_demo(out_dir, console=out))
    out.print(res["markdown"], markup=False)


def _guard(fn: Any) -> Any:
    """Run `fn`; a CultureKBError becomes a one-paragraph message on stderr and exit status 2."""
    try:
        return fn()
    except CultureKBError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        err.print("interrupted; finished steps are cached, run the same command again to resume")
        raise typer.Exit(130) from None


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
