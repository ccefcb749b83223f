"""Loaders that turn annotation files into `Sample`s, one per (image, culture).

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
language       no        ``english`` / ``chinese`` / ``arabic`` or any culture id or alias; default english
split          no        ``train`` / ``valid`` (``val``, ``validation`` accepted) / ``test``; one per image
repetition     no        number of annotators; its presence marks the one-row-per-image layout
=============  ========  =====================================================================================

Two layouts are read:

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
culture        yes       culture id or alias (``zh``, ``Chinese``, ``chinese``)
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

`split_by_image` assigns train/valid/test by image, the same for every culture, deterministically.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from culturekb.errors import ConfigError, DataError
from culturekb.kb.cultures import CultureRegistry, default_registry
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme

__all__ = [
    "LoadResult",
    "load_artemis_csv",
    "load_samples_jsonl",
    "split_by_image",
    "parse_painting_slug",
    "is_western_style",
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
_URI = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.\-]*://|data:)")
_WINDOWS_DRIVE = re.compile(r"^[a-zA-Z]:")

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
        }


# -- helpers -------------------------------------------------------------------------------------------------
def _read_utf8(path: Path) -> str:
    """The file's text; a missing file or a non-UTF-8 byte is a DataError with the fix."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found; check the path") from exc
    except IsADirectoryError as exc:
        raise DataError(f"{path}: is a directory; give the path of a file") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(
            f"{path}: not valid UTF-8 at byte offset {exc.start} (line {line}); re-save the file as UTF-8"
        ) from exc
    return text.removeprefix("\ufeff")


def _norm_style(style: str) -> str:
    return re.sub(r"[\s\-_]+", "_", style.strip().lower())


_STYLE_CACHE: dict[str, dict[str, bool]] = {}


def _style_table() -> dict[str, bool]:
    table = _STYLE_CACHE.get("default")
    if table is None:
        raw = json.loads(resources.files("culturekb.data").joinpath("art_styles.json").read_text("utf-8"))
        table = {_norm_style(s): True for s in raw["western"]}
        table.update({_norm_style(s): False for s in raw["non_western"]})
        _STYLE_CACHE["default"] = table
    return table


def is_western_style(art_style: str | None) -> bool | None:
    """True/False for an art style listed in ``culturekb/data/art_styles.json``; None for an unlisted style.

    WikiArt styles are European and American movements except the Japanese woodblock traditions (``Ukiyo_e``);
    the non-Western list also names Chinese, Korean, Indian, Islamic and mural traditions used by other data.
    """
    if not art_style:
        return None
    return _style_table().get(_norm_style(art_style))


_YEAR_TAIL = re.compile(r"-(?:1[0-9]{3}|20[0-9]{2})(?:-[0-9]{1,2})?$")
_COPY_TAIL = re.compile(r"\(\d+\)$")
_NUMBER_TAIL = re.compile(r"-([0-9]{1,2})$")
_KEEP_NUMBER_AFTER = {"no", "n", "nr", "number", "op", "opus", "part", "vol", "study", "composition", "series"}


def parse_painting_slug(slug: str) -> tuple[str, str]:
    """``"agostino-carracci_venus-and-mars-1600"`` -> ``("agostino carracci", "venus and mars")``.

    The WikiArt slug is ``artist_title``; a trailing year (``-1600``), a copy marker (``(2)``) and a small
    disambiguation number (``self-portrait-1``) are removed, except after words such as "no" or "op"
    (``composition-no-3`` keeps its number). Hyphens become spaces.
    """
    artist, sep, title = slug.strip().partition("_")
    if not sep:
        artist, title = "", artist
    title = _COPY_TAIL.sub("", title.strip())
    stripped = _YEAR_TAIL.sub("", title)
    if stripped == title:
        m = _NUMBER_TAIL.search(title)
        if m:
            head = title[: m.start()]
            last = head.rsplit("-", 1)[-1].lower()
            if head and last not in _KEEP_NUMBER_AFTER:
                stripped = head
    words = [w for w in re.split(r"[-_\s]+", stripped) if w]
    return " ".join(artist.replace("_", " ").split("-")).strip(), " ".join(words).lower()


