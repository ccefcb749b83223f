"""File parsing: annotation files (CSV, JSONL) read and checked row by row into `Sample`s.

The rules that turn ArtEmis annotations into one sample per (image, culture) (majority label, per-image
grouping, the split by image) are in `culturekb.kb.artemis`; this module reads the files.

ArtEmis / ArtELingo CSV (`load_artemis_csv`)
--------------------------------------------
UTF-8 CSV with a header row. Column names are matched case-insensitively.

=============  ========  =====================================================================================
column         required  meaning
=============  ========  =====================================================================================
painting       yes       WikiArt slug ``artist_title-year``; the image id shared by every culture
art_style      yes       WikiArt style folder (``Impressionism``); the image is ``<art_style>/<painting>.jpg``
emotion        yes       a label of the scheme (or a synonym / translation of one)
utterance      yes       the annotator's explanation (may be empty)
language       no        ``english`` / ``chinese`` / ``arabic``, any culture id or alias, or a new code (``de``,
                         ``pt-BR``: registered with a warning, see `culturekb.kb.cultures`); default english
split          no        ``train`` / ``valid`` (``val``, ``validation`` accepted) / ``test``; one per image
repetition     no        number of annotators; its presence marks the one-row-per-image layout
=============  ========  =====================================================================================

Two layouts are read (aggregated by `culturekb.kb.artemis.aggregate_annotations`):

* one row per annotation (ArtEmis / ArtELingo releases): the culture-level label of an image is the label chosen
  by the most annotators of that culture; an image whose top label is tied is dropped for that culture and
  counted in ``LoadResult.dropped_no_majority``.
* one row per image (the ``artemis_dev.csv`` subset): ``emotion`` is already the majority label and
  ``utterance`` the joined explanations. Detected by a ``repetition`` column, or when no (painting, culture) pair
  repeats; force it with ``layout="per-image"``. A repeated (painting, culture) row is then an error.

Sample fields: ``id = "<painting>::<culture>"``, ``label`` (culture-level majority), ``explanations`` (all of that
culture's non-empty utterances, in file order), ``title`` (readable title words of the slug), ``split``, ``image``.
``metadata``: ``image_id`` (the painting), ``art_style``, ``western`` (from ``culturekb/data/art_styles.json``;
None for an unlisted style), ``artist``, ``image_relpath``, ``explanation_labels`` (the label each explanation's
annotator chose, parallel to ``explanations``, so rationales can use only those of the dominant label),
``label_counts`` (per-annotation layout only), ``n_annotators``, ``source``, ``source_line``.

Sample JSONL (`load_samples_jsonl`), ArtECulture style
-----------------------------------------------------
UTF-8, one JSON object per line, blank lines ignored::

    {"id": "hokusai_great-wave::zh", "image": "Ukiyo_e/hokusai_great-wave.jpg", "culture": "zh",
     "label": "awe", "explanations": ["海浪气势磅礴，令人敬畏"], "concepts": ["wave", "mount fuji"],
     "title": "the great wave", "split": "train", "metadata": {"image_id": "hokusai_great-wave", "western": false}}

=============  ========  =====================================================================================
field          required  meaning
=============  ========  =====================================================================================
id             yes       unique string id of the sample
culture        yes       culture id or alias (``zh``, ``Chinese``, ``chinese``), or a new code (``de``, ``am``,
                         ``pt-BR``, ``SG``) that is registered with a warning and kept in the KB manifest
label          yes       a label of the scheme (or a synonym / translation); optional with ``require_label=False``
image          no        path relative to ``data_root`` (or, without one, to the JSONL file's folder), an
                         absolute path (only without ``data_root``), or a URI (``http(s)://``, ``data:``)
explanations   no        list of explanation strings; or ``explanation``: one string (not both)
concepts       no        precomputed concepts (list of strings)
title          no        readable title of the artwork
split          no        ``train`` / ``valid`` / ``test``
text           no        narrative / caption text; ``question`` and ``options`` for QA-style items
metadata       no        object; ``image_id`` groups the samples of one image across cultures (default: the
                         ``image`` value, else the part of ``id`` before ``::``, else ``id``), ``western`` (bool),
                         ``art_style``, anything else
=============  ========  =====================================================================================

Any other top-level field is an error (put extra information under ``metadata``).

Image paths never leave the data root (`culturekb._io.resolve_image_ref`); what counts as a URI is
`culturekb._io.is_uri`, the same test the benchmark loaders use.
"""

