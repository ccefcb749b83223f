"""Prompt templates stored as data files, validated for their placeholders.

A template is `culturekb/data/prompts/<name>.<language>.txt` or a user's file given by path. Placeholders are
`{name}` fields (Python format syntax; write literal braces as `{{` and `}}`). Every rendering names exactly the
template's placeholders, so a typo in a template or a caller fails loudly instead of sending a broken prompt.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb._io import sha256_text
from culturekb.errors import ConfigError

__all__ = ["PromptTemplate", "load_prompt", "available_prompt_languages"]

_PROMPT_DIR = "prompts"


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
    """A loaded template: `id` (name.language@hash) and `sha` go into provenance and cache keys."""

    id: str
    text: str
    sha: str
    source: str = ""

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
    text = text.strip("\n") + "\n"
    found = _placeholders(text, source)
    need = frozenset(required or ())
    ok = need | frozenset(allowed or ())
    if (required is not None or allowed is not None) and ((need - found) or (found - ok)):
        raise ConfigError(
            f"prompt template {source}: missing required placeholders {sorted(need - found)}, "
            f"unknown placeholders {sorted(found - ok)}; the caller fills {sorted(ok)}. Fix the template."
        )
    sha = sha256_text(text)
    return PromptTemplate(id=f"{tid_name}@{sha[:12]}", text=text, sha=sha, source=source)
