"""Loaders for the Cedar and RICE-VL file formats (JSONL, or a JSON array of the same objects) -> `Sample`.

Every loader reads UTF-8, one JSON object per line (blank lines ignored), or a ``.json`` file holding a list of
objects. Field names are matched case-insensitively, with the aliases listed below; fields the format does not
name go into ``Sample.metadata`` untouched. A bad row raises `DataError` naming the file, the line and the fix;
nothing is dropped silently.

(Why one module over 500 lines: it is the reference of the benchmark file formats; the field tables below are
about 80 of its lines and name every alias the code accepts, next to the code that accepts it.)

Cedar (`load_cedar`)
--------------------
=============  ==========================================  ========================================================
field          aliases                                     meaning
=============  ==========================================  ========================================================
id             item_id, uid                                unique id (string or integer)
language       lang, culture, locale                       the data language / culture: ``ar zh en hi ja es sw``
                                                           (any culture id or alias of the registry); one per row
modality       type, subset, input, setting                ``multimodal`` (aliases mm, image, vision, image+text,
                                                           image-text, vl) or ``text`` (text-only, text_only,
                                                           textonly, unimodal); default: multimodal iff an image
image          image_path, img, image_file                 path (relative to ``data_root`` or the file's folder),
                                                           absolute path, or URI; required for multimodal rows
narrative      story, context, scenario, text, situation   the story the question is about
question       prompt, query                               the question asked about the narrative
label          emotion, gold, answer, gold_label           a label of the scheme (``cedar14`` by default; synonyms
                                                           and translations accepted); required
=============  ==========================================  ========================================================

Samples: ``culture`` = the language's culture id, ``text`` = narrative, ``question``, ``image``, ``label``;
metadata ``language``, ``modality``, ``source``, ``source_line``.

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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb._images import check_image_file
from culturekb._io import is_uri, iter_json_records, resolve_image_ref
from culturekb.errors import ConfigError, DataError
from culturekb.evals.boxes import BOX_FORMATS, BOX_KEY_LAYOUTS, convert_box
from culturekb.kb.cultures import Culture, CultureRegistry, default_registry
from culturekb.kb.loaders import canonical_label, known_culture
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme

__all__ = [
    "QUESTION_FORMATS",
    "Row",
    "read_rows",
    "load_cedar",
    "load_ricevl_vqa",
    "load_ricevl_grounding",
    "load_cue_metadata",
    "normalise_format",
    "normalise_truth",
    "country_names",
]

log = logging.getLogger(__name__)

QUESTION_FORMATS: tuple[str, ...] = ("qa", "tf", "fill")

_FORMAT_ALIASES = {
    "qa": "qa", "open": "qa", "open-ended": "qa", "open ended": "qa", "openended": "qa", "oeq": "qa",
    "short": "qa", "question": "qa", "short answer": "qa", "open question": "qa",
    "tf": "tf", "true/false": "tf", "true_false": "tf", "true-false": "tf", "truefalse": "tf", "true or false": "tf",
    "boolean": "tf", "bool": "tf", "yes/no": "tf", "yesno": "tf", "yn": "tf", "t/f": "tf",
    "fill": "fill", "fill-in-the-blank": "fill", "fill in the blank": "fill", "fill_in_the_blank": "fill",
    "fib": "fill", "blank": "fill", "cloze": "fill", "fill-in": "fill",
}
_TRUE = {"true", "t", "yes", "y", "1", "correct", "right"}
_FALSE = {"false", "f", "no", "n", "0", "incorrect", "wrong"}
_MULTIMODAL = {"multimodal", "multi-modal", "mm", "image", "vision", "image+text", "image-text", "image_text", "vl",
               "visual"}
_TEXT = {"text", "text-only", "text_only", "textonly", "text only", "unimodal", "language"}
_BLANK = re.compile(r"_{2,}|\[blank\]|<blank>|\[mask\]|<mask>|\(blank\)", re.IGNORECASE)
_LANG_SEPARATORS = re.compile(r"[,/;+|&]| and ")

_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "item_id", "uid", "qid"),
    "language": ("language", "lang", "culture", "locale"),
    "modality": ("modality", "type", "subset", "input", "setting"),
    "image": ("image", "image_path", "img", "image_file"),
    "narrative": ("narrative", "story", "context", "scenario", "text", "situation"),
    "question": ("question", "prompt", "query"),
    "label": ("label", "emotion", "gold", "answer", "gold_label"),
    "country": ("country", "culture", "nation"),
    "category": ("category", "cat", "topic"),
    "sub_culture": ("sub_culture", "sub-culture", "subculture", "sub_category", "subcategory", "element"),
    "format": ("format", "question_type", "qtype", "type"),
    "answer": ("answer", "label", "gold", "reference", "gold_answer"),
    "phrase": ("phrase", "expression", "referring_expression", "query", "text", "caption", "object"),
    "bbox": ("bbox", "box", "bbox_2d", "gold_box", "bounding_box"),
    "bbox_format": ("bbox_format", "box_format", "bbox_convention"),
    "width": ("width", "image_width", "img_width", "w_img"),
    "height": ("height", "image_height", "img_height", "h_img"),
    "facts": ("facts", "fact", "description", "notes", "rationales"),
    "concepts": ("concepts", "keywords", "tags"),
    "split": ("split",),
}


# -- reading ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One object of a data file, with where it came from and case-insensitive field access."""

    data: dict[str, Any]
    source: str
    line: int

    @property
    def where(self) -> str:
        """Source file and line of this row, for error messages."""
        return f"{self.source}, line {self.line}"

    def key_of(self, name: str) -> str | None:
        """The actual key holding canonical field `name` (first alias present), or None."""
        lowered = {k.strip().lower(): k for k in self.data}
        found = [lowered[a] for a in _ALIASES[name] if a in lowered]
        return found[0] if found else None

    def get(self, name: str, default: Any = None) -> Any:
        """The value of field `name` (under any accepted alias), or `default` when absent or null."""
        key = self.key_of(name)
        if key is None:
            return default
        value = self.data[key]
        return default if value is None else value

    def text(self, name: str, *, required: bool = False, what: str = "") -> str:
        """Field `name` as stripped text ('' when absent); a non-string, or an empty required field, is a DataError."""
        value = self.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool) and name == "id":
            value = _number_id(value, self.where)
        if value is not None and not isinstance(value, str):
            raise DataError(f"{self.where}: field {name!r} must be a string, got {type(value).__name__} {value!r}")
        text = (value or "").strip()
        if required and not text:
            raise DataError(
                f"{self.where}: field {name!r} is missing or empty{what}; accepted names: {list(_ALIASES[name])}"
            )
        return text

    def extra(self, used: Sequence[str]) -> dict[str, Any]:
        """The fields not consumed by the format (kept as metadata)."""
        taken = {self.key_of(n) for n in used} - {None}
        return {k: v for k, v in self.data.items() if k not in taken}


