"""Prompt templates stored as data files, validated for their placeholders.

A template is `culturekb/data/prompts/<name>.<language>.txt` or a user's file given by path. Placeholders are
`{name}` fields (Python format syntax; write literal braces as `{{` and `}}`). Every rendering names exactly the
template's placeholders, so a typo in a template or a caller fails loudly instead of sending a broken prompt.

Each packaged file has an entry in `culturekb/data/prompts/CHECKED.json` saying who wrote it and whether a native
speaker of its language checked it (``checked``, ``source`` for the English originals, or ``unchecked``). The
entry rides on the loaded `PromptTemplate` (`check`, `checked`, `check_status`), never in the rendered text; a
user's own file has no entry (status ``user``). `PROMPT_LANGUAGES` are the languages every prediction, Cedar,
harness and cue template is packaged in (the seven Cedar languages).

Every prompt is loaded through `resolve_prompt`, which has the one fallback rule: a template missing in the
requested language is read in English, and the template says so (`PromptTemplate.language_status`
``fallback:en``, ``native`` otherwise), which predictions, knowledge blocks and run reports record beside the
template id. A missing language never raises; a missing English file or wrong placeholders do.
"""

from __future__ import annotations

import json
import logging
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from culturekb._io import sha256_text
from culturekb.errors import ConfigError

__all__ = [
    "PROMPT_LANGUAGES",
    "CheckStatus",
    "LanguageStatus",
    "PromptCheck",
    "PromptTemplate",
    "available_prompt_languages",
    "joint_language_status",
    "load_prompt",
    "normalise_language",
    "prompt_check",
    "prompt_checks",
    "resolve_prompt",
    "template_check_status",
]

log = logging.getLogger(__name__)

_PROMPT_DIR = "prompts"
_CHECKS_FILE = "CHECKED.json"

PROMPT_LANGUAGES: tuple[str, ...] = ("en", "zh", "ar", "hi", "ja", "es", "sw")
"""The prompt languages of the prediction (``predict_*``, ``knowledge_item``), Cedar (``cedar_*``), harness
(``harness_knowledge``) and cue (``cues``, ``cue_item``) templates: the seven Cedar languages."""

CheckStatus = Literal["checked", "source", "unchecked"]
LanguageStatus = Literal["native", "fallback:en"]
"""Whether a template is in the requested language (``native``) or English for want of it (``fallback:en``)."""
_STATUSES: tuple[str, ...] = ("checked", "source", "unchecked")


@dataclass(frozen=True)
class PromptCheck:
    """Who wrote a packaged prompt file and whether a native speaker of its language checked it.

    `status`: ``checked`` (reviewed by a native speaker: `checked_by`, `checked_on`), ``source`` (an English
    original the other languages are written from) or ``unchecked`` (nobody has reviewed it yet).
    """

    key: str
    status: CheckStatus
    author: str
    checked_by: str = ""
    checked_on: str = ""
    note: str = ""

    @property
    def checked_by_native_speaker(self) -> bool:
        """True when a native speaker of the file's language reviewed it."""
        return self.status == "checked"

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain JSON values (for reports)."""
        out: dict[str, Any] = {"status": self.status, "checked_by_native_speaker": self.checked_by_native_speaker,
                               "author": self.author}
        out.update({k: v for k, v in (("checked_by", self.checked_by), ("checked_on", self.checked_on),
                                      ("note", self.note)) if v})
        return out


def _check_entry(key: str, raw: Any) -> PromptCheck:
    where = f"culturekb/data/{_PROMPT_DIR}/{_CHECKS_FILE}, entry {key!r}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object with status, checked_by_native_speaker and author")
    status = raw.get("status")
    if status not in _STATUSES:
        raise ConfigError(f"{where}: status {status!r} is not one of {list(_STATUSES)}; fix the entry")
    native = raw.get("checked_by_native_speaker")
    if native is not (status == "checked"):
        raise ConfigError(f"{where}: checked_by_native_speaker is {native!r} but status is {status!r}; "
                          "it is true exactly when the status is 'checked'")
    author = raw.get("author")
    if not isinstance(author, str) or not author.strip():
        raise ConfigError(f"{where}: author is missing; say who wrote the file (a person, or 'an AI model')")
    if status == "checked" and not str(raw.get("checked_by") or "").strip():
        raise ConfigError(f"{where}: a checked file needs checked_by (who reviewed it)")
    unknown = sorted(set(raw) - {"status", "checked_by_native_speaker", "author", "checked_by", "checked_on", "note"})
    if unknown:
        raise ConfigError(f"{where}: unknown fields {unknown}; use status, checked_by_native_speaker, author, "
                          "checked_by, checked_on, note")
    return PromptCheck(key=key, status=status, author=author.strip(), checked_by=str(raw.get("checked_by") or ""),
                       checked_on=str(raw.get("checked_on") or ""), note=str(raw.get("note") or ""))


@cache
def prompt_checks() -> dict[str, PromptCheck]:
    """Every packaged prompt file's check entry, keyed ``<name>.<language>`` (read once per process)."""
    res = resources.files("culturekb.data").joinpath(f"{_PROMPT_DIR}/{_CHECKS_FILE}")
    try:
        raw = json.loads(res.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"culturekb/data/{_PROMPT_DIR}/{_CHECKS_FILE} cannot be read ({exc}); reinstall "
                          "culturekb or fix the file") from exc
    entries = raw.get("templates") if isinstance(raw, dict) else None
    if not isinstance(entries, dict):
        raise ConfigError(f"culturekb/data/{_PROMPT_DIR}/{_CHECKS_FILE}: no 'templates' object; fix the file")
    return {key: _check_entry(key, value) for key, value in entries.items()}


