"""Named checkpoints of a build, where a test can kill the process as a crash would.

`CULTUREKB_TEST_KILL_AT=NAME@N` makes the N-th pass through the checkpoint NAME (in this process) end the
process at once with exit status 137, as SIGKILL would: no cleanup, no `finally`, no flushing. Several
checkpoints may be named, comma-separated. The build passes through ``concepts``, ``rationales``, ``judge1`` and
``judge2`` after each committed chunk of its steps, ``vectors`` after each committed batch of embeddings, and
``save`` inside the KB's temporary directory once its files are written (before the rename).

Unset (the normal case) it costs one dictionary lookup per checkpoint. The kill-and-resume test
(tests/test_kill_resume.py) and the fault-injection benchmark use it to prove that a build killed anywhere resumes
to a byte-identical KB.
"""

from __future__ import annotations

import os
import sys
import threading

__all__ = ["KILL_ENV", "kill_point"]

KILL_ENV = "CULTUREKB_TEST_KILL_AT"

_lock = threading.Lock()
_passes: dict[str, int] = {}


def _targets(value: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in value.split(","):
        name, _, nth = part.strip().partition("@")
        if name:
            out[name] = int(nth) if nth.strip().isdigit() else 1
    return out


def kill_point(name: str) -> None:
    """Pass the checkpoint `name`; end the process (status 137) when `CULTUREKB_TEST_KILL_AT` names this pass."""
    value = os.environ.get(KILL_ENV)
    if not value:
        return
    wanted = _targets(value).get(name)
    if wanted is None:
        return
    with _lock:
        _passes[name] = _passes.get(name, 0) + 1
        hit = _passes[name] == wanted
    if hit:
        sys.stderr.write(f"{KILL_ENV}: killed at {name}@{wanted}\n")
        sys.stderr.flush()
        os._exit(137)
