"""CoMMET metrics (pure functions of the per-turn verdicts), the report's results, tables and plots.

Story accuracy counts a story only when every question in it was answered right; question accuracy counts
questions. A failed story (a call failed and was not replayed) counts as wrong in both, its unplayed questions
included, and is counted; skipped stories (the blind setting's text-complete ones) are left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from culturekb.evals.commet.judges import normalise_answer
from culturekb.evals.commet.records import StoryPrediction, TurnRecord
from culturekb.evals.commet.stories import CATEGORIES, MODALITIES, OUTCOME_KEYS, Story
from culturekb.evals.metrics import mean_by_group, mean_score, wilson_interval
from culturekb.evals.reports import IntervalPlot, Plot, Table, interval_text
from culturekb.evals.stats import paired_bootstrap_difference

__all__ = ["story_accuracy", "question_accuracy", "feedback_accuracy", "turn_outcomes", "score_commet",
           "commet_tables", "commet_plots"]


def story_accuracy(outcomes: Sequence[Sequence[bool]]) -> float:
    """Share of stories whose every question is right (CoMMET's story accuracy); empty: NaN."""
    return mean_score([float(bool(o) and all(o)) for o in outcomes])


def question_accuracy(outcomes: Sequence[Sequence[bool]]) -> float:
    """Share of questions answered right, over all stories; empty: NaN."""
    return mean_score([float(x) for o in outcomes for x in o])


def feedback_accuracy(turns: Sequence[Sequence[TurnRecord]]) -> dict[str, Any]:
    """Accuracy on first turns, on turns after right feedback and after wrong feedback (with counts), and how
    many turns followed feedback chosen by a branch (the played turns of each story)."""
    first = [float(t.correct) for ts in turns for t in ts if t.previous_correct is None]
    after_right = [float(t.correct) for ts in turns for t in ts if t.previous_correct is True]
    after_wrong = [float(t.correct) for ts in turns for t in ts if t.previous_correct is False]
    branch = [t for ts in turns for t in ts if t.feedback_key and t.feedback_key not in OUTCOME_KEYS]
    return {"first_turn": mean_score(first), "n_first": len(first),
            "after_right": mean_score(after_right), "n_after_right": len(after_right),
            "after_wrong": mean_score(after_wrong), "n_after_wrong": len(after_wrong),
            "n_branch_feedback": len(branch)}


def turn_outcomes(story: Story, record: StoryPrediction) -> list[bool]:
    """One verdict per question of `story`: the played turns' verdicts, unplayed ones (after a failure) wrong."""
    got = {int(t.turn): bool(t.correct) for t in record.turns}
    return [got.get(i + 1, False) for i in range(len(story.turns))]


def _calls(recs: Sequence[StoryPrediction], n_questions: int) -> dict[str, Any]:
    n = len(recs)
    model = sum(r.model_calls + r.model_cached for r in recs)
    judge = sum(r.judge_calls + r.judge_cached for r in recs)
    return {"model_per_story": model / n if n else float("nan"),
            "model_per_question": model / n_questions if n_questions else float("nan"),
            "judge_per_story": judge / n if n else float("nan"),
            "judge_per_question": judge / n_questions if n_questions else float("nan"),
            "model_sent": sum(r.model_calls for r in recs), "model_cached": sum(r.model_cached for r in recs),
            "judge_sent": sum(r.judge_calls for r in recs), "judge_cached": sum(r.judge_cached for r in recs)}


def _setting(stories: Sequence[Story], recs: Sequence[StoryPrediction]) -> dict[str, Any]:
    pairs = [(s, r) for s, r in zip(stories, recs, strict=True) if r.story_status != "skipped"]
    outcomes = [turn_outcomes(s, r) for s, r in pairs]
    story_scores = [float(all(o)) for o in outcomes]
    flat = [float(x) for o in outcomes for x in o]
    turn_cats = [t.category for s, _ in pairs for t in s.turns]
    modalities: dict[str, Any] = {}
    for mod in MODALITIES:
        sel = [o for (s, _), o in zip(pairs, outcomes, strict=True) if s.modality == mod]
        if sel:
            modalities[mod] = {"story_accuracy": story_accuracy(sel), "question_accuracy": question_accuracy(sel),
                               "n_stories": len(sel), "n_questions": sum(len(o) for o in sel)}
    played = [r for _, r in pairs]
    turns = [t for r in played for t in r.turns]
    return {
        "n_stories": len(pairs), "n_questions": len(flat),
        "story_accuracy": story_accuracy(outcomes), "question_accuracy": question_accuracy(outcomes),
        "story_accuracy_by_category": mean_by_group(story_scores, [s.category for s, _ in pairs]),
        "question_accuracy_by_category": mean_by_group(flat, turn_cats),
        "n_stories_by_category": dict(Counter(s.category for s, _ in pairs)),
        "n_questions_by_category": dict(Counter(turn_cats)),
        "by_modality": modalities,
        "feedback": feedback_accuracy([r.turns for r in played]),
        "failed_stories": sum(r.story_status == "failed" for r in played),
        "judge_status": dict(sorted(Counter(t.judge_status for t in turns).items())),
        "judge_methods": dict(sorted(Counter(t.judge_method for t in turns if t.judge_method).items())),
        "calls": _calls(played, len(flat)),
        "cue_status": dict(sorted(Counter(r.cue_status for r in played).items())),
        "turns_with_image_sent": sum(bool(t.image_sent) for t in turns), "turns": len(turns),
        "skipped_stories": len(recs) - len(pairs),
    }


def _paired(stories: Sequence[Story], base: Sequence[StoryPrediction], other: Sequence[StoryPrediction],
            only_images: bool) -> dict[str, Any] | None:
    """Story and question accuracy of the same stories in two settings, and how often the answers agree."""
    pairs = [(s, a, b) for s, a, b in zip(stories, base, other, strict=True)
             if a.story_status != "skipped" and b.story_status != "skipped" and (s.image_dependent or not only_images)]
    if not pairs:
        return None
    one = [turn_outcomes(s, a) for s, a, _ in pairs]
    two = [turn_outcomes(s, b) for s, _, b in pairs]
    same, compared = 0, 0
    for _, a, b in pairs:
        answers = {t.turn: t.answer for t in b.turns}
        for t in a.turns:
            if t.answer is not None and answers.get(t.turn) is not None:
                compared += 1
                same += normalise_answer(t.answer) == normalise_answer(answers[t.turn] or "")
    story_change = paired_bootstrap_difference([all(o) for o in two], [all(o) for o in one])
    question_change = paired_bootstrap_difference([x for o in two for x in o], [x for o in one for x in o])
    return {"n_stories": len(pairs), "n_questions": sum(len(o) for o in one),
            "story_accuracy": [story_accuracy(one), story_accuracy(two)],
            "question_accuracy": [question_accuracy(one), question_accuracy(two)],
            "story_accuracy_change": story_accuracy(two) - story_accuracy(one),
            "story_accuracy_change_interval": [story_change.low, story_change.high],
            "question_accuracy_change": question_accuracy(two) - question_accuracy(one),
            "question_accuracy_change_interval": [question_change.low, question_change.high],
            "same_answer_share": same / compared if compared else float("nan")}


def score_commet(stories: Sequence[Story], by_setting: Mapping[str, Sequence[StoryPrediction]], *, judge: str
                 ) -> dict[str, Any]:
    """The report's results: per setting, and the blind (orig vs blind, image-dependent stories) and cue (orig
    vs kb-cues) diagnostics when both settings ran."""
    settings = {k: _setting(stories, recs) for k, recs in by_setting.items()}
    diagnostics: dict[str, Any] = {}
    if "orig" in by_setting and "blind" in by_setting:
        diagnostics["blind"] = _paired(stories, by_setting["orig"], by_setting["blind"], only_images=True)
    if "orig" in by_setting and "kb-cues" in by_setting:
        diagnostics["kb_cues"] = _paired(stories, by_setting["orig"], by_setting["kb-cues"], only_images=False)
    turns = [t for s in stories for t in s.turns]
    return {
        "n_stories": len(stories), "n_questions": len(turns), "judge": judge,
        "judge_note": ("offline judge: normalised string match, then embedding similarity to the listed answers; "
                       "weaker than a judge model" if judge.startswith("offline") else "judge model with the "
                       "commet_judge rubric"),
        "n_stories_by_modality": dict(Counter(s.modality for s in stories)),
        "n_stories_by_category": dict(Counter(s.category for s in stories)),
        "n_questions_by_category": dict(Counter(t.category for t in turns)),
        "settings": settings, "diagnostics": diagnostics,
    }


def _order(groups: Mapping[str, Any]) -> list[str]:
    return [c for c in CATEGORIES if c in groups] + sorted(c for c in groups if c not in CATEGORIES)


def commet_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Summary, calls, per category (stories and questions), per modality, feedback, blind and cue tables."""
    settings: Mapping[str, Any] = results["settings"]
    summary = {k: {"stories": v["n_stories"], "story accuracy": interval_text(v["story_accuracy"], v["n_stories"]),
                   "questions": v["n_questions"],
                   "question accuracy": interval_text(v["question_accuracy"], v["n_questions"]),
                   "failed stories": v["failed_stories"],
                   "judge invalid": v["judge_status"].get("invalid", 0),
                   "with cues": v["cue_status"].get("matched", 0)} for k, v in settings.items()}
    calls = {k: {"model / story": v["calls"]["model_per_story"], "model / question": v["calls"]["model_per_question"],
                 "judge / story": v["calls"]["judge_per_story"], "judge / question": v["calls"]["judge_per_question"],
                 "model sent": v["calls"]["model_sent"], "model cached": v["calls"]["model_cached"],
                 "judge sent": v["calls"]["judge_sent"], "judge cached": v["calls"]["judge_cached"]}
             for k, v in settings.items()}
    tables = {
        "summary": Table.from_nested(
            "CoMMET: story and question accuracy per setting", summary, row_label="setting", precision=3,
            note=f"judge {results['judge']} ({results['judge_note']}); a story counts only when every question is "
                 "right; failed stories count as wrong. accuracy [95% Wilson interval] n=stories or questions (the "
                 "questions of one story are not independent, so the question interval is somewhat too narrow)"),
        "calls": Table.from_nested(
            "Model and judge calls per story and per question", calls, row_label="setting", precision=2,
            note="answers received while playing (sent to the model, or served from the response cache); judge "
                 "calls include re-asks for invalid JSON; the offline judge makes none"),
    }
    for level, field, counts in (("story", "story_accuracy_by_category", "n_stories_by_category"),
                                 ("question", "question_accuracy_by_category", "n_questions_by_category")):
        rows = {c: {**{k: interval_text(v[field][c], v[counts].get(c, 0)) if c in v[field] else
                       "n/a (no played story in this category)" for k, v in settings.items()},
                    "n": results[counts].get(c, 0)}
                for c in _order(results[counts])}
        tables[f"category_{level}"] = Table.from_nested(
            f"{level.capitalize()} accuracy per mental-state category", rows, row_label="category", precision=3,
            note=f"accuracy [95% Wilson interval] n={'stories' if level == 'story' else 'questions'} played in the "
                 "setting")
    def _mod(block: Mapping[str, Any] | None, unit: str) -> str:
        if not block:
            return "n/a (no such story played in this setting)"
        return interval_text(block[f"{unit}_accuracy"], block[f"n_{'stories' if unit == 'story' else 'questions'}"])

    modality = {m: {**{f"{k} {unit}": _mod(v["by_modality"].get(m), unit)
                       for k, v in settings.items() for unit in ("story", "question")},
                    "n": results["n_stories_by_modality"].get(m, 0)}
                for m in MODALITIES if m in results["n_stories_by_modality"]}
    tables["modality"] = Table.from_nested("Accuracy on text-complete and image-dependent stories", modality,
                                           row_label="modality", precision=3,
                                           note="accuracy [95% Wilson interval] n=stories or questions played in the "
                                                "setting; n: stories of that modality in the data; blind plays only "
                                                "the image-dependent ones")

    def _fb(v: Mapping[str, Any], key: str, n_key: str) -> str:
        n = int(v["feedback"][n_key])
        return interval_text(v["feedback"][key], n) if n else "n/a (no such turn)"

    feedback = {k: {"first turn": _fb(v, "first_turn", "n_first"),
                    "after right": _fb(v, "after_right", "n_after_right"),
                    "after wrong": _fb(v, "after_wrong", "n_after_wrong"),
                    "branch feedback": v["feedback"]["n_branch_feedback"]} for k, v in settings.items()}
    tables["feedback"] = Table.from_nested(
        "Feedback diagnostic: question accuracy after right and after wrong feedback", feedback, row_label="setting",
        precision=3, note="turns 2.. grouped by the judge's verdict on the previous answer (which chose the "
                          "feedback); accuracy [95% Wilson interval] n=turns; branch feedback: turns after feedback "
                          "chosen by a branch")
    for name, title, labels in (("blind", "Blind run: image-dependent stories with and without their images",
                                 ("with images (orig)", "blind")),
                                ("kb_cues", "Knowledge cues: the same stories without and with cues",
                                 ("orig", "kb-cues"))):
        d = results["diagnostics"].get(name)
        if not d:
            continue
        rows = {label: {"story accuracy": interval_text(d["story_accuracy"][i], d["n_stories"]),
                        "question accuracy": interval_text(d["question_accuracy"][i], d["n_questions"])}
                for i, label in enumerate(labels)}
        rows["change"] = {f"{unit} accuracy": _change_text(d, unit) for unit in ("story", "question")}
        same = (f"; same answer in both runs: {d['same_answer_share']:.0%} of questions"
                if d["same_answer_share"] == d["same_answer_share"] else "")
        tables[name] = Table.from_nested(
            title, rows, row_label="run", precision=3,
            note=f"accuracy [95% Wilson interval] n=stories or questions; change: {labels[1]} minus {labels[0]} "
                 f"[95% paired-bootstrap interval over the same stories or questions]{same}")
    return tables


def _change_text(diagnostic: Mapping[str, Any], unit: str) -> str:
    """The paired change of one accuracy as ``+0.100 [-0.200, 0.400] n=10`` (the estimate alone for results
    written before the interval was kept)."""
    change = diagnostic[f"{unit}_accuracy_change"]
    n = int(diagnostic["n_stories" if unit == "story" else "n_questions"])
    low, high = diagnostic.get(f"{unit}_accuracy_change_interval") or (None, None)
    if change is None or change != change:
        return "n/a (no items)"
    if low is None or high is None:
        return f"{change:+.3f} n={n}"
    return f"{change:+.3f} [{low:.3f}, {high:.3f}] n={n}"


def commet_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Story and question accuracy per mental-state category (one bar per setting)."""
    settings: Mapping[str, Any] = results["settings"]
    plots: list[Plot] = []
    for level, field, counts in (("story", "story_accuracy_by_category", "n_stories_by_category"),
                                 ("question", "question_accuracy_by_category", "n_questions_by_category")):
        cats = _order(results[counts])
        est = {k: [v[field].get(c, math.nan) for c in cats] for k, v in settings.items()}
        bounds = {k: [wilson_interval(max(0, min(n, round(a * n))), n) if n and not math.isnan(a) else
                      (math.nan, math.nan) for a, n in ((a, int(settings[k][counts].get(c, 0)))
                                                         for a, c in zip(vals, cats, strict=True))]
                  for k, vals in est.items()}
        plots.append(IntervalPlot(
            f"category_{level}", f"{level.capitalize()} accuracy per mental-state category (95% Wilson intervals)",
            [f"{c} (n={results[counts][c]})" for c in cats], est, {k: [b[0] for b in v] for k, v in bounds.items()},
            {k: [b[1] for b in v] for k, v in bounds.items()}, ylabel="accuracy", ylim=(0.0, 1.0)))
    return plots
