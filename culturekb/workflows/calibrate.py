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
    serves, whatever an earlier calibration hid."""
    samples = load_kb_samples(kb_dir, data, data_root=data_root)  # before the index and model
    augmenter = open_augmenter(kb_dir, backend, embedder, tau, settings=settings, status=status, calibrated=False)
    return calibrate_augmenter(augmenter, samples, split, data, kb_dir if write else None)



def calibrate_augmenter(augmenter: Augmenter, samples: Sequence[Sample], split: str = "valid",
                        data: Sequence[str | Path] = (), write_to: str | Path | None = None,
                        left_out: bool = True) -> Calibration:
    """`culturekb calibrate` on an open augmenter (its KB, embedder and status filter): fit on the labelled `split`
    samples and, with `left_out`, the KB's training samples each left out of the tuples it supports (when the KB
    was built with an offline concept extractor, so the concepts the build counted can be recomputed); save into
    `write_to` when given."""
    from culturekb.builders.pipeline import training_concepts
    from culturekb.inference.calibration import fit_calibration
    from culturekb.kb.calibration import write_calibration

    valid = [s for s in samples if s.split == split and s.label is not None]
    if not valid:
        splits = sorted({str(s.split) for s in samples})
        raise DataError(f"no labelled samples in split {split!r} to calibrate on (the data has splits {splits}); "
                        "give data with a valid split, or choose another with --split")
    kb = augmenter.retriever.kb
    extra: list[tuple[Sample, Sequence[str], Sequence[str]]] = []
    if left_out:
        build_split = kb.build_config.get("split", "train")
        cultures = set(augmenter.retriever.cultures)
        train = [s for s in samples if s.label is not None and s.culture in cultures
                 and (build_split is None or s.split == build_split) and s.split != split]
        counted = training_concepts(train, kb.build_config) if train else None
        if counted is not None:
            extra = list(zip(train, augmenter.concepts_for(train), counted, strict=True))
        elif train:
            log.info("calibrate: the KB's concept extractor needs a model; fitting on the %s split only", split)
    cal = fit_calibration(augmenter.retriever, valid, augmenter.concepts_for(valid), left_out=extra,
                          fitted_on={"split": split, "data": [Path(d).name for d in data]})
    if write_to is not None:
        write_calibration(write_to, cal)
    return cal



def kb_prior_calibration(augmenter: Augmenter, samples: Sequence[Sample], data: Sequence[str | Path]
                          ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The kb-prior's calibration for an eval: the KB's own `calibration.json`, else one fitted here on the data's
    valid split (kept in the run's report, not written into the KB), else none (uncalibrated weights)."""
    from culturekb.kb.calibration import read_calibration

    kb = augmenter.retriever.kb
    found = read_calibration(kb.path, kb.version) if kb.path is not None else None
    source = "kb"
    if found is None:
        if not any(s.split == "valid" and s.label is not None for s in samples):
            log.warning("kb-prior: the KB has no calibration.json and the data no valid split; using the "
                        "uncalibrated weights (run `culturekb calibrate` on data with a valid split)")
            return {}, None
        found, source = calibrate_augmenter(augmenter, samples, "valid", data), "fitted on this data's valid split"
    # the predictor is handed the calibration read or fitted here, so it does not read calibration.json again
    return {"calibration": found}, {"source": source, **found.model_dump(mode="json", exclude={"grid"})}
