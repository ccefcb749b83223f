"""The `culturekb` command line. It parses arguments and calls library functions; it holds no logic."""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from typer.core import TyperGroup

if TYPE_CHECKING:  # typer ships its own copy of click; its group methods take and return these types
    from collections.abc import Mapping

    from typer._click.core import Command, Context

from culturekb._cli_errors import fail as _fail
from culturekb._cli_errors import guard as _guard
from culturekb._cli_help import help_types_in_words
from culturekb.cli_kb import kb_app  # kb info, kb card (culturekb/cli_kb.py)
from culturekb.cli_review import review_app  # review: page, queues, ledger (culturekb/cli_review.py)
from culturekb.errors import ConfigError, CultureKBError

help_types_in_words()

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Build, inspect and serve cultural knowledge bases.")

app.add_typer(review_app, name="review")
app.add_typer(kb_app, name="kb")

out = Console(soft_wrap=True)


_CONFIG_HELP = "TOML settings file (default $CULTUREKB_CONFIG, else ./culturekb.toml)"
_BACKEND_HELP = "index backend (default: the backend setting, else the KB's only index)"
_EMBEDDER_HELP = "embedder the index was built with (default: the one the index records; another one is refused)"
_STATUS_HELP = ("which tuples are served: all (every tuple but rejected ones; pending ones marked unreviewed), "
                "accepted (reviewed only) or pending (default: the status setting, all)")


def _csv(value: str | None, option: str = "a comma list") -> list[str] | None:
    """A comma-list option: None when left out; one that names nothing (``,``) is refused, not read as left out."""
    from culturekb._records import comma_list

    return _guard(lambda: comma_list(value, option))


def _print_report(res: Mapping[str, Any], as_json: bool) -> None:
    """A workflow's report (``{"json": ..., "markdown": ...}``): the JSON with --json, else the Markdown."""
    if as_json:
        out.print_json(json.dumps(res["json"], ensure_ascii=False))
    else:
        out.print(res["markdown"], markup=False)


