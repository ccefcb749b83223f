"""The demo job (`culturekb demo`, `make demo`): the whole system on real multilingual data, offline, in minutes.

It builds a KB from the BRIGHTER sample shipped in the package (native-speaker emotion labels of short texts in six
languages: en, de, es, zh, ru, hi; CC BY 4.0, see `culturekb/data/demo/brighter/NOTICE.md`) and shows, section by
section, what the system is for:

1. **Build**: the KB of each culture, built from its own training texts (offline: extractive rationales, lexicon
   and prototype judges), indexed with the multilingual embedder (`use`).
2. **Calibration**: the KB prior's weights and concept filter, fitted by the build itself (every build does, on the
   valid split and the training texts each left out) and written into the KB (`calibration.json`); what the filter
   dropped.
3. **Lookups**: exact and semantic lookups in two cultures, one of them in a non-Latin script (the README's
   examples are these, and a test checks that they hit).
4. **Where cultures disagree**: concepts aligned across the six languages (`culturekb.retrieval.compare`) whose
   dominant emotions differ, each side with support >= 3, its distribution and the Jensen-Shannon divergence.
5. **What a VLM receives**: the prompt with its knowledge block, sent over HTTP to the bundled OpenAI-compatible
   test server (`culturekb.testing`), printed as the server received it.
6. **Does knowledge help?**: the knowledge report on the test split (`culturekb eval knowledge`): accuracy of
   `know` beside the majority class, `random-know` and `cross-culture-know` with bootstrap intervals and McNemar
   tests, said in words.

Each model is loaded once: the multilingual embedder serves the build, the index, every lookup and the report.
This module is the jobs layer (like `culturekb.workflows`); it alone may start the test server in-process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from culturekb.errors import DataError

if TYPE_CHECKING:
    from culturekb.inference.augmenter import Augmenter
    from culturekb.kb.schema import Sample

__all__ = [
    "DEMO_EMBEDDER",
    "DEMO_LOOKUPS",
    "DemoData",
    "DemoResult",
    "demo_dataset",
    "run_demo",
    "SECTIONS",
]

DEMO_EMBEDDER = "use"
"""The multilingual embedder of the demo KB (Universal Sentence Encoder multilingual, numpy only)."""

DEMO_LOOKUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("zh", ("世界", "world")),
    ("en", ("friend", "amigo")),
)
"""(culture, query concepts) the demo looks up: per culture an exact match and a semantic one (across languages in
zh). The README shows the same lookups; tests/cli/test_demo.py runs the README's commands against a demo KB."""

SECTIONS = ("Build", "Calibration", "Lookups", "Where cultures disagree", "What a VLM receives",
            "Does knowledge help?")
"""The demo's section titles, in order (each printed as a level-2 heading)."""

_PROMPT_CULTURES = ("en", "zh")
"""Cultures whose first test text with at least two knowledge tuples goes to the test server."""


@dataclass(frozen=True)
class DemoData:
    """The demo's data files: the samples (JSONL), the label scheme, the cultures file and the licence notice."""

    sample: Path
    scheme: Path
    cultures: Path
    notice: Path


class DemoResult(TypedDict):
    """What `run_demo` gives: the KB, its build report, the page (Markdown), its sections, the knowledge report's
    metrics, the cross-culture comparison and the requests the test server received."""

    kb_dir: Path
    report: dict[str, Any]
    markdown: str
    sections: dict[str, str]
    eval: Mapping[str, Any]
    comparison: dict[str, Any]
    requests: list[dict[str, Any]]


def demo_dataset() -> DemoData:
    """The BRIGHTER sample shipped with the package (`culturekb/data/demo/brighter/`)."""
    root = Path(str(resources.files("culturekb.data").joinpath("demo", "brighter")))
    data = DemoData(root / "brighter_sample.jsonl", root / "brighter_scheme.json", root / "brighter_cultures.json",
                    root / "NOTICE.md")
    missing = [p.name for p in (data.sample, data.scheme, data.cultures, data.notice) if not p.is_file()]
    if missing:
        raise DataError(f"demo data missing under {root}: {', '.join(missing)}; the package install is incomplete, "
                        "reinstall culturekb")
    return data


