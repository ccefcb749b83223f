"""One error hierarchy for the whole package.

Every message says which input was wrong, what was wrong with it, and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "CultureKBError",
    "ConfigError",
    "DataError",
    "SchemaError",
    "ProviderError",
    "ModelOutputError",
    "IndexError_",
    "MissingExtraError",
    "RunFailedError",
]


class CultureKBError(Exception):
    """Base class of every error culturekb raises on purpose."""


class ConfigError(CultureKBError):
    """A setting, option or registry name is wrong."""


class DataError(CultureKBError):
    """An input file or record is malformed (names the file, row or field and the fix)."""


class SchemaError(DataError):
    """A stored KB or index has a schema this version cannot read."""


class ProviderError(CultureKBError):
    """A model server or outside service failed after retries."""


class ModelOutputError(ProviderError):
    """A model answered, but its answer could not be parsed or validated."""


class RunFailedError(ProviderError):
    """A run finished and wrote its reports, but more than the allowed share of its items failed (no answer came:
    the server refused, erred, timed out or answered garbage, or the item's image was missing). The command line
    exits with `exit_code` 3, not 2: the inputs were valid, the run was not."""

    exit_code = 3


class IndexError_(CultureKBError):  # noqa: N801, N818 - named as the design says; "_" avoids the builtin
    """A vector index is missing, corrupted, or was built for another KB or embedder."""


class MissingExtraError(CultureKBError):
    """An optional dependency is not installed; the message carries the pip line."""

    def __init__(self, package: str, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the optional package '{package}', which is not installed. "
            f"Install it with: pip install 'culturekb[{extra}]'"
        )
        self.package = package
        self.extra = extra


def require(module: str, extra: str, feature: str) -> object:
    """Import an optional module or raise MissingExtraError with the install line."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - exercised in tests via monkeypatch
        raise MissingExtraError(module, extra, feature) from exc