def _norm_split(value: str, where: str) -> str | None:
    v = value.strip().lower()
    if not v:
        return None
    if v not in _SPLIT_ALIASES:
        raise DataError(f"{where}: unknown split {value!r}; use one of {list(SPLITS)} (or leave it empty)")
    return _SPLIT_ALIASES[v]


def _check_relpath(rel: str, where: str, data_root: Path | None) -> str:
    """Refuse an image path that would leave the data root (absolute, drive letter or ``..``)."""
    posix = rel.replace("\\", "/")
    parts = PurePosixPath(posix).parts
    if posix.startswith("/") or _WINDOWS_DRIVE.match(posix) or ".." in parts:
        root = f"the data root {data_root}" if data_root is not None else "the data root"
        raise DataError(
            f"{where}: image path {rel!r} escapes {root}; image paths must be relative and must not contain "
            "'..'. Fix the row (or, for JSONL, give an absolute path only without data_root)"
        )
    return posix


def _canonical_label(scheme: EmotionScheme, value: Any, where: str) -> str:
    text = "" if value is None else str(value)
    found = scheme.match(text) if text.strip() else None
    if found is None:
        raise DataError(
            f"{where}: unknown label {value!r} for scheme {scheme.name!r}; expected one of {list(scheme.labels)} "
            "(or a listed synonym/translation). Fix the value, or load with the scheme that uses this label"
        )
    return found


def _resolve_culture(registry: CultureRegistry, value: Any, where: str) -> str:
    try:
        return registry.resolve(str(value)).id
    except ConfigError as exc:
        raise DataError(
            f"{where}: unknown culture {value!r}; known cultures: {', '.join(sorted(registry.ids()))}. "
            "Use a known id or alias, or declare the culture in the registry first"
        ) from exc


def _culture_filter(cultures: Iterable[str] | None, registry: CultureRegistry) -> set[str] | None:
    if cultures is None:
        return None
    if isinstance(cultures, str):
        cultures = [cultures]
    out: set[str] = set()
    for c in cultures:
        out.add(registry.resolve(c).id)
    return out


# -- CSV -----------------------------------------------------------------------------------------------------
@dataclass
class _Image:
    art_style: str
    first_line: int
    splits: dict[str, int] = field(default_factory=dict)  # split -> first line
    repetition: int | None = None


@dataclass
class _Group:
    lines: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    utterances: list[str] = field(default_factory=list)