def run_demo(out: str | Path, console: Any = None, progress: bool = True) -> DemoResult:
    """Build, calibrate, look up, compare cultures, show a VLM prompt and report whether knowledge helps (see the
    module docstring). `console` (anything with ``print``, e.g. a rich Console) gets each section as soon as it is
    ready; the result holds the whole page, and the folder gets the demo's run.log."""
    from culturekb._runlog import run_log

    with run_log(out, "demo"):
        return _run_demo(out, console=console, progress=progress)


def _run_demo(out: str | Path, console: Any, progress: bool) -> DemoResult:
    from culturekb.inference.augmenter import Augmenter
    from culturekb.models.factory import make_embedder
    from culturekb.retrieval.retriever import open_retriever
    from culturekb.workflows import build_from_files, load_kb_samples

    out = Path(out)
    kb_dir = out / "kb"
    data = demo_dataset()
    page = _Page(console)
    t0 = time.perf_counter()
    page.intro(data)

    embedder = make_embedder(DEMO_EMBEDDER)  # the one model of the demo: build, index, lookups, report
    # the build indexes the KB with this embedder and calibrates the kb-prior (calibration.json), as every build does
    built = build_from_files([data.sample], kb_dir, cache_dir=out / "cache", progress=progress,
                             cultures_file=data.cultures, scheme=str(data.scheme), embedder=DEMO_EMBEDDER,
                             loaded_embedder=embedder)
    page.section("Build", _build_text(built.report))

    samples = load_kb_samples(kb_dir, [data.sample])
    page.section("Calibration", _calibration_text(kb_dir, built.report.get("calibration") or {}))

    retriever = open_retriever(kb_dir, embedder=embedder)  # with the calibration's concept filter, if any
    augmenter = Augmenter(retriever)
    page.section("Lookups", _lookups_text(augmenter))

    from culturekb.retrieval.compare import compare_cultures, render_comparison_markdown

    comparison = compare_cultures(retriever)
    page.section("Where cultures disagree", _comparison_text(comparison, render_comparison_markdown))

    prompt_text, requests = _vlm_prompts(augmenter, samples)
    page.section("What a VLM receives", prompt_text)

    report_text, metrics = _knowledge_report(augmenter, samples, out / "report", progress)
    page.section("Does knowledge help?", report_text)
    page.line(f"Demo finished in {time.perf_counter() - t0:.0f} s. KB: {kb_dir}; knowledge report: "
              f"{out / 'report'}. Serve the KB with `culturekb serve --kb {kb_dir}`.")
    return {"kb_dir": kb_dir, "report": built.report, "markdown": page.markdown(), "sections": dict(page.sections),
            "eval": metrics, "comparison": comparison.to_dict(), "requests": requests}


