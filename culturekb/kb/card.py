"""The KB card, `KB_CARD.md`: what a knowledge base is made of and what it is (not) good for, beside its data.

Written with every save of a KB (`KnowledgeBase.save`) and by `culturekb kb card KB`: sources (data files, their
SHA-256 and the licence their notice states, when one lies beside them), cultures, label scheme, tuples per culture
by review status, the judges and their Cohen's kappa (from `build_report.json`), review status, intended use and
known limits.

The card is the user's to edit. culturekb writes its facts only between the markers ``<!-- culturekb:generated -->``
and ``<!-- /culturekb:generated -->``; everything outside them (a title, notes, a changed intended use) is kept as
it is when the KB is rebuilt or the card regenerated. A card whose markers were removed is left alone (with a
warning). The card is not part of the KB's content: the KB version hashes the tuples, the scheme and the label
prior only, and no integrity check covers the card, so editing it changes neither the version nor what an index
accepts.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from culturekb._io import read_json, read_text_utf8, sha256_file
from culturekb.errors import DataError

if TYPE_CHECKING:
    from culturekb.kb.cultures import Culture
    from culturekb.kb.ledger import Decision
    from culturekb.kb.schema import KnowledgeTuple
    from culturekb.kb.schemes import EmotionScheme

__all__ = [
    "CARD",
    "BEGIN",
    "END",
    "REPORT",
    "read_report",
    "card_facts",
    "render_generated",
    "merge_card",
    "card_text",
    "read_card",
    "CardSource",
    "describe_sources",
    "with_card",
]

logger = logging.getLogger(__name__)


class CardSource(Protocol):
    """What the card reads of a KB (`culturekb.kb.store.KnowledgeBase` is one): the card module sits below the
    store, which writes the card on every save."""

    @property
    def tuples(self) -> Sequence[KnowledgeTuple]: ...  # noqa: D102

    @property
    def scheme(self) -> EmotionScheme: ...  # noqa: D102

    @property
    def build_config(self) -> Mapping[str, Any]: ...  # noqa: D102

    @property
    def path(self) -> Path | None: ...  # noqa: D102

    @property
    def cultures(self) -> Sequence[str]: ...  # noqa: D102

    @property
    def culture_details(self) -> Mapping[str, Culture]: ...  # noqa: D102

    @property
    def version(self) -> str: ...  # noqa: D102

    def __len__(self) -> int: ...  # noqa: D102


CARD = "KB_CARD.md"
REPORT = "build_report.json"
BEGIN = "<!-- culturekb:generated -->"
END = "<!-- /culturekb:generated -->"

_NOTICE_FILES = ("NOTICE.md", "NOTICE", "NOTICE.txt", "LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE",
                 "LICENCE.md", "README.md")
_LICENCE_RE = re.compile(
    r"\b(CC[ -]BY(?:[ -](?:NC|SA|ND))*(?:[ -]\d\.\d)?|CC0(?:[ -]1\.0)?|Apache(?:[ -]License)?[ ,-]*(?:Version )?2\.0"
    r"|MIT License|GPL-?[23](?:\.0)?|BSD[ -][23]-Clause|ODC-BY|ODbL|Creative Commons Attribution[^.,;\n]*)",
    re.IGNORECASE,
)
_STATUSES = ("accepted", "approved", "relabelled", "pending", "rejected")
_LOW_SUPPORT = 3


# -- facts -------------------------------------------------------------------------------------------------------
def describe_sources(paths: Sequence[str | Path], summaries: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """One record per data file: name, SHA-256 (first 16 hex digits), what the loader read from it (`summaries`,
    aligned with `paths`: layout, rows, samples per culture; the items aggregated from repeated rows, those dropped
    for a tied top label and the rows skipped as bad, each with its rows' file and line, the first
    `LISTED_ROWS` of each listed and all counted), and the notice file beside it with the licence it names (None
    when none is found)."""
    out: list[dict[str, Any]] = []
    for i, p in enumerate(map(Path, paths)):
        rec: dict[str, Any] = {"file": p.name, "sha256": sha256_file(p)[:16] if p.is_file() else None}
        if i < len(summaries):
            s = summaries[i]
            rec.update({k: s[k] for k in ("layout", "rows_read", "samples", "per_culture") if k in s})
            rec.update(_row_facts(s, p))
        rec["notice"], rec["licence"] = _licence_beside(p)
        out.append(rec)
    return out


LISTED_ROWS = 50
"""Items (or rows) a source record lists by name per kind; the rest are counted."""


def _row_facts(summary: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """What a load did to rows (aggregated, tie-dropped, skipped), listed up to `LISTED_ROWS` each; rows are named
    by the file's name and line (``six.jsonl, line 12``), not by where the file lay on the machine that built."""

    def named(where: Any) -> str:
        return str(where).replace(str(path), path.name, 1)

    def rows(item: Mapping[str, Any]) -> dict[str, Any]:
        return {**item, "rows": [named(r) for r in item.get("rows", [])]}

    facts: dict[str, Any] = {}
    if summary.get("aggregated_rows"):
        items = [rows({"id": k, **v}) for k, v in (summary.get("aggregated_items") or {}).items()]
        facts.update(aggregated_rows=summary["aggregated_rows"], aggregated_items_total=len(items),
                     aggregated_items=items[:LISTED_ROWS])
    tied = [rows(t) for t in summary.get("tie_dropped_items") or ()]
    if tied:
        facts.update(tie_dropped_total=len(tied), tie_dropped_items=tied[:LISTED_ROWS])
    skipped = [{**r, "where": named(r.get("where"))} for r in summary.get("skipped_rows") or ()]
    if skipped:
        facts.update(skipped_rows_total=len(skipped), skipped_rows=skipped[:LISTED_ROWS])
    return facts