from __future__ import annotations

import csv
import io
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from culturekb._io import read_text_utf8, resolve_image_ref, safe_relpath
from culturekb._records import FieldMap, LoadReport, Problems, Record, map_hint, read_records
from culturekb.errors import ConfigError, DataError
from culturekb.kb.artemis import Annotation, aggregate_annotations, aggregate_repeated
from culturekb.kb.cultures import Culture, CultureRegistry, default_registry
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme

__all__ = [
    "csv_error_message",
    "LoadResult",
    "load_artemis_csv",
    "load_samples_jsonl",
    "canonical_label",
    "known_culture",
    "CSV_REQUIRED_COLUMNS",
    "CSV_OPTIONAL_COLUMNS",
    "JSONL_FIELDS",
]

logger = logging.getLogger(__name__)

CSV_REQUIRED_COLUMNS: tuple[str, ...] = ("painting", "art_style", "emotion", "utterance")
CSV_OPTIONAL_COLUMNS: tuple[str, ...] = ("language", "split", "repetition")
JSONL_FIELDS: tuple[str, ...] = (
    "id", "culture", "label", "image", "explanations", "explanation", "concepts", "title", "split",
    "text", "question", "options", "metadata",
)
SPLITS: tuple[str, ...] = ("train", "valid", "test")
_SPLIT_ALIASES = {"train": "train", "training": "train", "valid": "valid", "val": "valid", "validation": "valid",
                  "dev": "valid", "test": "test", "testing": "test"}

Layout = Literal["auto", "per-annotation", "per-image"]


@dataclass(frozen=True)
class LoadResult:
    """Samples read from one file, with what was dropped and why."""

    samples: tuple[Sample, ...]
    dropped_no_majority: dict[str, int]
    """Per culture: images dropped because the top label of that culture's annotators was tied."""
    rows_read: int
    source: str
    layout: str = "per-annotation"
    dropped_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Per culture: the image ids behind `dropped_no_majority`."""
    aggregated: int = 0
    """Rows merged into another row's sample (annotation-level rows of a sample file)."""
    tied: tuple[dict[str, Any], ...] = ()
    """The repeated items dropped for a tied top label: item, culture, rows (file and line), label counts."""
    skipped: tuple[dict[str, str], ...] = ()
    """Bad rows left out (``on_bad_row="skip"``): where, problem."""

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def cultures(self) -> list[str]:
        """Cultures that have at least one sample, in first-seen order."""
        return list(dict.fromkeys(s.culture for s in self.samples))

    def summary(self) -> dict[str, Any]:
        """Counts for logs and reports."""
        return {
            "source": self.source,
            "layout": self.layout,
            "rows_read": self.rows_read,
            "samples": len(self.samples),
            "per_culture": dict(Counter(s.culture for s in self.samples)),
            "dropped_no_majority": dict(self.dropped_no_majority),
            "aggregated_rows": self.aggregated,
            "aggregated_items": {s.id: {"culture": s.culture, "rows": s.metadata["aggregated_from"],
                                        "labels": s.metadata.get("label_counts", {})}
                                 for s in self.samples if "aggregated_from" in s.metadata},
            "tie_dropped_items": list(self.tied),
            "skipped_rows": list(self.skipped),
        }


# -- helpers -------------------------------------------------------------------------------------------------
def _norm_split(value: str, where: str) -> str | None:
    v = value.strip().lower()
    if not v:
        return None
    if v not in _SPLIT_ALIASES:
        raise DataError(f"{where}: unknown split {value!r}; use one of {list(SPLITS)} (or leave it empty)")
    return _SPLIT_ALIASES[v]


