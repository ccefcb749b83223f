"""RICE-VL visual grounding: the model returns a box for a phrase, scored by IoU with the gold box.

`culturekb.evals.ricevl.boxes.parse_box` reads the usual box forms; mean IoU per country and per category, accuracy at
IoU >= the threshold (0.5). An unparseable, inverted or outside box scores 0 and is counted by its status. Offline
(no model) the baseline predicts the whole image.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from culturekb._records import LoadReport, parse_field_map
from culturekb.errors import ConfigError
from culturekb.evals.context import RunContext
from culturekb.evals.metrics import mean_by_group, mean_score, wilson_interval
from culturekb.evals.reports import IntervalPlot, Plot, Table, base_run_header, interval_text
from culturekb.evals.ricevl.boxes import ParsedBox, parse_box
from culturekb.evals.ricevl.command import ricevl_grounding_options
from culturekb.evals.ricevl.common import item_counts, load_template
from culturekb.evals.ricevl.metrics import box_iou, iou_accuracy
from culturekb.evals.ricevl.spec import RiceVLGroundingSpec
from culturekb.evals.runner import Runner, RunnerCommand, Setting, register_runner
from culturekb.evals.stats import bootstrap_interval
from culturekb.inference.base import Prediction
from culturekb.inference.messages import ask_each
from culturekb.kb.cultures import CultureRegistry, packaged_registry
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient

__all__ = ["GroundingPrediction", "RiceVLGroundingRunner", "grounding_tables", "grounding_plots", "sent_size"]


class GroundingPrediction(Prediction):
    """A grounding answer with the box read from it (absolute pixels of the original image)."""

    box: list[float] | None = None
    box_status: str = "unparsed"
    box_form: str = ""
    sent_size: list[int] | None = None


def sent_size(width: float, height: float, max_side: int) -> tuple[int, int]:
    """The size of the image the model sees after `build_messages` shrinks it (longer side <= max_side)."""
    if max(width, height) <= max_side:
        return int(round(width)), int(round(height))
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


@register_runner("ricevl-grounding")
class RiceVLGroundingRunner(Runner):
    """RICE-VL visual grounding: one setting (``ground``); a model's box, or the whole-image baseline without one.

    `cultures`: the registry naming the countries in the report (the run's, `RunContext.cultures`); default: the
    packaged cultures (`culturekb.kb.cultures.packaged_registry`).
    """

    command = RunnerCommand(ricevl_grounding_options)

    default_modes = ("ground",)
    record_type = GroundingPrediction

    def __init__(
        self,
        samples: Sequence[Sample],
        *,
        client: ModelClient | None = None,
        scale: str = "auto",
        layout: str = "auto",
        template_dir: str | Path | None = None,
        temperature: float = 0.0,
        max_tokens: int = 128,
        max_image_side: int = 1024,
        iou_threshold: float = 0.5,
        cultures: CultureRegistry | None = None,
        **kw: Any,
    ) -> None:
        self.samples = list(samples)
        self.client = client
        self.cultures = cultures if cultures is not None else packaged_registry()  # names countries in reports
        parse_box("", scale=scale, layout=layout)  # checks the options
        self.scale = scale
        self.layout = layout
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_image_side = max_image_side
        if not 0.0 <= iou_threshold <= 1.0:
            raise ConfigError(f"iou_threshold must be in [0, 1], got {iou_threshold}")
        self.iou_threshold = iou_threshold
        self.template = load_template("ricevl_grounding", ("phrase",), ("width", "height"), template_dir)
        super().__init__(None, client=client, **kw)

    @classmethod
    def from_context(cls, ctx: RunContext) -> RiceVLGroundingRunner:
        """The spec's grounding items (read first) and its model (``full-image``/``kb-prior``: the offline
        whole-image baseline)."""
        from culturekb.evals.ricevl.data import load_ricevl_grounding

        spec = ctx.spec
        assert isinstance(spec, RiceVLGroundingSpec)
        report = LoadReport()
        samples = load_ricevl_grounding(spec.data, bbox_format=spec.bbox_format, data_root=spec.data_root,
                                        scheme=spec.scheme, allow_unknown_countries=spec.allow_unknown_countries,
                                        field_map=parse_field_map(spec.field_map), on_bad_row=spec.on_bad_row,
                                        report=report)
        return cls(samples, client=ctx.client(), scale=spec.scale, layout=spec.layout,
                   template_dir=spec.template_dir, max_tokens=spec.max_tokens, limit=spec.limit,
                   progress=spec.progress, cultures=ctx.cultures(), load_report=report.to_dict())

    def load(self) -> list[Sample]:
        """The items, each checked for its gold box."""
        for s in self.samples:
            if not isinstance(s.metadata.get("bbox"), list | tuple):
                raise ConfigError(f"grounding item {s.id!r} has no gold box; load it with load_ricevl_grounding")
        return list(self.samples)

    def config(self) -> dict[str, Any]:
        """What decides the results (model, template, box reading, decoding), for the report and resumption."""
        return {"runner": self.label, "model": self.client.id if self.client is not None else "full-image",
                "template": self.template.id, "scale": self.scale, "layout": self.layout,
                "decoding": [self.temperature, self.max_tokens, self.max_image_side]}

    def predict_chunk(self, samples: Sequence[Sample], setting: Setting) -> list[Prediction]:
        """One box per item: asked of the model (boxes mapped back to the original image), or the whole image."""
        out: list[Prediction] = []
        if self.client is None:
            for s in samples:
                w, h = s.metadata.get("width"), s.metadata.get("height")
                box, status = ([0.0, 0.0, float(w), float(h)], "ok") if w and h else (None, "unparsed")
                out.append(GroundingPrediction(
                    sample_id=s.id, culture=s.culture, mode=setting.mode, label=None if box is None else str(box),
                    raw="", parse_status="json" if box else "invalid", model="full-image", box=box,
                    box_status=status, box_form="baseline", template_id=""))
            return out
        prompts: list[tuple[str, str | None, str]] = []
        sizes: list[tuple[int, int] | None] = []
        for s in samples:
            w, h = s.metadata.get("width"), s.metadata.get("height")
            size = sent_size(float(w), float(h), self.max_image_side) if w and h else None
            sizes.append(size)
            text = self.template.fill({"phrase": s.text or "", "width": size[0] if size else "unknown",
                                       "height": size[1] if size else "unknown"})
            prompts.append((text, s.image, f"sample {s.id!r}"))
        answers = ask_each(self.client, prompts, self.max_image_side, temperature=self.temperature,
                           max_tokens=self.max_tokens)
        for i, (s, ans) in enumerate(zip(samples, answers, strict=True)):
            common: dict[str, Any] = {"sample_id": s.id, "culture": s.culture, "mode": setting.mode,
                                      "model": self.client.id, "template_id": self.template.id,
                                      "sent_size": list(sizes[i] or ()) or None}
            if isinstance(ans, str):  # the image could not be read, or the call failed: IoU 0, counted
                out.append(GroundingPrediction(label=None, parse_status="error", box_status="error", error=ans,
                                               **common))
                continue
            size = sizes[i]
            parsed: ParsedBox = parse_box(ans.text, width=size[0] if size else None,
                                          height=size[1] if size else None, scale=self.scale, layout=self.layout)
            box = None
            if parsed.box is not None:
                fx = float(s.metadata["width"]) / size[0] if size else 1.0
                fy = float(s.metadata["height"]) / size[1] if size else 1.0
                box = [parsed.box[0] * fx, parsed.box[1] * fy, parsed.box[2] * fx, parsed.box[3] * fy]
            out.append(GroundingPrediction(
                label=None if box is None else str([round(v, 1) for v in box]), raw=ans.text,
                parse_status="text" if parsed.scored else "invalid", box=box, box_status=parsed.status,
                box_form=parsed.form, cached=ans.cached, error=parsed.detail or None, **common))
        return out

    def score(self, samples: Sequence[Sample], predictions_by_setting: Mapping[Setting, Sequence[Prediction]]
              ) -> dict[str, Any]:
        """Mean IoU and accuracy at the threshold, overall, per country and per category; box outcomes counted."""
        countries = [s.culture for s in samples]
        categories = [str(s.metadata.get("category")) for s in samples]
        per_setting: dict[str, Any] = {}
        for setting, preds in predictions_by_setting.items():
            by_id = {p.sample_id: p for p in preds}
            recs = [by_id[s.id] for s in samples]
            ious = [box_iou(p.box if getattr(p, "box_status", "") in ("ok", "clipped") else None,  # type: ignore[attr-defined]
                            s.metadata["bbox"]) for s, p in zip(samples, recs, strict=True)]
            hits = [1.0 if v >= self.iou_threshold else 0.0 for v in ious]
            per_setting[setting.key] = {
                "mean_iou": mean_score(ious),
                "per_country_interval": {c: [b.low, b.high] for c, b in (
                    (c, bootstrap_interval([v for v, g in zip(ious, countries, strict=True) if g == c]))
                    for c in sorted(set(countries)))},
                "accuracy_at_iou": iou_accuracy(ious, self.iou_threshold),
                "per_country": mean_by_group(ious, countries),
                "per_category": mean_by_group(ious, categories),
                "accuracy_per_country": mean_by_group(hits, countries),
                "accuracy_per_category": mean_by_group(hits, categories),
                "n": len(recs),
                "box_status": dict(sorted(Counter(getattr(p, "box_status", "") for p in recs).items())),
                "box_forms": dict(sorted(Counter(getattr(p, "box_form", "") or "-" for p in recs).items())),
                "ious": {s.id: v for s, v in zip(samples, ious, strict=True)},
            }
        return {
            "n_samples": len(samples),
            "iou_threshold": self.iou_threshold,
            **item_counts(samples, self.cultures),
            "settings": per_setting,
        }

    def run_header(self, results: Mapping[str, Any]) -> dict[str, Any]:
        """What was run: the model, or the offline whole-image baseline; no judge, no KB; the images sent."""
        header = base_run_header(self)
        with_image = sum(1 for s in self.samples if s.image)
        if self.client is not None:
            model = str(self.client.id)
            images = (f"{with_image} of {len(self.samples)} items sent with their image (longer side at most "
                      f"{self.max_image_side} px; boxes mapped back to the original size)")
            baseline = "none run (run without --model for the full-image baseline: the whole image as the box)"
        else:
            model = "full-image (offline baseline, no --model: every predicted box is the whole image; no model call)"
            images = f"none (offline: no model sees an image; {with_image} of {len(self.samples)} items have one)"
            baseline = "full-image: this run is the baseline (the whole image as the box)"
        header.update({
            "model": model,
            "judge": f"none (IoU against the gold box; a hit at IoU >= {self.iou_threshold:g})",
            "baseline": baseline,
            "KB": "none (grounding uses no KB)",
            "KB calibration": "none (grounding uses no KB)",
            "images sent": images,
        })
        if self.client is None:
            header["prompt languages"] = "none sent (offline: no model call)"
        return header

    def tables(self, results: Mapping[str, Any]) -> dict[str, Table]:
        """The report's tables (`grounding_tables`)."""
        return grounding_tables(results)

    def plots(self, results: Mapping[str, Any]) -> list[Plot]:
        """The report's plots (`grounding_plots`)."""
        return grounding_plots(results)