def _number_id(value: float, where: str) -> str:
    """A numeric id as text: an integer (``7`` or ``7.0``) as its digits; NaN, an infinity or a fraction is a
    DataError (``NaN`` would become the id "nan")."""
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise DataError(f"{where}: field 'id' is {value!r}, not an id; give a string or a whole number")
    return str(int(value))


def read_rows(path: str | Path) -> Iterator[Row]:
    """The objects of a JSONL file (or a JSON array file), with line numbers; bad JSON, a missing file, a
    folder, or a file with no objects at all is a `DataError` naming the file."""
    p = Path(path)
    if p.is_dir():
        raise DataError(f"data file {p} is a directory; expected a JSONL file (give the file's path, not its folder)")
    if not p.is_file():
        raise DataError(f"data file {p} does not exist; give the path of a JSONL file")
    empty = True
    for line, obj in iter_json_records(p):
        empty = False
        yield Row(obj, str(p), line)
    if empty:
        raise DataError(f"{p}: the file holds no items (it is empty or blank); give a JSONL file with one object "
                        "per line")


def _check_unique(samples: Sequence[Sample], path: str | Path) -> None:
    seen: dict[str, int] = {}
    for s in samples:
        if s.id in seen:
            raise DataError(f"{path}: id {s.id!r} occurs twice (lines {seen[s.id]} and "
                            f"{s.metadata.get('source_line')}); ids must be unique")
        seen[s.id] = int(s.metadata.get("source_line", 0))


def _resolve_image(row: Row, value: str, data_root: Path | None, check: bool) -> str:
    """The image's path (URIs unchanged); with `check` (a model will see it) the local file must exist and its
    header must be a readable image within the pixel limit, so a bad image stops the run before any model
    loads."""
    found = resolve_image_ref(value, row.where, data_root=data_root, base_dir=Path(row.source).parent, check=check)
    if check and not is_uri(found):
        check_image_file(found, f"{row.where}, field 'image'")
    return found


def _culture(registry: CultureRegistry, value: str, row: Row, field: str, allow_unknown: bool = False) -> Culture:
    if allow_unknown and value not in registry:
        return Culture(id=value.strip(), name=value.strip(), language="en")
    fix = ("or load with allow_unknown_countries=True (--any-country) to accept new countries" if field == "country"
           else "or declare the culture in the registry first")
    return known_culture(registry, value, f"{row.where}, field {field!r}", field, fix)


