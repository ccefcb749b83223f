"""The records a run is made of: a `Setting` (mode and prompt language), the `RunResult` of `Runner.run`, and the
`RunnerCommand` that puts a benchmark on the command line (re-exported by `culturekb.evals.runner`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError
from culturekb.evals.reports import Table
from culturekb.inference.base import Prediction

__all__ = ["RunResult", "RunnerCommand", "Setting"]


@dataclass(frozen=True)
class Setting:
    """One configuration the whole sample list runs under: a mode (or benchmark setting) and a prompt language.

    `key` names it in checkpoints and reports: ``"know"``, ``"know@zh"``, or `name` when given.
    """

    mode: str
    prompt_language: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if not self.mode or "\n" in self.mode:
            raise ConfigError(f"setting mode {self.mode!r} is empty or has a line break; give a mode name")

    @property
    def key(self) -> str:
        """The setting's name in checkpoints and reports."""
        if self.name:
            return self.name
        return self.mode if self.prompt_language is None else f"{self.mode}@{self.prompt_language}"

    @classmethod
    def grid(cls, modes: Sequence[str], prompt_languages: Sequence[str | None]) -> list[Setting]:
        """Every mode with every prompt language (mode-major order)."""
        return [cls(m, lang) for m in modes for lang in prompt_languages]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: key, mode and prompt language."""
        return {"key": self.key, "mode": self.mode, "prompt_language": self.prompt_language}


@dataclass(frozen=True)
class RunResult:
    """What `Runner.run` did: the metrics, where the files are, and how long each step took."""

    runner: str
    out_dir: Path
    settings: tuple[Setting, ...]
    n_samples: int
    metrics: Mapping[str, Any]
    predictions: Mapping[str, tuple[Prediction, ...]]
    """Per setting key, one prediction per sample in load order."""
    timings: Mapping[str, float]
    """Seconds: load, predict (all settings), predict:<key> per setting, score, report, total."""
    n_predicted: Mapping[str, int]
    """Per setting key: predictions made in this run (the rest came from the checkpoint)."""
    n_resumed: Mapping[str, int]
    files: tuple[Path, ...] = field(default_factory=tuple)
    tables: Mapping[str, Table] = field(default_factory=dict)
    """The report's tables (`Runner.tables` of the metrics, then the unread answers'), for a caller that shows
    them."""
    unread_answers: Mapping[str, Any] = field(default_factory=dict)
    """How many answers the parser could not read, per setting and prompt language, and their most frequent words
    (`culturekb.evals.unread.unread_summary`)."""

    def summary(self) -> dict[str, Any]:
        """A JSON-safe summary (no predictions), as written to ``run.json``."""
        return {
            "runner": self.runner,
            "out_dir": str(self.out_dir),
            "settings": [s.to_dict() for s in self.settings],
            "n_samples": self.n_samples,
            "timings": dict(self.timings),
            "n_predicted": dict(self.n_predicted),
            "n_resumed": dict(self.n_resumed),
            "files": [str(p) for p in self.files],
            "unread_answers": dict(self.unread_answers),
        }


@dataclass(frozen=True)
class RunnerCommand:
    """How ``culturekb eval NAME`` runs a benchmark: the command's parameters and the job they feed.

    `options` is a typer-compatible function: its parameters (annotated with ``typer.Argument`` /
    ``typer.Option`` and their help) are the command's arguments and options, its docstring is the command's
    help, and it returns the benchmark's run spec (`culturekb.evals.specs.RunSpec`): the one eval job builds a
    `RunContext` from it and calls the runner's `Runner.from_context`. A plug-in may instead return keyword
    arguments (the runner is constructed with them less ``out`` and run into ``out``) or give a `job` of its
    own, which takes the mapping as keywords or the one value whole. Either may be a lazy ``"module:attr"``
    string, imported when the command is built.
    """

    options: Callable[..., Any] | str
    job: Callable[..., RunResult] | str | None = None
