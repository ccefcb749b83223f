"""Command-line help in words: an option's kind reads TEXT, INTEGER, PATH (nothing for an on/off flag), not the
Python types (``<str>``, ``<bool>``) that typer 0.16 and later print. Applied once by `culturekb.cli` at import."""

from __future__ import annotations

from typing import Any

__all__ = ["help_types_in_words"]

_HELP_TYPES = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH", "file": "FILE",
               "directory": "FOLDER", "bool": "", "list[str]": "TEXT", "list[path]": "PATH", "int range": "INTEGER",
               "float range": "NUMBER"}


def help_types_in_words() -> None:
    """Help shows an option's kind in words (TEXT, INTEGER, PATH; nothing for an on/off flag), not the Python
    types (``<str>``, ``<bool>``) that typer 0.16 and later print. Older typers print words already."""
    try:
        from typer.core import _TyperParameter
    except ImportError:  # pragma: no cover - another typer layout: its own words
        return
    original = getattr(_TyperParameter, "display_type", None)
    if original is None or getattr(original, "_culturekb_words", False):
        return

    def display_type(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        text = original(self, ctx)
        if not isinstance(text, str) or not (text.startswith("<") and text.endswith(">")):
            return text  # type: ignore[no-any-return]
        label = text[1:-1]
        word = _HELP_TYPES.get(label.lower())
        if word is None:
            return label.upper() if label.isidentifier() else label
        return word or None

    display_type._culturekb_words = True  # type: ignore[attr-defined]
    _TyperParameter.display_type = display_type  # type: ignore[method-assign,assignment]
