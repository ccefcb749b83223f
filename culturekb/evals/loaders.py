"""What every benchmark loader shares: JSONL / JSON-array rows with case-insensitive field aliases (`Row`,
`read_rows`), unique ids, image paths resolved inside the data folder, cultures and schemes checked.

Every loader reads UTF-8, one JSON object per line (blank lines ignored), or a ``.json`` file holding a list of
objects. Field names are matched case-insensitively, with the aliases of `FIELD_ALIASES`; fields the format does
not name go into ``Sample.metadata`` untouched. A bad row raises `DataError` naming the file, the line and the fix;
nothing is dropped silently. The formats themselves are documented beside their loaders
(`culturekb.evals.cedar.data`, `culturekb.evals.ricevl.data`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb._images import check_image_file
from culturekb._io import is_uri, iter_json_records, resolve_image_ref
from culturekb.errors import DataError
from culturekb.kb.cultures import Culture, CultureRegistry, packaged_registry
from culturekb.kb.loaders import known_culture
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme

log = logging.getLogger(__name__)

FIELD_ALIASES: dict[str, tuple[str, ...]] = {
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
        found = [lowered[a] for a in FIELD_ALIASES[name] if a in lowered]
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
                f"{self.where}: field {name!r} is missing or empty{what}; accepted names: {list(FIELD_ALIASES[name])}"
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


def check_unique(samples: Sequence[Sample], path: str | Path) -> None:
    """Refuse a file whose samples repeat an id, naming both lines."""
    seen: dict[str, int] = {}
    for s in samples:
        if s.id in seen:
            raise DataError(f"{path}: id {s.id!r} occurs twice (lines {seen[s.id]} and "
                            f"{s.metadata.get('source_line')}); ids must be unique")
        seen[s.id] = int(s.metadata.get("source_line", 0))


def resolve_image(row: Row, value: str, data_root: Path | None, check: bool) -> str:
    """The image's path (URIs unchanged); with `check` (a model will see it) the local file must exist and its
    header must be a readable image within the pixel limit, so a bad image stops the run before any model
    loads."""
    found = resolve_image_ref(value, row.where, data_root=data_root, base_dir=Path(row.source).parent, check=check)
    if check and not is_uri(found):
        check_image_file(found, f"{row.where}, field 'image'")
    return found


def row_culture(registry: CultureRegistry, value: str, row: Row, field: str, allow_unknown: bool = False) -> Culture:
    """The culture a row names in `field` (a registry culture; any code with `allow_unknown`)."""
    if allow_unknown and value not in registry:
        return Culture(id=value.strip(), name=value.strip(), language="en")
    fix = ("or load with allow_unknown_countries=True (--any-country) to accept new countries" if field == "country"
           else "or declare the culture in the registry first")
    return known_culture(registry, value, f"{row.where}, field {field!r}", field, fix)


def culture_registry(registry: CultureRegistry | None) -> CultureRegistry:
    """The registry a loader resolves cultures in: the one given (a run passes its own, `RunContext.cultures`),
    else a new one of the packaged cultures (`packaged_registry`: cultures the data registers stay in it)."""
    return registry if registry is not None else packaged_registry()


def load_context(scheme: str | EmotionScheme, registry: CultureRegistry | None, data_root: str | Path | None = None
             ) -> tuple[EmotionScheme, CultureRegistry, Path | None]:
    """What every loader resolves first: the label scheme, the culture registry and the data root."""
    return get_scheme(scheme), culture_registry(registry), Path(data_root) if data_root is not None else None


# -- truth values --------------------------------------------------------------------------------------------------
_TRUE = {"true", "t", "yes", "y", "1", "correct", "right"}
_FALSE = {"false", "f", "no", "n", "0", "incorrect", "wrong"}

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