def canonical_label(scheme: EmotionScheme, value: Any, where: str, field: str = "label") -> str:
    """The scheme's label for `value` (a label, synonym or translation); anything else raises DataError naming
    `where`, the value and the scheme's labels. Both loader stacks read labels (and categories) through this."""
    text = "" if value is None else str(value)
    if not text.strip():
        raise DataError(f"{where}: the {field} is missing or empty; give one of {list(scheme.labels)[:12]}"
                        f"{' ...' if len(scheme.labels) > 12 else ''}")
    found = scheme.match(text)
    if found is None and _COMPOUND.search(text):
        # the stated rule for a compound label ("joy & surprise", "anger/disgust", "fear + sadness"): the first of
        # its parts that is a label of the scheme
        found = next((m for part in _COMPOUND.split(text) if part.strip()
                      for m in [scheme.match(part.strip())] if m is not None), None)
    if found is None:
        raise DataError(
            f"{where}: unknown label {value!r}: this {field} {value!r} is not in scheme {scheme.name!r}, whose labels "
            f"are {list(scheme.labels)} (synonyms and translations the scheme lists are accepted). Fix the value, or "
            "load with the scheme the data uses"
        )
    return found


def known_culture(registry: CultureRegistry, value: Any, where: str, what: str = "culture",
                  fix: str = "or describe the culture in a cultures file (--cultures-file)") -> Culture:
    """The registry's culture for a value of a data file: an id or alias, or a new code that the registry then
    registers with a warning (`CultureRegistry.register_code`: ``de``, ``pt-BR``, ``SG``; a ``country`` takes
    two-letter country codes only). Anything else (``klingon``, ``Chinese!``) raises DataError naming `where`, the
    value (as `what`: culture, language, country), the known cultures and `fix`. Both loader stacks resolve
    cultures through this."""
    found = registry.register_code(str(value), country=what == "country", where=where)
    if found is not None:
        return found
    shapes = "a two-letter country code such as 'SG'" if what == "country" else \
        "a language or country code (ISO 639 'de', BCP-47 'pt-BR', ISO 3166 'SG')"
    raise DataError(
        f"{where}: unknown {what} {value!r}; known cultures: {', '.join(sorted(registry.ids()))}. "
        f"Use a known id or alias, {shapes}, {fix}"
    )


MAX_CULTURE_TEXT = 80


def plain_culture_text(value: str, where: str, field: str = "culture") -> str:
    """A free-text culture or region of a benchmark item (``zh``, ``SG``, ``East Asia``), stripped; one that looks
    like a path (``../..``, a slash), holds control characters or runs past 80 characters raises DataError naming
    `where`, the field and the fix (the build refuses such values as unknown cultures; an eval must too)."""
    text = value.strip()
    if ("/" in text or "\\" in text or ".." in text or len(text) > MAX_CULTURE_TEXT
            or any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in text)):
        raise DataError(f"{where}: field {field!r}: {text[:60]!r} is not a culture or region name (a path, control "
                        f"characters or over {MAX_CULTURE_TEXT} characters); give a culture id such as 'zh' or 'SG', "
                        "or a region name such as 'East Asia', or leave the field out")
    return text


def _resolve_culture(registry: CultureRegistry, value: Any, where: str) -> str:
    return known_culture(registry, value, where).id


def _culture_filter(cultures: Iterable[str] | None, registry: CultureRegistry) -> set[str] | None:
    if cultures is None:
        return None
    if isinstance(cultures, str):
        cultures = [cultures]
    return {known_culture(registry, c, "the cultures to keep").id for c in cultures}


# -- CSV -----------------------------------------------------------------------------------------------------
def _read_csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header (lower-cased) and (start line, fields) of each non-blank data row."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    prev = 0
    try:
        for fields in reader:
            start, prev = prev + 1, reader.line_num
            if not fields or all(not f.strip() for f in fields):
                continue
            if header is None:
                header = [h.strip().lower() for h in fields]
                continue
            rows.append((start, fields))
    except csv.Error as exc:
        raise DataError(csv_error_message(path, exc, prev + 1, reader.line_num)) from exc
    if header is None:
        raise DataError(
            f"{path}: the file is empty; expected a CSV header with columns {list(CSV_REQUIRED_COLUMNS)} and "
            "one row per annotation or per image"
        )
    if not rows:
        raise DataError(f"{path}: the file has a header but no data rows; add at least one annotation row")
    return header, rows