def prompt_check(name: str, language: str) -> PromptCheck:
    """The check entry of the packaged file `<name>.<language>`; ConfigError when it has none."""
    key = f"{name}.{language}"
    found = prompt_checks().get(key)
    if found is None:
        raise ConfigError(
            f"packaged prompt {key} has no entry in culturekb/data/{_PROMPT_DIR}/{_CHECKS_FILE}; add one saying "
            "who wrote it and whether a native speaker checked it (status 'unchecked' until one has)"
        )
    return found


def _placeholders(text: str, source: str) -> frozenset[str]:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise ConfigError(f"prompt template {source}: {exc}; write literal braces as '{{{{' and '}}}}'") from exc
    bad = [f for f in fields if not f.isidentifier()]
    if bad:
        raise ConfigError(
            f"prompt template {source}: placeholders {bad} are not plain names; use {{name}} fields only "
            "and write literal braces as '{{' and '}}'"
        )
    return frozenset(fields)


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template: `id` (name.language@hash) and `sha` go into provenance and cache keys.

    `check`: the packaged file's entry in CHECKED.json (None for a user's own file). `language`: the language of
    the text; `requested_language`: the one asked for; `language_status`: ``native`` when they agree, else
    ``fallback:en`` (`resolve_prompt`).
    """

    id: str
    text: str
    sha: str
    source: str = ""
    check: PromptCheck | None = None
    language: str = ""
    requested_language: str = ""
    language_status: LanguageStatus = "native"

    @property
    def checked(self) -> bool:
        """True when a native speaker of the template's language checked it."""
        return self.check is not None and self.check.checked_by_native_speaker

    @property
    def check_status(self) -> str:
        """``checked``, ``source``, ``unchecked``, or ``user`` for a user's own file."""
        return self.check.status if self.check is not None else "user"

    @cached_property
    def placeholders(self) -> frozenset[str]:
        """The names of the template's ``{placeholder}`` fields."""
        return _placeholders(self.text, self.source or self.id)

    def render(self, **values: Any) -> str:
        """The prompt with every placeholder filled; a missing or unknown value raises ConfigError."""
        need = self.placeholders
        missing = sorted(need - set(values))
        extra = sorted(set(values) - need)
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"missing values for {missing}")
            if extra:
                parts.append(f"values {extra} have no placeholder")
            raise ConfigError(
                f"prompt template {self.id} ({self.source}): {'; '.join(parts)}. "
                f"The template's placeholders are {sorted(need)}; fix the template file or the caller."
            )
        return self.text.format(**values)

    def fill(self, values: dict[str, Any]) -> str:
        """Render with the subset of `values` this template uses (missing ones still raise ConfigError)."""
        return self.render(**{k: v for k, v in values.items() if k in self.placeholders})