def _licence_beside(path: Path) -> tuple[str | None, str | None]:
    """(notice file name, licence named in it) for a data file; (None, None) when no notice lies beside it."""
    for name in _NOTICE_FILES:
        notice = path.parent / name
        if not notice.is_file():
            continue
        try:
            text = notice.read_text(encoding="utf-8", errors="replace")[:20000]
        except OSError:
            continue
        found = _LICENCE_RE.search(" ".join(text.split()))
        if found is None and name == "README.md":
            continue  # a README that names no licence is no notice
        return name, (" ".join(found.group(0).split()) if found else None)
    return None, None


def read_report(directory: Path | None) -> dict[str, Any] | None:
    """The build report (`build_report.json`) of a KB directory; None when there is none or it is unreadable."""
    if directory is None or not (directory / REPORT).is_file():
        return None
    try:
        raw = read_json(directory / REPORT)
    except DataError as exc:
        logger.warning("KB card: %s; the card is written without the build report's facts", exc)
        return None
    return raw if isinstance(raw, dict) else None


def _kappa_band(kappa: float) -> str:
    """Landis and Koch's words for a kappa value."""
    for edge, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= edge:
            return word
    return "almost perfect"


def card_facts(kb: CardSource, report: Mapping[str, Any] | None = None,
               decisions: Sequence[Decision] | None = None) -> dict[str, Any]:
    """What the card states, as JSON-ready data: identity, scheme, sources, cultures with tuples by review status,
    judges and their agreement, review totals, and the known limits that follow from them. `decisions`: the
    review ledger (`culturekb.kb.ledger`): decisions to re-check, reviewers and their agreement.

    ``approved`` counts tuples a reviewer approved as they were, ``relabelled`` those a reviewer gave another
    label (both have status approved), so accepted + approved + relabelled + pending + rejected = tuples."""
    from culturekb.kb.ledger import relabelled, review_facts

    report = dict(report or {})
    decisions = list(decisions or [])
    ledger = review_facts(kb, decisions)
    recheck = set(ledger["to_recheck_tuples"])
    status_by_culture: dict[str, Counter[str]] = {c: Counter() for c in kb.cultures}
    flagged: Counter[str] = Counter()
    low_support = 0
    for t in kb.tuples:
        status = "relabelled" if t.status == "approved" and relabelled(t) is not None else t.status
        status_by_culture.setdefault(t.culture, Counter())[status] += 1
        status_by_culture[t.culture]["to_recheck"] += t.id in recheck
        flagged[t.culture] += t.flagged
        low_support += t.support < _LOW_SUPPORT
    details = kb.culture_details
    samples = {c: v.get("samples") for c, v in (report.get("per_culture") or {}).items() if isinstance(v, dict)}
    cultures = []
    for c in kb.cultures:
        d = details.get(c)
        counts = status_by_culture.get(c, Counter())
        cultures.append({
            "id": c, "name": d.name if d else c, "language": d.language if d else None,
            "western": d.western if d else None, "tuples": sum(counts.get(s, 0) for s in _STATUSES),
            **{s: counts.get(s, 0) for s in _STATUSES}, "flagged": flagged.get(c, 0),
            "to_recheck": counts.get("to_recheck", 0), "samples": samples.get(c),
            "reviewer_kappa": (ledger["agreement"].get("per_culture", {}).get(c) or {}).get("kappa"),
        })
    review: dict[str, Any] = {s: sum(counts.get(s, 0) for counts in status_by_culture.values()) for s in _STATUSES}
    review["flagged"] = sum(flagged.values())
    review.update({k: ledger[k] for k in ("to_recheck", "to_recheck_tuples", "gone", "not_applied", "decisions",
                                          "reviewers", "agreement")})
    kappa = report.get("judge_kappa")
    judges = {
        "judges": list(report.get("judges") or kb.build_config.get("judges") or []),
        "kappa": kappa,
        "kappa_band": _kappa_band(float(kappa)) if isinstance(kappa, int | float) else None,
        "kappa_tuples": report.get("judge_kappa_tuples"),
        "flagged_disagreement": report.get("flagged_disagreement"),
        "no_evidence": report.get("no_evidence"),
        "policy": report.get("policy") or kb.build_config.get("policy"),
    }
    facts: dict[str, Any] = {
        "kb_version": kb.version,
        "label_scheme": kb.scheme.name,
        "labels": list(kb.scheme.labels),
        "tuples": len(kb),
        "concepts": len({t.concept for t in kb.tuples}),
        "low_support_tuples": low_support,
        "build": {k: kb.build_config.get(k) for k in ("concepts", "rationales", "min_support", "split", "embedder")
                  if kb.build_config.get(k) is not None},
        "sources": report.get("sources"),
        "cultures": cultures,
        "judges": judges,
        "review": review,
        "has_build_report": bool(report),
    }
    facts["limits"] = _limits(facts)
    return facts


