"""The RICE-VL file formats (VQA, grounding, cue metadata) and their loaders.

RICE-VL VQA (`load_ricevl_vqa`)
-------------------------------
=============  ==========================================  ========================================================
field          aliases                                     meaning
=============  ==========================================  ========================================================
id             item_id, uid, qid                           unique id
country        culture, nation                             a registry country (``SG``, ``Singapore``, ``timor
                                                           leste`` ...); others with ``allow_unknown_countries``
category       cat, topic                                  one of the scheme's categories (``ricevl14`` default)
sub_culture    sub-culture, subculture, sub_category,      the cultural element (``chilli crab``); optional
               subcategory, element
image          image_path, img, image_file                 optional here (a text-only question is allowed)
question       prompt, query                               the question; a ``fill`` question holds a blank
                                                           (``___``, ``[blank]``, ``<blank>`` or ``[MASK]``)
format         question_type, qtype, type                  ``qa`` (open, open-ended, oeq, short, question),
                                                           ``tf`` (true/false, true_false, truefalse, boolean,
                                                           yes/no, yn) or ``fill`` (fill-in-the-blank, fib, blank,
                                                           cloze)
answer         label, gold, reference, gold_answer         the reference answer; for ``tf`` a truth value
                                                           (true/false, yes/no, t/f, 1/0, a JSON bool)
=============  ==========================================  ========================================================

Samples: ``culture`` = country id, ``question``, ``image``, ``label`` = reference answer (``true``/``false`` for
tf); metadata ``country``, ``country_name``, ``category``, ``sub_culture``, ``format``, ``source``,
``source_line``.

RICE-VL grounding (`load_ricevl_grounding`)
-------------------------------------------
=============  ==========================================  ========================================================
field          aliases                                     meaning
=============  ==========================================  ========================================================
id, country,   as for VQA                                  as for VQA; ``image`` is required
category,
image
phrase         expression, referring_expression, query,    the cultural element to find
               text, caption, object
bbox           box, bbox_2d, gold_box, bounding_box        4 numbers, or an object with x1/y1/x2/y2
                                                           (xmin/ymin/xmax/ymax) or x/y/w/h (left/top/width/height)
bbox_format    box_format, bbox_convention                 ``xyxy`` (absolute pixels, the default), ``xywh``
                                                           (absolute, COCO), ``xyxy_norm`` / ``xywh_norm`` (0..1),
                                                           ``xyxy_1000`` (0..1000, Qwen2-VL); the file-wide
                                                           ``bbox_format=`` argument is used for rows without one
width, height  image_width, image_height                   image size in pixels; read from the image file when
                                                           absent (required for normalised boxes)
=============  ==========================================  ========================================================

The gold box is stored as absolute ``[x1, y1, x2, y2]`` pixels in ``metadata["bbox"]`` with the image size in
``metadata["width"]``/``["height"]``. A gold box with x2 <= x1 or y2 <= y1, or reaching outside the image (by
more than one pixel; up to one pixel is clipped), is a `DataError`.

RICE-VL-style cue metadata (`load_cue_metadata`)
------------------------------------------------
Training metadata for the regional cue KB: ``country``, ``category``, ``sub_culture`` (required here) and
``facts`` (aliases fact, description, notes, rationales: a string or a list of strings), optional ``id`` and
``split``, and optional ``concepts`` (aliases keywords, tags: further concepts of the row, e.g. salient words of
its title). Each row becomes a sample whose concepts are the sub-culture (first) and those, culture the country,
label the category and explanations the facts, ready for `culturekb.builders.build_kb`.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from culturekb._io import is_uri
from culturekb._records import FieldMap, LoadReport
from culturekb.errors import ConfigError, DataError
from culturekb.evals.loaders import (
    Row,
    culture_registry,
    load_context,
    load_rows,
    normalise_truth,
    resolve_image,
    row_culture,
)
from culturekb.evals.ricevl.boxes import BOX_FORMATS, BOX_KEY_LAYOUTS, convert_box
from culturekb.kb.cultures import Culture, CultureRegistry
from culturekb.kb.loaders import canonical_label
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme

__all__ = ["QUESTION_FORMATS", "reference_answers", "load_ricevl_vqa", "load_ricevl_grounding", "load_cue_metadata",
           "normalise_format", "country_names"]

log = logging.getLogger(__name__)

_BLANK = re.compile(r"_{2,}|\[blank\]|<blank>|\[mask\]|<mask>|\(blank\)", re.IGNORECASE)
QUESTION_FORMATS: tuple[str, ...] = ("qa", "tf", "fill")

_FORMAT_ALIASES = {
    "qa": "qa", "open": "qa", "open-ended": "qa", "open ended": "qa", "openended": "qa", "oeq": "qa",
    "short": "qa", "question": "qa", "short answer": "qa", "open question": "qa",
    "tf": "tf", "true/false": "tf", "true_false": "tf", "true-false": "tf", "truefalse": "tf", "true or false": "tf",
    "boolean": "tf", "bool": "tf", "yes/no": "tf", "yesno": "tf", "yn": "tf", "t/f": "tf",
    "fill": "fill", "fill-in-the-blank": "fill", "fill in the blank": "fill", "fill_in_the_blank": "fill",
    "fib": "fill", "blank": "fill", "cloze": "fill", "fill-in": "fill",
}

def normalise_format(value: Any, where: str = "") -> str:
    """'qa', 'tf' or 'fill' from any accepted spelling; others raise `DataError`."""
    key = re.sub(r"\s+", " ", str(value or "").strip().lower())
    found = _FORMAT_ALIASES.get(key) or _FORMAT_ALIASES.get(key.replace("_", " "))
    if found is None:
        raise DataError(f"{where + ': ' if where else ''}unknown question format {value!r}; use qa, tf or fill "
                        f"(or an alias: {sorted(_FORMAT_ALIASES)})")
    return found


def country_names(registry: CultureRegistry | None = None) -> dict[str, Culture]:
    """Country cultures of the registry (ids in upper case, as ISO codes are) by id."""
    reg = culture_registry(registry)
    return {c.id: c for c in reg.all() if c.id.isupper()}


def _country_fields(row: Row, sch: EmotionScheme, reg: CultureRegistry, allow_unknown: bool,
                    report: LoadReport | None = None) -> tuple[str, Culture, str]:
    """(id, country, category) of a row. A release read through a field map keeps its own categories (outside
    the scheme) and countries (outside the registry): its vocabulary is its own."""
    released = bool(report is not None and report.field_map)
    sid = row.item_id()
    country = row_culture(reg, row.text("country", required=True), row, "country", allow_unknown or released)
    raw = row.get("category")
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise DataError(f"{row.where}: field 'category' is missing; give one of the scheme's categories "
                        f"({', '.join(sch.labels[:6])} ...), or --scheme with the release's categories")
    if released and str(raw).strip().lower() not in {lab.lower() for lab in sch.labels}:
        return sid, country, str(raw).strip()
    category = canonical_label(sch, raw, f"{row.where}, field 'category'", "category")
    return sid, country, category


def reference_answers(value: Any) -> list[str]:
    """Every accepted answer of a reference: a text ("a; b" keeps both), a list of texts, or a list of answer
    clusters with votes (BLEnD: ``{"answers": [...], "en_answers": [...], "count": n}``), clusters with the most
    votes first. An empty list means the release has no answer for the item."""
    if isinstance(value, str):
        return [a.strip() for a in value.split(";") if a.strip()]
    if not isinstance(value, list):
        return []
    out: list[str] = []
    clusters = [v for v in value if isinstance(v, dict)]
    for c in sorted(clusters, key=lambda c: -int(c.get("count") or 0)):
        for key in ("en_answers", "answers"):
            out += [str(a).strip() for a in c.get(key) or [] if str(a).strip()]
    out += [str(v).strip() for v in value if isinstance(v, str | int | float) and str(v).strip()]
    return list(dict.fromkeys(out))


def load_ricevl_vqa(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "ricevl14",
    data_root: str | Path | None = None,
    check_images: bool = True,
    allow_unknown_countries: bool = False,
    registry: CultureRegistry | None = None,
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
    report: LoadReport | None = None,
) -> list[Sample]:
    """RICE-VL VQA items (see the module docstring) as samples."""
    sch, reg, root = load_context(scheme, registry, data_root)
    report = report if report is not None else LoadReport()  # which field map read the file decides the vocabulary

    def sample(row: Row) -> Sample | None:
        if isinstance(row.get("answer"), list) and not reference_answers(row.get("answer")):
            if report is not None:
                report.notes.append(f"{row.where}: no reference answer in the release (left out)")
            return None
        sid, country, category = _country_fields(row, sch, reg, allow_unknown_countries, report)
        fmt = normalise_format(row.get("format"), row.where) if row.get("format") is not None else None
        if fmt is None:
            raise DataError(f"{row.where}: field 'format' is missing; give qa, tf or fill")
        question = _question(row, report)
        raw_answer = row.get("answer")
        alternatives: list[str] = []
        if fmt == "tf":
            answer = normalise_truth(raw_answer)
            if answer is None:
                raise DataError(f"{row.where}: a tf question needs a truth value as answer, got {raw_answer!r} "
                                "(use true/false, yes/no or a JSON bool)")
        else:
            if isinstance(raw_answer, float) and not math.isfinite(raw_answer):
                raise DataError(f"{row.where}: field 'answer' is {raw_answer!r}, not an answer; give the reference "
                                "answer as text")
            if isinstance(raw_answer, int | float) and not isinstance(raw_answer, bool):
                raw_answer = str(raw_answer)
            alternatives = reference_answers(raw_answer) if isinstance(raw_answer, list) else []
            if alternatives:
                raw_answer = alternatives[0]
            if not isinstance(raw_answer, str) or not raw_answer.strip():
                raise DataError(f"{row.where}: field 'answer' is missing or empty; every item needs a "
                                "reference answer")
            answer = raw_answer.strip()
        if fmt == "fill" and not _BLANK.search(question):
            raise DataError(f"{row.where}: a fill question must contain a blank (___, [blank], <blank> or [MASK]): "
                            f"{question!r}")
        image_value = row.text("image")
        image = resolve_image(row, image_value, root, check_images) if image_value else None
        used = ("id", "country", "category", "sub_culture", "image", "question", "format", "answer")
        meta = {**row.extra(used), "country": country.id, "country_name": country.name, "category": category,
                "sub_culture": row.text("sub_culture") or None, "format": fmt, "source": row.source,
                **({"reference_answers": alternatives} if fmt != "tf" and len(alternatives) > 1 else {}),
                "source_line": row.line}
        return Sample(id=sid, culture=country.id, image=image, question=question, label=answer, split="test",
                      metadata=meta)

    return load_rows(path, "RICE-VL VQA data", sample, field_map=field_map, on_bad_row=on_bad_row, report=report)


def _question(row: Row, report: LoadReport | None) -> str:
    """The item's question; a blank one falls back to its English question (``en_question``: BLEnD read with
    ``--map blend-local``, whose China item New-en-04 has a blank local question), noted in the run report. An
    item with neither is a bad row."""
    english = row.data.get("en_question")
    if row.text("question") or not isinstance(english, str) or not english.strip():
        return row.text("question", required=True)
    if report is not None:
        report.notes.append(f"{row.where}: the question is blank; its English question (en_question) is asked "
                            "instead")
    return english.strip()


def _number(value: Any, what: str, row: Row) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DataError(f"{row.where}: {what} {value!r} is not a number")
    try:
        num = float(value)
    except ValueError as exc:
        raise DataError(f"{row.where}: {what} {value!r} is not a number") from exc
    if not math.isfinite(num):
        raise DataError(f"{row.where}: {what} {value!r} is not finite")
    return num


def _box_values(value: Any, row: Row) -> tuple[list[float], str | None]:
    """4 numbers and, for a dict, the layout its keys imply ('xyxy' or 'xywh')."""
    if isinstance(value, Mapping):
        keys = {str(k).lower(): v for k, v in value.items()}
        for names, layout in BOX_KEY_LAYOUTS:
            if all(n in keys for n in names):
                return [_number(keys[n], "bbox value", row) for n in names], layout
        forms = ", ".join("/".join(names) for names, _ in BOX_KEY_LAYOUTS)
        raise DataError(f"{row.where}: bbox object {dict(value)!r} needs the keys of one of: {forms}")
    if isinstance(value, list | tuple) and len(value) == 1 and isinstance(value[0], list | tuple):
        value = value[0]
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise DataError(f"{row.where}: bbox {value!r} must be 4 numbers [x1, y1, x2, y2] (or per its bbox_format)")
    return [_number(v, "bbox value", row) for v in value], None


def _image_size(path: str | None) -> tuple[int, int] | None:
    if not path or is_uri(path) or not Path(path).is_file():
        return None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return int(im.width), int(im.height)
    except (OSError, UnidentifiedImageError):
        return None


def load_ricevl_grounding(
    path: str | Path,
    *,
    bbox_format: str = "xyxy",
    data_root: str | Path | None = None,
    scheme: str | EmotionScheme = "ricevl14",
    check_images: bool = True,
    allow_unknown_countries: bool = False,
    registry: CultureRegistry | None = None,
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
    report: LoadReport | None = None,
) -> list[Sample]:
    """RICE-VL grounding items (see the module docstring) as samples with the gold box in metadata."""
    report = report if report is not None else LoadReport()  # which field map read the file decides the vocabulary
    if bbox_format not in BOX_FORMATS:
        raise ConfigError(f"unknown bbox_format {bbox_format!r}; use one of {list(BOX_FORMATS)}")
    sch, reg, root = load_context(scheme, registry, data_root)

    def sample(row: Row) -> Sample | None:
        sid, country, category = _country_fields(row, sch, reg, allow_unknown_countries, report)
        phrase = row.text("phrase", required=True)
        image = resolve_image(row, row.text("image", required=True, what=" (grounding needs the image)"), root,
                           check_images)
        raw_box = row.get("bbox")
        if raw_box is None:
            raise DataError(f"{row.where}: field 'bbox' is missing; give the gold box")
        values, layout = _box_values(raw_box, row)
        fmt = str(row.get("bbox_format") or bbox_format).strip().lower()
        if fmt not in BOX_FORMATS:
            raise DataError(f"{row.where}: unknown bbox_format {fmt!r}; use one of {list(BOX_FORMATS)}")
        if layout is not None and not fmt.startswith(layout):
            fmt = layout + fmt[4:]
        width = row.get("width")
        height = row.get("height")
        if width is not None or height is not None:
            if width is None or height is None:
                raise DataError(f"{row.where}: give both width and height, or neither")
            size: tuple[float, float] | None = (_number(width, "width", row), _number(height, "height", row))
        else:
            size = _image_size(image)
        if size is not None and (size[0] <= 0 or size[1] <= 0):
            raise DataError(f"{row.where}: image size {size} must be positive")
        try:
            x1, y1, x2, y2 = convert_box(values, fmt, *(size or (None, None)))
        except ConfigError as exc:
            raise DataError(f"{row.where}: {exc}") from exc
        if x2 <= x1 or y2 <= y1:
            raise DataError(f"{row.where}: gold box {values} ({fmt}) has x2 <= x1 or y2 <= y1; fix the box or its "
                            "bbox_format (xywh boxes give width and height, not the far corner)")
        if size is not None:
            w, h = size
            if x1 < -1 or y1 < -1 or x2 > w + 1 or y2 > h + 1:
                raise DataError(f"{row.where}: gold box {values} ({fmt}) reaches outside the {w:g}x{h:g} image; "
                                "fix the box or its bbox_format")
            x1, y1, x2, y2 = max(x1, 0.0), max(y1, 0.0), min(x2, w), min(y2, h)
        used = ("id", "country", "category", "image", "phrase", "bbox", "bbox_format", "width", "height")
        meta = {**row.extra(used), "country": country.id, "country_name": country.name, "category": category,
                "bbox": [x1, y1, x2, y2], "bbox_source_format": fmt,
                "width": size[0] if size else None, "height": size[1] if size else None,
                "source": row.source, "source_line": row.line}
        return Sample(id=sid, culture=country.id, image=image, text=phrase, split="test", metadata=meta)

    return load_rows(path, "RICE-VL grounding data", sample, field_map=field_map, on_bad_row=on_bad_row, report=report)


def load_cue_metadata(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "ricevl14",
    allow_unknown_countries: bool = False,
    registry: CultureRegistry | None = None,
    field_map: FieldMap | None = None,
    on_bad_row: str = "fail",
    report: LoadReport | None = None,
) -> list[Sample]:
    """RICE-VL-style training metadata as build samples: concept = sub-culture, culture = country,
    label = category, explanations = facts (split ``train`` unless the row says otherwise)."""
    sch, reg, _ = load_context(scheme, registry)

    def sample(row: Row) -> Sample | None:
        country = row_culture(reg, row.text("country", required=True), row, "country", allow_unknown_countries)
        category = canonical_label(sch, row.get("category"), f"{row.where}, field 'category'", "category")
        sub = row.text("sub_culture", required=True, what=" (it is the concept of the cue KB)")
        facts = row.get("facts", [])
        if isinstance(facts, str):
            facts = [facts]
        if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
            raise DataError(f"{row.where}: 'facts' must be a string or a list of strings")
        extra = row.get("concepts", [])
        if isinstance(extra, str):
            extra = [extra]
        if not isinstance(extra, list) or not all(isinstance(c, str) for c in extra):
            raise DataError(f"{row.where}: 'concepts' must be a string or a list of strings")
        sid = row.text("id") or f"{country.id}::{category}::{sub}::{row.line}"
        split = row.text("split") or "train"
        used = ("id", "country", "category", "sub_culture", "facts", "split", "concepts")
        concepts = list(dict.fromkeys([sub, *(c.strip() for c in extra if c.strip())]))
        return Sample(id=sid, culture=country.id, label=category, concepts=concepts,
                      explanations=[f.strip() for f in facts if f.strip()], split=split,
                      metadata={**row.extra(used), "image_id": sid, "country_name": country.name,
                                "source": row.source, "source_line": row.line})

    return load_rows(path, "RICE-VL cue metadata", sample, field_map=field_map, on_bad_row=on_bad_row, report=report)
