"""What every benchmark loader shares: JSONL / JSON-array rows with case-insensitive field aliases (`Row`,
`read_rows`), unique ids, image paths resolved inside the data folder, cultures and schemes checked.

Every loader reads UTF-8, one JSON object per line (blank lines ignored), or a ``.json`` file holding a list of
objects. Field names are matched case-insensitively, with the aliases of `FIELD_ALIASES`; fields the format does
not name go into ``Sample.metadata`` untouched. A bad row raises `DataError` naming the file, the line and the fix;
nothing is dropped silently. The formats themselves are documented beside their loaders
(`culturekb.evals.cedar.data`, `culturekb.evals.ricevl.data`).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb._images import check_image_file
from culturekb._io import is_uri, resolve_image_ref
from culturekb._records import FieldMap, LoadReport, Problems, is_absent, line_id, map_hint, read_records
from culturekb.errors import ConfigError, DataError
from culturekb.inference.choices import option_letters
from culturekb.kb.cultures import Culture, CultureRegistry, packaged_registry
from culturekb.kb.loaders import known_culture
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme
from culturekb.text.harness_prompt import parse_harness_prompt

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
    place: str = ""
    """How to name the row in messages (default ``source, line N``)."""

    @property
    def where(self) -> str:
        """Source file and line of this row, for error messages."""
        return self.place or f"{self.source}, line {self.line}"

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

    def item_id(self) -> str:
        """The row's id, else ``<file name>:<line>`` (a release without ids)."""
        return self.text("id") or line_id(self.source, self.line)

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


