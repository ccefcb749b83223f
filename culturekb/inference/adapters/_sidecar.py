"""The per-sample sidecar of the harness adapters: ``culturekb_injections.jsonl`` beside the harness's outputs.

One JSON object per line and per sample: the harness, the sample id, culture, concepts, the block as sent, the
tuple ids with their match kinds and scores, the KB version, mode, status filter and the block's language and
template. Lines are appended, each in one ``write`` call on a file opened with ``O_APPEND`` and under a
process-wide lock per path, so concurrent writers of one process (inspect_ai's parallel samples, VLMEvalKit's
threads) never tear or interleave a line, and a killed run leaves only whole lines behind.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from culturekb._io import read_jsonl
from culturekb.errors import ConfigError
from culturekb.inference.adapters._common import Injection

__all__ = ["SIDECAR_NAME", "SidecarWriter", "sidecar_row", "sidecar_path", "read_sidecar"]

SIDECAR_NAME = "culturekb_injections.jsonl"
"""The sidecar's file name, when a folder is given."""

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


def sidecar_path(where: str | Path | None) -> Path | None:
    """The sidecar file for `where`: a folder (the file inside it), a ``.jsonl`` path, or None / ``none`` (no
    sidecar)."""
    if where is None or (isinstance(where, str) and where.strip().lower() in ("", "none", "false", "off")):
        return None
    path = Path(where)
    return path if path.suffix == ".jsonl" else path / SIDECAR_NAME


def sidecar_row(harness: str, sample_id: Any, injection: Injection, kb_version: str,
                extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One sidecar line: what was injected into the request of `sample_id`."""
    block = injection.knowledge
    matches = list(block.matches) if block is not None else []
    row: dict[str, Any] = {
        "harness": harness,
        "sample_id": sample_id if isinstance(sample_id, int | str) else str(sample_id),
        "culture": injection.culture,
        "concepts": list(injection.concepts),
        "block": injection.block,
        "tuple_ids": list(injection.tuple_ids),
        "matches": [{"id": m.tuple.id, "query": m.query, "kind": m.kind, "score": round(float(m.score), 6)}
                    for m in matches],
        "kb_version": kb_version,
        "mode": block.mode if block is not None else None,
        "status_filter": block.status_filter if block is not None else None,
        "language": block.language if block is not None else None,
        "template_id": block.template_id if block is not None else None,
        "skipped": injection.skipped,
    }
    if extra:
        row.update(extra)
    return row


class SidecarWriter:
    """Appends sidecar rows to one file, whole lines only (see the module doc)."""

    def __init__(self, where: str | Path) -> None:
        path = sidecar_path(where)
        if path is None:
            raise ConfigError(f"sidecar: {where!r} names no file; give a folder or a .jsonl path")
        self.path = path

    def write(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Append `rows`, one JSON line each (a line is written whole or not at all); returns how many."""
        lines = [json.dumps(dict(r), ensure_ascii=False, default=str) + "\n" for r in rows]
        if not lines:
            return 0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _lock_for(self.path):
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                for line in lines:
                    data = line.encode("utf-8")
                    written = os.write(fd, data)
                    if written != len(data):  # a short write: finish the line before anything else can follow it
                        view = memoryview(data)[written:]
                        while view:
                            view = view[os.write(fd, view):]
            finally:
                os.close(fd)
        return len(lines)


def read_sidecar(where: str | Path) -> list[dict[str, Any]]:
    """The rows of a sidecar (a folder or the file)."""
    path = sidecar_path(where)
    if path is None or not path.is_file():
        raise ConfigError(f"no sidecar at {where}; the adapters write {SIDECAR_NAME} beside the harness's outputs")
    return read_jsonl(path)
