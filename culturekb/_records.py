"""Reading a data file as it was released: format detection, field maps, every problem at once.

`read_records(path)` gives the records of any data file a loader accepts, whatever its layout:

- a JSON list of objects; a JSON object keyed by id (each value an object: the key becomes ``id`` unless the value
  has one); a JSON object holding one list of objects (``{"data": [...]}``);
- JSON Lines, whatever the extension (a ``.json`` file that holds JSON Lines is read as such, and the load says
  so);
- CSV or TSV with a header row (``.csv``, ``.tsv``, ``.tab``; a ``.txt`` is sniffed);
- a directory: every data file in it (``.jsonl .json .csv .tsv``, hidden files skipped), in name order.

A **field map** renames a release's keys to the loader's field names before the loader sees them: given on the
command line (``--map id=qid,question=QUESTION``), in a TOML/JSON file (``--map FILE``: a ``[fields]`` table,
optionally ``[defaults]`` and ``[patterns]``), or by name (``--map tombench``: the built-in maps in
``culturekb/data/maps/``). A built-in map whose ``[detect] keys`` are all present in a file's first record applies
without being named. Special sources: ``@file`` (the file's name without extension), ``@line`` (its line or item
number), ``@key`` (the key of a JSON object keyed by id), or a template of them and of the record's own keys
(``"{file}/{key}"``, ``"images/{image_id}"``; a record that lacks a key its template names leaves the field unset).
``[defaults]`` fill fields a record lacks; the load report counts them.

`Problems` collects every bad row of a load (kind, where, message) so that a loader reports all of them at once,
or skips them (``--on-bad-row skip``) and lists them in the run report.
"""

from __future__ import annotations

import csv
import functools
import json
import math
import re
import string
import tomllib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from culturekb._io import check_text_fields, json_value, read_text_utf8
from culturekb.errors import ConfigError, DataError

__all__ = ["DATA_SUFFIXES", "FieldMap", "LoadReport", "Problems", "Record", "builtin_maps", "data_files",
           "is_absent", "line_id", "map_hint", "parse_field_map", "read_records", "ON_BAD_ROW"]

DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".tab")
ON_BAD_ROW = ("fail", "skip")
_SPECIAL = ("@file", "@line", "@key")
T = TypeVar("T")
_SHOWN = 3
"""Lines shown per kind of problem."""