def _read_csv_rows(path: Path, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """Header (lower-cased) and (start line, fields) of each non-blank data row."""
    reader = csv.reader(io.StringIO(text, newline=""))
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
        raise DataError(f"{path}, line {reader.line_num}: malformed CSV ({exc}); fix the quoting of that row") from exc
    if header is None:
        raise DataError(
            f"{path}: the file is empty; expected a CSV header with columns {list(CSV_REQUIRED_COLUMNS)} and "
            "one row per annotation or per image"
        )
    if not rows:
        raise DataError(f"{path}: the file has a header but no data rows; add at least one annotation row")
    return header, rows


def load_artemis_csv(
    path: str | Path,
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "artemis9",
    cultures: Iterable[str] | None = None,
    *,
    layout: Layout = "auto",
    default_language: str = "english",
    registry: CultureRegistry | None = None,
) -> LoadResult:
    """Read an ArtEmis / ArtELingo CSV into one `Sample` per (image, culture); see the module docstring.

    `cultures` keeps only those cultures (ids or aliases). With `data_root`, `Sample.image` is
    ``data_root/<art_style>/<painting>.jpg``; without it, `image` is None and the relative path is kept in
    ``metadata['image_relpath']``.
    """
    path = Path(path)
    scheme_ = get_scheme(scheme)
    reg = registry or default_registry()
    keep = _culture_filter(cultures, reg)
    root = Path(data_root) if data_root is not None else None
    header, rows = _read_csv_rows(path, _read_utf8(path))

    missing = [c for c in CSV_REQUIRED_COLUMNS if c not in header]
    if missing:
        raise DataError(
            f"{path}: missing required column(s) {missing}; expected columns {list(CSV_REQUIRED_COLUMNS)} "
            f"(optional: {list(CSV_OPTIONAL_COLUMNS)}), found {header}"
        )
    col = {name: header.index(name) for name in (*CSV_REQUIRED_COLUMNS, *CSV_OPTIONAL_COLUMNS) if name in header}

    images: dict[str, _Image] = {}
    groups: dict[tuple[str, str], _Group] = {}
    default_culture = _resolve_culture(reg, default_language, f"{path}: default_language")
    for lineno, fields in rows:
        where = f"{path}, line {lineno}"
        if len(fields) != len(header):
            raise DataError(
                f"{where}: {len(fields)} fields but the header has {len(header)}; quote values that contain commas"
            )

        def get(name: str, fields: list[str] = fields) -> str:
            return fields[col[name]].strip() if name in col else ""

        painting = get("painting")
        if not painting:
            raise DataError(f"{where}: column 'painting' is empty; every row needs the painting's slug")
        art_style = get("art_style")
        if not art_style:
            raise DataError(f"{where}: column 'art_style' is empty; give the WikiArt style folder of {painting!r}")
        _check_relpath(f"{art_style}/{painting}.jpg", where, root)
        lang = get("language")
        culture = _resolve_culture(reg, lang, f"{where}, column 'language'") if lang else default_culture
        label = _canonical_label(scheme_, get("emotion"), f"{where}, column 'emotion'")
        split = _norm_split(get("split"), f"{where}, column 'split'")

        img = images.get(painting)
        if img is None:
            img = images[painting] = _Image(art_style=art_style, first_line=lineno)
        elif img.art_style != art_style:
            raise DataError(
                f"{where}: painting {painting!r} has art_style {art_style!r} here but {img.art_style!r} on line "
                f"{img.first_line}; one painting has one style (it names the image folder). Fix one of the rows"
            )
        if split is not None:
            img.splits.setdefault(split, lineno)
            if len(img.splits) > 1:
                seen = ", ".join(f"{s!r} (line {ln})" for s, ln in img.splits.items())
                raise DataError(
                    f"{where}: painting {painting!r} is in more than one split: {seen}; the split is by image, "
                    "so all rows of one painting need the same split"
                )
        rep = get("repetition")
        if rep:
            try:
                img.repetition = int(float(rep))
            except ValueError as exc:
                raise DataError(f"{where}: column 'repetition' is {rep!r}, not a number of annotators") from exc
        if keep is not None and culture not in keep:
            continue
        g = groups.setdefault((painting, culture), _Group())
        g.lines.append(lineno)
        g.labels.append(label)
        g.utterances.append(get("utterance"))

    if layout not in ("auto", "per-annotation", "per-image"):
        raise ConfigError(f"unknown CSV layout {layout!r}; use 'auto', 'per-annotation' or 'per-image'")
    per_image = layout == "per-image" or (
        layout == "auto" and ("repetition" in col or all(len(g.lines) == 1 for g in groups.values()))
    )
    if per_image:
        for (painting, culture), g in groups.items():
            if len(g.lines) > 1:
                raise DataError(
                    f"{path}, line {g.lines[1]}: painting {painting!r} appears again for culture {culture!r} "
                    f"(first on line {g.lines[0]}); a one-row-per-image CSV has one row per painting and culture. "
                    "Remove the duplicate, or drop the 'repetition' column if the file has one row per annotation"
                )

    samples: list[Sample] = []
    dropped: dict[str, list[str]] = {}
    for (painting, culture), g in groups.items():
        dropped.setdefault(culture, [])
        counts = Counter(g.labels)
        top = max(counts.values())
        winners = [lab for lab, n in counts.items() if n == top]
        if len(winners) > 1:
            dropped[culture].append(painting)
            continue
        img = images[painting]
        artist, title = parse_painting_slug(painting)
        relpath = f"{img.art_style}/{painting}.jpg"
        explanations = [u for u in g.utterances if u]
        expl_labels = [lab for lab, u in zip(g.labels, g.utterances, strict=True) if u]
        n_annot = img.repetition if (per_image and img.repetition) else len(g.labels)
        metadata: dict[str, Any] = {
            "image_id": painting,
            "art_style": img.art_style,
            "western": is_western_style(img.art_style),
            "artist": artist,
            "image_relpath": relpath,
            "explanation_labels": expl_labels,
            "n_annotators": n_annot,
            "source": path.name,
            "source_line": g.lines[0],
        }
        if not per_image:
            metadata["label_counts"] = {lab: counts[lab] for lab in scheme_.labels if counts.get(lab)}
        samples.append(
            Sample(
                id=f"{painting}::{culture}",
                culture=culture,
                image=str(root / relpath) if root is not None else None,
                label=winners[0],
                explanations=explanations,
                title=title or None,
                split=next(iter(img.splits), None),
                metadata=metadata,
            )
        )
    result = LoadResult(
        samples=tuple(samples),
        dropped_no_majority={c: len(v) for c, v in dropped.items()},
        rows_read=len(rows),
        source=str(path),
        layout="per-image" if per_image else "per-annotation",
        dropped_ids={c: tuple(v) for c, v in dropped.items()},
    )
    logger.info("loaded %s", result.summary())
    if not samples:
        logger.warning("%s: no samples left (cultures=%s, %d rows read)", path, sorted(keep or []), len(rows))
    if root is not None:
        absent = sum(1 for s in samples if s.image and not Path(s.image).is_file())
        if absent:
            logger.info("%d of %d images are not under %s (fine for text-only builds)", absent, len(samples), root)
    return result


# -- JSONL ---------------------------------------------------------------------------------------------------
def _str_list(value: Any, name: str, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{where}: field {name!r} must be a list of strings, got {type(value).__name__}")
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
) -> LoadResult:
    """Read a sample JSONL file (format in the module docstring) into `Sample`s."""
    path = Path(path)
    scheme_ = get_scheme(scheme)
    reg = registry or default_registry()
    keep = _culture_filter(cultures, reg)
    root = Path(data_root) if data_root is not None else None
    text = _read_utf8(path)
    samples: list[Sample] = []
    first_line: dict[str, int] = {}
    rows = 0
    allowed = set(JSONL_FIELDS)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rows += 1
        where = f"{path}, line {lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno}); fix or remove the line") from exc
        if not isinstance(obj, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        unknown = sorted(set(obj) - allowed)
        if unknown:
            raise DataError(
                f"{where}: unknown field(s) {unknown}; allowed fields are {list(JSONL_FIELDS)}. "
                "Put extra information under 'metadata'"
            )
        sid = obj.get("id")
        if isinstance(sid, int) and not isinstance(sid, bool):
            sid = str(sid)
        if not isinstance(sid, str) or not sid.strip():
            raise DataError(f"{where}: field 'id' is missing or empty; every sample needs a unique string id")
        sid = sid.strip()
        if sid in first_line:
            raise DataError(
                f"{where}: duplicate id {sid!r} (first on line {first_line[sid]}); ids must be unique, "
                "e.g. '<image>::<culture>'"
            )
        first_line[sid] = lineno
        if "culture" not in obj or obj["culture"] in (None, ""):
            raise DataError(f"{where}: field 'culture' is missing; give a culture id or alias such as 'en' or 'zh'")
        culture = _resolve_culture(reg, obj["culture"], f"{where}, field 'culture'")
        label: str | None = None
        if obj.get("label") is not None:
            label = _canonical_label(scheme_, obj["label"], f"{where}, field 'label'")
        elif require_label:
            raise DataError(
                f"{where}: field 'label' is missing; give one of {list(scheme_.labels)} "
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
        image: str | None = None
        if raw_image is not None:
            if _URI.match(raw_image):
                image = raw_image
            elif root is not None:
                image = str(root / _check_relpath(raw_image, f"{where}, field 'image'", root))
            else:
                p = Path(raw_image)
                image = str(p if p.is_absolute() else path.parent / p)
        metadata.setdefault("image_id", raw_image or (sid.rsplit("::", 1)[0] if "::" in sid else sid))
        split_raw = obj.get("split")
        split = _norm_split(str(split_raw), f"{where}, field 'split'") if split_raw is not None else None
        if keep is not None and culture not in keep:
            continue
        samples.append(
            Sample(
                id=sid,
                culture=culture,
                image=image,
                text=_opt_str(obj, "text", where),
                question=_opt_str(obj, "question", where),
                options=options,
                label=label,
                explanations=explanations,
                concepts=concepts,
                title=_opt_str(obj, "title", where),
                split=split,
                metadata=metadata,
            )
        )
    if rows == 0:
        raise DataError(
            f"{path}: the file is empty; expected one JSON object per line with at least 'id', 'culture' and 'label'"
        )
    cultures_seen = dict.fromkeys(s.culture for s in samples)
    result = LoadResult(
        samples=tuple(samples),
        dropped_no_majority=dict.fromkeys(cultures_seen, 0),
        rows_read=rows,
        source=str(path),
        layout="jsonl",
        dropped_ids={c: () for c in cultures_seen},
    )
    logger.info("loaded %s", result.summary())
    return result


# -- splitting -----------------------------------------------------------------------------------------------
def _rank_key(image_id: str, seed: int) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}\x00{image_id}".encode()).hexdigest(), image_id


def split_by_image(
    samples: Sequence[Sample], ratios: tuple[float, float, float] = (8, 1, 1), seed: int = 0
) -> list[Sample]:
    """Give samples without a split a train/valid/test split, by image id and the same for every culture.

    Images are ranked by ``sha256(seed, image_id)`` and the first ``round(n * r_train / sum)`` go to train, the
    next ``round(n * r_valid / sum)`` to valid, the rest to test: exact proportions, independent of input order,
    and reproducible for a given seed. An image that already has a split (in any of its samples) keeps it for all
    its samples; samples keep their order.
    """
    if len(ratios) != 3 or any((not math.isfinite(r)) or r < 0 for r in ratios) or sum(ratios) <= 0:
        raise ConfigError(f"split ratios must be three non-negative numbers with a positive sum, got {ratios}")
    fixed: dict[str, str] = {}
    for s in samples:
        if s.split:
            prev = fixed.setdefault(s.image_id, s.split)
            if prev != s.split:
                raise DataError(
                    f"image {s.image_id!r} has samples in split {prev!r} and {s.split!r} (sample {s.id!r}); "
                    "the split is by image, so give all its samples the same split"
                )
    todo = sorted({s.image_id for s in samples} - fixed.keys(), key=lambda i: _rank_key(i, seed))
    total = float(sum(ratios))
    n = len(todo)
    n_train = min(n, math.floor(n * ratios[0] / total + 0.5))
    n_valid = min(n - n_train, math.floor(n * ratios[1] / total + 0.5))
    if ratios[2] == 0:
        n_valid = n - n_train
    assigned = dict(fixed)
    for i, image_id in enumerate(todo):
        assigned[image_id] = "train" if i < n_train else "valid" if i < n_train + n_valid else "test"
    return [s if s.split else s.model_copy(update={"split": assigned[s.image_id]}) for s in samples]
