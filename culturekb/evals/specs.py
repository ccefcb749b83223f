"""Typed run specs: everything one benchmark run needs, as one frozen value instead of a long argument list.

Here are the parts every benchmark's spec shares (`RunSpec`, `RetrievalSpec`, `ParseSpec`); each benchmark's own
spec lives in its folder (``culturekb/evals/<name>/spec.py``). The command line (``evals/<name>/command.py``) builds
a spec from the parsed options; the one eval job (`culturekb.workflows.run_benchmark`) builds the run context from
it and the runner's ``from_context`` takes what it needs. A script builds the same spec in code::

    from culturekb.evals.ricevl import RiceVLVQASpec
    from culturekb.workflows import run_benchmark

    result = run_benchmark("ricevl-vqa", RiceVLVQASpec(data="vqa.jsonl", out="runs/vqa", kb_dir="cue_kb"))

Paths may be given as strings (they become `Path`s) and lists as lists (they become tuples), so a spec is
hashable and prints as what was run. Every field is keyword-only; `dataclasses.replace` makes a variant.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError

__all__ = ["RunSpec", "RetrievalSpec", "ParseSpec"]


def _normalise(annotation: str, value: Any) -> Any:
    """A field's value in its declared form: str -> Path for path fields, a list -> a tuple for sequence fields."""
    if value is None:
        return None
    if annotation.startswith("tuple[Path"):
        items = [value] if isinstance(value, str | Path) else list(value)
        return tuple(Path(v) for v in items)
    if annotation.startswith("tuple[") and not isinstance(value, tuple):
        return (value,) if isinstance(value, str) else tuple(value)
    if annotation.startswith("Path") and isinstance(value, str):
        return Path(value)
    return value


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """What every benchmark job needs: the run folder, the answering model, and how much of the data to run."""

    out: Path
    """Run folder: reports and resumable predictions."""
    model: str = "kb-prior"
    """``kb-prior`` (offline), ``openai:MODEL``, ``hf:PATH`` or any registered model client."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (default: the configured one)."""
    limit: int | None = None
    """Run only the first N items (None: all)."""
    data_root: Path | None = None
    """Folder the data's image paths are relative to (default: the data file's folder)."""
    cache_dir: Path | None = None
    """Response cache folder (default: the configured one)."""
    progress: bool = True
    field_map: str | None = None
    """How the data file's keys map to the loader's fields: a built-in map's name (``tombench``), a TOML/JSON map
    file, or ``field=KEY,...`` (None: the loader's own names and aliases, or a built-in map the file matches)."""
    on_bad_row: str = "fail"
    """``fail``: every bad row of the data is reported at once and nothing runs; ``skip``: bad rows are left out
    and listed in the run report."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            normalised = _normalise(str(f.type), value)
            if normalised is not value:
                object.__setattr__(self, f.name, normalised)
        if self.on_bad_row not in ("fail", "skip"):
            raise ConfigError(f"on_bad_row must be 'fail' or 'skip', got {self.on_bad_row!r}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"limit must be at least 1 (or None for all items), got {self.limit}")


@dataclass(frozen=True, kw_only=True)
class RetrievalSpec:
    """Where the knowledge comes from: a KB directory and how to query it (left out: the index's own embedder and
    backend, and the configured tau and status filter)."""

    kb_dir: Path | None = None
    backend: str | None = None
    embedder: str | None = None
    tau: float | None = None
    status: str | None = None
    """Which tuples are served: ``all``, ``accepted`` or ``pending`` (None: the ``status`` setting, ``all``)."""


@dataclass(frozen=True, kw_only=True)
class ParseSpec:
    """How model answers are read: `parse_fallback` sends answers that name no label word to the multilingual
    embedder (None: the ``parse_fallback`` setting, off by default); `label_words` is a label words file (JSON or
    TOML, ``{"<lang>": {"<label>": ["word", ...]}}``, `culturekb.kb.label_words`) whose words the prompts show and
    the parser reads, on top of the scheme's."""

    parse_fallback: bool | None = None
    label_words: Path | None = None
