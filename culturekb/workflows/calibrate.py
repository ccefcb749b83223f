"""Calibrating the kb-prior: fit its weights and concept filter (`culturekb calibrate`, and the eval's own)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturekb.config import Settings
from culturekb.errors import DataError
from culturekb.kb.schema import Sample
from culturekb.workflows.data import load_kb_samples
from culturekb.workflows.retrieve import open_augmenter

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from culturekb.inference.augmenter import Augmenter
    from culturekb.kb.calibration import Calibration


def calibrate_kb(
    kb_dir: str | Path, data: Sequence[str | Path], *, split: str = "valid", data_root: str | Path | None = None,
    backend: str | None = None, embedder: str | None = None, tau: float | None = None, status: str | None = None,
    write: bool = True, settings: Settings | None = None,
) -> Calibration:
    """Fit the KB prior's weights and concept filter on the `split` samples of `data` and (with `write`) save them
    as the KB's `calibration.json` (`culturekb.inference.calibration`). The fit sees every tuple the status filter
    serves, whatever an earlier calibration hid. With the default split and data without a valid split, the fit uses
    the KB's training samples alone, each left out of its own tuples (what the build does)."""
    samples = load_kb_samples(kb_dir, data, data_root=data_root)  # before the index and model
    augmenter = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status, calibrated=False)
    return calibrate_augmenter(augmenter, samples, split, data, kb_dir if write else None,
                               require_split=split != "valid")



def calibrate_augmenter(augmenter: Augmenter, samples: Sequence[Sample], split: str | None = "valid",
                        data: Sequence[str | Path] = (), write_to: str | Path | None = None,
                        left_out: bool = True, *, require_split: bool = True) -> Calibration:
    """`culturekb calibrate` on an open augmenter (its KB, embedder and status filter): fit on the labelled `split`
    samples and, with `left_out`, the KB's training samples each left out of the tuples it supports (when the KB
    was built with an offline concept extractor, so the concepts the build counted can be recomputed); save into
    `write_to` when given. Without labelled `split` samples (or with `split` None) the fit uses the left-out
    training samples alone, unless `require_split`."""
    from culturekb.builders.pipeline import training_concepts
    from culturekb.inference.calibration import fit_calibration
    from culturekb.kb.calibration import write_calibration

    cultures = set(augmenter.retriever.cultures)
    valid = [s for s in samples if split is not None and s.split == split and s.label is not None
             and s.culture in cultures]
    if not valid and require_split:
        splits = sorted({str(s.split) for s in samples})
        raise DataError(f"no labelled samples in split {split!r} to calibrate on (the data has splits {splits}); "
                        "give data with a valid split, or choose another with --split")
    kb = augmenter.retriever.kb
    extra: list[tuple[Sample, Sequence[str], Sequence[str]]] = []
    if left_out:
        build_split = kb.build_config.get("split", "train")
        train = [s for s in samples if s.label is not None and s.culture in cultures
                 and (build_split is None or s.split == build_split) and (split is None or s.split != split)]
        counted = training_concepts(train, kb.build_config) if train else None
        if counted is not None:
            extra = list(zip(train, augmenter.concepts_for(train), counted, strict=True))
        elif train:
            log.info("calibrate: the KB's concept extractor needs a model; fitting on the %s split only", split)
    if not valid and not extra:
        raise DataError("nothing to calibrate on: the data has no labelled valid split"
                        + (" and the KB's concept extractor needs a model, so its training samples cannot be left "
                           "out; give data with a valid split" if train else " and no training samples of the KB's "
                           "cultures; give the data the KB was built from"))
    cal = fit_calibration(augmenter.retriever, valid, augmenter.concepts_for(valid) if valid else [],
                          left_out=extra, fitted_on={"split": split if valid else None,
                                                     "data": [Path(d).name for d in data]})
    if write_to is not None:
        write_calibration(write_to, cal)
    return cal.model_copy(update={"fitted_on": {**cal.fitted_on, "method": calibration_method(cal)}})


def calibration_method(cal: Calibration) -> str:
    """In words, what a calibration was fitted on: ``the valid split (81 samples) and 646 training samples, each
    left out of its own tuples`` or, without a valid split, the training samples alone."""
    f = cal.fitted_on
    n_valid, n_left = int(f.get("samples") or 0), int(f.get("left_out_training_samples") or 0)
    left = f"{n_left} training samples, each left out of the tuples it supports"
    if n_valid and n_left:
        return f"the {f.get('split') or 'valid'} split ({n_valid} samples) and {left}"
    if n_valid:
        return f"the {f.get('split') or 'valid'} split ({n_valid} samples)"
    return f"{left} (the data has no valid split)"