def is_absent(value: Any) -> bool:
    """Whether a value means "no value" in a release: None, NaN (ToMBench's bare ``NaN``), '' or the text 'nan'."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return isinstance(value, str) and value.strip().lower() in ("", "nan")


@dataclass(frozen=True)
class Record:
    """One item of a data file: its fields (renamed by the field map), the file, the line (or item) number."""

    data: dict[str, Any]
    source: str
    line: int
    key: str | None = None
    unit: str = "line"
    """``line`` (JSON Lines, CSV) or ``item`` (the n-th object of a JSON document)."""

    @property
    def place_id(self) -> str:
        """The id of a record that has none: its key (a JSON object keyed by id), else ``<file name>:<line>``."""
        return self.key if self.key is not None else line_id(self.source, self.line)

    @property
    def where(self) -> str:
        """``file, line N`` (``file, item N``; ``file, item "KEY"`` for a JSON object keyed by id)."""
        if self.key is not None:
            return f"{self.source}, item {self.key!r}"
        return f"{self.source}, {self.unit} {self.line}"


def line_id(source: str | Path, line: int) -> str:
    """``<file name>:<line>``: the id every loader gives an item its release left without one."""
    return f"{Path(source).stem}:{line}"


# -- field maps --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FieldMap:
    """Loader field -> the release's key (or ``@file``/``@line``/``@key``), defaults, and where the map came from."""

    name: str
    fields: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    detect: tuple[str, ...] = ()
    benchmarks: tuple[str, ...] = ()
    release: str = ""
    patterns: Mapping[str, str] = field(default_factory=dict)
    """Field -> a regular expression whose first group is kept (``^(.+?)_data$`` on ``China_data``), then
    underscores become spaces."""
    values: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Field -> value translations (XED's label ``"4"`` -> ``"fear"``); a comma list is translated item by item
    and joined with `` & `` (a compound label, read as its first label of the scheme)."""
    columns: tuple[str, ...] = ()
    """Column names of a CSV/TSV file without a header row (the first row is then data)."""
    files: str = ""
    """``[detect] files``: a regular expression on the names of the release's files (``en-annotated.tsv``); a file
    so named is only told to use the map (`map_hint`), never read with it unasked."""

    def matches(self, keys: Sequence[str]) -> bool:
        """Whether every ``detect`` key is among `keys` (a built-in map applies unasked then)."""
        return bool(self.detect) and set(self.detect) <= set(keys)

    def apply(self, raw: Mapping[str, Any], source: Path, line: int, key: str | None) -> tuple[dict[str, Any],
                                                                                                list[str]]:
        """The record with the map's fields taken from the release's keys (read from the record as released, so
        one key may feed two fields), patterns applied, defaults filled; and which defaults were used."""
        lowered = {k.strip().lower(): k for k in raw}
        values: dict[str, Any] = {}
        consumed: set[str] = set()
        for target, src in self.fields.items():
            if src in _SPECIAL:
                values[target] = {"@file": source.stem, "@line": line, "@key": key}[src]
                continue
            if "{" in src:  # a template: "{file}/{key}", "images/{image_id}"
                filled = _fill_template(src, {"file": source.stem, "line": line, "key": key}, raw, lowered)
                if filled is not None:
                    values[target] = filled
                continue
            actual = lowered.get(src.strip().lower())
            if actual is not None:
                values[target] = raw[actual]
                consumed.add(actual)
        for target, pattern in self.patterns.items():
            if isinstance(values.get(target), str):
                m = re.match(pattern, values[target])
                if m:
                    values[target] = (m.group(1) if m.groups() else m.group(0)).replace("_", " ")
        for target, table in self.values.items():
            if isinstance(values.get(target), str | int) and not isinstance(values.get(target), bool):
                parts = [p.strip() for p in str(values[target]).split(",") if p.strip()]
                values[target] = " & ".join(str(table.get(p, p)) for p in parts)
        out = {k: v for k, v in raw.items() if k not in consumed}
        out.update(values)
        used = []
        for name, value in self.defaults.items():
            if is_absent(out.get(name)):
                out[name] = value
                used.append(name)
        return out, used


def _template_names(template: str) -> list[tuple[str, str | None]]:
    """(literal text, field name or None) of a source template; ValueError when the braces do not pair."""
    return [(literal, name) for literal, name, _, _ in string.Formatter().parse(template)]


def _fill_template(template: str, specials: Mapping[str, Any], raw: Mapping[str, Any], lowered: Mapping[str, str]
                   ) -> str | None:
    """`template` with each ``{name}`` replaced by the special of that name (``file``, ``line``, ``key``), else the
    record's value under that key (any case); None when the record lacks the key or its value is absent (the
    field is then left unset, and the loader says so when it needs it)."""
    out: list[str] = []
    for literal, name in _template_names(template):
        out.append(literal)
        if name is None:
            continue
        if name in specials:
            out.append(str(specials[name]))
            continue
        actual = lowered.get(name.strip().lower())
        if actual is None or is_absent(raw[actual]):
            return None
        out.append(str(raw[actual]).strip())
    return "".join(out)


def _check_templates(fields: Mapping[str, str], name: str) -> None:
    """A source template must pair its braces and name plain keys (``{image_id}``), not attributes or items."""
    for target, src in fields.items():
        if "{" not in src:
            continue
        try:
            parts = [(n, spec, conv) for _, n, spec, conv in string.Formatter().parse(src) if n is not None]
        except ValueError as exc:
            raise ConfigError(f"field map {name}: template {src!r} of {target!r} is not a template ({exc}); write "
                              "keys in braces, e.g. \"images/{image_id}\"") from exc
        bad = [n for n, spec, conv in parts if spec or conv or not n.strip() or not re.fullmatch(r"[^.\[\]]+", n)]
        if bad:
            raise ConfigError(f"field map {name}: template {src!r} of {target!r} names {bad}; name each key plainly "
                              "in braces (a key of the release, or file, line, key; no '.', '[...]', ':spec' or "
                              "'!r'), e.g. \"{file}/{key}\"")


def _map_from_mapping(obj: Mapping[str, Any], name: str) -> FieldMap:
    if not isinstance(obj, Mapping):
        raise ConfigError(f"field map {name}: expected a table of fields")
    fields = obj.get("fields", {k: v for k, v in obj.items() if isinstance(v, str)})
    if not isinstance(fields, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                  for k, v in fields.items()):
        raise ConfigError(f"field map {name}: [fields] must map each loader field to a key of the release "
                          "(text = text), e.g. question = \"QUESTION\"")
    _check_templates(fields, name)
    defaults = obj.get("defaults", {})
    detect = obj.get("detect", {}).get("keys", []) if isinstance(obj.get("detect"), Mapping) else []
    files = obj.get("detect", {}).get("files", "") if isinstance(obj.get("detect"), Mapping) else ""
    try:
        re.compile(files)
    except (re.error, TypeError) as exc:
        raise ConfigError(f"field map {name}: [detect] files is not a regular expression ({exc})") from exc
    patterns = obj.get("patterns", {})
    for target, pattern in patterns.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"field map {name}: pattern of {target!r} is not a regular expression ({exc})") from exc
    values = obj.get("values", {})
    if not isinstance(values, Mapping) or not all(isinstance(v, Mapping) for v in values.values()):
        raise ConfigError(f"field map {name}: [values] must hold one table per field (value = translation)")
    columns = obj.get("columns", [])
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        raise ConfigError(f"field map {name}: 'columns' must be a list of column names")
    return FieldMap(name, dict(fields), dict(defaults), tuple(detect), tuple(obj.get("benchmarks", ())),
                    str(obj.get("release", "")), dict(patterns), {k: dict(v) for k, v in values.items()},
                    tuple(columns), files)


@functools.cache
def builtin_maps() -> dict[str, FieldMap]:
    """The packaged field maps of public releases, by name (``culturekb/data/maps/<name>.toml``), read once per
    process (every file of a load asks whether one matches its keys)."""
    root = resources.files("culturekb") / "data" / "maps"
    out: dict[str, FieldMap] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            name = entry.name.removesuffix(".toml")
            out[name] = _map_from_mapping(tomllib.loads(entry.read_text(encoding="utf-8")), name)
    return out


def map_hint(keys: Sequence[str], source: str | Path) -> str:
    """A hint naming the built-in maps a file that failed to load may need (``--map xed``): those whose detect keys
    it has at least half of, or whose ``[detect] files`` pattern its name matches; "" when none fits."""
    have = {str(k).strip().lower() for k in keys}
    name = Path(source).name
    fits = [m.name for m in builtin_maps().values()
            if (m.detect and 2 * len(have & {k.lower() for k in m.detect}) >= len(m.detect))
            or (m.files and re.search(m.files, name))]
    if not fits:
        return ""
    named = " or ".join(f"--map {n}" for n in fits)
    releases = "; ".join(f"{m.name}: {m.release}" for m in builtin_maps().values() if m.name in fits)
    return f"Hint: {name} looks like a release culturekb has a built-in field map for; try {named} ({releases})."


def parse_field_map(value: str | None) -> FieldMap | None:
    """``--map``: a built-in map's name, a TOML/JSON map file, or ``field=KEY,field=KEY``; None stays None."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    maps = builtin_maps()
    if value in maps:
        return maps[value]
    path = Path(value)
    if path.suffix.lower() in (".toml", ".json") and path.is_file():
        text = read_text_utf8(path, error=ConfigError)
        try:
            obj = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
        except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"--map {path}: not valid {path.suffix[1:].upper()} ({exc})") from exc
        return _map_from_mapping(obj, str(path))
    if "=" not in value:
        raise ConfigError(f"--map {value!r}: not a built-in map ({', '.join(maps)}), a .toml/.json map file, or "
                          "field=KEY pairs (e.g. --map id=qid,question=QUESTION)")
    fields: dict[str, str] = {}
    for part in value.split(","):
        target, sep, src = part.partition("=")
        if not sep or not target.strip() or not src.strip():
            raise ConfigError(f"--map {value!r}: {part!r} is not field=KEY")
        fields[target.strip()] = src.strip().replace("\\n", "\n")
    _check_templates(fields, "--map")
    return FieldMap("--map", fields)


