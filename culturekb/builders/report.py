"""The build report rendered for people (Markdown); the JSON form is the dict itself."""

from __future__ import annotations

from typing import Any

__all__ = ["render_report_markdown"]


def render_report_markdown(report: dict[str, Any]) -> str:
    """The build report as Markdown: counts, flagged rate and policy, judges and their kappa, model calls, time."""
    lines = [
        f"# Build report: KB {report['kb_version']}",
        "",
        f"- label scheme: {report['label_scheme']}; samples: {report['samples']}",
        f"- tuples: {report['tuples']}; rationales: {report['rationales']}",
        f"- flagged: {report['flagged']} ({report['flagged_rate']:.1%}); policy: {report['policy']}; "
        f"dropped: {report['dropped_by_policy']}",
        f"- judges: {', '.join(report.get('judges') or [])}; Cohen's kappa: {report['judge_kappa']}",
        f"- model calls: {report['model_calls']}; wall time: {report['wall_time_s']:.1f} s",
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
        lines += ["", f"Images dropped for lack of a majority label, per culture: {report['dropped_no_majority']}"]
    return "\n".join(lines) + "\n"