def calibration_record(cal: Calibration, source: str, seconds: float | None = None) -> dict[str, Any]:
    """What a report says about a calibration: where it comes from, what it was fitted on (in words and counts),
    the chosen filter and weights, and the fit's figures against the culture prior."""
    v = cal.valid
    record: dict[str, Any] = {
        "source": source, "method": calibration_method(cal),
        "valid_samples": cal.fitted_on.get("samples", 0),
        "left_out_training_samples": cal.fitted_on.get("left_out_training_samples", 0),
        "min_support": cal.min_support, "min_informativeness": cal.min_informativeness, "alpha": cal.alpha,
        "beta": cal.beta, "gamma": cal.gamma, "pool": cal.pool, "prior_only": cal.is_prior_only,
        "prior_only_cultures": list(cal.prior_only_cultures),
        "valid_prior_accuracy": v.get("prior_accuracy"), "valid_accuracy": v.get("accuracy"),
        "left_out_prior_accuracy": v.get("left_out_prior_accuracy"), "left_out_accuracy": v.get("left_out_accuracy"),
        "hidden_tuples": cal.dropped.get("total", 0), "of_tuples": cal.dropped.get("of", 0),
    }
    if seconds is not None:
        record["seconds"] = round(seconds, 3)
    return record


def calibrate_built_kb(kb_dir: str | Path, samples: Sequence[Sample], data: Sequence[str | Path], *,
                       embedder: Any = None, embedder_spec: str, settings: Settings | None = None
                       ) -> dict[str, Any]:
    """What every build does once its KB is written: index it (`embedder`, the build's own model when it loaded
    one) and fit the kb-prior's weights and concept filter (on the valid split and the training samples each left
    out, or on the training samples alone when the data has no valid split), written as `calibration.json`.
    Returns the build report's ``calibration`` section; a KB that cannot be calibrated (a model-based concept
    extractor and no valid split) gets a section saying why, and no calibration."""
    import time

    from culturekb.inference.augmenter import Augmenter
    from culturekb.kb.store import KnowledgeBase
    from culturekb.models.factory import make_embedder
    from culturekb.retrieval.index import build_index
    from culturekb.retrieval.retriever import open_retriever
    from culturekb.workflows._common import job_settings

    t0 = time.perf_counter()
    settings = job_settings(settings)
    kb = KnowledgeBase.load(kb_dir)
    emb = embedder if embedder is not None else make_embedder(embedder_spec)
    build_index(kb, emb, settings.backend, embedder_spec=embedder_spec)
    t_index = time.perf_counter() - t0
    retriever = open_retriever(kb, emb, settings.backend, settings=settings, calibrated=False,
                               status=settings.status)
    try:
        cal = calibrate_augmenter(Augmenter(retriever), samples, "valid", data, kb_dir, require_split=False)
    except DataError as exc:
        log.warning("build: the kb-prior is not calibrated: %s", exc)
        return {"source": "none", "method": f"not calibrated: {exc}", "index_seconds": round(t_index, 3)}
    record = calibration_record(cal, "fitted by the build", time.perf_counter() - t0 - t_index)
    record["index_seconds"] = round(t_index, 3)
    return record


def kb_prior_calibration(augmenter: Augmenter, samples: Sequence[Sample], data: Sequence[str | Path]
                          ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The kb-prior's calibration for an eval: the KB's own `calibration.json` (every build writes one), else one
    fitted here on the data's valid split and its training samples each left out (or those alone when the data has
    no valid split; kept in the run's report, not written into the KB), else none (uncalibrated weights)."""
    from culturekb.kb.calibration import read_calibration

    kb = augmenter.retriever.kb
    found = read_calibration(kb.path, kb.version) if kb.path is not None else None
    source = "the KB's calibration.json"
    if found is None:
        try:
            found = calibrate_augmenter(augmenter, samples, "valid", data, require_split=False)
        except DataError as exc:
            log.warning("kb-prior: the KB has no calibration.json and none can be fitted on this data (%s); using "
                        "the uncalibrated weights (run `culturekb calibrate` on the KB's data)", exc)
            return {}, {"source": "none", "method": f"uncalibrated weights: {exc}"}
        source = "fitted on this data by the eval (the KB has no calibration.json)"
    # the predictor is handed the calibration read or fitted here, so it does not read calibration.json again
    return {"calibration": found}, {"source": source, "method": calibration_method(found),
                                    **found.model_dump(mode="json", exclude={"grid"})}