# -- formats -----------------------------------------------------------------------------------------------------
def comma_list(value: str | None, option: str = "a comma list") -> list[str] | None:
    """A comma-list option: ``"a, b,,c"`` -> ``["a", "b", "c"]``; None -> None (the option's default). A value that
    names nothing (``""``, ``","``) raises ConfigError naming `option`: it would otherwise run as if the option were
    left out."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ConfigError(f"{option} {value!r} names nothing; give a comma list of at least one item, or leave "
                          f"{option} out for its default")
    return items


def data_files(path: Path) -> list[Path]:
    """`path` itself, or the data files of a directory (name order, hidden files skipped)."""
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")
                   and p.suffix.lower() in DATA_SUFFIXES)
    if not files:
        raise DataError(f"{path}: a directory with no data files ({', '.join(DATA_SUFFIXES)}); give a file or a "
                        "folder that holds some")
    return files


def _jsonl(text: str, path: Path) -> Iterator[tuple[int, Any]]:
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if line.strip():
            yield lineno, json_value(line, f"{path}, line {lineno}", "one JSON object per line: fix or remove the "
                                     "line", one_line=True)


def _delimited(text: str, path: Path, delimiter: str, columns: Sequence[str] = ()) -> Iterator[tuple[int, Any]]:
    reader = csv.reader(text.splitlines(keepends=True), delimiter=delimiter)
    try:
        header = list(columns) or next(reader, [])
        if not header:
            return
        names = [h.strip() for h in header]
        for row in reader:
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(names):
                raise DataError(f"{path}, line {reader.line_num}: {len(row)} fields where the header has "
                                f"{len(names)}; quote fields that hold the delimiter")
            yield reader.line_num, {n or f"column_{i}": v for i, (n, v) in enumerate(zip(names, row, strict=True))}
    except csv.Error as exc:
        raise DataError(f"{path}, line {reader.line_num}: not valid {'TSV' if delimiter == chr(9) else 'CSV'} "
                        f"({exc})") from exc


def _json_document(text: str, path: Path, notes: list[str]) -> Iterator[tuple[int, Any, str | None, str]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            json_value(text, path, "fix the file")  # the standard error, naming line and column
            raise
        # several JSON values, one per line: JSON Lines under another name
        notes.append(f"{path.name} holds JSON Lines (one object per line), not one JSON document: read as JSONL "
                     "(rename it to .jsonl to silence this note)")
        for lineno, obj in _jsonl(text, path):
            yield lineno, obj, None, "line"
        return
    except (RecursionError, ValueError):
        json_value(text, path, "fix the file")  # too deep, an over-long integer: the standard error
        raise
    if isinstance(value, list):
        for i, obj in enumerate(value, start=1):
            yield i, obj, None, "item"
        return
    if isinstance(value, dict):
        if value and all(isinstance(v, dict) for v in value.values()):
            notes.append(f"{path.name}: a JSON object keyed by id ({len(value)} items)")
            for i, (key, obj) in enumerate(value.items(), start=1):
                yield i, obj, str(key), "item"
            return
        lists = [k for k, v in value.items() if isinstance(v, list) and v and all(isinstance(o, dict) for o in v)]
        if len(lists) == 1:
            notes.append(f"{path.name}: the records under its key {lists[0]!r}")
            for i, obj in enumerate(value[lists[0]], start=1):
                yield i, obj, None, "item"
            return
    raise DataError(f"{path}: a JSON document must hold a list of objects, an object keyed by id, or one list of "
                    f"objects under a key; this one is a {type(value).__name__}. JSON Lines (one object per line) "
                    "is read too")


def _raw_records(path: Path, notes: list[str], columns: Sequence[str] = ()
                 ) -> Iterator[tuple[int, Any, str | None, str]]:
    text = read_text_utf8(path).removeprefix("\ufeff")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv", ".tab", ".txt"):
        delimiter = "\t" if suffix in (".tsv", ".tab") or (suffix == ".txt" and "\t" in text.split("\n", 1)[0]) \
            else ","
        for lineno, obj in _delimited(text, path, delimiter, columns):
            yield lineno, obj, None, "line"
        return
    head = text.lstrip()[:1]
    if suffix == ".json" or head == "[":
        yield from _json_document(text, path, notes)
        return
    for lineno, obj in _jsonl(text, path):
        yield lineno, obj, None, "line"


@dataclass
class LoadReport:
    """What a load did: files, formats, the field map, defaults filled, rows skipped, notes (in the run report)."""

    files: list[str] = field(default_factory=list)
    field_map: str | None = None
    release: str = ""
    notes: list[str] = field(default_factory=list)
    defaults: Counter[str] = field(default_factory=Counter)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    aggregated: int = 0
    items: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for run.json and the reports."""
        return {"files": self.files, "field_map": self.field_map, "release": self.release, "items": self.items,
                "notes": self.notes, "defaults_filled": dict(self.defaults),
                "skipped_rows": self.skipped, "aggregated_rows": self.aggregated}