def csv_error_message(path: Path, exc: csv.Error, start: int, line: int) -> str:
    """The message of a CSV the reader gave up on, naming the row (the line it starts on) and the right fix."""
    msg = str(exc)
    if "field larger than field limit" in msg:
        return (f"{path}, row starting on line {start}: a field is larger than {csv.field_size_limit():,} "
                "characters, the most one CSV field may hold here; shorten that field (an utterance of this size "
                "is probably several rows run together by a missing closing quote)")
    if "unexpected end of data" in msg:
        return (f"{path}, row starting on line {start}: a quote opened in this row is never closed, so the rest of "
                "the file would be read as one field; close the quote (a quote inside a quoted field is written "
                "twice: \"\")")
    return (f"{path}, line {line} (row starting on line {start}): malformed CSV ({msg}); fix the quoting of that "
            "row: quote fields holding commas, quotes or line breaks, and double the quotes inside them")


def load_artemis_csv(
    path: str | Path,
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "artemis9",
    cultures: Iterable[str] | None = None,
    *,
    layout: Layout = "auto",
    default_language: str = "english",
    registry: CultureRegistry | None = None,
    on_bad_row: str = "fail",
) -> LoadResult:
    """Read an ArtEmis / ArtELingo CSV into one `Sample` per (image, culture); see the module docstring. Every bad
    row is found before anything is refused (``on_bad_row``: as `load_samples_jsonl`).

    `cultures` keeps only those cultures (ids or aliases). With `data_root`, `Sample.image` is
    ``data_root/<art_style>/<painting>.jpg``; without it, `image` is None and the relative path is kept in
    ``metadata['image_relpath']``.
    """
    path = Path(path)
    scheme_ = get_scheme(scheme)
    reg = registry or default_registry()
    keep = _culture_filter(cultures, reg)
    root = Path(data_root) if data_root is not None else None
    header, rows = _read_csv_rows(path, read_text_utf8(path))

    missing = [c for c in CSV_REQUIRED_COLUMNS if c not in header]
    if missing:
        raise DataError(
            f"{path}: missing required column(s) {missing}; expected columns {list(CSV_REQUIRED_COLUMNS)} "
            f"(optional: {list(CSV_OPTIONAL_COLUMNS)}), found {header}"
        )
    col = {name: header.index(name) for name in (*CSV_REQUIRED_COLUMNS, *CSV_OPTIONAL_COLUMNS) if name in header}
    default_culture = _resolve_culture(reg, default_language, f"{path}: default_language")
    problems, report = Problems(str(path), on_bad_row), LoadReport()
    annotations = []
    for lineno, fields in rows:
        with problems.row(f"{path}, line {lineno}"):
            annotations.append(_annotation(lineno, fields, header, col, path, root, reg, default_culture, scheme_))
    problems.finish(report)
    agg = aggregate_annotations(annotations, scheme_, source=path, layout=layout, has_repetition="repetition" in col,
                                data_root=root, keep=keep)
    result = LoadResult(
        samples=agg.samples,
        dropped_no_majority={c: len(v) for c, v in agg.dropped.items()},
        rows_read=len(rows),
        source=str(path),
        layout="per-image" if agg.per_image else "per-annotation",
        dropped_ids=dict(agg.dropped),
        skipped=tuple(report.skipped),
    )
    logger.info("loaded %s", result.summary())
    if not agg.samples:
        logger.warning("%s: no samples left (cultures=%s, %d rows read)", path, sorted(keep or []), len(rows))
    if root is not None:
        absent = sum(1 for s in agg.samples if s.image and not Path(s.image).is_file())
        if absent:
            logger.info("%d of %d images are not under %s (fine for text-only builds)", absent, len(agg.samples),
                        root)
    return result


