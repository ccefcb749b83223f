"""Label words a user gives and a data file teaches: per language, the words that name each label of a scheme.

The answer parser reads a label in a language through the scheme's words for that language (its `translations`,
then the packaged vocabularies, `culturekb.kb.vocab`); a prompt shows the first of them beside each label. Ordinary
label words missing from the packaged lists leave real answers unread. Two ways add them, and both end in the
scheme's `translations` (`EmotionScheme.with_words`), so the word a prompt shows is always a word the parser reads:

1. A **label words file** (``--label-words FILE`` on ``culturekb eval ...`` and ``culturekb build``), JSON or TOML,
   the shape of a scheme file's ``translations``::

       {"hi": {"neutral": ["सामान्य", "साधारण"], "guilt": ["अपराध"]},
        "am": {"neutral": ["መደበኛ"], "guilt": "ወንጀል"}}

   A language code (``hi``, ``am``; ``hi-IN`` counts as ``hi``) maps each label of the scheme (or a synonym of it)
   to a word or a list of words; the first word of a label is the one its prompt line shows. A file with a
   top-level ``translations`` table (a scheme file) is read the same way; keys starting with ``_`` are comments.
   The given words win over the scheme's own and the packaged ones in that language.

2. **Paired label columns** at build time (`learn_label_words`): beside the scheme label of a row (the CSV
   ``emotion``/``label`` column, the JSONL ``label``), a column with the same label in the annotators' words:

   ======================================  ==================================================================
   CSV column / JSONL ``metadata`` key     language of its words
   ======================================  ==================================================================
   ``label_<lang>``, ``emotion_<lang>``    ``<lang>``, a language code (``label_hi``, ``emotion_am``)
   ``label_native``, ``emotion_native``    the language of the row's culture (CSV ``language``, JSONL ``culture``)
   any column, named by ``--label-column-words COLUMN=LANG``   ``LANG`` (``native``: the culture's language)
   ======================================  ==================================================================

   Each (language, word) is learned for the label most of its rows pair it with; a word whose rows split evenly
   between labels is not learned, and a word the scheme's own words already give to another label keeps that
   label. The build report's ``label_words`` section lists the pairs learned, those already known, and the
   conflicts; the KB's manifest keeps the learned words in its scheme.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from culturekb._io import read_text_utf8, stable_hash
from culturekb._records import FieldMap, read_records
from culturekb.errors import ConfigError, DataError

if TYPE_CHECKING:
    from culturekb.kb.cultures import CultureRegistry
    from culturekb.kb.schemes import EmotionScheme

__all__ = [
    "LABEL_WORDS_FORMAT",
    "LabelWords",
    "LearnedLabelWords",
    "label_words_digest",
    "learn_label_words",
    "load_label_words",
    "merge_label_words",
    "normalise_label_words",
    "parse_column_words",
]

LabelWords = dict[str, dict[str, tuple[str, ...]]]
"""language -> scheme label -> words (the first is the one a prompt shows)."""

LABEL_WORDS_FORMAT = '{"<lang>": {"<label>": ["word", ...]}} (JSON or TOML, like a scheme\'s translations)'
"""The label words file's shape, in one line (help texts and the run report's hint)."""

_LABEL_COLUMNS = ("emotion", "label")
_PAIRED = re.compile(r"^(?:label|emotion)_(?P<lang>native|[a-z]{2,3}(?:-[a-z0-9]{2,8})*)$")
_NATIVE = "native"


def _language(code: Any, where: str) -> str:
    text = str(code).strip().lower().replace("_", "-")
    base = text.split("-")[0]
    if not re.fullmatch(r"[a-z]{2,3}", base):
        raise ConfigError(f"{where}: {code!r} is not a language code; use a code such as 'hi', 'am' or 'pt-BR'")
    return base


def normalise_label_words(raw: Any, source: str = "label words") -> LabelWords:
    """`raw` ({lang: {label: word or [words]}}, or a scheme-like {"translations": ...}) checked and normalised:
    base language codes, tuples of stripped non-empty words, each once. Labels are checked against a scheme later
    (`EmotionScheme.with_words`)."""
    if isinstance(raw, Mapping) and isinstance(raw.get("translations"), Mapping):
        raw = raw["translations"]
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: expected a table of languages, {LABEL_WORDS_FORMAT}; got {type(raw).__name__}")
    out: dict[str, dict[str, list[str]]] = {}
    for lang_key, table in raw.items():
        if str(lang_key).startswith("_"):
            continue
        lang = _language(lang_key, source)
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source}: language {lang_key!r} should map labels to words, {LABEL_WORDS_FORMAT}; "
                              f"got {type(table).__name__}")
        target = out.setdefault(lang, {})
        for label, words in table.items():
            items = [words] if isinstance(words, str) else words
            if not isinstance(items, list | tuple) or not all(isinstance(w, str) for w in items):
                raise ConfigError(f"{source}: {lang_key}.{label}: give a word or a list of words (strings), got "
                                  f"{words!r}")
            clean = [w.strip() for w in items if w.strip()]
            if clean:
                target.setdefault(str(label).strip(), []).extend(clean)
    return {lang: {lab: tuple(dict.fromkeys(ws)) for lab, ws in t.items()} for lang, t in out.items() if t}


def load_label_words(path: str | Path) -> LabelWords:
    """The label words of a JSON or TOML file (see the module docstring); ConfigError naming the file and fix."""
    p = Path(path)
    text = read_text_utf8(p, fix="re-save the label words file as UTF-8", error=ConfigError)
    try:
        raw: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{p}: invalid JSON in the label words file ({exc.msg} at line {exc.lineno}); expected "
                          f"{LABEL_WORDS_FORMAT}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: invalid TOML in the label words file ({exc}); expected {LABEL_WORDS_FORMAT}") from exc
    words = normalise_label_words(raw, source=str(p))
    if not words:
        raise ConfigError(f"{p}: the label words file names no words; expected {LABEL_WORDS_FORMAT}")
    return words


def label_words_digest(words: Mapping[str, Mapping[str, Sequence[str]]]) -> str:
    """A short hash of label words (12 hex digits): what a run's predictor id records, so that answers read with
    other words are not reused from a checkpoint."""
    return stable_hash({lang: {lab: list(ws) for lab, ws in t.items()} for lang, t in words.items()})[:12]


def parse_column_words(values: Iterable[str] | None) -> dict[str, str]:
    """``--label-column-words COLUMN=LANG`` values -> {column (lower case): language or 'native'}."""
    out: dict[str, str] = {}
    for value in values or ():
        column, sep, lang = str(value).partition("=")
        if not sep or not column.strip() or not lang.strip():
            raise ConfigError(f"--label-column-words {value!r}: expected COLUMN=LANG, e.g. hindi_label=hi or "
                              "native_label=native (native: the language of each row's culture)")
        code = lang.strip().lower()
        out[column.strip().lower()] = _NATIVE if code == _NATIVE else _language(code, f"--label-column-words {value!r}")
    return out


# -- learning from paired columns ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LearnedLabelWords:
    """What `learn_label_words` found: the words to add (language -> label -> words, most rows first) and the report
    (``columns``, ``pairs``, ``learned``, ``known``, ``conflicts``, ``skipped_rows``)."""

    words: LabelWords = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)

    def as_config(self) -> dict[str, dict[str, list[str]]]:
        """The words as JSON-ready lists (what `BuildConfig.label_words` holds)."""
        return {lang: {lab: list(ws) for lab, ws in t.items()} for lang, t in self.words.items()}


@dataclass
class _Pairs:
    counts: dict[tuple[str, str], Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    forms: dict[tuple[str, str], str] = field(default_factory=dict)
    columns: dict[str, dict[str, str]] = field(default_factory=dict)
    rows: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    def add(self, lang: str | None, word: Any, label: str | None, why_missing: str) -> None:
        text = str(word).strip() if word is not None else ""
        if not text:
            return
        if label is None:
            self.skipped["label not in the scheme"] += 1
            return
        if lang is None:
            self.skipped[why_missing] += 1
            return
        key = (lang, _form(text))
        self.forms.setdefault(key, text)
        self.counts[key][label] += 1
        self.rows += 1


def _form(word: str) -> str:
    from culturekb.kb.vocab import normalise_form

    return normalise_form(word)


def _paired_columns(names: Iterable[str], explicit: Mapping[str, str]) -> dict[str, str]:
    """{column: language or 'native'} among `names` (lower case): explicit ones, then ``label_<lang>`` ones."""
    out: dict[str, str] = {}
    for name in names:
        if name in explicit:
            out[name] = explicit[name]
            continue
        m = _PAIRED.match(name)
        if m is not None and _known_language(m["lang"]):
            out[name] = m["lang"] if m["lang"] == _NATIVE else m["lang"].split("-")[0]
    return out


def _known_language(code: str) -> bool:
    from culturekb.kb.cultures import language_name
    from culturekb.kb.vocab import vocabulary_languages

    base = code.split("-")[0]
    return code == _NATIVE or base in vocabulary_languages() or language_name(base) is not None


def _culture_language(registry: CultureRegistry, value: Any) -> str | None:
    if value is None or not str(value).strip():
        return None
    from culturekb.kb.cultures import code_shape

    try:
        lang = registry.resolve(str(value)).language
    except ConfigError:  # a code the data's loader registers (with a warning): its language is its shape's
        shape = code_shape(str(value))
        if shape is None or shape[2]:
            return None
        lang = shape[1]
    base = str(lang or "").strip().lower().split("-")[0]
    return base if re.fullmatch(r"[a-z]{2,3}", base) else None


def _csv_pairs(path: Path, scheme: EmotionScheme, registry: CultureRegistry, explicit: Mapping[str, str],
               pairs: _Pairs) -> None:
    reader = csv.reader(io.StringIO(read_text_utf8(path), newline=""))
    try:
        header = [h.strip().lower() for h in next(reader)]
    except (StopIteration, csv.Error):
        return
    label_col = next((c for c in _LABEL_COLUMNS if c in header), None)
    paired = {c: lang for c, lang in _paired_columns(header, explicit).items() if c != label_col}
    if label_col is None or not paired:
        return
    pairs.columns[str(path)] = paired
    idx = {c: header.index(c) for c in (label_col, *paired, "language") if c in header}
    try:
        for row in reader:
            if not row or all(not f.strip() for f in row):
                continue
            cells = {c: row[i] for c, i in idx.items() if i < len(row)}
            label = scheme.match(cells.get(label_col) or "")
            native = _culture_language(registry, cells.get("language") or "english")
            for col, lang in paired.items():
                pairs.add(native if lang == _NATIVE else lang, cells.get(col), label, "culture has no known language")
    except csv.Error as exc:
        raise DataError(f"{path}: malformed CSV ({exc}) while reading its paired label columns") from exc


def _jsonl_pairs(path: Path, scheme: EmotionScheme, registry: CultureRegistry, explicit: Mapping[str, str],
                 pairs: _Pairs, field_map: FieldMap | None = None) -> None:
    """The paired label columns of a sample file, read as the loader reads it (`culturekb._records.read_records`:
    JSONL whatever the extension, a JSON list or object keyed by id, TSV; the field map applied)."""
    for rec in read_records(path, field_map):
        obj = rec.data
        meta = obj.get("metadata")
        fields = {str(k).lower(): v for k, v in meta.items()} if isinstance(meta, dict) else {}
        paired = _paired_columns(fields, explicit)
        if not paired or obj.get("label") is None:
            continue
        pairs.columns.setdefault(str(path), {}).update(paired)
        label = scheme.match(str(obj["label"]))
        native = _culture_language(registry, obj.get("culture"))
        for key, lang in paired.items():
            value = fields[key]
            if isinstance(value, str):
                pairs.add(native if lang == _NATIVE else lang, value, label, "culture has no known language")


def _own_words(scheme: EmotionScheme, lang: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the scheme's own words in `lang`: labels, synonyms, translations; the packaged vocabulary's) -> label."""
    own: dict[str, str] = {}
    for lab in scheme.labels:
        own.setdefault(_form(lab), lab)
    for lab, syns in scheme.synonyms.items():
        for s in syns:
            own.setdefault(_form(s), lab)
    for lab, words in scheme.translations.get(lang, {}).items():
        for w in words:
            own.setdefault(_form(w), lab)
    packaged: dict[str, str] = {}
    for lab, words in scheme.vocabulary.get(lang, {}).items():
        for w in words:
            packaged.setdefault(_form(w), lab)
    return own, packaged