def read_records(path: str | Path, field_map: FieldMap | None = None, report: LoadReport | None = None
                 ) -> Iterator[Record]:
    """Every record of a data file or directory (see the module docstring), the field map applied (a built-in map
    whose detect keys a file's first record has applies unasked); what was done goes into `report`."""
    report = report if report is not None else LoadReport()
    for file in data_files(Path(path)):
        report.files.append(str(file))
        chosen = field_map
        for line, raw, key, unit in _raw_records(file, report.notes, field_map.columns if field_map else ()):
            if not isinstance(raw, dict):
                raise DataError(f"{file}, {unit} {line}: expected a JSON object, got {type(raw).__name__}")
            check_text_fields(raw, f"{file}, {unit} {line}")
            if chosen is None:
                chosen = next((m for m in builtin_maps().values() if m.matches(list(raw))), None) or FieldMap("")
                if chosen.name and chosen.name != report.field_map:
                    report.notes.append(f"read with the built-in field map {chosen.name!r} "
                                        f"({chosen.release}), recognised by its keys")
            if chosen.name:
                report.field_map, report.release = chosen.name, chosen.release
            data, used = chosen.apply(raw, file, line, key)
            if key is not None and is_absent(data.get("id")):
                data["id"] = key
            report.defaults.update(used)
            report.items += 1
            yield Record(data, str(file), line, key, unit)


