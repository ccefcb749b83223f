"""The ArtECulture run: culture-conditioned emotion prediction on the held-out split, every ablation mode.

Metrics: accuracy per culture and overall, Western / non-Western split (when the data says), the ablation table
over modes beside the majority-class baseline, the prompt-language x culture grid, and, with two judge models,
explanation alignment scored 1-5 with the judges' Spearman agreement on the ranking of settings.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError
from culturekb.evals.artemculture.command import artemculture_options
from culturekb.evals.artemculture.images import ImageCheck, check_images, describe_images
from culturekb.evals.artemculture.spec import ArtECultureSpec
from culturekb.evals.context import RunContext
from culturekb.evals.loaders import require_labelled_split
from culturekb.evals.metrics import (
    accuracy,
    accuracy_by_group,
    align_predictions,
    confusion_matrix,
    majority_baseline_accuracy,
    spearman_agreement,
    western_group,
    wilson_interval,
)
from culturekb.evals.reports import (
    HeatmapPlot,
    IntervalPlot,
    Plot,
    Table,
    base_run_header,
    calibration_text,
    interval_text,
    valid_accuracy_text,
)
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.inference.base import MODES, Prediction, Predictor
from culturekb.inference.predictors import predictor_client
from culturekb.kb.cultures import CultureRegistry
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme

__all__ = ["ArtECultureRunner", "artemculture_tables", "artemculture_plots", "score_alignment", "run_artemculture"]

log = logging.getLogger(__name__)


def score_alignment(judge: Any, samples_by_id: Mapping[str, Sample], preds: Sequence[Prediction],
                    culture_name: Any = str) -> list[float | None]:
    """1-5 alignment of each explanation with its predicted emotion, by one judge model (None: no explanation)."""
    from culturekb.models.json_output import complete_json
    from culturekb.text.prompts import resolve_prompt

    template = resolve_prompt("explanation_alignment", "en", required=("culture", "emotion", "explanation"))

    def valid(obj: Any) -> int:
        score = obj.get("score") if isinstance(obj, dict) else None
        if not isinstance(score, int | float) or not 1 <= score <= 5:
            raise ValueError('expected {"score": 1-5}')
        return int(round(score))

    out: list[float | None] = []
    for p in preds:
        if p.label is None or not p.explanation.strip():
            out.append(None)
            continue
        text = template.render(culture=culture_name(p.culture), emotion=p.label, explanation=p.explanation)
        out.append(float(complete_json(judge, [{"role": "user", "content": text}], valid, temperature=0.0,
                                       max_tokens=100)))
    return out


@register_runner("artemculture")
class ArtECultureRunner(Runner):
    """Held-out split of ArtEmis/ArtELingo-style data, predicted in each mode (and prompt language)."""

    command = RunnerCommand(artemculture_options)
    reads_label_words = True

    default_modes = MODES

    def __init__(
        self,
        samples: Sequence[Sample],
        predictor: Predictor,
        scheme: EmotionScheme,
        *,
        split: str = "test",
        prompt_languages: Sequence[str] | None = None,
        grid_mode: str = "know",
        modes: Sequence[str] | None = None,
        judges: Sequence[Any] = (),
        kb_version: str = "",
        calibration: Mapping[str, Any] | None = None,
        cultures: CultureRegistry | None = None,
        text_only: bool = False,
        image_template: str | None = None,
        image_check: ImageCheck | None = None,
        **kw: Any,
    ) -> None:
        """`calibration`: the kb-prior's calibration (weights, concept filter, valid figures), recorded in the
        report. `cultures`: the registry that names cultures for the alignment judges (the KB's; default: the
        packaged cultures). `text_only`, `image_template`, `image_check`: how the run treats images (``--text-only``,
        ``--image-template``, what `artemculture.images.check_images` found), recorded in the report."""
        self.cultures = cultures
        self.text_only = text_only
        self.image_template = image_template
        self.image_check = image_check
        self.all_samples = list(samples)
        self.calibration = dict(calibration) if calibration else None
        self.split = split
        self.scheme = scheme
        self.modes = list(modes or MODES)
        for m in self.modes:
            if m not in MODES:
                raise ConfigError(f"unknown mode {m!r}; use any of {list(MODES)}")
        self.prompt_languages = list(prompt_languages or [])
        self.grid_mode = grid_mode
        self.judges = list(judges)
        if self.judges and len(self.judges) != 2:
            raise ConfigError("explanation alignment needs exactly two judge models (or none)")
        self.kb_version = kb_version
        kw.setdefault("client", predictor_client(predictor))
        super().__init__(predictor, **kw)

    @classmethod
    def from_context(cls, ctx: RunContext) -> ArtECultureRunner:
        """The held-out split of the spec's data (read with the KB's scheme before the index opens), the spec's
        model as predictor (the kb-prior calibrated), the judges of explanation alignment."""
        spec = ctx.spec
        assert isinstance(spec, ArtECultureSpec)
        read = ctx.kb_samples(spec.data)
        require_labelled_split(read, spec.split)
        samples, check = prepare_images(read, spec)
        predictor, calibration = ctx.predictor(samples)
        kb = ctx.augmenter().retriever.kb
        judges = [ctx.client(j, scope="") for j in spec.judges]
        return cls(samples, predictor, kb.scheme, split=spec.split, modes=spec.modes, calibration=calibration,
                   prompt_languages=spec.prompt_languages, judges=judges, kb_version=kb.version, limit=spec.limit,
                   progress=spec.progress, cultures=kb.culture_registry, text_only=spec.text_only,
                   image_template=spec.image_template, image_check=check, load_report=ctx.data_read or None)

    def load(self) -> list[Sample]:
        """The labelled samples of the held-out split."""
        test = [s for s in self.all_samples if s.split == self.split and s.label is not None]
        if not test:
            raise ConfigError(f"no labelled samples in split {self.split!r}; check the data's split column")
        return test

    def default_settings(self) -> list[Setting]:
        """One setting per mode, then the grid mode in each prompt language."""
        settings = [Setting(m) for m in self.modes]
        settings += [Setting(self.grid_mode, lang) for lang in self.prompt_languages]
        return settings

    def config(self) -> dict[str, Any]:
        """The base config plus the KB version and split, so a rerun against another KB starts over (and a
        text-only run or another image layout, when given, so that their answers are not mixed)."""
        images: dict[str, Any] = {"text_only": True} if self.text_only else {}
        if self.image_template is not None:
            images["image_template"] = self.image_template
        return {**super().config(), "kb_version": self.kb_version, "split": self.split, **images}

    # -- scoring -------------------------------------------------------------------------------------------------
    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Accuracy per setting (overall, per culture, Western or not) beside train's per-culture majority baseline."""
        train = [s for s in self.all_samples if s.split == "train" and s.label is not None]
        order = list(self.scheme.labels)
        cultures = [s.culture for s in samples]
        baseline = {
            "overall": majority_baseline_accuracy([s.label for s in train], [s.culture for s in train],
                                                  [s.label for s in samples], cultures, order=order),
            **{c: majority_baseline_accuracy([s.label for s in train], [s.culture for s in train],
                                             [s.label for s in samples if s.culture == c],
                                             [c] * sum(1 for x in cultures if x == c), order=order)
               for c in sorted(set(cultures))},
        }
        per_setting: dict[str, Any] = {}
        for setting, preds in predictions_by_setting.items():
            golds, labels = align_predictions(samples, preds, where=f"artemculture/{setting.key}")
            cm = confusion_matrix(labels, golds, order)
            per_setting[setting.key] = {
                "mode": setting.mode,
                "prompt_language": setting.prompt_language,
                "accuracy": accuracy(labels, golds),
                "per_culture": accuracy_by_group(labels, golds, cultures),
                "western": accuracy_by_group(labels, golds, [western_group(s) for s in samples]),
                "invalid": sum(p.parse_status == "invalid" for p in preds),
                "errors": sum(p.parse_status == "error" for p in preds),
                "parse_paths": dict(sorted(Counter(p.parse_path for p in preds if p.parse_path).items())),
                "with_knowledge": sum(bool(p.tuples_used) for p in preds),
                "with_image": sum(bool(p.with_image) for p in preds),
                "confusion": cm.to_dict(),
            }
        results: dict[str, Any] = {
            "split": self.split,
            "n_samples": len(samples),
            "per_culture_n": {c: cultures.count(c) for c in sorted(set(cultures))},
            "western_n": dict(sorted(Counter(western_group(s) for s in samples).items())),
            "grid_mode": self.grid_mode,
            "majority_baseline": baseline,
            "settings": per_setting,
        }
        results["images"] = self._images(samples, predictions_by_setting)
        if self.judges:
            results["explanation_alignment"] = self._alignment(samples, predictions_by_setting)
        if self.calibration:
            results["calibration"] = self.calibration
        return results

    def _images(self, samples: Sequence[Sample], by_setting: Mapping[Setting, Sequence[Prediction]]
                ) -> dict[str, Any]:
        """How the run treated images: text-only or not, the layout checked, and how many items went to the model
        with their image (the most over the settings; per setting in ``settings.<key>.with_image``)."""
        check = self.image_check or check_images(samples, template=self.image_template)
        sent = max((sum(bool(p.with_image) for p in preds) for preds in by_setting.values()), default=0)
        return {"text_only": self.text_only, "image_template": self.image_template, **check.to_dict(),
                "items": len(samples), "items_with_image": sent,
                "line": describe_images(check, sent, len(samples), text_only_run=self.text_only)}

    def _alignment(self, samples: Sequence[Sample], by_setting: Mapping[Setting, Sequence[Prediction]]
                   ) -> dict[str, Any]:
        from culturekb.inference.prompts import culture_display_name

        by_id = {s.id: s for s in samples}
        means: list[dict[str, float]] = []
        for judge in self.judges:
            per: dict[str, float] = {}
            for setting, preds in by_setting.items():
                scores = [x for x in score_alignment(judge, by_id, preds,
                                                     lambda c: culture_display_name(c, "en", self.cultures))
                          if x is not None]
                per[setting.key] = sum(scores) / len(scores) if scores else math.nan
            means.append(per)
        return {
            "judges": [getattr(j, "id", str(j)) for j in self.judges],
            "mean_score": {getattr(j, "id", str(j)): m for j, m in zip(self.judges, means, strict=True)},
            "spearman": spearman_agreement(means[0], means[1]) if len(means[0]) >= 2 else math.nan,
        }

    # -- report --------------------------------------------------------------------------------------------------
    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the predictor, the explanation judges, the majority baseline, the KB and its calibration,
        the images sent."""
        header = base_run_header(self)
        model = str(getattr(self.predictor, "id", "") or "none")
        offline = model.startswith("kb-prior")
        if offline:
            model += " (offline: the KB's label prior and retrieved tuples; no model call)"
        judges = [str(getattr(j, "id", j)) for j in self.judges]
        images = results.get("images") or {}
        base = results["majority_baseline"]
        header.update({
            "model": model,
            "judge": ", ".join(judges) + " (explanation alignment, 1-5)" if judges else
                     "none (accuracy against the gold label; no explanation judge was given)",
            "baseline": f"majority: each culture's most frequent label in the train split ({base['overall']:.3f} "
                        f"overall on {results['n_samples']} samples)",
            "KB": f"{self.kb_version}" if self.kb_version else "none (the run used no KB)",
            "KB calibration": calibration_text(self.calibration),
            "images sent": images.get("line") or "not recorded",
            "split": f"{results['split']} ({results['n_samples']} samples)",
        })
        if offline:
            header["prompt languages"] = ("none sent (offline: no model call; the answers are filed under "
                                          f"{header['prompt languages']})")
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """Markdown tables of the ArtEmis/ArtELingo results."""
        return artemculture_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """PNG plots of the ArtEmis/ArtELingo results."""
        return artemculture_plots(results)


def artemculture_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """The report's tables: ablation over modes beside the baseline, Western split, language grid, alignment."""
    settings = results["settings"]
    cultures = list(results["per_culture_n"])
    mode_rows = {k: v for k, v in settings.items() if v["prompt_language"] is None}
    n_of = {**results["per_culture_n"], "overall": results["n_samples"]}
    no_data = "n/a (not run: no answers)"
    ablation: dict[str, dict[str, Any]] = {"majority baseline": {
        **{c: interval_text(results["majority_baseline"][c], n_of[c]) for c in cultures},
        "overall": interval_text(results["majority_baseline"]["overall"], n_of["overall"]),
        "invalid": "n/a (no model answer)", "errors": "n/a (no model answer)",
        "with knowledge": "n/a (no model answer)"}}
    for key, v in mode_rows.items():
        ablation[key] = {**{c: interval_text(v["per_culture"].get(c), n_of[c]) if c in v["per_culture"] else no_data
                            for c in cultures},
                         "overall": interval_text(v["accuracy"], n_of["overall"]),
                         "invalid": v["invalid"], "errors": v["errors"], "with knowledge": v["with_knowledge"]}
    images = results.get("images") or {}
    note = (f"{results['n_samples']} samples of split {results['split']}; accuracy [95% Wilson interval] n=items. "
            "majority baseline: each culture's most frequent label in the train split.")
    if images.get("line"):
        note += f" Images: {images['line']}."
    tables = {"ablation": Table.from_nested("Accuracy per culture and mode", ablation, row_label="mode",
                                            note=note)}
    western_n = results.get("western_n") or {}
    west = {k: {g: interval_text(a, int(western_n.get(g, 0))) for g, a in v["western"].items()}
            for k, v in mode_rows.items() if v["western"]}
    if west:
        tables["western"] = Table.from_nested(
            "Accuracy, Western vs non-Western", west, row_label="mode",
            note=("accuracy [95% Wilson interval] n=items in the group; a group of a few items has a wide interval "
                  "that says little either way."))
    grid = {v["prompt_language"]: v["per_culture"] for v in settings.values() if v["prompt_language"]}
    if grid:
        tables["grid"] = Table.from_nested(f"Prompt language x culture ({results.get('grid_mode', 'know')})", grid,
                                           row_label="prompt language", columns=cultures)
    if results.get("calibration"):
        cal = results["calibration"]
        row = {k: cal.get(k) for k in ("min_support", "min_informativeness", "alpha", "beta", "gamma", "pool")}
        row.update({"valid prior acc": valid_accuracy_text(cal, "prior_accuracy"),
                    "valid acc": valid_accuracy_text(cal)})
        tables["calibration"] = Table.from_nested(
            "KB-prior calibration", {str(cal.get("source", "kb")) + (f": {cal['method']}" if cal.get("method") else ""):
                                     row}, row_label="chosen on",
            note=f"tuples hidden by the concept filter: {cal.get('dropped', {}).get('total', 0)}; valid accuracies "
                 "[95% Wilson interval] n=valid samples")
    if "explanation_alignment" in results:
        ea = results["explanation_alignment"]
        scores = {j: {k: (v if v is not None and not math.isnan(v) else
                          "n/a (no answer in this setting had an explanation to score)") for k, v in per.items()}
                  for j, per in ea["mean_score"].items()}
        rho = ea["spearman"]
        rho_text = (f"Spearman rank agreement of the two judges over the settings: {rho:.3f}." if rho is not None and
                    not math.isnan(rho) else "Spearman agreement: n/a (it needs two judges with scores in at least "
                    "two settings).")
        tables["alignment"] = Table.from_nested("Explanation alignment (1-5)", scores, row_label="judge",
                                                note="Mean judge score of the answers' explanations. " + rho_text)
    return tables


