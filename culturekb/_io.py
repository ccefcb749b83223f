"""Atomic file and directory writes, content hashing and JSONL helpers."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from culturekb.errors import DataError

__all__ = [
    "atomic_write_text",
    "atomic_write_bytes",
    "iter_jsonl_text",
    "atomic_write_json",
    "atomic_dir",
    "sha256_text",
    "sha256_file",
    "stable_hash",
    "read_jsonl",
    "write_jsonl",
]


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write text to `path` through a temporary file and a rename, so readers never see half a file."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | Path, payload: bytes) -> None:
    """Write bytes to `path` through a temporary file and a rename (fsync'd), so readers never see half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it replaces `target` in one rename.

    On any error the temporary directory is removed and `target` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield tmp
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def stable_hash(obj: Any) -> str:
    """Hash of a JSON-serialisable object, independent of dict order."""
    return sha256_text(json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str))


def iter_jsonl_text(text: str, where: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a bad line raises DataError naming `where` and the line."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{where}, line {lineno}: invalid JSON ({exc.msg}); one JSON object per line") from exc
        if not isinstance(obj, dict):
            raise DataError(f"{where}, line {lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL file; a bad line raises DataError naming the file and line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{path}: not valid UTF-8 at byte {exc.start}; re-save the file as UTF-8"
        ) from exc
    return [obj for _, obj in iter_jsonl_text(text, path)]


def write_jsonl(path: str | Path, rows: Iterable[Any]) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