def _annotation(lineno: int, fields: list[str], header: list[str], col: dict[str, int], path: Path,
                root: Path | None, reg: CultureRegistry, default_culture: str, scheme: EmotionScheme) -> Annotation:
    """One CSV row checked field by field (errors name the file, line and column)."""
    where = f"{path}, line {lineno}"
    if len(fields) != len(header):
        raise DataError(
            f"{where}: {len(fields)} fields but the header has {len(header)}; quote values that contain commas"
        )

    def get(name: str) -> str:
        return fields[col[name]].strip() if name in col else ""

    painting = get("painting")
    if not painting:
        raise DataError(f"{where}: column 'painting' is empty; every row needs the painting's slug")
    art_style = get("art_style")
    if not art_style:
        raise DataError(f"{where}: column 'art_style' is empty; give the WikiArt style folder of {painting!r}")
    safe_relpath(f"{art_style}/{painting}.jpg", where, root)
    lang = get("language")
    culture = _resolve_culture(reg, lang, f"{where}, column 'language'") if lang else default_culture
    label = canonical_label(scheme, get("emotion"), f"{where}, column 'emotion'")
    split = _norm_split(get("split"), f"{where}, column 'split'")
    rep = get("repetition")
    repetition = _repetition(rep, where) if rep else None
    return Annotation(painting, art_style, culture, label, get("utterance"), split, repetition, lineno)


def _repetition(rep: str, where: str) -> int:
    """The number of annotators in a 'repetition' cell: a whole number >= 1 (``3`` or ``3.0``); ``inf``, ``nan``,
    a fraction or a negative number is a DataError."""
    try:
        value = float(rep)
    except ValueError as exc:
        raise DataError(f"{where}: column 'repetition' is {rep[:40]!r}, not a number of annotators") from exc
    if not math.isfinite(value) or value < 1 or value != int(value):
        raise DataError(f"{where}: column 'repetition' is {rep[:40]!r}; it must be a whole number of annotators "
                        "(1 or more)")
    return int(value)


# -- JSONL ---------------------------------------------------------------------------------------------------
def _str_list(value: Any, name: str, where: str) -> list[str]:
    if not isinstance(value, list):
        raise DataError(f"{where}: field {name!r} must be a list of strings, got {type(value).__name__}")
    for i, v in enumerate(value):
        if not isinstance(v, str):
            raise DataError(f"{where}: field {name!r} must be a list of strings, but item {i} is "
                            f"{type(v).__name__} {repr(v)[:40]}; quote it or remove it")
    return [v.strip() for v in value if v.strip()]


def _opt_str(obj: dict[str, Any], name: str, where: str) -> str | None:
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataError(f"{where}: field {name!r} must be a string, got {type(value).__name__}")
    return value.strip() or None


def load_samples_jsonl(
    path: str | Path,
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "artemis9",
    cultures: Iterable[str] | None = None,
    *,
    require_label: bool = True,
    registry: CultureRegistry | None = None,
    aggregate: str = "majority",
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
) -> LoadResult:
    """Read a sample file (JSONL, a JSON list or object keyed by id; format in the module docstring) into
    `Sample`s. Rows that repeat an item (the same image id) in one culture are annotations of it: with
    ``aggregate="majority"`` they become one sample labelled by their majority (a tied top label drops the item
    for that culture and counts it, as for ArtEmis rows); ``"none"`` refuses them, naming file and lines.

    Every bad row of the file is found before anything is refused: ``on_bad_row="fail"`` raises one DataError with
    the count of each kind of problem and its first lines; ``"skip"`` leaves those rows out and lists them
    (`LoadResult.skipped`)."""
    if aggregate not in AGGREGATE_RULES:
        raise ConfigError(f"--aggregate {aggregate!r}: use one of {list(AGGREGATE_RULES)}")
    path = Path(path)
    scheme_ = get_scheme(scheme)
    reg = registry or default_registry()
    keep = _culture_filter(cultures, reg)
    root = Path(data_root) if data_root is not None else None
    problems = Problems(str(path), on_bad_row)
    report = LoadReport()
    samples: list[Sample] = []
    first_line: dict[str, str] = {}
    rows = 0
    lines: dict[str, str] = {}
    for rec in read_records(path, field_map, report):
        rows += 1
        with problems.row(rec.where):
            unknown = sorted(set(rec.data) - set(JSONL_FIELDS))
            if unknown:
                hint = map_hint(list(rec.data), rec.source)
                if hint:
                    problems.hint(hint)
                raise DataError(f"{rec.where}: unknown field(s) {unknown}; allowed fields are {list(JSONL_FIELDS)}. "
                                "Put extra information under 'metadata', or rename the fields with --map")
            sample = _sample(rec, scheme_, reg, root, path.parent, require_label)
            if sample.id in first_line:
                raise DataError(f"{rec.where}: duplicate id {sample.id!r} (first on {first_line[sample.id]}); ids "
                                "must be unique, e.g. '<image>::<culture>'")
            first_line[sample.id] = f"{rec.unit} {rec.line}"
            if keep is None or sample.culture in keep:
                lines[sample.id] = rec.where
                samples.append(sample)
    if rows == 0:
        raise DataError(
            f"{path}: the file is empty; expected one JSON object per line with at least 'id', 'culture' and 'label'"
        )
    problems.finish(report)
    cultures_seen = dict.fromkeys(s.culture for s in samples)
    samples, dropped, merged, tied = aggregate_repeated(samples, lines, scheme_, aggregate)
    result = LoadResult(
        samples=tuple(samples),
        dropped_no_majority={c: len(dropped.get(c, ())) for c in cultures_seen},
        rows_read=rows,
        source=str(path),
        layout="jsonl",
        dropped_ids={c: tuple(dropped.get(c, ())) for c in cultures_seen},
        aggregated=merged,
        tied=tuple(tied),
        skipped=tuple(report.skipped),
    )
    logger.info("loaded %s", result.summary())
    return result


