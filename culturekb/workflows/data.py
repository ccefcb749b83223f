"""Jobs on data files: read them (`load_data`, `load_kb_samples`), check run and data paths, build a KB."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturekb.errors import DataError
from culturekb.kb.schema import Sample

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from culturekb._records import FieldMap
    from culturekb.kb.cultures import Culture
    from culturekb.kb.schemes import EmotionScheme


def load_data(
    paths: Sequence[str | Path],
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "artemis9",
    cultures: Sequence[str] | None = None,
    seed: int = 0,
    aggregate: str = "majority",
    field_map: FieldMap | str | None = None,
    on_bad_row: str = "fail",
) -> tuple[list[Sample], dict[str, Any]]:
    """Read CSV/JSONL files into samples; images without a split get the deterministic 8:1:1 split by image.
    `on_bad_row`: ``fail`` (every bad row of a file found, then one error listing them) or ``skip`` (those rows
    left out, listed in each source's ``skipped_rows``)."""
    from culturekb.kb.artemis import split_by_image
    from culturekb.kb.loaders import load_artemis_csv, load_samples_jsonl

    if not paths:
        raise DataError("no data files given; pass at least one CSV or JSONL file")
    if isinstance(field_map, str):
        from culturekb._records import parse_field_map

        field_map = parse_field_map(field_map)
    samples: list[Sample] = []
    dropped: dict[str, int] = {}
    sources = []
    for p in map(Path, paths):
        check_data_file(p)
        if p.suffix.lower() == ".csv":
            res = load_artemis_csv(p, data_root=data_root, scheme=scheme, cultures=cultures, on_bad_row=on_bad_row)
        elif p.suffix.lower() in (".jsonl", ".ndjson", ".json", ".tsv", ".tab") or field_map is not None:
            res = load_samples_jsonl(p, data_root=data_root, scheme=scheme, cultures=cultures, aggregate=aggregate,
                                     field_map=field_map, on_bad_row=on_bad_row)
        else:
            raise DataError(f"{p}: unknown data format {p.suffix!r}; use an ArtEmis/ArtELingo .csv, or samples as "
                            ".jsonl or .json (a list, or an object keyed by id)")
        samples.extend(res.samples)
        for c, n in res.dropped_no_majority.items():
            dropped[c] = dropped.get(c, 0) + n
        sources.append(res.summary())
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise DataError(f"sample id {dup!r} appears in more than one input file; give each file distinct images")
    samples = split_by_image(samples, seed=seed)
    return samples, {"sources": sources, "dropped_no_majority": dropped}



def check_data_file(path: str | Path) -> Path:
    """`path` as a Path when it is an existing file; a folder or a missing path raises DataError saying which."""
    p = Path(path)
    if p.is_dir():
        raise DataError(f"data file {p} is a directory; expected a file (give the path of a CSV or JSONL file in it)")
    if not p.is_file():
        raise DataError(f"data file {p} does not exist; check the path")
    return p



def check_run_out(out: str | Path) -> Path:
    """`out` as a Path when a run folder may be made there (a new path or a folder); an existing file raises
    DataError. Nothing is created here: the runner makes the folder once inputs and models are ready."""
    p = Path(out)
    if p.exists() and not p.is_dir():
        raise DataError(f"--out {p} is a file; a run's reports go in a folder: choose a new folder or an earlier "
                        "run's folder (to resume it)")
    return p



def demo_data_files() -> list[Path]:
    """The small real ArtEmis and ArtELingo samples shipped with the package (artworks; see DATA_NOTICE.md). The
    demo itself runs on the multilingual BRIGHTER sample (`culturekb.demo.demo_dataset`)."""
    root = Path(str(resources.files("culturekb.data").joinpath("demo")))
    files = sorted(p for p in root.iterdir() if p.suffix in (".csv", ".jsonl"))
    if not files:
        raise DataError(f"no demo data under {root}; the package install is incomplete")
    return files



def load_kb_samples(
    kb_dir: str | Path, paths: Sequence[str | Path], data_root: str | Path | None = None, *,
    scheme: str | None = None, field_map: FieldMap | str | None = None, on_bad_row: str = "fail",
    read: dict[str, Any] | None = None,
) -> list[Sample]:
    """Samples of CSV/JSONL files read with the label scheme the KB's manifest embeds (no scheme file needed), or
    with `scheme` (``--scheme``), which must have the KB's labels (`same_labels`); `field_map` and `on_bad_row` as
    for `load_data`. `read`, when given, is filled with what the load did (`data_read`), for the run report."""
    from culturekb.kb.store import manifest_cultures, manifest_scheme, read_manifest

    manifest = read_manifest(kb_dir)
    _declare_kb_cultures(manifest_cultures(manifest))
    kb_scheme = manifest_scheme(manifest)
    read_with = kb_scheme if scheme is None else same_labels(scheme, kb_scheme, kb_dir)
    samples, report = load_data(paths, data_root=data_root, scheme=read_with, field_map=field_map,
                                on_bad_row=on_bad_row)
    if read is not None:
        read.update(data_read(paths, report, field_map))
    return samples


def data_read(paths: Sequence[str | Path], report: Mapping[str, Any], field_map: FieldMap | str | None = None,
              ) -> dict[str, Any]:
    """What `load_data` did, in the shape of a run's "Data read" table (`culturekb._records.LoadReport.to_dict`):
    files, records, the field map, rows skipped (``--on-bad-row skip``, with where and why) and rows aggregated."""
    sources = report.get("sources") or []
    skipped = [row for src in sources for row in src.get("skipped_rows") or ()]
    notes = [f"{len(src['tie_dropped_items'])} item(s) of {Path(src['source']).name} dropped: their labels tied"
             for src in sources if src.get("tie_dropped_items")]
    name = field_map if isinstance(field_map, str) or field_map is None else field_map.name
    return {"files": [str(p) for p in paths], "field_map": name, "release": "",
            "items": sum(int(src.get("samples", 0)) for src in sources), "notes": notes, "defaults_filled": {},
            "skipped_rows": skipped, "aggregated_rows": sum(int(src.get("aggregated_rows", 0)) for src in sources)}


def same_labels(scheme: str, kb_scheme: EmotionScheme, kb_dir: str | Path) -> EmotionScheme:
    """The scheme `scheme` names, when it has the KB's labels (in any order; its synonyms and translations may
    differ, so that a release's own label spellings are read); else a ConfigError saying why the run cannot score
    it and what to do: the run predicts and scores the KB's labels."""
    from culturekb.errors import ConfigError
    from culturekb.kb.schemes import get_scheme

    given = get_scheme(scheme)
    if {lab.lower() for lab in given.labels} == {lab.lower() for lab in kb_scheme.labels}:
        return given
    missing = [lab for lab in given.labels if lab.lower() not in {k.lower() for k in kb_scheme.labels}]
    raise ConfigError(
        f"--scheme {scheme}: its labels differ from those of the KB {kb_dir} (scheme {kb_scheme.name!r}: "
        f"{list(kb_scheme.labels)}); not in the KB: {missing[:12]}{' ...' if len(missing) > 12 else ''}. This run "
        "predicts the KB's labels and scores them against the data's, so the data must be read with the same "
        f"labels: rebuild the KB with --scheme {scheme}, or leave --scheme out to read the data with the KB's scheme "
        "(a scheme file with the KB's labels may add the data's own spellings as synonyms)")



def _declare_kb_cultures(cultures: Iterable[Culture]) -> None:
    """Make the cultures a KB describes known to this process before its data files are read, so that a culture
    the KB names (with its language and Western flag) is not registered again from the data as a bare code."""
    from culturekb.kb.cultures import declare_cultures, default_registry

    registry = default_registry()
    declare_cultures([c for c in cultures if registry.get(c.id) is None], registry)





