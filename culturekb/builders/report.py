"""The build report rendered for people (Markdown); the JSON form is the dict itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from culturekb.kb.stimulus import STIMULUS_KINDS, stimulus_noun

__all__ = ["render_report_markdown"]

_PLACE = re.compile(r"^(?P<file>.*), (?P<unit>line|item) (?P<n>.+)$")


def _noun(report: dict[str, Any]) -> str:
    """The KB's stimulus noun (texts, scenarios, images, artworks); "items" for a report that does not say."""
    kind = report.get("stimulus_kind")
    return stimulus_noun(kind) if kind in STIMULUS_KINDS else "items"


def _places(rows: list[str]) -> str:
    """``["/d/six.jsonl, line 3", "/d/six.jsonl, line 240"]`` -> ``six.jsonl lines 3, 240``."""
    by_file: dict[str, list[str]] = {}
    for row in rows:
        m = _PLACE.match(str(row))
        name, unit, n = (Path(m["file"]).name, m["unit"], m["n"]) if m else (str(row), "", "")
        by_file.setdefault(f"{name}\t{unit}", []).append(n)
    parts = []
    for key, ns in by_file.items():
        name, unit = key.split("\t")
        parts.append(f"{name} {unit}{'s' if len(ns) > 1 else ''} {', '.join(ns)}" if unit else name)
    return "; ".join(parts)


def _counts(labels: dict[str, int]) -> str:
    return ", ".join(f"{lab} {n}" for lab, n in labels.items())


def _row_lines(report: dict[str, Any]) -> list[str]:
    """Per data file: the items aggregated from repeated rows, those dropped for a tied top label, and the bad rows
    skipped, each named with its file and lines (the first of each listed, all counted)."""
    noun = _noun(report)
    lines: list[str] = []
    for src in report.get("sources") or ():
        agg, tied, skipped = (src.get("aggregated_items") or [], src.get("tie_dropped_items") or [],
                              src.get("skipped_rows") or [])
        if not (agg or tied or skipped):
            continue
        n_agg, n_tied = src.get("aggregated_items_total", len(agg)), src.get("tie_dropped_total", len(tied))
        n_skip = src.get("skipped_rows_total", len(skipped))
        lines += ["", f"### {src.get('file')}: {src.get('rows_read', '?')} rows read, "
                      f"{src.get('samples', '?')} samples", ""]
        if agg:
            lines.append(f"- {noun} aggregated from rows that repeat them in one culture (majority label): {n_agg} "
                         f"({src.get('aggregated_rows', 0)} rows merged into another)")
            lines += [f"  - `{a['id']}` ({a.get('culture')}): {_places(a.get('rows', []))} -> "
                      f"{_counts(a.get('labels', {}))}" for a in agg]
        if tied:
            lines.append(f"- {noun} dropped for that culture, their repeated rows' top label tied: {n_tied}")
            lines += [f"  - `{t['item']}` ({t.get('culture')}): {_places(t.get('rows', []))} -> "
                      f"{_counts(t.get('labels', {}))}" for t in tied]
        if skipped:
            lines.append(f"- bad rows skipped (--on-bad-row skip): {n_skip}")
            lines += [f"  - {_places([r['where']])}: {r['problem']}" for r in skipped]
        for n, shown in ((n_agg, agg), (n_tied, tied), (n_skip, skipped)):
            if n > len(shown):
                lines.append(f"- ... {n - len(shown)} more not listed (the first {len(shown)} of each kind are)")
    return ["", "## Rows of the data files", *lines] if lines else []


def _topic_lines(report: dict[str, Any]) -> list[str]:
    topic = report.get("rationale_topic")
    if not topic:
        return []
    shares = "; ".join(f"{j}: {v:.1%}" for j, v in (topic.get("no_evidence_share") or {}).items()) or "none"
    lines = [f"- rationales on topic: {topic['naming_concept']} of {topic['rationales']} name their concept, "
             f"{topic['not_naming_concept']} do not ({topic['not_naming_rate']:.1%}: kept by embedding support, or "
             f"unchecked); tuples without a rationale on topic: {topic['tuples_off_topic']}; share of tuples with no "
             f"evidence per judge: {shares}"]
    lexicon = topic.get("lexicon_judge")
    if lexicon:
        per = ", ".join(f"{lang} {r['no_evidence']}/{r['tuples']}"
                        for lang, r in lexicon["no_evidence_by_language"].items())
        covered = lexicon["no_evidence_share_covered"]
        lines.append(f"- lexicon judge: lexicons for {', '.join(lexicon['languages'])}; tuples in "
                     f"{', '.join(lexicon['uncovered']) or 'no other language'} are read with the English lexicon "
                     f"and the label words only; no evidence per language: {per}; over the covered languages: "
                     + (f"{covered:.1%}" if covered is not None else "no tuple"))
    return lines