def read_rows(path: str | Path, field_map: FieldMap | None = None, report: LoadReport | None = None
              ) -> Iterator[Row]:
    """The objects of a data file (JSONL, a JSON list or object keyed by id, CSV/TSV) or of a folder of them, with
    line numbers, the field map applied (`culturekb._records.read_records`); a missing file or one with no
    objects at all is a `DataError` naming the file."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"data file {p} does not exist; give the path of a JSONL file (or a JSON, CSV or TSV file, "
                        "or a folder of them)")
    empty = True
    for rec in read_records(p, field_map, report):
        empty = False
        yield Row(rec.data, rec.source, rec.line, rec.where)
    if empty:
        raise DataError(f"{p}: the file holds no items (it is empty or blank); give a JSONL file with one object "
                        "per line")


def load_rows(path: str | Path, what: str, sample: Callable[[Row], Sample | None], *,
              field_map: FieldMap | None = None, on_bad_row: str = "fail", report: LoadReport | None = None
              ) -> list[Sample]:
    """`sample` of each row of `path` (`read_rows`); None leaves the row out. A row that raises `DataError` is a bad
    row (`Problems`: fail, or skip and list it in `report`); `what` names the data in the message ("Cedar data").
    Repeated ids are refused (`check_unique`), with skip too."""
    out: list[Sample] = []
    problems = Problems(f"{what} {path}", on_bad_row)
    report = report if report is not None else LoadReport()
    first: Row | None = None
    for row in read_rows(path, field_map, report):
        first = first or row
        with problems.row(row.where):
            item = sample(row)
            if item is not None:
                out.append(item)
    if problems and first is not None and not report.field_map:  # read as it is: a built-in map may fit it
        hint = map_hint(list(first.data), first.source)
        if hint:
            problems.hint(hint)
    problems.finish(report, left=len(out))  # every row skipped as bad: said so, not "no item matched"
    check_unique(out, path)
    return out


def require_labelled_split(samples: Sequence[Sample], split: str) -> None:
    """Refuse a ``--split`` in which the data has no labelled sample, naming the splits it has (checked before the
    run folder exists)."""
    if not any(s.split == split and s.label is not None for s in samples):
        splits = sorted({str(s.split) for s in samples if s.label is not None})
        raise ConfigError(f"--split {split!r}: the data has no labelled samples in that split (its splits: "
                          f"{', '.join(splits) or 'none'}); give one of those")


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


# -- multiple choice -----------------------------------------------------------------------------------------------
MIN_OPTIONS, MAX_OPTIONS = 2, 26
OPTION_FIELDS = tuple(f"option_{c}" for c in "abcdefghijklmnopqrstuvwxyz")
_OWN_LETTER = re.compile(r"^\s*[(\[（]?\s*([A-Za-z])\s*[)\]）.:：]\s*")


def strip_own_letter(text: str, letter: str) -> str:
    """An option without the letter it repeats ("A. ghosts", "(A) ghosts", "A.ghosts" as option A)."""
    m = _OWN_LETTER.match(text)
    return text[m.end():].strip() if m and m.group(1).upper() == letter else text


def choice_options(value: Any, row: Mapping[str, Any], where: str, question: str) -> tuple[list[str], str]:
    """(option texts, question) of a multiple-choice row: `value` (its ``options`` field: a list, JSON list text,
    or one string of lettered options), else the fields option_a .. option_z, else options written inside the
    question ("(a) ... (b) ...", "A. ... B. ..."; the question keeps its stem). Absent options (NaN, "nan", "")
    at the end are dropped; an option repeating its own letter loses it; 2 to 26 options."""
    if is_absent(value):
        value = None
    if value is None:
        lowered = {k.strip().lower(): v for k, v in row.items()}
        fields = [f for f in OPTION_FIELDS if f in lowered]
        if fields:
            value = [lowered[f] for f in OPTION_FIELDS[:OPTION_FIELDS.index(fields[-1]) + 1]]
        else:
            split = parse_harness_prompt(question)
            if len(split.options) < MIN_OPTIONS:
                raise DataError(f"{where}: no options; give 'options' (a list of {MIN_OPTIONS} to {MAX_OPTIONS} "
                                "texts), the fields option_a, option_b ..., or write them in the question "
                                "('(a) ... (b) ...')")
            value = list(split.options)
            question = "\n".join(p for p in (split.context, split.question) if p) or question
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:  # bad JSON, nesting too deep, an over-long integer
            raise DataError(f"{where}: 'options' is not a JSON list ({str(exc)[:200]})") from exc
    if isinstance(value, str):  # one string of lettered options: "A. x, B. y, C. z"
        split = parse_harness_prompt(value.replace(", ", "\n"))
        value = list(split.options) if len(split.options) >= MIN_OPTIONS else value
    if not isinstance(value, list):
        raise DataError(f"{where}: 'options' must be a list of {MIN_OPTIONS} to {MAX_OPTIONS} answer texts, got "
                        f"{type(value).__name__}")
    kept = [opt for opt in value if not is_absent(opt)]
    if len(kept) < len(value) and any(not is_absent(opt) for opt in value[len(kept):]):
        raise DataError(f"{where}: an empty option comes before a filled one ({value!r}); options are lettered in "
                        "order, so only trailing ones may be absent")
    if not MIN_OPTIONS <= len(kept) <= MAX_OPTIONS:
        raise DataError(f"{where}: 'options' must hold {MIN_OPTIONS} to {MAX_OPTIONS} answer texts, got "
                        f"{len(kept)}")
    out = []
    letters = option_letters(len(kept))
    for i, opt in enumerate(kept):
        if not isinstance(opt, str | int | float) or isinstance(opt, bool) or not str(opt).strip():
            raise DataError(f"{where}: option {letters[i]} is empty or not text ({opt!r})")
        out.append(strip_own_letter(str(opt).strip(), letters[i]))
    return out, question


def answer_letter(raw: str, options: Sequence[str], where: str) -> str:
    """The answer's letter: a letter ("B", "(b)", "B. "), a 1-based number, or an option's text."""
    letters = option_letters(len(options))
    letter = raw.strip("()[] .:").upper()
    if letter in letters:
        return letter
    m = _OWN_LETTER.match(raw)
    if m and m.group(1).upper() in letters:
        return m.group(1).upper()
    if raw.isdigit() and 1 <= int(raw) <= len(options):
        return letters[int(raw) - 1]
    by_text = [letters[i] for i, o in enumerate(options) if o.strip().lower() == raw.lower()]
    if len(by_text) == 1:
        return by_text[0]
    raise DataError(f"{where}: answer {raw!r} is not one of the option letters {list(letters)}, an option number "
                    "or an option's text")