def _print_version(value: bool) -> None:
    if value:
        from culturekb._version import __version__

        out.print(f"culturekb {__version__}", markup=False, highlight=False)
        raise typer.Exit()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the current sys.stderr (not the one at creation: test runners swap it per command)."""

    _culturekb_cli = True

    @property  # type: ignore[override]
    def stream(self) -> Any:
        import sys

        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def setup_logging(verbosity: int) -> None:
    """Logging for one command: warnings only; -v: DEBUG from culturekb's loggers; -vv: DEBUG from every library.

    Third-party DEBUG output (httpx, urllib3, filelock, PIL ...) drowns culturekb's own lines, so one -v
    leaves other libraries at WARNING.
    """
    root = logging.getLogger()
    if not root.handlers:  # as logging.basicConfig: a host that set up logging (pytest, an app) keeps its own
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    for h in root.handlers:
        if getattr(h, "_culturekb_cli", False):  # INFO lines go to run.log files, not to the console
            h.setLevel(logging.DEBUG if verbosity >= 1 else logging.WARNING)
    root.setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)
    logging.getLogger("culturekb").setLevel(logging.DEBUG if verbosity >= 1 else logging.NOTSET)


@app.callback()
def _main(
    verbose: Annotated[int, typer.Option(
        "--verbose", "-v", count=True, help="-v: debug logging from culturekb; -vv: from every library too")] = 0,
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="print the version and exit")] = False,
) -> None:
    setup_logging(verbose)


@app.command()
def build(
    data: Annotated[list[Path], typer.Argument(help="training data: ArtEmis/ArtELingo CSV or culturekb JSONL files")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="KB directory to write")],
    data_root: Annotated[Path | None, typer.Option(help="folder the image paths are relative to")] = None,
    scheme: Annotated[str, typer.Option(help="label scheme: artemis9, cedar14, a file, or a comma list")] = "artemis9",
    cultures: Annotated[str | None, typer.Option(help="comma list of cultures (default: all in the data)")] = None,
    split: Annotated[str, typer.Option(help="split to build from; 'all' for every sample")] = "train",
    concepts: Annotated[str, typer.Option(help="concept extractor: text | precomputed | vlm:openai:MODEL")] = "text",
    rationales: Annotated[str, typer.Option(help="rationale generator: extractive | openai:MODEL")] = "extractive",
    judges: Annotated[str, typer.Option(help="two judges: lexicon, prototype or openai:MODEL")] = "lexicon,prototype",
    policy: Annotated[str, typer.Option(help="flagged tuples: pending | drop | keep")] = "pending",
    min_support: Annotated[int, typer.Option(
        min=1, help="minimum number of samples (images, texts) per (concept, culture)")
                           ] = 2,
    on_bad_answer: Annotated[str, typer.Option(
        help="a model's bad answer after retries and re-asks: fail (stop; rerun resumes), skip (drop the tuple) or "
             "flag (keep it flagged for review); the build report lists them")] = "fail",
    cultures_file: Annotated[Path | None, typer.Option(
        help="JSON or TOML file naming cultures (id, name, aliases, language, western); kept in the KB")] = None,
    label_words: Annotated[Path | None, typer.Option(
        help='label words file, JSON or TOML: {"<lang>": {"<label>": ["word", ...]}}; kept in the KB\'s scheme, '
             "so its prompts show and its parser reads them")] = None,
    label_column_words: Annotated[list[str] | None, typer.Option(
        help="COLUMN=LANG: a data column (CSV) or metadata key (JSONL) holding the row's label in LANG's words "
             "('native': the culture's language); label_<lang> and label_native columns are read without it. "
             "The words learned go into the KB's scheme (build report: label words)")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint for openai:MODEL backends")] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        help="step and response cache (default: the cache_dir setting, else the XDG cache folder)")] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the build report as JSON")] = False,
    aggregate: Annotated[str, typer.Option(help="rows repeating an item in one culture: majority (their majority "
                                                "label; a tie drops the item, counted) or none (refuse)")
                         ] = "majority",
    field_map: Annotated[str | None, typer.Option("--map", help="a release's keys -> the sample fields: a built-in "
                                                  "map (xed ...), a .toml/.json map file, or field=KEY pairs")] = None,
    on_bad_row: Annotated[str, typer.Option(
        help="rows of the data that cannot be read: fail (report every bad row of the file, counts per kind and "
             "the first lines of each, and stop) or skip (leave them out; the build report lists them)")] = "fail",
    stimulus_kind: Annotated[str | None, typer.Option(
        help="what the samples are: artworks, images, texts or scenarios (default: from the samples: a WikiArt "
             "style -> artworks, an image -> images, else texts); knowledge headers and reports say it")] = None,
    calibrate: Annotated[bool, typer.Option(
        help="index the KB and fit the kb-prior's weights and concept filter (valid split + training samples each "
             "left out, or the training samples alone without a valid split) into calibration.json")] = True,
) -> None:
    """Build a knowledge base from a labelled training split (offline by default); sample:NAME is a sample shipped
    with culturekb (artemis, artelingo, cedar-kb, brighter ...)."""
    from culturekb.data.samples import sample_path
    from culturekb.workflows import build_from_files

    data = _guard(lambda: [sample_path(p) for p in data])

    def run() -> Any:
        return build_from_files(
            data, out_dir, data_root=data_root, cache_dir=cache_dir, settings_file=config,
            scheme=scheme, cultures=_csv(cultures, "--cultures"), split=None if split == "all" else split,
            concepts=concepts,
            rationales=rationales, judges=_csv(judges, "--judges") or [], policy=policy, min_support=min_support,
            on_bad_answer=on_bad_answer,
            base_url=base_url, cultures_file=cultures_file,
            label_words_file=label_words, label_column_words=label_column_words, aggregate=aggregate,
            field_map=field_map, calibrate=calibrate, stimulus_kind=stimulus_kind, on_bad_row=on_bad_row,
        )

    result = _guard(run)
    if as_json:
        out.print_json(json.dumps(result.report, ensure_ascii=False))
    else:
        from culturekb.workflows import render_build_report

        out.print(render_build_report(result.report), markup=False)
        out.print(f"KB written to {out_dir}")


@app.command()
def inspect(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    top: Annotated[int, typer.Option(min=1, help="how many divergent concepts to list")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON instead of Markdown")] = False,
    prior: Annotated[bool, typer.Option(
        "--prior", help="print each culture's label prior (its training label distribution) instead")] = False,
    culture: Annotated[str | None, typer.Option(help="with --prior: only this culture")] = None,
) -> None:
    """Show a KB's stats per culture and the concepts on which cultures diverge most (or, with --prior, each
    culture's label prior)."""
    from culturekb.workflows import inspect_kb

    if prior:
        from culturekb.workflows import kb_label_prior

        priors = _guard(lambda: kb_label_prior(kb, culture))
        if as_json:
            out.print_json(json.dumps(priors, ensure_ascii=False))
            return
        for cid, dist in priors.items():
            ranked = sorted(dist.items(), key=lambda kv: -kv[1])
            out.print(f"{cid}: " + ", ".join(f"{lab} {p:.1%}" for lab, p in ranked if p > 0), markup=False)
        return
    res = _guard(lambda: inspect_kb(kb, top=top))
    _print_report(res, as_json)


