"""A persistent key-value cache for build steps: an interrupted build resumes, a rebuild redoes only what changed."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["StepCache"]


class StepCache:
    """SQLite table (step, key) -> JSON value. Each `put_many` is one committed transaction."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path is not None else None
        target = ":memory:"
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            target = str(self.path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(target, check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS steps (step TEXT, key TEXT, value TEXT, PRIMARY KEY (step, key))"
        )
        self._conn.commit()

    def get_many(self, step: str, keys: Sequence[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = list(keys[i : i + 500])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, value FROM steps WHERE step = ? AND key IN ({marks})",  # noqa: S608 - placeholders only
                    [step, *chunk],
                ).fetchall()
                out.update((k, json.loads(v)) for k, v in rows)
        return out

    def put_many(self, step: str, items: Iterable[tuple[str, Any]]) -> None:
        rows = [(step, k, json.dumps(v, ensure_ascii=False)) for k, v in items]
        with self._lock:
            self._conn.executemany("INSERT OR REPLACE INTO steps VALUES (?, ?, ?)", rows)
            self._conn.commit()

    def count(self, step: str | None = None) -> int:
        with self._lock:
            if step is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM steps").fetchone()[0])
            return int(self._conn.execute("SELECT COUNT(*) FROM steps WHERE step = ?", [step]).fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()