def grounding_tables(results: Mapping[str, Any]) -> dict[str, Table]:
    """Mean IoU and accuracy at the threshold overall, per country and per category; box outcomes counted."""
    thr = results["iou_threshold"]
    settings = results["settings"]
    names = results.get("country_names", {})
    statuses = ("ok", "clipped", "outside", "invalid", "unparsed", "error")
    summary = {k: {"mean IoU": v["mean_iou"], f"acc@{thr:g}": interval_text(v["accuracy_at_iou"], v["n"]), "n": v["n"],
                   **{s: v["box_status"].get(s, 0) for s in statuses}} for k, v in settings.items()}
    tables = {"summary": Table.from_nested(
        "Grounding: mean IoU and accuracy", summary, row_label="setting", precision=3,
        note="unparsed, invalid (x2 <= x1), outside and failed answers score IoU 0 and are counted; clipped boxes "
             f"are scored after clipping to the image. acc@{thr:g}: share of items with IoU >= {thr:g} [95% Wilson "
             "interval] n=items")}
    for key, v in settings.items():
        suffix = "" if len(settings) == 1 else f" ({key})"
        tables[f"country-{key}"] = Table.from_nested(
            f"Mean IoU per country{suffix}",
            {names.get(c, c): {"mean IoU": v["per_country"][c],
                               f"acc@{thr:g}": interval_text(v["accuracy_per_country"][c], results["n_per_country"][c]),
                               "n": results["n_per_country"][c]} for c in v["per_country"]},
            row_label="country", precision=3)
        tables[f"category-{key}"] = Table.from_nested(
            f"Mean IoU per category{suffix}",
            {c: {"mean IoU": v["per_category"][c],
                 f"acc@{thr:g}": interval_text(v["accuracy_per_category"][c], results["n_per_category"][c]),
                 "n": results["n_per_category"][c]} for c in v["per_category"]},
            row_label="category", precision=3)
    return tables


