"""Find the JSON objects in a model's answer: inside code fences or prose, tolerating single quotes, smart
quotes and trailing commas, in time linear in the answer (used by `culturekb.inference.parsing`)."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

__all__ = ["json_objects"]

_OBJECT_START = re.compile(r"\{\s*[\"'“]")
_MAX_LENIENT_TRIES = 32
_MAX_OBJECT_CHARS = 20_000


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the `}` closing the `{` at `start`, skipping braces inside quoted strings."""
    depth = 0
    quote: str | None = None
    i = start
    stop = min(len(text), start + _MAX_OBJECT_CHARS)
    while i < stop:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'“”":
            quote = '"' if ch in "“”" else ch
            if ch == "“":
                quote = "”"
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _lenient_load(snippet: str) -> Any:
    try:
        return json.loads(snippet)
    except ValueError:
        pass
    fixed = snippet.replace("“", '"').replace("”", '"').replace("„", '"')
    fixed = re.sub(r",\s*([}\]])", r"\1", fixed)
    try:
        return json.loads(fixed)
    except ValueError:
        pass
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Top-level JSON objects in `text` as (start, end, object), in order."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    lenient_left = _MAX_LENIENT_TRIES
    pos = text.find("{")
    while pos != -1:
        obj: Any = None
        end: int | None = None
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            # Repair only what looks like an object with quoted keys, a bounded number of times, so that prose
            # full of braces stays linear.
            if lenient_left > 0 and _OBJECT_START.match(text, pos):
                lenient_left -= 1
                end = _balanced_end(text, pos)
                if end is not None:
                    obj = _lenient_load(text[pos:end])
        if isinstance(obj, dict) and end is not None:
            found.append((pos, end, obj))
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found