class _Page:
    """The demo's Markdown page, printed section by section to a console when one is given."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.parts: list[str] = []
        self.sections: dict[str, str] = {}

    def line(self, text: str) -> None:
        self.parts.append(text)
        if self.console is not None:
            self.console.print(text, markup=False, highlight=False)

    def intro(self, data: DemoData) -> None:
        self.line(
            "# culturekb demo: six cultures, one KB\n\n"
            "Data: the BRIGHTER sample shipped with culturekb: short texts in six languages (en, de, es, zh, ru, hi), "
            "each language's emotion labels given by native speakers of it; 340 train, 20 valid and 40 test texts per "
            f"language; CC BY 4.0 (Muhammad et al. 2025), see {data.notice}.\n"
            "Everything runs offline: the multilingual embedder `use` is loaded once and serves the build, the index, "
            "the lookups and the report; the 'VLM' below is culturekb's scripted test server.\n")

    def section(self, title: str, body: str) -> None:
        number = SECTIONS.index(title) + 1
        text = f"## {number}. {title}\n\n{body.rstrip()}\n"
        self.sections[title] = text
        self.line(text)

    def markdown(self) -> str:
        return "\n".join(self.parts)


def _build_text(report: Mapping[str, Any]) -> str:
    from culturekb.builders.report import render_report_markdown

    md = render_report_markdown(dict(report))
    body = md.split("\n", 1)[1] if md.startswith("# ") else md  # the page has its own title
    body, more = (body.split("\n## ", 1) + [""])[:2]  # the report's own sections (dropped concepts ...) stay there
    tail = ("\nThe whole build report, with the concept candidates the extractor dropped and why, is in the KB "
            "(`build_report.md`)." if more else "")
    return ("Each culture's tuples come from its own training texts (concepts in its language, Eq. (1) "
            "distributions, extractive rationales, two offline judges; flagged tuples are kept as pending and "
            "served, marked unreviewed).\n" + body.strip() + tail)


def _calibration_text(kb_dir: Path, section: Mapping[str, Any]) -> str:
    """Describe the calibration the build fitted and wrote into the KB (`calibration.json`; the build report's
    ``calibration`` section says on what)."""
    from culturekb.kb.calibration import read_calibration
    from culturekb.kb.store import read_manifest

    cal = read_calibration(kb_dir, read_manifest(kb_dir).kb_version)
    if cal is None:
        return f"The build did not calibrate the KB prior: {section.get('method', 'no calibration.json')}."
    v = cal.valid
    lines = [
        f"The build calibrated the KB prior on {section.get('method') or 'the valid split'}: "
        f"{v.get('settings_tried', '?')} settings tried (concept filter x pooling weights), the one with the lowest "
        "log-loss among those at least as accurate as each culture's label prior (on valid and on every fitting "
        "text) kept, and written to the KB (`calibration.json`; `culturekb calibrate` refits it).",
        "",
        "| | accuracy on valid | log-loss on valid |", "|---|---:|---:|",
        f"| culture prior alone | {v.get('prior_accuracy', float('nan')):.3f} | "
        f"{v.get('prior_log_loss', float('nan')):.3f} |",
        f"| calibrated KB prior | {v.get('accuracy', float('nan')):.3f} | {v.get('log_loss', float('nan')):.3f} |",
        "",
        *([f"On the {cal.fitted_on.get('left_out_training_samples')} training texts, each left out of its own tuples: "
           f"accuracy {v['left_out_prior_accuracy']:.3f} (prior) -> {v['left_out_accuracy']:.3f} (calibrated).", ""]
          if v.get("left_out_accuracy") is not None else []),
        f"Chosen: concept filter min_support {cal.min_support}, min_informativeness {cal.min_informativeness:g}; "
        f"weights alpha {cal.alpha:g}, beta {cal.beta:g}, gamma {cal.gamma:g}, pool {cal.pool}"
        + (" (beta 0: the evidence did not help on valid, so the predictor is the culture prior)."
           if cal.is_prior_only else "."),
    ]
    dropped = cal.dropped
    if dropped.get("total"):
        lines.append(f"The filter hides {dropped['total']} of {dropped.get('of', '?')} tuples from retrieval:")
        for why, per in dropped.get("reasons", {}).items():
            counts = ", ".join(f"{c} {d['count']}" for c, d in per.items())
            examples = "; ".join(f"{c}: {', '.join(d['examples'][:4])}" for c, d in list(per.items())[:3])
            lines.append(f"- {why}: {counts} (e.g. {examples})")
    else:
        lines.append("The filter hides no tuple.")
    return "\n".join(lines)


def _lookups_text(augmenter: Augmenter) -> str:
    retriever = augmenter.retriever
    lines = ["Exact-then-semantic lookup in one culture (cosine >= tau for a semantic match). The same lookups from "
             "the shell: `culturekb lookup 世界 world --culture zh --kb KB` (see the README).", "",
             "| culture | query | match | kind | score | distribution (support) |", "|---|---|---|---|---:|---|"]
    from culturekb.kb.lines import kb_tie_break, tuple_summary

    order = list(retriever.kb.scheme.labels)
    tie_break = kb_tie_break(retriever.kb)
    for culture, queries in DEMO_LOOKUPS:
        for query, m in zip(queries, retriever.lookup(list(queries), culture), strict=True):
            if m is None:
                lines.append(f"| {culture} | {query} | - | none | | |")
                continue
            t = m.tuple
            lines.append(f"| {culture} | {query} | {t.concept} | {m.kind} | {m.score:.3f} | "
                         f"{tuple_summary(t, k=3, order=order, tie_break=tie_break)} |")
    return "\n".join(lines)


def _comparison_text(comparison: Any, render: Callable[..., str]) -> str:
    intro = ("Concepts are in each culture's own language, so they are aligned across cultures first: identical "
             "strings, and translations found by the multilingual embedder (mutual nearest neighbours, "
             "hubness-corrected; `culturekb.retrieval.compare`). Shown: aligned pairs whose dominant emotions "
             "differ, each side seen in at least 3 texts of its culture, ranked by the Jensen-Shannon divergence "
             "discounted for thin support. Run it on any KB: `culturekb compare KB --cultures en,zh`.\n")
    return intro + "\n" + render(comparison, top=12)


def _pick_prompt_samples(augmenter: Augmenter, samples: Sequence[Sample]) -> list[Sample]:
    """Per demo culture, the first test text (by id) whose `know` block holds at least two tuples."""
    chosen: list[Sample] = []
    for culture in _PROMPT_CULTURES:
        pool = sorted((s for s in samples if s.split == "test" and s.culture == culture), key=lambda s: s.id)
        blocks = augmenter.augment_many(pool, mode="know") if pool else []
        hit = next((s for s, b in zip(pool, blocks, strict=True) if len(b.tuples) >= 2), None)
        if hit is not None:
            chosen.append(hit)
    return chosen


def _vlm_prompts(augmenter: Augmenter, samples: Sequence[Sample]) -> tuple[str, list[dict[str, Any]]]:
    """Predict a few test texts in `know` mode with `openai:demo-vlm` against the scripted server; the section's
    text shows the messages the server received and the parsed answers."""
    from culturekb.inference.predictors import make_predictor
    from culturekb.testing import ScriptedOpenAIServer

    chosen = _pick_prompt_samples(augmenter, samples)
    label = augmenter.retriever.kb.scheme.labels[0]
    reply = json.dumps({"emotion": label, "explanation": "A fixed answer: this server is scripted."})
    with ScriptedOpenAIServer(reply) as server:
        predictor = make_predictor("openai:demo-vlm", augmenter, base_url=server.base_url, max_concurrency=1,
                                   max_retries=0)
        predictions = list(predictor.predict(chosen, mode="know"))
        requests = list(server.requests)
        base_url = server.base_url
    lines = [f"`culturekb predict --model openai:demo-vlm --base-url {base_url} --mode know` for "
             f"{len(chosen)} test texts, against culturekb's scripted OpenAI-compatible server started in this "
             f"process. Below: each request's messages as the server received them over HTTP. (The server answers "
             f"every request with the same fixed JSON; a real VLM would read the prompt.)"]
    for sample, pred, body in zip(chosen, predictions, requests, strict=False):
        lines += ["", f"### Test text {sample.id} (culture {sample.culture}, gold label {sample.label}; prompt "
                      f"language {pred.prompt_language}, template {pred.template_id})", "", "```text"]
        for message in body.get("messages", []):
            lines.append(f"[{message.get('role')}]")
            lines.append(_content_text(message.get("content")))
        lines += ["```", f"Parsed answer: {pred.label} ({pred.parse_status}); knowledge tuples sent: "
                         f"{len(pred.tuples_used)}."]
    if not chosen:
        lines.append("No test text of the demo cultures retrieved two tuples; nothing was sent.")
    return "\n".join(lines), requests


def _content_text(content: Any) -> str:
    """A chat message's content as text (image parts named, not dumped)."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, Mapping):
            parts.append(f"<{part.get('type', 'part')}>")
    return "\n".join(parts)


