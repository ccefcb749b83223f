"""The culture registry: ids, aliases, display names, languages and Western flags; open to new cultures.

A culture is a language community (``en``, ``de``, ``pt-BR``, ``zh-Hant``) or a country (``SG``, ``MY``, as RICE-VL
uses them). Three sources fill a registry:

* the package (``culturekb/data/cultures.json``);
* a user's cultures file (`load_cultures_file`, ``culturekb build --cultures-file``): JSON or TOML entries with
  ``id``, ``name``, ``aliases``, ``language`` and ``western``. An entry for a culture the registry already has
  updates it (its aliases are added to the old ones);
* the data: `CultureRegistry.register_code` accepts any value shaped like a code (ISO 639-1/639-3 language
  ``de``/``amh``, BCP-47 ``pt-BR``/``zh-Hant``, ISO 3166 country ``FR``) or the English name of an ISO 639-1
  language (``German``), registers it with a one-line warning (once per code, since it is known afterwards) and
  returns it. Anything else (``klingon``, ``Chinese!``) is left to the caller to reject, naming the fix.

`resolve` itself stays strict: it never registers. An id matches exactly first (``TL`` is Timor-Leste, and a
declared ``tl`` is Tagalog), then names and aliases case-insensitively (``sg`` is Singapore). A knowledge base keeps
the cultures it was built with in its manifest (`culturekb.kb.store`), so reading it needs no cultures file.
"""

from __future__ import annotations

import json
import logging
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb._io import read_text_utf8
from culturekb.errors import ConfigError

__all__ = [
    "Culture",
    "CultureRegistry",
    "code_shape",
    "declare_cultures",
    "default_registry",
    "language_name",
    "load_cultures_file",
    "packaged_registry",
    "reset_default_registry",
    "resolve_culture",
]

log = logging.getLogger(__name__)