@app.command()
def index(
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    backend: Annotated[str | None, typer.Option(
        help="faiss (flat/hnsw/ivf by size), faiss:hnsw, qdrant, numpy (default: the backend setting, faiss)")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="minilm | use | st:PATH | openai-embed:MODEL (default: the embedder setting; a rebuild keeps the "
             "index's own)")] = None,
    url: Annotated[str | None, typer.Option(help="Qdrant server URL (backend qdrant); default: local files")] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
) -> None:
    """Build the vector index of a KB (concept vectors computed once and stored with it)."""
    from culturekb.config import load_settings
    from culturekb.workflows import index_kb

    kw = {"url": url} if url else {}
    info = _guard(lambda: index_kb(kb, backend, embedder, settings=load_settings(config), **kw))
    out.print(f"indexed {info['count']} concepts of KB {info['kb_version']} with {info['embedder']} "
              f"({info['backend']})")


@app.command()
def calibrate(
    data: Annotated[list[Path], typer.Argument(
        help="labelled data files with a split column (the valid split and the KB's training samples are used)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory (calibration.json is written into it)")],
    split: Annotated[str, typer.Option(help="the split to fit on (never the test split)")] = "valid",
    data_root: Annotated[Path | None, typer.Option(help="root of relative image paths")] = None,
    status: Annotated[str | None, typer.Option(help="all | accepted | pending (default: the status setting)")] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
) -> None:
    """Fit the kb-prior's weights and concept filter on a valid split and save them with the KB."""
    from culturekb.config import load_settings
    from culturekb.data.samples import sample_path
    from culturekb.workflows import calibrate_kb

    if split == "test":
        _fail(ConfigError("calibrating on the test split would tune on what is evaluated; use --split valid"))
    data = _guard(lambda: [sample_path(p) for p in data])
    built_from = _guard(lambda: _kb_build_split(kb))
    if split == built_from:
        _fail(ConfigError(
            f"--split {split}: the KB was built from the {split} split, so its samples are in the tuples and their "
            "accuracy is in-sample (fitting on them favours memorising); give a held-out split such as valid (the "
            "training samples are already used, each left out of the tuples it supports)"))
    cal = _guard(lambda: calibrate_kb(kb, data, split=split, data_root=data_root, status=status,
                                      settings=load_settings(config)))
    from culturekb.workflows.calibrate import calibration_method

    v = cal.valid
    out.print(f"calibrated KB {cal.kb_version} on {calibration_method(cal)} ({v.get('settings_tried')} settings "
              "tried)")
    out.print(f"  concept filter: min_support={cal.min_support}, min_informativeness={cal.min_informativeness:g} "
              f"(hides {cal.dropped.get('total', 0)} of {cal.dropped.get('of', 0)} tuples)")
    out.print(f"  weights: alpha={cal.alpha:g}, beta={cal.beta:g}, gamma={cal.gamma:g}, pool={cal.pool}"
              + ("  (evidence did not help on valid: the culture prior alone)" if cal.is_prior_only else ""))
    if v.get("prior_accuracy") is not None:
        out.print(f"  {split} accuracy: prior {v.get('prior_accuracy'):.4f} -> calibrated {v.get('accuracy'):.4f}; "
                  f"log-loss {v.get('prior_log_loss'):.4f} -> {v.get('log_loss'):.4f}")
    if cal.fitted_on.get("left_out_training_samples"):
        out.print(f"  {cal.fitted_on['left_out_training_samples']} training samples, each left out of its own "
                  f"tuples: accuracy prior {v.get('left_out_prior_accuracy'):.4f} -> calibrated "
                  f"{v.get('left_out_accuracy'):.4f}")
    if cal.prior_only_cultures:
        out.print(f"  predicted from their prior alone (evidence raised their log-loss): "
                  f"{', '.join(cal.prior_only_cultures)}")
    for why, per in cal.dropped.get("reasons", {}).items():
        for culture, info in per.items():
            out.print(f"  hidden ({why}) in {culture}: {info['count']}, e.g. {', '.join(info['examples'][:6])}")
    out.print(f"written to {kb / 'calibration.json'}")