def _knowledge_report(augmenter: Augmenter, samples: Sequence[Sample], out: Path, progress: bool
                      ) -> tuple[str, Mapping[str, Any]]:
    """The knowledge report (what `culturekb eval knowledge` runs: the calibrated kb-prior on the test split) with
    the demo's augmenter; its verdict in words, then its accuracy and paired-difference tables."""
    from culturekb.evals.knowledge import KnowledgeRunner
    from culturekb.evals.knowledge.report import knowledge_tables
    from culturekb.evals.reports import render_markdown_table
    from culturekb.inference.predictors import make_predictor

    runner = KnowledgeRunner(samples, make_predictor("kb-prior", augmenter), augmenter, split="test",
                             progress=progress)
    results = runner.run(out).metrics
    tables = knowledge_tables(results)
    shown = [f"**{tables[name].title}**\n\n{render_markdown_table(tables[name])}\n{tables[name].note}\n"
             for name in ("accuracy", "differences") if name in tables]
    return "\n".join(shown) + "\n" + _verdict(results), results


def _verdict(results: Mapping[str, Any]) -> str:
    """Whether knowledge helped, in words, from the overall paired differences (know minus each alternative): an
    interval above 0 is "better", below 0 "worse", across 0 "not distinguishable"."""
    comp = results.get("comparisons", {}).get("overall", {})
    know = results.get("accuracy", {}).get("overall", {}).get("know", {})
    n = results.get("n_samples", "?")

    def diff(other: str) -> tuple[str, str] | None:
        entry = comp.get(f"know - {other}", {})
        d = entry.get("difference")
        if d is None:
            return None
        p = entry.get("mcnemar", {}).get("p_value", float("nan"))
        word = "better than" if d["low"] > 0 else "worse than" if d["high"] < 0 else "not distinguishable from"
        return word, f"{d['estimate']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}], McNemar p = {p:.3g}"

    parts = [f"On the {n} test texts, the calibrated KB prior with each culture's own knowledge (`know`) is right on "
             f"{know.get('estimate', float('nan')):.3f} [{know.get('low', float('nan')):.3f}, "
             f"{know.get('high', float('nan')):.3f}] of them."]
    base = diff("majority")
    if base is not None:
        lead = {"better than": "**Knowledge helped on this sample**", "worse than": "**Knowledge hurt on this sample**",
                "not distinguishable from": "**Knowledge did not measurably help on this sample**"}[base[0]]
        parts.append(f"{lead}: know minus each culture's majority class = {base[1]}.")
    rand = diff("random-know")
    if rand is not None:
        parts.append(f"Retrieved knowledge is {rand[0]} random tuples of the same culture ({rand[1]}).")
    cross = diff("cross-culture-know")
    if cross is not None:
        tail = ("" if cross[0] == "better than" else
                f": on {n} texts the data cannot show that it is the culture's own knowledge, rather than the other "
                "cultures' knowledge of the same concepts, that makes the difference" if cross[0].startswith("not")
                else ": the other cultures' knowledge of the same concepts did better")
        parts.append(f"The culture's own knowledge is {cross[0]} the other cultures' knowledge of the same concepts "
                     f"({cross[1]}){tail}.")
    parts.append("Intervals are 95% paired bootstrap intervals; with 40 test texts per culture they are wide.")
    return " ".join(parts)