def _sample(rec: Record, scheme: EmotionScheme, reg: CultureRegistry, root: Path | None, base_dir: Path,
            require_label: bool) -> Sample:
    """One record of a sample file checked field by field (errors name the file and line)."""
    obj, where = rec.data, rec.where
    sid = obj.get("id")
    if isinstance(sid, int) and not isinstance(sid, bool):
        sid = str(sid)
    if not isinstance(sid, str) or not sid.strip():
        raise DataError(f"{where}: field 'id' is missing or empty; every sample needs a unique string id")
    sid = sid.strip()
    if "culture" not in obj or obj["culture"] in (None, ""):
        raise DataError(f"{where}: field 'culture' is missing; give a culture id or alias such as 'en' or 'zh'")
    culture = _resolve_culture(reg, obj["culture"], f"{where}, field 'culture'")
    label: str | None = None
    if obj.get("label") is not None:
        label = canonical_label(scheme, obj["label"], f"{where}, field 'label'")
    elif require_label:
        raise DataError(
            f"{where}: field 'label' is missing; give one of {list(scheme.labels)} "
            "(or load with require_label=False for unlabelled data)"
        )
    if "explanations" in obj and "explanation" in obj:
        raise DataError(f"{where}: give either 'explanations' (a list) or 'explanation' (a string), not both")
    if "explanations" in obj:
        explanations = _str_list(obj["explanations"], "explanations", where)
    else:
        one = _opt_str(obj, "explanation", where)
        explanations = [one] if one else []
    concepts = _str_list(obj["concepts"], "concepts", where) if obj.get("concepts") is not None else None
    options = _str_list(obj["options"], "options", where) if obj.get("options") is not None else None
    metadata = obj.get("metadata")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, dict):
        raise DataError(f"{where}: field 'metadata' must be an object, got {type(metadata).__name__}")
    metadata = dict(metadata)
    raw_image = _opt_str(obj, "image", where)
    image = None if raw_image is None else resolve_image_ref(
        raw_image, f"{where}, field 'image'", data_root=root, base_dir=base_dir)
    metadata.setdefault("image_id", raw_image or (sid.rsplit("::", 1)[0] if "::" in sid else sid))
    split_raw = obj.get("split")
    split = _norm_split(str(split_raw), f"{where}, field 'split'") if split_raw is not None else None
    return Sample(id=sid, culture=culture, image=image, text=_opt_str(obj, "text", where),
                  question=_opt_str(obj, "question", where), options=options, label=label,
                  explanations=explanations, concepts=concepts, title=_opt_str(obj, "title", where), split=split,
                  metadata=metadata)


AGGREGATE_RULES = ("majority", "none")
"""``--aggregate``: how rows that repeat an item in one culture are read (see `aggregate_repeated`)."""
_COMPOUND = re.compile(r"\s*(?:&|/|\+|;|,|\band\b)\s*")