def _kb_build_split(kb: Path) -> str | None:
    """The split a KB was built from (its manifest's build config; None: every split), read without loading it."""
    from culturekb._io import read_json

    if not (kb / "manifest.json").is_file():
        raise ConfigError(f"{kb} is not a KB (no manifest.json); give the folder `culturekb build --out` wrote")
    manifest = read_json(kb / "manifest.json", fix="rebuild the KB", error=ConfigError)
    config = manifest.get("build_config") if isinstance(manifest, dict) else None
    split = config.get("split", "train") if isinstance(config, dict) else "train"
    return split if isinstance(split, str) else None


@app.command()
def lookup(
    concepts: Annotated[list[str], typer.Argument(help="query concepts, e.g. 'full moon' 'bamboo grove'")],
    culture: Annotated[str, typer.Option(help="target culture (id or alias)")],
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    tau: Annotated[float | None, typer.Option(help="cosine threshold of a semantic match (default: the tau "
                                                   "setting, 0.70)")] = None,
    k: Annotated[int, typer.Option(min=1, max=100, help="candidates per concept")] = 1,
    backend: Annotated[str | None, typer.Option(help=_BACKEND_HELP)] = None,
    embedder: Annotated[str | None, typer.Option(help=_EMBEDDER_HELP)] = None,
    cross_culture: Annotated[bool, typer.Option(help="search the other cultures instead")] = False,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Exact-then-semantic lookup of concepts in one culture's tuples: each match's label counts, the 95% interval
    of its dominant share, and whether it is unreviewed."""
    from culturekb.config import load_settings
    from culturekb.workflows import lookup_concepts

    rows = _guard(lambda: lookup_concepts(kb, concepts, culture, tau=tau, k=k, backend=backend, embedder=embedder,
                                          cross_culture=cross_culture, settings=load_settings(config, status=status)))
    if as_json:
        out.print_json(json.dumps(rows, ensure_ascii=False))
        return
    for r in rows:
        m = r["match"]
        if m is None:
            out.print(f"{r['query']!r}: no match in {culture} (status filter {r['status_filter']})", markup=False)
        else:
            lo, hi = m["interval"]
            review = "UNREVIEWED (pending)" if m["review"] == "pending" else m["review"]
            out.print(f"{r['query']!r} -> {m['concept']!r} [{m['culture']}] {m['kind']} {m['score']:.3f}: "
                      f"{m['summary']}; 95% CI for {m['label']}: {lo * 100:.0f}-{hi * 100:.0f}% [{review}] "
                      f"{' | '.join(m['rationales'])}", markup=False)


@app.command()
def predict(
    kb: Annotated[Path, typer.Option("--kb", help="KB directory")],
    image: Annotated[Path | None, typer.Option(help="one image to predict")] = None,
    culture: Annotated[str | None, typer.Option(help="target culture of --image")] = None,
    title: Annotated[str | None, typer.Option(help="title of --image (a source of concepts)")] = None,
    concepts: Annotated[str | None, typer.Option(help="comma list of concepts of --image")] = None,
    samples: Annotated[Path | None, typer.Option(help="a file of samples (CSV or JSONL) instead of --image")] = None,
    model: Annotated[str, typer.Option(help="kb-prior | openai:MODEL | hf:PATH")] = "kb-prior",
    mode: Annotated[str, typer.Option(help="orig | know | internal-know | random-know | cross-culture-know")] = "know",
    prompt_language: Annotated[str | None, typer.Option(help="default: the target culture's language")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint")] = None,
    data_root: Annotated[Path | None, typer.Option(help="folder image paths of --samples are relative to")] = None,
    tau: Annotated[float | None, typer.Option(help="cosine threshold of a semantic match")] = None,
    backend: Annotated[str | None, typer.Option(help=_BACKEND_HELP)] = None,
    embedder: Annotated[str | None, typer.Option(help=_EMBEDDER_HELP)] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="response cache (default: the cache_dir setting)")] = None,
    max_concurrency: Annotated[int | None, typer.Option(
        help="parallel requests to the model server (default: the max_concurrency setting, 8)")] = None,
    parse_fallback: Annotated[bool | None, typer.Option(
        help="answers naming no label word go to the nearest label by the multilingual embedder "
             "(default: the parse_fallback setting, off)")] = None,
    status: Annotated[str | None, typer.Option(help=_STATUS_HELP)] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
) -> None:
    """Predict the emotion a culture perceives, for one image or a file of samples (JSON lines out)."""
    from culturekb.kb.schema import Sample
    from culturekb.workflows import load_kb_samples, predict_job

    def run() -> Any:
        from culturekb.config import load_settings

        if samples is not None:
            given = [f"--{name}" for name, value in (("image", image), ("culture", culture), ("title", title),
                                                      ("concepts", concepts)) if value is not None]
            if given:
                raise ConfigError(f"--samples FILE predicts the samples of the file, so {', '.join(given)} would be "
                                  "ignored; give either --samples FILE, or --image/--concepts with --culture")
            items = load_kb_samples(kb, [samples], data_root=data_root)
        elif culture is not None:
            items = [Sample(id=str(image or "query"), culture=culture, image=str(image) if image else None,
                            title=title, concepts=_csv(concepts, "--concepts"))]
        else:
            raise ConfigError("give --image/--concepts with --culture, or --samples FILE")
        return predict_job(kb, model, samples=items, mode=mode, prompt_language=prompt_language, base_url=base_url,
                           tau=tau, backend=backend, embedder=embedder, cache_dir=cache_dir,
                           settings=load_settings(config, max_concurrency=max_concurrency,
                                                  parse_fallback=parse_fallback, status=status))

    for p in _guard(run):
        out.print(json.dumps(p.model_dump(mode="json"), ensure_ascii=False), markup=False, highlight=False)


class _EvalGroup(TyperGroup):
    """`culturekb eval`: one subcommand per registered benchmark runner, built-in or plug-in (entry-point group
    ``culturekb.runners``), made on demand from the options the runner declares (`culturekb.evals.RunnerCommand`)."""

    def list_commands(self, ctx: Context) -> list[str]:
        from culturekb.workflows import eval_names

        return eval_names()

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        from culturekb.workflows import eval_names

        return _eval_command(cmd_name) if cmd_name in eval_names() else None


def _eval_command(name: str) -> Command:
    """The click command of one benchmark: its runner's options; it runs the job, prints the tables."""
    from culturekb.workflows import eval_command, runner_tables

    sub = typer.Typer(add_completion=False)
    try:
        run = eval_command(name)
    except CultureKBError as exc:  # a plug-in that cannot be loaded is listed, and says why when run
        failure = exc

        def unavailable() -> None:
            _fail(failure)

        sub.command(name, help=f"unavailable: {failure}", short_help="(unavailable; run it to see why)",
                    context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(unavailable)
        return typer.main.get_command(sub)

    @functools.wraps(run)
    def command(**values: Any) -> None:
        result = _guard(lambda: run(**values))
        for text in runner_tables(result):
            out.print(text, markup=False)
        out.print(f"reports in {result.out_dir}")

    from culturekb.data.samples import example_epilog

    sub.command(name, epilog=example_epilog(name))(command)
    return typer.main.get_command(sub)


eval_app = typer.Typer(cls=_EvalGroup, no_args_is_help=True,
                       help="Run a benchmark: predict, score, report (resumable). One command per registered runner.")
app.add_typer(eval_app, name="eval")


@eval_app.callback()
def eval_options(
    ctx: typer.Context,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP + "; give it before the benchmark name")] = None,
) -> None:
    """Run a benchmark: predict, score, report (resumable). One command per registered runner."""
    if config is None:
        return
    if not config.is_file():
        _fail(ConfigError(f"--config {config}: no such file; give the path of a TOML settings file"))
    from culturekb.config import CONFIG_ENV

    # the jobs read $CULTUREKB_CONFIG; it names this file for this command only
    before = os.environ.get(CONFIG_ENV)
    os.environ[CONFIG_ENV] = str(config.resolve())

    def restore() -> None:
        if before is None:
            os.environ.pop(CONFIG_ENV, None)
        else:
            os.environ[CONFIG_ENV] = before

    ctx.call_on_close(restore)