def _limits(f: Mapping[str, Any]) -> list[str]:
    out = []
    n = max(int(f["tuples"]), 1)
    if f["low_support_tuples"]:
        out.append(f"{f['low_support_tuples']} of {f['tuples']} tuples ({100 * f['low_support_tuples'] / n:.0f}%) "
                   f"rest on fewer than {_LOW_SUPPORT} training items: their distributions are rough estimates.")
    pending = f["review"]["pending"]
    if pending:
        out.append(f"{pending} tuples are pending: a judge disagreed with them or could not read their rationales, "
                   "and no person has reviewed them (`culturekb review serve KB` or `culturekb review export`).")
    if f["review"].get("to_recheck"):
        out.append(f"{f['review']['to_recheck']} review decisions were not applied because their tuples' evidence "
                   "changed in this build: they are listed to re-check (`culturekb review serve KB`).")
    j = f["judges"]
    offline = {"lexicon", "prototype"}
    if j["judges"] and set(j["judges"]) <= offline:
        out.append("The judges are offline heuristics (an emotion lexicon and embedding prototypes), not people: "
                   "their agreement measures consistency, not correctness.")
    if j["kappa"] is None:
        out.append("The judges' agreement is unknown (no build report, or no tuple either judge could read).")
    elif j["kappa"] < 0.4:
        out.append(f"The judges agree only {j['kappa_band']}ly (Cohen's kappa {j['kappa']}).")
    if f["build"].get("rationales") == "extractive":
        out.append("Rationales are training explanations quoted as written (extractive), not generated reasoning.")
    out.append("A culture here is the community of the source data's annotators (often one language), not a "
               "country or a people; its tuples reflect that sample's perceptions and biases.")
    sources = f["sources"]
    if not sources:
        out.append("The data files this KB was built from are not recorded (built from samples in Python or before "
                   "culturekb recorded them): add them to this card.")
    elif any(s.get("licence") is None for s in sources):
        out.append("The licence of some source files is not known: check them before sharing this KB.")
    return out