def _registry(registry: CultureRegistry | None) -> CultureRegistry:
    return registry if registry is not None else default_registry()


def _context(scheme: str | EmotionScheme, registry: CultureRegistry | None, data_root: str | Path | None = None
             ) -> tuple[EmotionScheme, CultureRegistry, Path | None]:
    """What every loader resolves first: the label scheme, the culture registry and the data root."""
    return get_scheme(scheme), _registry(registry), Path(data_root) if data_root is not None else None


# -- Cedar ---------------------------------------------------------------------------------------------------------


def load_cedar(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "cedar14",
    languages: Sequence[str] | None = None,
    modalities: Sequence[str] | None = None,
    data_root: str | Path | None = None,
    check_images: bool = True,
    registry: CultureRegistry | None = None,
) -> list[Sample]:
    """Cedar items (see the module docstring) as samples; `languages` / `modalities` keep only those."""
    sch, reg, root = _context(scheme, registry, data_root)
    keep_langs = {reg.resolve(lang).id for lang in languages} if languages else None
    keep_mods = {_modality(m, None) for m in modalities} if modalities else None
    out: list[Sample] = []
    for row in read_rows(path):
        sid = row.text("id", required=True)
        lang_value = row.text("language", required=True)
        if _LANG_SEPARATORS.search(lang_value.lower()):
            raise DataError(
                f"{row.where}: language {lang_value!r} names more than one language; give each language's "
                "version of an item as its own row with one language"
            )
        culture = _culture(reg, lang_value, row, "language")
        image_value = row.text("image")
        modality = _modality(row.get("modality"), row) if row.get("modality") is not None else (
            "multimodal" if image_value else "text")
        if modality == "multimodal" and not image_value:
            raise DataError(f"{row.where}: a multimodal item needs an image; give 'image' or set modality 'text'")
        if modality == "text" and image_value:
            raise DataError(f"{row.where}: modality 'text' but an image is given; set modality 'multimodal' or drop "
                            "the image")
        narrative = row.text("narrative")
        question = row.text("question", required=True, what=" (Cedar asks a question about each narrative)")
        if not narrative and modality == "text":
            raise DataError(f"{row.where}: a text-only item needs a narrative")
        label = canonical_label(sch, row.get("label"), f"{row.where}, field 'label'", "label")
        if keep_langs is not None and culture.id not in keep_langs:
            continue
        if keep_mods is not None and modality not in keep_mods:
            continue
        image = _resolve_image(row, image_value, root, check_images) if image_value else None
        used = ("id", "language", "modality", "image", "narrative", "question", "label")
        meta = {**row.extra(used), "language": culture.id, "modality": modality, "source": row.source,
                "source_line": row.line}
        out.append(Sample(id=sid, culture=culture.id, image=image, text=narrative or None, question=question,
                          label=label, split="test", metadata=meta))
    if not out:
        raise DataError(f"{path}: no item is left after keeping languages {sorted(keep_langs or [])} and modalities "
                        f"{sorted(keep_mods or [])}; check --languages and --modality against the file")
    _check_unique(out, path)
    return out


def _modality(value: Any, row: Row | None) -> str:
    key = str(value).strip().lower()
    if key in _MULTIMODAL:
        return "multimodal"
    if key in _TEXT:
        return "text"
    where = f"{row.where}: " if row is not None else ""
    raise DataError(f"{where}unknown modality {value!r}; use 'multimodal' or 'text' (or an alias: "
                    f"{sorted(_MULTIMODAL | _TEXT)})")


# -- RICE-VL ------------------------------------------------------------------------------------------------------


def normalise_format(value: Any, where: str = "") -> str:
    """'qa', 'tf' or 'fill' from any accepted spelling; others raise `DataError`."""
    key = re.sub(r"\s+", " ", str(value or "").strip().lower())
    found = _FORMAT_ALIASES.get(key) or _FORMAT_ALIASES.get(key.replace("_", " "))
    if found is None:
        raise DataError(f"{where + ': ' if where else ''}unknown question format {value!r}; use qa, tf or fill "
                        f"(or an alias: {sorted(_FORMAT_ALIASES)})")
    return found