def artemculture_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Accuracy per culture per mode, and the confusion matrices of orig and know."""
    settings = results["settings"]
    n_of = {**results["per_culture_n"], "overall": results["n_samples"]}
    groups = [*results["per_culture_n"], "overall"] if len(results["per_culture_n"]) > 1 else ["overall"]
    modes = {k: v for k, v in settings.items() if v["prompt_language"] is None}
    est = {k: [v["accuracy"] if g == "overall" else v["per_culture"].get(g, math.nan) for g in groups]
           for k, v in modes.items()}
    bounds = {k: [wilson_interval(max(0, min(n_of[g], round(a * n_of[g]))), n_of[g]) if a is not None and
                  not math.isnan(a) else (math.nan, math.nan) for g, a in zip(groups, vals, strict=True)]
              for k, vals in est.items()}
    base = results["majority_baseline"]["overall"]
    plots: list[Plot] = [IntervalPlot(
        "accuracy", "Accuracy per culture and mode (95% Wilson intervals)",
        [f"{g} (n={n_of[g]})" for g in groups], est, {k: [b[0] for b in v] for k, v in bounds.items()},
        {k: [b[1] for b in v] for k, v in bounds.items()}, ylabel="accuracy", ylim=(0.0, 1.0),
        baselines={"majority baseline, overall": base} if base is not None and not math.isnan(base) else {})]
    from culturekb.evals.metrics import ConfusionMatrix

    for key, v in settings.items():
        if v["prompt_language"] is None and key in ("orig", "know"):
            cm = v["confusion"]
            plots.append(HeatmapPlot.from_confusion(
                f"confusion-{key}", f"Confusion ({key})",
                ConfusionMatrix(tuple(cm["labels"]), tuple(tuple(r) for r in cm["counts"]))))
    return plots


def prepare_images(samples: Sequence[Sample], spec: ArtECultureSpec) -> tuple[list[Sample], ImageCheck]:
    """The run's samples with their images as the spec says, and what was found; refuses (DataError, exit 2)
    an image run against a model client whose images are missing, before any model is built or called.

    ``--image-template`` makes every item's image path; the items checked are those the run evaluates (the
    split, labelled, the first ``--limit``); ``--text-only`` strips the images (every item gets the text prompt);
    a predictor that reads no image (``kb-prior``, the registry's PREDICTORS) needs none.
    """
    from culturekb import registry
    from culturekb.evals.artemculture.images import apply_image_template, require_images, text_only

    out = list(samples)
    if spec.image_template is not None:
        out = apply_image_template(out, spec.image_template, spec.data_root)
    evaluated = [s for s in out if s.split == spec.split and s.label is not None][: spec.limit]
    check = check_images(evaluated, data_root=spec.data_root, template=spec.image_template)
    if spec.text_only:
        return text_only(out), check
    if registry.which(spec.model, registry.PREDICTORS, registry.CLIENTS, kind="model") is registry.CLIENTS:
        require_images(check, what=f"eval artemculture --model {spec.model}")
    return out, check


def run_artemculture(samples: Sequence[Sample], predictor: Predictor, scheme: EmotionScheme, out_dir: str | Path,
                     **kw: Any) -> Any:
    """Run the ArtEmis/ArtELingo evaluation into `out_dir` (a shortcut for `ArtECultureRunner(...).run`)."""
    return ArtECultureRunner(samples, predictor, scheme, **kw).run(out_dir)