def grounding_plots(results: Mapping[str, Any]) -> list[Plot]:
    """Mean IoU per country, one bar group per setting."""
    names = results.get("country_names", {})
    settings = results["settings"]
    thr = results["iou_threshold"]
    countries = list(results["n_per_country"])
    nan2 = [math.nan, math.nan]
    est = {k: [v["per_country"].get(c, math.nan) for c in countries] for k, v in settings.items()}
    bounds = {k: [(v.get("per_country_interval") or {}).get(c, nan2) for c in countries] for k, v in settings.items()}
    labels = [f"{names.get(c, c)} (n={results['n_per_country'][c]})" for c in countries]
    plots: list[Plot] = [IntervalPlot(
        "country", "Mean IoU per country (95% bootstrap intervals)", labels, est,
        {k: [b[0] for b in v] for k, v in bounds.items()}, {k: [b[1] for b in v] for k, v in bounds.items()},
        ylabel="mean IoU", ylim=(0.0, 1.0), baselines={"hit threshold": thr})]
    acc = {k: [v["accuracy_per_country"].get(c, math.nan) for c in countries] for k, v in settings.items()}
    wil = {k: [wilson_interval(max(0, min(results["n_per_country"][c], round(a * results["n_per_country"][c]))),
                               results["n_per_country"][c]) if not math.isnan(a) else (math.nan, math.nan)
               for c, a in zip(countries, vals, strict=True)] for k, vals in acc.items()}
    plots.append(IntervalPlot(
        "accuracy", f"Accuracy at IoU >= {thr:g} per country (95% Wilson intervals)", labels, acc,
        {k: [b[0] for b in v] for k, v in wil.items()}, {k: [b[1] for b in v] for k, v in wil.items()},
        ylabel=f"share of items with IoU >= {thr:g}", ylim=(0.0, 1.0)))
    return plots