@app.command()
def compare(
    kb: Annotated[Path, typer.Argument(help="KB directory")],
    cultures: Annotated[str | None, typer.Option(help="comma list of cultures to compare (default: all)")] = None,
    min_support: Annotated[int, typer.Option(min=1, help="smallest support of a compared tuple, in each culture")
                           ] = 3,
    tau: Annotated[float | None, typer.Option(
        help="cosine threshold of a semantic alignment (default: the tau setting, 0.70)")] = None,
    min_margin: Annotated[float, typer.Option(
        help="smallest CSLS (hubness-corrected similarity) of a semantic alignment; negative: no check")] = 0.25,
    top: Annotated[int, typer.Option(min=1, help="how many disagreements to show")] = 20,
    status: Annotated[str | None, typer.Option(help="which tuples: all, accepted or pending (default: the status "
                                                    "setting, all)")] = None,
    config: Annotated[Path | None, typer.Option(help=_CONFIG_HELP)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Concepts on which cultures disagree: aligned across languages (identical strings, and translations found by
    the KB index's embedder), compared by their emotion distributions (Jensen-Shannon divergence)."""
    import math

    from culturekb.config import load_settings
    from culturekb.workflows import compare_kb

    if not math.isfinite(min_margin):
        _fail(ConfigError(f"--min-margin {min_margin}: give a number (0.25 by default; a negative one turns the "
                          "check off)"))
    if tau is not None and not (math.isfinite(tau) and 0.0 <= tau <= 1.0):
        _fail(ConfigError(f"--tau {tau}: give a cosine threshold between 0 and 1 (0.70 by default)"))
    res = _guard(lambda: compare_kb(kb, _csv(cultures, "--cultures"), min_support=min_support, tau=tau,
                                    min_margin=None if min_margin < 0 else min_margin, top=top, status=status,
                                    settings=load_settings(config)))
    _print_report(res, as_json)


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="where the demo KB and reports go")] = Path(
        "demo-output"),
) -> None:
    """The whole system offline on the multilingual sample shipped with the package: build a six-culture KB,
    calibrate it, look up, show where cultures disagree, send a prompt to the bundled test server, and report whether
    knowledge helps."""
    from culturekb.demo import run_demo

    _guard(lambda: run_demo(out_dir, console=out))  # prints each section as it is ready


