"""Finding benchmark folders without importing them.

A benchmark is one folder: a Python package whose modules define a `Runner` subclass decorated with
``@register_runner("name")``, with its spec, command options, loader, prompts, scoring and report beside it. The
built-in ones are the sub-packages of `culturekb.evals`; more come from the directories named by the environment
variable ``CULTUREKB_BENCHMARKS`` (``os.pathsep``-separated, each holding benchmark folders, imported as
``culturekb_benchmarks.<folder>``), and from installed packages through the entry-point group ``culturekb.runners``.

`discover_benchmarks` reads each folder's modules as text for ``@register_runner("name")`` above a ``class``
line and registers a lazy ``"module:Class"`` entry: listing the benchmarks imports none of them (``culturekb
--help`` stays fast), and when the module is imported its decorator registers the same class again, which is no
conflict. The decorator stays the one place a runner is named.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

from culturekb.errors import ConfigError

__all__ = ["BENCHMARKS_ENV", "USER_PACKAGE", "benchmark_dirs", "declared_runners", "discover_benchmarks"]

log = logging.getLogger(__name__)

BENCHMARKS_ENV = "CULTUREKB_BENCHMARKS"
USER_PACKAGE = "culturekb_benchmarks"
_DECLARED = re.compile(r"^@register_runner\(\s*[\"']([^\"']+)[\"']\s*\)\s*\n(?:@.*\n)*class\s+(\w+)", re.MULTILINE)


def benchmark_dirs() -> list[Path]:
    """The directories on ``CULTUREKB_BENCHMARKS``; one that is not a directory raises `ConfigError`."""
    found: list[Path] = []
    for entry in filter(None, os.environ.get(BENCHMARKS_ENV, "").split(os.pathsep)):
        root = Path(entry).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(f"{BENCHMARKS_ENV} names {root}, which is not a directory; give directories that "
                              "hold benchmark folders (each a package with an __init__.py)")
        found.append(root)
    return found


def declared_runners(folder: Path, package: str) -> Iterator[tuple[str, str]]:
    """(name, ``"module:Class"``) for each ``@register_runner("name")`` class in the modules of one folder."""
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        module = package if path.stem == "__init__" else f"{package}.{path.stem}"
        for name, cls in _DECLARED.findall(text):
            yield name, f"{module}:{cls}"


def _user_package(dirs: list[Path]) -> None:
    """Make ``culturekb_benchmarks`` a package whose path is the user's benchmark directories."""
    pkg = sys.modules.get(USER_PACKAGE)
    if pkg is None:
        pkg = types.ModuleType(USER_PACKAGE, "Benchmark folders found on CULTUREKB_BENCHMARKS.")
        pkg.__path__ = []
        sys.modules[USER_PACKAGE] = pkg
    for d in dirs:
        if str(d) not in pkg.__path__:
            pkg.__path__.append(str(d))


def discover_benchmarks() -> None:
    """Register a lazy entry for every runner declared in a built-in benchmark folder and in every folder on
    ``CULTUREKB_BENCHMARKS`` (imports none of them)."""
    from culturekb.registry import RUNNERS

    spec = importlib.util.find_spec("culturekb.evals")
    roots: list[tuple[Path, str]] = [(Path(p), "culturekb.evals") for p in (spec.submodule_search_locations or [])
                                     ] if spec is not None else []
    dirs = benchmark_dirs()
    if dirs:
        _user_package(dirs)
    roots += [(d, USER_PACKAGE) for d in dirs]
    for root, package in roots:
        for folder in sorted(p for p in root.iterdir() if (p / "__init__.py").is_file()):
            if not folder.name.isidentifier():
                raise ConfigError(f"benchmark folder {folder} is not a valid Python package name; rename it "
                                  "(letters, digits and '_')")
            for name, target in declared_runners(folder, f"{package}.{folder.name}"):
                log.debug("benchmark %r in %s", name, folder)
                RUNNERS.register(name, target)