def available_prompt_languages(name: str, override_dir: str | Path | None = None) -> list[str]:
    """Languages for which the template `name` exists: packaged, plus those in `override_dir` if given."""
    prefix = f"{name}."
    folders: list[Any] = [resources.files("culturekb.data").joinpath(_PROMPT_DIR)]
    if override_dir is not None and Path(override_dir).is_dir():
        folders.append(Path(override_dir))
    langs = {
        p.name[len(prefix) : -len(".txt")]
        for folder in folders
        for p in folder.iterdir()
        if p.name.startswith(prefix) and p.name.endswith(".txt") and "." not in p.name[len(prefix) : -len(".txt")]
    }
    return sorted(langs)


def _check_override_dir(override_dir: str | Path) -> Path:
    folder = Path(override_dir).expanduser()
    if not folder.is_dir():
        raise ConfigError(
            f"prompt override directory {override_dir} does not exist or is not a directory; create it and put "
            "templates named <name>.<language>.txt in it (e.g. predict_know.zh.txt), or drop the option"
        )
    return folder


def _canonical(text: str) -> str:
    """A template's text as loaded: no leading or trailing blank lines, one final newline."""
    return text.strip("\n") + "\n"


def _read_template(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"prompt template {path} is not valid UTF-8 ({exc}); re-save it as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"prompt template {path} cannot be read ({exc}); check the file and its permissions") from exc


def load_prompt(
    name: str | Path,
    language: str = "en",
    required: Iterable[str] | None = None,
    allowed: Iterable[str] | None = None,
    *,
    override_dir: str | Path | None = None,
) -> PromptTemplate:
    """Load a packaged template by name and language, or a user's template file by path.

    `required`: placeholders the template must use; `allowed`: further placeholders the caller can fill.
    When either is given, a template missing a required one or using any other raises ConfigError; when
    neither is given, any placeholders are accepted (and `render` checks them).
    `override_dir`: a folder whose `<name>.<language>.txt` replaces the packaged template of that name and
    language (the id keeps the name, the hash changes, the source names the user's file).
    """
    path = Path(name)
    check: PromptCheck | None = None
    folder = _check_override_dir(override_dir) if override_dir is not None else None
    user_file = folder / f"{name}.{language}.txt" if folder is not None and not isinstance(name, Path) else None
    if path.suffix == ".txt" and path.is_file():
        text = _read_template(path)
        source = str(path)
        tid_name = path.stem
    elif user_file is not None and user_file.is_file():
        text = _read_template(user_file)
        source = str(user_file)
        tid_name = f"{name}.{language}"
    else:
        if isinstance(name, Path) or "/" in str(name) or str(name).endswith(".txt"):
            raise ConfigError(
                f"prompt template file {name} does not exist; give an existing .txt file or a packaged prompt name"
            )
        rel = f"{_PROMPT_DIR}/{name}.{language}.txt"
        res = resources.files("culturekb.data").joinpath(rel)
        if not res.is_file():
            langs = available_prompt_languages(str(name), override_dir=folder)
            where = "packaged" if folder is None else f"packaged or in {folder}"
            hint = f"{where} languages for {name!r}: {langs}" if langs else f"there is no {where} prompt named {name!r}"
            extra = "" if folder is None else f", or add {name}.{language}.txt to {folder}"
            raise ConfigError(
                f"no prompt template culturekb/data/{rel} for language {language!r}; {hint}. "
                f"Pick one of those, or pass the path of your own template file{extra}."
            )
        text = res.read_text("utf-8")
        source = f"culturekb/data/{rel}"
        tid_name = f"{name}.{language}"
        check = prompt_check(str(name), language)
    text = _canonical(text)
    found = _placeholders(text, source)
    need = frozenset(required or ())
    ok = need | frozenset(allowed or ())
    if (required is not None or allowed is not None) and ((need - found) or (found - ok)):
        raise ConfigError(
            f"prompt template {source}: missing required placeholders {sorted(need - found)}, "
            f"unknown placeholders {sorted(found - ok)}; the caller fills {sorted(ok)}. Fix the template."
        )
    sha = sha256_text(text)
    return PromptTemplate(id=f"{tid_name}@{sha[:12]}", text=text, sha=sha, source=source, check=check)


def normalise_language(language: str) -> str:
    """A prompt-language code in the form the file names use: 'zh-CN' -> 'zh', ' EN ' -> 'en'."""
    code = str(language or "").strip().lower().replace("_", "-").split("-")[0]
    if not code:
        raise ConfigError("prompt language is empty; give a language code such as 'en', 'zh' or 'ar'")
    return code


def _is_file(name: str | Path) -> bool:
    return isinstance(name, Path) or "/" in str(name) or str(name).endswith(".txt")


def _exists(name: str, language: str, folder: Path | None) -> bool:
    if folder is not None and (folder / f"{name}.{language}.txt").is_file():
        return True
    return resources.files("culturekb.data").joinpath(f"{_PROMPT_DIR}/{name}.{language}.txt").is_file()


@cache
def _packaged_prompt(name: str, language: str, required: frozenset[str] | None, allowed: frozenset[str] | None
                     ) -> PromptTemplate:
    return load_prompt(name, language, required, allowed)


@cache
def _note_fallback(name: str, language: str) -> None:
    log.warning("no %s prompt in language %r; using the English one (recorded as language_status 'fallback:en')",
                name, language)


def resolve_prompt(
    name: str | Path,
    language: str = "en",
    *,
    required: Iterable[str] | None = None,
    allowed: Iterable[str] | None = None,
    template_dir: str | Path | None = None,
) -> PromptTemplate:
    """The template `name` in `language`: the one way every prompt is loaded, with one fallback rule.

    The template is ``<name>.<language>.txt`` from `template_dir` (a user's folder, which wins) or the package.
    When neither has it, the English template is used and marked ``language_status="fallback:en"`` (a warning
    is logged once per name and language); a missing language never raises. ConfigError when the English
    template is missing too, when `template_dir` is not a folder, or when the placeholders break the contract
    (`required`, `allowed`: see `load_prompt`). A `name` that is a path to a .txt file is that file, as is.
    """
    need = None if required is None else frozenset(required)
    ok = None if allowed is None else frozenset(allowed)
    if _is_file(name):
        return load_prompt(name, language, need, ok)
    asked = normalise_language(language)
    folder = _check_override_dir(template_dir) if template_dir is not None else None
    lang = asked if asked == "en" or _exists(str(name), asked, folder) else "en"
    template = (_packaged_prompt(str(name), lang, need, ok) if folder is None
                else load_prompt(name, lang, need, ok, override_dir=folder))
    if lang != asked:
        _note_fallback(str(name), asked)
    return replace(template, language=lang, requested_language=asked,
                   language_status="native" if lang == asked else "fallback:en")


def joint_language_status(*statuses: str) -> str:
    """The status of a prompt made of several templates: ``fallback:en`` when any part fell back, ``native``
    when every part is native, "" when there is no part."""
    parts = [s for s in statuses if s]
    if not parts:
        return ""
    return "native" if all(s == "native" for s in parts) else "fallback:en"


@cache
def _packaged_sha(key: str) -> str | None:
    """sha256 of the packaged file `<key>.txt` as `load_prompt` reads it (None when there is no such file)."""
    if "/" in key or "." not in key:
        return None
    res = resources.files("culturekb.data").joinpath(f"{_PROMPT_DIR}/{key}.txt")
    return sha256_text(_canonical(res.read_text("utf-8"))) if res.is_file() else None


def template_check_status(template_id: str) -> str:
    """The check status of the template(s) behind an id such as ``predict_know.hi@1a2b3c4d5e6f`` or a joined
    ``cedar_know.zh@...+cues.zh@...+cue_item.zh@...``: one status when every part has it, else the parts'
    statuses joined with '+'. A part whose hash is not the packaged file's (a user's template) is ``user``;
    an empty id gives "".
    """
    statuses = []
    for part in filter(None, template_id.split("+")):
        key, _, short = part.partition("@")
        sha = _packaged_sha(key)
        entry = prompt_checks().get(key)
        packaged = bool(short) and sha is not None and sha.startswith(short) and entry is not None
        statuses.append(entry.status if packaged and entry is not None else "user")
    if not statuses:
        return ""
    return statuses[0] if len(set(statuses)) == 1 else "+".join(statuses)
