from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from culturekb.errors import DataError
from culturekb.models import CacheEntry, ResponseCache

MESSAGES = [{"role": "user", "content": [{"type": "text", "text": "hi"},
                                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]


def test_key_is_stable_and_order_independent():
    a = ResponseCache.key_for("openai:m", MESSAGES, {"temperature": 0, "max_tokens": 5}, "kb1")
    b = ResponseCache.key_for("openai:m", MESSAGES, {"max_tokens": 5, "temperature": 0}, "kb1")
    assert a == b and len(a) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"model": "openai:other"},
        {"params": {"temperature": 1}},
        {"scope": "kb2"},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}, {
            "type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]}]},
    ],
)
def test_key_changes_with_each_part(change):
    base: dict[str, Any] = {"model": "openai:m", "messages": MESSAGES, "params": {"temperature": 0}, "scope": "kb1"}
    assert ResponseCache.key_for(**base) != ResponseCache.key_for(**{**base, **change})


def test_put_get_and_stats(tmp_path):
    cache = ResponseCache(tmp_path / "sub" / "c.sqlite")
    key = cache.key_for("m", MESSAGES, {}, "")
    assert cache.get(key) is None
    cache.put(key, "answer", {"usage": {"total_tokens": 3}})
    assert cache.get(key) == CacheEntry("answer", {"usage": {"total_tokens": 3}})
    assert key in cache and len(cache) == 1
    cache.put(key, "replaced")
    entry = cache.get(key)
    assert entry is not None and entry.text == "replaced"
    stats = cache.stats()
    assert stats["entries"] == 1 and stats["hits"] == 2 and stats["misses"] == 1 and stats["puts"] == 2
    assert cache.delete(key) and not cache.delete(key)
    cache.close()


def test_persists_across_instances(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put("k", "v", {"n": 1})
    with ResponseCache(path) as cache:
        assert cache.get("k") == CacheEntry("v", {"n": 1})


def test_thread_safe_concurrent_puts_and_gets(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(50):
                cache.put(f"{worker}-{i}", f"text {worker} {i}")
                entry = cache.get(f"{worker}-{i}")
                assert entry is not None and entry.text == f"text {worker} {i}"
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) == 400


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_survives_process_kill(tmp_path):
    path = tmp_path / "c.sqlite"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from culturekb.models.cache import ResponseCache
        cache = ResponseCache({str(path)!r})
        for i in range(20):
            cache.put(f"k{{i}}", f"v{{i}}")
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], env={**os.environ}, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    with ResponseCache(path) as cache:
        assert len(cache) == 20
        last = cache.get("k19")
        assert last is not None and last.text == "v19"


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DataError, match="delete the file"):
        ResponseCache(path)