def _kappa_line(report: dict[str, Any]) -> str:
    """The judges and their agreement; "no evidence" when no tuple had a verdict from either judge."""
    judges = ", ".join(report.get("judges") or [])
    kappa = report.get("judge_kappa")
    if kappa is None:
        return f"- judges: {judges}; Cohen's kappa: no evidence (neither judge could read any tuple's rationales)"
    items = report.get("judge_kappa_tuples")
    over = f" over {items} tuples with evidence" if items is not None else ""
    return f"- judges: {judges}; Cohen's kappa: {kappa}{over}"


def _evidence_lines(report: dict[str, Any]) -> list[str]:
    """Why tuples were flagged (a judge disagreed, or no judge found evidence) and where rationales came from."""
    if "no_evidence" not in report:  # a report written before these counts existed
        return []
    per_judge = report.get("no_evidence_by_judge") or {}
    judges = "; ".join(f"{j}: {n}" for j, n in per_judge.items()) or "none"
    sources = report.get("evidence_sources") or {}
    return [
        f"- flagged because a judge named another emotion: {report.get('flagged_disagreement', 0)}; "
        f"no evidence (no judge could infer an emotion): {report['no_evidence']} "
        f"(verdicts without evidence per judge: {judges})",
        "- rationales from: " + (", ".join(f"{k} {v}" for k, v in sorted(sources.items())) or "nothing"),
    ]


def _dropped_lines(report: dict[str, Any]) -> list[str]:
    """The `dropped_concepts` section: per culture and reason, how many candidates were dropped and the most
    frequent of them (with the number of samples that dropped each)."""
    dropped = report.get("dropped_concepts")
    if not dropped:
        return []
    lines = ["", "## Dropped concept candidates", "",
             "Words the concept extractor left out, per culture and reason (count = sample-word pairs; each example "
             "with the number of samples that dropped it).", ""]
    lines += [f"- {reason}: {meaning}" for reason, meaning in (dropped.get("reasons") or {}).items()]
    lines += ["", "| culture | reason | count | distinct | most frequent |", "|---|---|---:|---:|---|"]
    for culture, rows in (dropped.get("per_culture") or {}).items():
        for reason, row in rows.items():
            top = ", ".join(f"{w} ({n})" for w, n in row["top"])
            lines.append(f"| {culture} | {reason} | {row['count']} | {row['distinct']} | {top} |")
    return lines


def _model_lines(report: dict[str, Any]) -> list[str]:
    """The model accounting: requests, answers, cache hits, retries by cause, re-asks, bad answers and what the
    policy did with them, and the runs recorded for this KB directory."""
    model = report.get("model")
    lines: list[str] = []
    if model and (model.get("attempts") or model.get("cache_hits") or model.get("items_asked")):
        causes = ", ".join(f"{k} {v}" for k, v in (model.get("retries_by_cause") or {}).items() if v) or "none"
        failed = ", ".join(f"{k} {v}" for k, v in (model.get("failures_by_cause") or {}).items() if v) or "none"
        lines.append(f"- model requests: {model.get('attempts', 0)} for {model.get('items_asked', 0)} items "
                     f"(answers {model.get('answers', 0)}, from the response cache {model.get('cache_hits', 0)}); "
                     f"retries by cause: {causes}; calls failed after retries: {failed}; "
                     f"re-asks for invalid JSON: {model.get('reasks', 0)}")
        bad = model.get("bad_answers") or []
        lines.append(f"- bad answers: {len(bad)} (on-bad-answer {model.get('on_bad_answer')}: skipped "
                     f"{model.get('skipped', 0)}, flagged {model.get('flagged', 0)})")
        for b in bad[:20]:
            lines.append(f"  - {b['action']}: {b['step']}: {b['item']} ({b['asks']} answer(s), {b['requests']} "
                         "request(s))")
        if len(bad) > 20:
            lines.append(f"  - ... and {len(bad) - 20} more (build_report.json lists them all)")
    runs = report.get("runs") or []
    if len(runs) > 1:
        lines.append(f"- runs recorded for this KB directory: {len(runs)}; model calls over all runs: "
                     f"{report.get('model_calls_all_runs', 0)}")
    return lines