# -- rendering -----------------------------------------------------------------------------------------------------
def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value).replace("|", "\\|")


def render_generated(facts: Mapping[str, Any]) -> str:
    """The generated part of the card, markers included (Markdown)."""
    lines = [BEGIN,
             "<!-- Written by culturekb from the KB and its build report. Text between these two markers is "
             "replaced when the KB is saved or `culturekb kb card` runs; write your own text outside them and it "
             "is kept. -->", "",
             "## At a glance", "",
             f"- KB version: `{facts['kb_version']}`",
             f"- Label scheme: `{facts['label_scheme']}` ({len(facts['labels'])} labels: "
             f"{', '.join(facts['labels'])})",
             f"- Tuples: {facts['tuples']} over {facts['concepts']} concepts and {len(facts['cultures'])} culture(s)"]
    if facts["build"]:
        lines.append("- Built with: " + ", ".join(f"{k} `{v}`" for k, v in facts["build"].items()))
    lines += ["", "## Sources", ""]
    sources = facts["sources"]
    if sources:
        lines += ["| file | SHA-256 (16) | layout | rows read | samples | licence (notice) |",
                  "|---|---|---|---|---|---|"]
        for s in sources:
            lic = s.get("licence") or "unknown"
            notice = f" ({s['notice']})" if s.get("notice") else ""
            lines.append(f"| {_cell(s.get('file'))} | {_cell(s.get('sha256'))} | {_cell(s.get('layout'))} | "
                         f"{_cell(s.get('rows_read'))} | {_cell(s.get('samples'))} | {_cell(lic + notice)} |")
    else:
        lines.append("Not recorded. Name the data files, their origin and licence in your notes below.")
    lines += ["", "## Cultures and tuples by review status", "",
              "| culture | name | language | Western | training items | tuples | accepted | approved | relabelled | "
              "pending | rejected | flagged | to re-check | reviewers' kappa |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in facts["cultures"]:
        lines.append("| " + " | ".join(_cell(c.get(k)) for k in ("id", "name", "language", "western", "samples",
                                                                       "tuples", *_STATUSES, "flagged", "to_recheck",
                                                                       "reviewer_kappa")) + " |")
    j = facts["judges"]
    lines += ["", "## Judges and their agreement", ""]
    if j["judges"]:
        lines.append(f"- Judges: {', '.join(map(str, j['judges']))} (each infers the emotion from the rationales "
                     "alone; a tuple is flagged when a judge disagrees with its dominant emotion)")
    if j["kappa"] is not None:
        over = f" over {j['kappa_tuples']} tuples" if j["kappa_tuples"] is not None else ""
        lines.append(f"- Cohen's kappa between the two judges: {j['kappa']} ({j['kappa_band']}){over}")
    else:
        lines.append("- Cohen's kappa: not known (no build report, or no tuple either judge could read)")
    if j["flagged_disagreement"] is not None:
        lines.append(f"- Flagged because a judge disagreed: {j['flagged_disagreement']}; because no judge could read "
                     f"the rationales: {j['no_evidence']}")
    if j["policy"]:
        lines.append(f"- Flag policy: `{j['policy']}`")
    r = facts["review"]
    lines += ["", "## Review status", "",
              f"- accepted {r['accepted']}, approved by a reviewer {r['approved']}, relabelled by a reviewer "
              f"{r['relabelled']}, pending {r['pending']}, rejected {r['rejected']}; flagged {r['flagged']}",
              f"- Review ledger: {r['decisions']} decisions by {len(r['reviewers'])} reviewer(s)"
              + (f" ({', '.join(r['reviewers'])})" if r["reviewers"] else "")
              + f"; to re-check {r['to_recheck']} (their evidence changed since the decision), gone {r['gone']}, "
              f"not yet applied {r['not_applied']}",
              *_agreement_lines(r["agreement"]),
              "- Retrieval serves every tuple but rejected ones by default, pending ones marked as unreviewed; "
              "`--status accepted` serves reviewed knowledge only.",
              "", "## Intended use", "",
              "Research on culture-conditioned emotion understanding: retrieving what a culture's annotators "
              "associated with a concept, to add to a vision-language model's prompt, and inspecting where cultures "
              "differ. Not for judging or profiling individuals, not as ground truth about any group, and not for "
              "decisions about people.", "",
              "## Known limits", ""]
    lines += [f"- {item}" for item in facts["limits"]]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _agreement_lines(agreement: Mapping[str, Any]) -> list[str]:
    overall = agreement.get("overall")
    if not overall:
        return ["- Reviewers' agreement: not known (no two reviewers decided the same tuples)"]
    per = ", ".join(f"{c} {_cell(f['kappa'])} over {f['tuples']}" for c, f in agreement["per_culture"].items())
    return [f"- Reviewers' agreement (Cohen's kappa): {_cell(overall['kappa'])} over {overall['tuples']} tuples "
            f"decided by {', '.join(overall['reviewers'])}; per culture: {per}"]


def merge_card(generated: str, existing: str | None) -> str:
    """The card text: `existing` with its generated part replaced by `generated`; a new card (a title, the
    generated part, an empty notes section) when there is none (no directory name in it: the same KB written to two
    places has the same card). A card without both markers is returned unchanged
    (its author removed them), with a warning."""
    if existing is None or not existing.strip():
        return (f"# KB card\n\n{generated}\n## Notes\n\n"
                "<!-- Yours: where the data came from, who reviewed what, caveats. Kept across rebuilds. -->\n")
    start, end = existing.find(BEGIN), existing.find(END)
    if start < 0 or end < start:
        logger.warning("KB card: the markers %s ... %s are gone from the card, so it is left as written; put them "
                       "back to have culturekb refresh its facts", BEGIN, END)
        return existing
    after = existing[end + len(END):]
    return existing[:start] + generated.rstrip("\n") + (after if after.startswith("\n") else "\n" + after)


def read_card(kb_dir: str | Path) -> str | None:
    """The text of a KB's card, or None when it has none."""
    path = Path(kb_dir) / CARD
    if not path.is_file():
        return None
    return read_text_utf8(path, fix=f"re-save {CARD} as UTF-8 or delete it and run `culturekb kb card`")


def card_text(kb: CardSource, directory: str | Path, report: Mapping[str, Any] | None = None) -> str:
    """The card to save with `kb` into `directory`: the report given (else the one in `directory`, else the one
    beside the KB it was loaded from), merged into the card already there (else the one beside the source KB)."""
    directory = Path(directory)
    source = Path(kb.path) if kb.path is not None else None
    if report is None:
        report = read_report(directory) or read_report(source)
    existing = read_card(directory) if (directory / CARD).is_file() else None
    if existing is None and source is not None and (source / CARD).is_file():
        existing = read_card(source)
    return merge_card(render_generated(card_facts(kb, report, _ledger(directory))), existing)


def _ledger(directory: Path) -> list[Decision]:
    from culturekb.kb.ledger import ledger_path, read_ledger

    try:
        return read_ledger(ledger_path(directory))
    except DataError as exc:
        logger.warning("KB card: %s; the card is written without the review ledger's facts", exc)
        return []


def with_card(kb: CardSource, directory: str | Path, extra_files: Mapping[str, Any] | None) -> dict[str, Any]:
    """`extra_files` of a KB save plus the card (`card_text`, with the build report among them if any), unless
    they carry a card already. Called by `KnowledgeBase.save` before it replaces `directory`."""
    files = dict(extra_files or {})
    if CARD not in files:
        report = files.get(REPORT)
        files[CARD] = card_text(kb, directory, report if isinstance(report, Mapping) else None)
    return files