@app.command("mock-server")
def mock_server(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="port to listen on (0: a free one, printed)")] = 8000,
    answers: Annotated[Path | None, typer.Option(
        help="JSONL of scripted chat answers, one per line, consumed in order, the last one repeating: a JSON "
             "string (the reply text) or an object such as "
             "{\"status\": 429, \"headers\": {\"Retry-After\": \"1\"}}")] = None,
    answer: Annotated[str | None, typer.Option(
        help="the reply text for every request when no --answers file is given")] = None,
    latency: Annotated[float, typer.Option(help="seconds each request waits before its answer")] = 0.0,
    log: Annotated[Path | None, typer.Option(help="JSONL file that gets one line per request received")] = None,
) -> None:
    """Serve the bundled scripted OpenAI-compatible API (chat completions, embeddings, models) for dry runs of
    predict, eval and the harness adapters; Ctrl-C stops it."""
    from culturekb.demo import serve_mock_server

    def ready(base_url: str) -> None:
        out.print(f"scripted OpenAI-compatible server on {base_url} (Ctrl-C stops it)", markup=False,
                  highlight=False)
        out.file.flush()

    calls = _guard(lambda: serve_mock_server(host=host, port=port, answers=answers, answer=answer,
                                             latency_s=latency, log=log, on_ready=ready))
    out.print(f"served {calls} model calls", markup=False, highlight=False)


def _register_serve() -> None:
    """`culturekb serve` lives with the API (culturekb.api.cli); registering it imports nothing heavy."""
    from culturekb.api.cli import serve_command

    app.command("serve")(serve_command)


_register_serve()


def main() -> None:
    """Entry point of the `culturekb` console script."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