def learn_label_words(
    paths: Sequence[str | Path],
    scheme: EmotionScheme,
    *,
    columns: Mapping[str, str] | None = None,
    registry: CultureRegistry | None = None,
    field_map: FieldMap | None = None,
) -> LearnedLabelWords:
    """The label words that data files' paired label columns teach (see the module docstring); empty words and no
    report when no file has a paired column. `columns`: explicit {column: language or 'native'}
    (`parse_column_words`); `registry`: resolves cultures to their languages (default: the process registry);
    `field_map`: the build's ``--map`` (sample files are read with it, as the loader reads them)."""
    from culturekb.kb.cultures import default_registry

    reg = registry if registry is not None else default_registry()
    explicit = {k.lower(): v for k, v in (columns or {}).items()}
    pairs = _Pairs()
    for p in map(Path, paths):
        suffix = p.suffix.lower()
        if suffix == ".csv":
            _csv_pairs(p, scheme, reg, explicit, pairs)
        elif suffix in (".jsonl", ".ndjson", ".json", ".tsv", ".tab") or field_map is not None:
            _jsonl_pairs(p, scheme, reg, explicit, pairs, field_map)
    named = {c for cols in pairs.columns.values() for c in cols}
    unused = sorted(set(explicit) - named)
    if unused:
        raise ConfigError(f"--label-column-words: no data file has the column(s) {unused} beside its label column "
                          f"(CSV '{_LABEL_COLUMNS[0]}'/'{_LABEL_COLUMNS[1]}', JSONL 'label' with the column under "
                          "'metadata'); check the column names")
    if not pairs.columns:
        return LearnedLabelWords()
    words: dict[str, dict[str, list[str]]] = {}
    learned: list[dict[str, Any]] = []
    conflicts: list[dict[str, Any]] = []
    known = 0
    by_lang: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
    for (lang, form), counts in sorted(pairs.counts.items(), key=lambda kv: (kv[0][0], -sum(kv[1].values()))):
        word = pairs.forms[(lang, form)]
        own, packaged = by_lang.setdefault(lang, _own_words(scheme, lang))
        ranked = counts.most_common()
        rows = sum(counts.values())
        split = {lab: n for lab, n in ranked}
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            conflicts.append({"language": lang, "word": word, "labels": split, "learned": None,
                              "reason": "as many rows pair it with another label"})
            continue
        label, n = ranked[0]
        entry = {"language": lang, "word": word, "label": label, "rows": n, "share": round(n / rows, 4)}
        if own.get(form) is not None and own[form] != label:
            conflicts.append({"language": lang, "word": word, "labels": split, "learned": None,
                              "reason": f"the scheme's own words give it to {own[form]!r}"})
            continue
        if len(ranked) > 1:
            conflicts.append({"language": lang, "word": word, "labels": split, "learned": label,
                              "reason": "most rows pair it with this label"})
        if own.get(form) == label or packaged.get(form) == label:
            known += 1
            continue
        if packaged.get(form) is not None:
            entry["replaces"] = packaged[form]
        words.setdefault(lang, {}).setdefault(label, []).append(word)
        learned.append(entry)
    report = {
        "columns": pairs.columns,
        "pairs": pairs.rows,
        "learned": learned,
        "known": known,
        "conflicts": conflicts,
        "skipped_rows": dict(pairs.skipped),
    }
    return LearnedLabelWords({lang: {lab: tuple(ws) for lab, ws in t.items()} for lang, t in words.items()}, report)


def merge_label_words(base: Mapping[str, Mapping[str, Sequence[str]]],
                      over: Mapping[str, Mapping[str, Sequence[str]]]) -> LabelWords:
    """`base` with `over` on top: per language, a word of `over` leaves any other label of `base` and comes first in
    its own label's words."""
    out: dict[str, dict[str, list[str]]] = {lang: {lab: list(ws) for lab, ws in t.items()} for lang, t in base.items()}
    for lang, table in over.items():
        target = out.setdefault(lang, {})
        taken = {_form(w) for ws in table.values() for w in ws}
        for lab in list(target):
            target[lab] = [w for w in target[lab] if _form(w) not in taken]
        for lab, ws in table.items():
            target[lab] = list(dict.fromkeys([*ws, *target.get(lab, [])]))
    return {lang: {lab: tuple(ws) for lab, ws in t.items() if ws} for lang, t in out.items()}