def normalise_truth(value: Any) -> str | None:
    """'true' / 'false' from a bool, 1/0 or a word (true, yes, t, correct ...); None when it is none of these."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float) and value in (0, 1):
        return "true" if value == 1 else "false"
    key = str(value or "").strip().lower().strip(".!。 ")
    if key in _TRUE:
        return "true"
    if key in _FALSE:
        return "false"
    return None


def country_names(registry: CultureRegistry | None = None) -> dict[str, Culture]:
    """Country cultures of the registry (ids in upper case, as ISO codes are) by id."""
    reg = _registry(registry)
    return {c.id: c for c in reg.all() if c.id.isupper()}


def _country_fields(row: Row, sch: EmotionScheme, reg: CultureRegistry, allow_unknown: bool
                    ) -> tuple[str, Culture, str]:
    sid = row.text("id", required=True)
    country = _culture(reg, row.text("country", required=True), row, "country", allow_unknown)
    category = canonical_label(sch, row.get("category"), f"{row.where}, field 'category'", "category")
    return sid, country, category


def load_ricevl_vqa(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "ricevl14",
    data_root: str | Path | None = None,
    check_images: bool = True,
    allow_unknown_countries: bool = False,
    registry: CultureRegistry | None = None,
) -> list[Sample]:
    """RICE-VL VQA items (see the module docstring) as samples."""
    sch, reg, root = _context(scheme, registry, data_root)
    out: list[Sample] = []
    for row in read_rows(path):
        sid, country, category = _country_fields(row, sch, reg, allow_unknown_countries)
        fmt = normalise_format(row.get("format"), row.where) if row.get("format") is not None else None
        if fmt is None:
            raise DataError(f"{row.where}: field 'format' is missing; give qa, tf or fill")
        question = row.text("question", required=True)
        raw_answer = row.get("answer")
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
            if not isinstance(raw_answer, str) or not raw_answer.strip():
                raise DataError(f"{row.where}: field 'answer' is missing or empty; every item needs a reference answer")
            answer = raw_answer.strip()
        if fmt == "fill" and not _BLANK.search(question):
            raise DataError(f"{row.where}: a fill question must contain a blank (___, [blank], <blank> or [MASK]): "
                            f"{question!r}")
        image_value = row.text("image")
        image = _resolve_image(row, image_value, root, check_images) if image_value else None
        used = ("id", "country", "category", "sub_culture", "image", "question", "format", "answer")
        meta = {**row.extra(used), "country": country.id, "country_name": country.name, "category": category,
                "sub_culture": row.text("sub_culture") or None, "format": fmt, "source": row.source,
                "source_line": row.line}
        out.append(Sample(id=sid, culture=country.id, image=image, question=question, label=answer, split="test",
                          metadata=meta))
    _check_unique(out, path)
    return out


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
) -> list[Sample]:
    """RICE-VL grounding items (see the module docstring) as samples with the gold box in metadata."""
    if bbox_format not in BOX_FORMATS:
        raise ConfigError(f"unknown bbox_format {bbox_format!r}; use one of {list(BOX_FORMATS)}")
    sch, reg, root = _context(scheme, registry, data_root)
    out: list[Sample] = []
    for row in read_rows(path):
        sid, country, category = _country_fields(row, sch, reg, allow_unknown_countries)
        phrase = row.text("phrase", required=True)
        image = _resolve_image(row, row.text("image", required=True, what=" (grounding needs the image)"), root,
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
                raise DataError(f"{row.where}: gold box {values} ({fmt}) reaches outside the {w:g}x{h:g} image; fix "
                                "the box or its bbox_format")
            x1, y1, x2, y2 = max(x1, 0.0), max(y1, 0.0), min(x2, w), min(y2, h)
        used = ("id", "country", "category", "image", "phrase", "bbox", "bbox_format", "width", "height")
        meta = {**row.extra(used), "country": country.id, "country_name": country.name, "category": category,
                "bbox": [x1, y1, x2, y2], "bbox_source_format": fmt,
                "width": size[0] if size else None, "height": size[1] if size else None,
                "source": row.source, "source_line": row.line}
        out.append(Sample(id=sid, culture=country.id, image=image, text=phrase, split="test", metadata=meta))
    _check_unique(out, path)
    return out


def load_cue_metadata(
    path: str | Path,
    *,
    scheme: str | EmotionScheme = "ricevl14",
    allow_unknown_countries: bool = False,
    registry: CultureRegistry | None = None,
) -> list[Sample]:
    """RICE-VL-style training metadata as build samples: concept = sub-culture, culture = country,
    label = category, explanations = facts (split ``train`` unless the row says otherwise)."""
    sch, reg, _ = _context(scheme, registry)
    out: list[Sample] = []
    for row in read_rows(path):
        country = _culture(reg, row.text("country", required=True), row, "country", allow_unknown_countries)
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
        out.append(Sample(id=sid, culture=country.id, label=category, concepts=concepts,
                          explanations=[f.strip() for f in facts if f.strip()], split=split,
                          metadata={**row.extra(used), "image_id": sid, "country_name": country.name,
                                    "source": row.source, "source_line": row.line}))
    _check_unique(out, path)
    return out