def _label_word_lines(report: dict[str, Any]) -> list[str]:
    """The `label_words` section: the words a label words file gave and those the data's paired label columns
    taught (learned, already known, conflicts), which the KB's scheme now holds."""
    words = report.get("label_words")
    if not words:
        return []
    lines = ["", "## Label words", ""]
    given = words.get("given")
    if given:
        lines.append(f"- from the label words file {given['file']}: {given['words']} words")
    columns = words.get("columns") or {}
    if columns:
        cols = "; ".join(f"{f}: " + ", ".join(f"{c} ({lang})" for c, lang in cs.items()) for f, cs in columns.items())
        skipped = ", ".join(f"{k} {v}" for k, v in (words.get("skipped_rows") or {}).items()) or "none"
        lines += [f"- paired label columns: {cols}",
                  f"- pairs read: {words.get('pairs', 0)}; words learned: {len(words.get('learned') or [])}; already "
                  f"known to the scheme: {words.get('known', 0)}; conflicts: {len(words.get('conflicts') or [])}; "
                  f"rows skipped: {skipped}"]
    learned = words.get("learned") or []
    if learned:
        lines += ["", "| language | word | label | rows | share | replaces |", "|---|---|---|---:|---:|---|"]
        for w in learned:
            lines.append(f"| {w['language']} | {w['word']} | {w['label']} | {w['rows']} | {w['share']:.0%} | "
                         f"{w.get('replaces', '')} |")
    conflicts = words.get("conflicts") or []
    if conflicts:
        lines += ["", "| language | word | rows per label | learned as | why |", "|---|---|---|---|---|"]
        for c in conflicts:
            per = ", ".join(f"{k} {v}" for k, v in c["labels"].items())
            lines.append(f"| {c['language']} | {c['word']} | {per} | {c['learned'] or '-'} | {c['reason']} |")
    return lines


def _calibration_lines(report: dict[str, Any]) -> list[str]:
    """The `calibration` section: how the build calibrated the kb-prior (on what, how many samples) and what it
    chose, against the culture prior (`culturekb.workflows.calibrate.calibrate_built_kb`)."""
    cal = report.get("calibration")
    if not cal:
        return []
    lines = ["", "## Calibration of the kb-prior", "", f"- fitted on: {cal.get('method')}"]
    if cal.get("source") == "none":
        return lines + ["- the kb-prior uses its uncalibrated weights; run `culturekb calibrate DATA --kb KB` on data "
                        "with a valid split"]

    def fig(key: str) -> str:
        v = cal.get(key)
        return "n/a" if v is None else f"{v:.3f}"

    lines += [f"- concept filter: min_support {cal.get('min_support')}, min_informativeness "
              f"{cal.get('min_informativeness')} (hides {cal.get('hidden_tuples', 0)} of {cal.get('of_tuples', 0)} "
              "tuples)",
              f"- weights: alpha {cal.get('alpha')}, beta {cal.get('beta')}, gamma {cal.get('gamma')}, pool "
              f"{cal.get('pool')}" + (" (beta 0: the culture prior alone; the evidence did not help)"
                                      if cal.get("prior_only") else ""),
              f"- accuracy, culture prior -> calibrated: valid {fig('valid_prior_accuracy')} -> {fig('valid_accuracy')}"
              f"; training samples left out {fig('left_out_prior_accuracy')} -> {fig('left_out_accuracy')}"]
    if cal.get("prior_only_cultures"):
        lines.append(f"- predicted from their prior alone: {', '.join(cal['prior_only_cultures'])}")
    lines.append(f"- index {cal.get('index_seconds', 0):.1f} s, fit {cal.get('seconds', 0):.1f} s; written to "
                 "calibration.json (`culturekb calibrate` refits it)")
    return lines


def render_report_markdown(report: dict[str, Any]) -> str:
    """The build report as Markdown: counts, flagged rate and policy, judges and their kappa, no-evidence counts,
    model calls, time, the concept candidates dropped per culture and reason, and the label words given or
    learned."""
    lines = [
        f"# Build report: KB {report['kb_version']}",
        "",
        f"- label scheme: {report['label_scheme']}; samples: {report['samples']}",
        f"- tuples: {report['tuples']}; rationales: {report['rationales']}",
        f"- flagged: {report['flagged']} ({report['flagged_rate']:.1%}); policy: {report['policy']}; "
        f"dropped: {report['dropped_by_policy']}",
        _kappa_line(report),
        *_evidence_lines(report),
        *_topic_lines(report),
        f"- model calls: {report['model_calls']}; wall time: {report['wall_time_s']:.1f} s",
        *_model_lines(report),
        "",
        "| culture | samples | tuples | rationales | flagged |",
        "|---|---:|---:|---:|---:|",
    ]
    for c, row in report["per_culture"].items():
        lines.append(f"| {c} | {row['samples']} | {row['tuples']} | {row['rationales']} | {row['flagged']} |")
    lines += ["", "| step | computed | from cache | seconds |", "|---|---:|---:|---:|"]
    for step, st in report["steps"].items():
        lines.append(f"| {step} | {st['computed']} | {st['cached']} | {st['seconds']:.2f} |")
    if report.get("dropped_no_majority"):
        per = ", ".join(f"{c} {n}" for c, n in report["dropped_no_majority"].items())
        noun = _noun(report)
        lines += ["", f"{noun[:1].upper()}{noun[1:]} dropped for lack of a majority label, per culture: {per}"]
    lines += _row_lines(report)
    lines += _dropped_lines(report)
    lines += _label_word_lines(report)
    lines += _calibration_lines(report)
    return "\n".join(lines) + "\n"