class Problems:
    """Every bad row of one load: `add` records one (kind, where, message); `finish` raises one DataError listing
    counts per kind and the first lines of each (``on_bad_row="fail"``), or keeps them for the report (``skip``)."""

    def __init__(self, what: str, on_bad_row: str = "fail") -> None:
        if on_bad_row not in ON_BAD_ROW:
            raise ConfigError(f"--on-bad-row {on_bad_row!r}: use fail or skip")
        self.what, self.on_bad_row = what, on_bad_row
        self.found: list[tuple[str, str, str]] = []
        """(kind, where, the problem without its place) per bad row."""
        self._shown: list[str] = []
        self.hints: list[str] = []

    def add(self, where: str, exc: DataError | str, kind: str | None = None) -> None:
        """Record a bad row; `kind` defaults to the message with the place (and the field or column it names) and
        quoted values left out: ``"unknown label"``, ``"unknown country"``."""
        message = str(exc)
        detail = message.removeprefix(where).lstrip(",: ")
        self.found.append((kind or _kind(detail), where, detail))
        self._shown.append(message if message.startswith(where) else f"{where}: {detail}")

    def hint(self, text: str) -> None:
        """A fix that applies to the whole file (``--map xed``), said once after the rows (not once per row)."""
        if text not in self.hints:
            self.hints.append(text)

    @contextmanager
    def row(self, where: str) -> Iterator[None]:
        """``with problems.row(row.where): ...``: a DataError inside is recorded and the rest of the block
        skipped (put the whole body of the loop over rows in it)."""
        try:
            yield
        except DataError as exc:
            self.add(where, exc)

    def collect(self, records: Iterator[Record], make: Callable[[Record], T], what: str = "id") -> list[T]:
        """`make` applied to each record, the bad ones recorded; an item whose ``id`` repeats an earlier one's is a
        bad row too (`what` names the id in the message)."""
        out: list[T] = []
        seen: dict[str, str] = {}
        for rec in records:
            with self.row(rec.where):
                item = make(rec)
                key = str(getattr(item, "id", ""))
                if key in seen:
                    raise DataError(f"{rec.where}: {what} {key!r} was already used ({seen[key]}); {what}s must be "
                                    "unique")
                seen[key] = rec.where
                out.append(item)
        return out

    def __bool__(self) -> bool:
        return bool(self.found)

    def finish(self, report: LoadReport | None = None, left: int | None = None) -> None:
        """Raise for the rows found (fail), or list them in `report` (skip). `left`: how many items the load kept;
        with skip, a load whose every item was skipped as bad (`left` 0) raises all the same, saying that the rows
        were skipped and why (not that nothing matched a filter)."""
        if not self.found:
            return
        if self.on_bad_row == "skip":
            if report is not None:
                report.skipped.extend({"where": w, "problem": d} for _, w, d in self.found)
            if left == 0:
                raise DataError("\n".join([
                    f"{self.what}: no item is left: all {len(self.found)} bad row(s) were skipped (--on-bad-row "
                    f"skip), {self._kinds_count()} kind(s) of problem:", *self._listed(),
                    "Fix them (or give a field map with --map); skipping leaves nothing to run."]))
            return
        raise DataError("\n".join([
            f"{self.what}: {len(self.found)} bad row(s), {self._kinds_count()} kind(s) of problem:", *self._listed(),
            "Fix them (or give a field map with --map), or run with --on-bad-row skip to leave them out (listed in "
            "the run report)."]))

    def _kinds_count(self) -> int:
        return len({k for k, _, _ in self.found})

    def _listed(self) -> list[str]:
        """Each kind of problem with its count and its first rows."""
        lines: list[str] = []
        for kind, n in Counter(k for k, _, _ in self.found).most_common():
            lines.append(f"- {n} x {kind}")
            lines += [f"    {shown}" for (k, _, _), shown in zip(self.found, self._shown, strict=True)
                      if k == kind][:_SHOWN]
        return [*lines, *self.hints]