def serve_mock_server(
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    answers: str | Path | None = None,
    answer: str | None = None,
    latency_s: float = 0.0,
    log: str | Path | None = None,
    on_ready: Callable[[str], None] | None = None,
    stop: Any = None,
) -> int:
    """Run the bundled scripted OpenAI-compatible server (`culturekb mock-server`) until Ctrl-C or `stop` is set.

    Chat answers come from `answers` (a JSONL file, one scripted answer per line, consumed in order, the last one
    repeating; see `culturekb.testing.openai_server.load_script`), else `answer` for every request, else a fixed
    JSON answer. `log` gets one JSONL line per request received. `on_ready(base_url)` is called once it listens;
    `stop` is a `threading.Event` (tests). Returns the number of model calls served.
    """
    import threading

    from culturekb.errors import ConfigError
    from culturekb.testing import ScriptedOpenAIServer
    from culturekb.testing.openai_server import DEFAULT_REPLY, load_script

    script: Any = answer if answer is not None else DEFAULT_REPLY
    if answers is not None:
        try:
            replies = load_script(answers)
        except FileNotFoundError as exc:
            raise DataError(f"answers file {answers} does not exist; fix the path given to --answers") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataError(f"{exc}") from exc
        if not replies:
            raise DataError(f"{answers} holds no scripted answer; write one JSON string or object per line")
        script = replies
    if latency_s < 0:
        raise ConfigError(f"--latency must be 0 or more seconds, got {latency_s}")
    server = ScriptedOpenAIServer(script, latency_s=latency_s, host=host, port=port, request_log=log)
    try:
        server.start()
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port "
                          "(0 picks a free one) or --host") from exc
    waiter = stop if stop is not None else threading.Event()
    try:
        if on_ready is not None:
            on_ready(server.base_url)
        while not waiter.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        calls = server.calls
        server.stop()
    return calls