_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_BCP47 = re.compile(r"^(?P<lang>[A-Za-z]{2,3})(?:-(?P<script>[A-Za-z]{4}))?(?:-(?P<region>[A-Za-z]{2}|\d{3}))?$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
_FILE_KEYS = frozenset({"id", "name", "aliases", "language", "western"})
UNDETERMINED = "und"
"""ISO 639 "undetermined": the language of a country registered from a code alone (prompts fall back to English)."""


@dataclass(frozen=True)
class Culture:
    """A culture: a language community (`en`, `zh`) or a country (`SG`)."""

    id: str
    name: str
    language: str
    western: bool = False
    aliases: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The culture as JSON-ready data (what a KB manifest stores); `from_dict` reads it back."""
        return {"id": self.id, "name": self.name, "language": self.language, "western": self.western,
                "aliases": list(self.aliases)}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], source: str = "<dict>") -> Culture:
        """A culture from its dict form (`to_dict`, a cultures file entry); `source` names it in errors."""
        try:
            return cls(id=str(raw["id"]), name=str(raw.get("name") or raw["id"]), language=str(raw["language"]),
                       western=bool(raw.get("western", False)), aliases=tuple(str(a) for a in raw.get("aliases", ())))
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{source}: a culture needs 'id' and 'language' (got {dict(raw)!r})") from exc


@cache
def _language_names() -> dict[str, str]:
    raw = json.loads(resources.files("culturekb.data").joinpath("languages.json").read_text("utf-8"))
    return dict(raw["codes"])


@cache
def _codes_by_name() -> dict[str, str]:
    return {name.lower(): code for code, name in _language_names().items()}


def language_name(code: str) -> str | None:
    """The English name of an ISO 639-1 language code (``de`` -> ``German``), or None for another code."""
    return _language_names().get(code.strip().lower())


def code_shape(value: str, *, country: bool = False) -> tuple[str, str, bool] | None:
    """``(canonical id, language, is a country)`` when `value` is shaped like a culture code, else None.

    ``DE``/``sg`` with `country` -> a country (id upper case, language undetermined); two upper-case letters -> a
    country; two or three letters -> a language (``de``, ``amh``); BCP-47 language[-Script][-REGION] -> that tag in
    canonical case (``pt-br`` -> ``pt-BR``, ``zh-hant`` -> ``zh-Hant``) whose language is its first part.
    """
    text = value.strip().replace("_", "-")
    if country:
        return (text.upper(), UNDETERMINED, True) if _LANGUAGE.match(text) and len(text) == 2 else None
    if _COUNTRY.match(text):
        return text, UNDETERMINED, True
    if _LANGUAGE.match(text):
        return text.lower(), text.lower(), False
    m = _BCP47.match(text)
    if m is None:
        return None
    lang = m["lang"].lower()
    parts = [lang, (m["script"] or "").title(), (m["region"] or "").upper()]
    return "-".join(p for p in parts if p), lang, False


def _auto_name(cid: str, language: str, country: bool) -> str:
    if country:
        return cid
    base = language_name(language)
    if base is None:
        return cid
    rest = cid.split("-", 1)[1] if "-" in cid else ""
    return f"{base} ({rest})" if rest else base


class CultureRegistry:
    """Resolves ids and aliases (`English`, `english`, `en`) to a `Culture`; `register_code` admits new codes."""

    def __init__(self, cultures: Iterable[Culture] | None = None) -> None:
        self._by_id: dict[str, Culture] = {}
        self._alias: dict[str, str] = {}
        self._warned: set[str] = set()
        for c in cultures or []:
            self.declare(c)

    @classmethod
    def from_package(cls) -> CultureRegistry:
        """The cultures shipped with the package (``culturekb/data/cultures.json``)."""
        raw = json.loads(resources.files("culturekb.data").joinpath("cultures.json").read_text("utf-8"))
        return cls(Culture.from_dict({"id": cid, **v}, "culturekb/data/cultures.json") for cid, v in raw.items())

    def copy(self) -> CultureRegistry:
        """An independent registry with the same cultures (declaring into it leaves this one as it is)."""
        other = CultureRegistry()
        other._by_id = dict(self._by_id)
        other._alias = dict(self._alias)
        other._warned = set(self._warned)
        return other

    def declare(self, culture: Culture) -> None:
        """Add a culture (or replace one with the same id)."""
        self._by_id[culture.id] = culture
        for key in (culture.id, culture.name, *culture.aliases):
            self._alias[key.strip().lower()] = culture.id

    def update(self, culture: Culture) -> Culture:
        """Declare `culture`; for an id already known, its aliases are added to the old ones. Returns the result."""
        old = self._by_id.get(culture.id)
        if old is not None:
            culture = replace(culture, aliases=tuple(dict.fromkeys((*old.aliases, *culture.aliases))))
        self.declare(culture)
        return culture

    def get(self, cid: str) -> Culture | None:
        """The culture with exactly this id, or None (no alias lookup)."""
        return self._by_id.get(cid)

    def resolve(self, name: str) -> Culture:
        """The culture an id or alias names (exact id first, then case-insensitive); ConfigError listing the known
        cultures otherwise. Never registers anything (see `register_code`)."""
        text = str(name).strip()
        if text in self._by_id:
            return self._by_id[text]
        key = text.lower()
        if key in self._alias:
            return self._by_id[self._alias[key]]
        known = ", ".join(sorted(self._by_id))
        raise ConfigError(
            f"unknown culture {name!r}; known cultures: {known}. "
            "Use one of these ids or aliases, a language or country code (de, pt-BR, SG), or declare the culture "
            "first (a cultures file: --cultures-file, or CultureRegistry.declare)."
        )

    def register_code(self, value: str, *, country: bool = False, where: str = "") -> Culture | None:
        """The culture `value` names, registering it when it is new and shaped like a code (`code_shape`) or is the
        English name of an ISO 639-1 language; None when it is neither (the caller reports that).

        A registration logs one warning naming `where`, the culture and how to describe it in a cultures file. A
        lower-case code that is also a packaged country's id (``bn``: Brunei, or Bengali?) resolves to the
        country, with a warning once, as it always has.
        """
        text = str(value).strip()
        if not text:
            return None
        if text in self:
            found = self.resolve(text)
            if not country and found.id.isupper() and text == found.id.lower() and language_name(text):
                self._warn_once(text, "%s%r is read as the country %s (%s), not the language %s; if the data means "
                                "the language, declare %r in a cultures file (--cultures-file)", _at(where), text,
                                found.id, found.name, language_name(text), text)
            return found
        shape = code_shape(text, country=country)
        by_name = shape is None and not country and text.lower() in _codes_by_name()
        if by_name:  # an English language name ('German'): its code, even where a country holds it as an alias
            code = _codes_by_name()[text.lower()]
            shape = (code, code, False)
        if shape is None:
            return None
        cid, language, is_country = shape
        if cid in self._by_id or (not by_name and cid in self):
            return self.resolve(cid)
        culture = Culture(id=cid, name=_auto_name(cid, language, is_country), language=language,
                          aliases=(text,) if text != cid else ())
        self.declare(culture)
        kind = "country" if is_country else "culture"
        lang = "language undetermined: prompts in English" if language == UNDETERMINED else f"language {language!r}"
        log.warning("%snew %s %r registered from the data as %s (%s, non-Western); describe it in a cultures file "
                    "(--cultures-file) to set its name, language or Western flag", _at(where), kind, cid,
                    culture.name, lang)
        return culture

    def _warn_once(self, key: str, msg: str, *args: Any) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning(msg, *args)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name.strip() in self._by_id or name.strip().lower() in self._alias)

    def ids(self) -> list[str]:
        """Ids of the registered cultures, in registration order."""
        return list(self._by_id)

    def all(self) -> list[Culture]:
        """The registered cultures, in registration order."""
        return list(self._by_id.values())


def _at(where: str) -> str:
    return f"{where}: " if where else ""


# -- cultures files ------------------------------------------------------------------------------------------------
def load_cultures_file(path: str | Path) -> list[Culture]:
    """The cultures a user file describes: JSON or TOML (by suffix), entries with ``id``, ``name``, ``aliases``,
    ``language`` and ``western``.

    Three layouts are read: a list of entries under ``cultures`` (TOML ``[[cultures]]``); a table under
    ``cultures`` keyed by id; or, like the packaged ``cultures.json``, a top-level table keyed by id. ``name``
    defaults to the id, ``language`` to the language part of a code-shaped id (``pt-BR`` -> ``pt``; a country's
    must be given), ``western`` to false. Unknown keys and malformed values are errors naming the entry.
    """
    p = Path(path)
    text = read_text_utf8(p, error=ConfigError)
    try:
        raw: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        kind = "TOML" if p.suffix.lower() == ".toml" else "JSON"
        raise ConfigError(f"cultures file {p}: invalid {kind} ({exc}); fix the syntax (JSON, or TOML for .toml)") \
            from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"cultures file {p}: expected an object with 'cultures' (a list of entries or a table "
                          "keyed by id), or a table keyed by id")
    body = raw.get("cultures", {k: v for k, v in raw.items() if not k.startswith("_")})
    if isinstance(body, dict):
        entries = [(f"{p}, culture {cid!r}", {"id": cid, **v} if isinstance(v, dict) else v)
                   for cid, v in body.items()]
    elif isinstance(body, list):
        entries = [(f"{p}, entry {i}", v) for i, v in enumerate(body, start=1)]
    else:
        raise ConfigError(f"cultures file {p}: 'cultures' must be a list of entries or a table keyed by id")
    out = [_file_entry(where, entry) for where, entry in entries]
    if not out:
        raise ConfigError(f"cultures file {p} describes no culture; add entries with at least an 'id'")
    return out


def _file_entry(where: str, entry: Any) -> Culture:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table with 'id', 'name', 'aliases', 'language', 'western'")
    unknown = sorted(set(entry) - _FILE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed keys are {sorted(_FILE_KEYS)}")
    cid = entry.get("id")
    if not isinstance(cid, str) or not _ID.match(cid.strip()):
        raise ConfigError(f"{where}: 'id' must be a code such as 'de', 'pt-BR', 'SG' (letters, digits, '-', '_'), "
                          f"got {cid!r}")
    cid = cid.strip()
    for key in ("name", "language"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key].strip()):
            raise ConfigError(f"{where}: {key!r} must be a non-empty string, got {entry[key]!r}")
    aliases = entry.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise ConfigError(f"{where}: 'aliases' must be a list of non-empty strings, got {aliases!r}")
    western = entry.get("western", False)
    if not isinstance(western, bool):
        raise ConfigError(f"{where}: 'western' must be true or false, got {western!r}")
    language = entry.get("language")
    if language is None:
        shape = code_shape(cid)
        if shape is None or shape[2]:
            raise ConfigError(f"{where}: give 'language' for {cid!r} (an ISO 639 code such as 'ms'); it cannot be "
                              "read from this id")
        language = shape[1]
    return Culture(id=cid, name=str(entry.get("name") or _auto_name(cid, language.strip(), False)).strip(),
                   language=language.strip(), western=western, aliases=tuple(a.strip() for a in aliases))


def declare_cultures(cultures: Iterable[Culture], registry: CultureRegistry | None = None) -> list[Culture]:
    """Declare `cultures` (from `load_cultures_file`) into `registry` (default: the process registry); a known id is
    updated, its aliases kept. Returns the cultures as declared."""
    reg = registry if registry is not None else default_registry()
    return [reg.update(c) for c in cultures]


# -- the process registry ------------------------------------------------------------------------------------------
_DEFAULT: CultureRegistry | None = None


def default_registry() -> CultureRegistry:
    """The process registry: the packaged cultures (built on first use, no work at import time), plus those a
    cultures file declared or the data registered in this process."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = CultureRegistry.from_package()
    return _DEFAULT


@cache
def _packaged() -> CultureRegistry:
    return CultureRegistry.from_package()


def packaged_registry() -> CultureRegistry:
    """A new registry of the packaged cultures only (``culturekb/data/cultures.json``), independent of the process
    registry and of every other caller's: registering into it changes nothing else. The one default of library
    callers that pass no registry (data loaders, prompt helpers, runners built without a KB); a run passes its
    KB's (`culturekb.kb.store.KnowledgeBase.culture_registry`) or its run context's (`RunContext.cultures`)."""
    return _packaged().copy()


def reset_default_registry() -> None:
    """Forget the cultures declared or registered in this process (the next `default_registry` is the package's)."""
    global _DEFAULT
    _DEFAULT = None


def resolve_culture(name: str) -> str:
    """The canonical id of a culture name or alias in the process registry (strict: nothing is registered)."""
    return default_registry().resolve(name).id
