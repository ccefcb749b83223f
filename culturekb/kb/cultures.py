"""The culture registry: ids, aliases, display names and prompt languages."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources

from culturekb.errors import ConfigError

__all__ = ["Culture", "CultureRegistry", "default_registry", "resolve_culture"]


@dataclass(frozen=True)
class Culture:
    """A culture: a language community (`en`, `zh`) or a country (`SG`)."""

    id: str
    name: str
    language: str
    western: bool = False
    aliases: tuple[str, ...] = field(default_factory=tuple)


class CultureRegistry:
    """Resolves ids and aliases (`English`, `english`, `en`) to a `Culture`; unknown names are errors."""

    def __init__(self, cultures: list[Culture] | None = None) -> None:
        self._by_id: dict[str, Culture] = {}
        self._alias: dict[str, str] = {}
        for c in cultures or []:
            self.declare(c)

    @classmethod
    def from_package(cls) -> CultureRegistry:
        """The cultures shipped with the package (``culturekb/data/cultures.json``)."""
        raw = json.loads(resources.files("culturekb.data").joinpath("cultures.json").read_text("utf-8"))
        return cls(
            [
                Culture(id=cid, name=v["name"], language=v["language"], western=bool(v.get("western", False)),
                        aliases=tuple(v.get("aliases", ())))
                for cid, v in raw.items()
            ]
        )

    def declare(self, culture: Culture) -> None:
        """Add a culture (or replace one with the same id)."""
        self._by_id[culture.id] = culture
        for key in (culture.id, culture.name, *culture.aliases):
            self._alias[key.strip().lower()] = culture.id

    def resolve(self, name: str) -> Culture:
        """The culture an id or alias names (case-insensitive); a ConfigError listing the known cultures otherwise."""
        key = str(name).strip().lower()
        if key in self._alias:
            return self._by_id[self._alias[key]]
        known = ", ".join(sorted(self._by_id))
        raise ConfigError(
            f"unknown culture {name!r}; known cultures: {known}. "
            "Use one of these ids or aliases, or declare the culture first "
            "(CultureRegistry.declare or --declare-culture)."
        )

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._alias

    def ids(self) -> list[str]:
        """Ids of the registered cultures, in registration order."""
        return list(self._by_id)

    def all(self) -> list[Culture]:
        """The registered cultures, in registration order."""
        return list(self._by_id.values())


_DEFAULT: CultureRegistry | None = None


def default_registry() -> CultureRegistry:
    """The packaged registry, built on first use (no work at import time)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = CultureRegistry.from_package()
    return _DEFAULT


def resolve_culture(name: str) -> str:
    """The canonical id of a culture name or alias."""
    return default_registry().resolve(name).id