_FIELD_PREFIX = re.compile(r"^(?:(?:field|column|key)\s+(?:'[^']*'|\"[^\"]*\")\s*[,:]\s*)+")
"""The ``field 'label': `` (``column 'emotion': ``) that starts a row's message when its place names a field."""
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_PLACE = re.compile(r"\s+at\s+(?:'[^']*'|\"[^\"]*\"|[^\s;:,'\"]*[/\\][^\s;:,'\"]*)")
"""`` at '/data/a.jpg'`` (quoted or not): where a row's file was looked for, which differs from row to row."""


def _kind(detail: str) -> str:
    """A problem's kind: its message less a leading field or column name and the quoted values, up to the first
    colon, semicolon, bracket or parenthesis after a space (``"field 'label': unknown label 'x'; ..."`` -> ``"unknown
    label"``; ``"field 'question' is missing or empty (...)"`` -> ``"field is missing or empty"``; a path is no part
    of it: ``"image 'a.jpg' not found at /data/a.jpg; ..."`` -> ``"image not found"``)."""
    text = _QUOTED.sub("", _PLACE.sub("", _FIELD_PREFIX.sub("", detail)))
    for stop in (":", ";", " (", "["):
        text = text.split(stop, 1)[0]
    return " ".join(text.split()) or "bad row"
