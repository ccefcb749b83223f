"""`culturekb review serve` as a user runs it: a real process on a free port, the page over HTTP with the images
behind a tuple (local files served, remote references linked, never fetched), a decision posted, and on stop the
ledger applied to the KB (exit 0)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from culturekb.kb.ledger import ledger_path, read_ledger  # noqa: E402
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple  # noqa: E402
from culturekb.kb.store import KnowledgeBase  # noqa: E402

REMOTE = "https://example.org/images/mountain.jpg"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as res:  # noqa: S310 (a local test server)
            return res.status, res.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


def _kb_and_data(tmp_path: Path) -> tuple[Path, Path]:
    t = KnowledgeTuple(concept="mountain", culture="zh", label="awe", distribution={"awe": 0.6, "fear": 0.4},
                       support=5, rationales=["the mountain rises above the village"], status="pending",
                       flagged=True, verdicts=[JudgeVerdict(judge="lexicon", label="fear", agrees=False)])
    kb = tmp_path / "kb"
    KnowledgeBase([t], build_config={"cultures": ["zh"]}).save(kb)
    (tmp_path / "m.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    rows = [{"id": "local", "culture": "zh", "label": "awe", "image": "m.png", "split": "train",
             "explanations": ["in the evening the mountain rises above the village like a wall"]},
            {"id": "remote", "culture": "zh", "label": "fear", "image": REMOTE, "split": "train",
             "explanations": ["a dark mountain at night"]}]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return kb, data


def test_review_serve_runs_serves_images_and_applies_on_stop(tmp_path: Path) -> None:
    kb, data = _kb_and_data(tmp_path)
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "culturekb.cli", "review", "serve", str(kb), "--data", str(data), "--data-root",
         str(tmp_path), "--reviewer", "ana", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # the process imports, loads the KB and the data, then listens
            if proc.poll() is not None:
                pytest.fail(f"review serve exited {proc.returncode}: {proc.stdout.read() if proc.stdout else ''}")
            try:
                if _get(base + "/healthz")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("review serve did not answer /healthz")
        status, page = _get(base + "/?" + urllib.parse.urlencode({"culture": "zh", "t": "zh::mountain"}))
        assert status == 200 and 'data-tuple="zh::mountain"' in page and 'id="reviewer">ana</b>' in page
        local = page.split('src="/image/')[1].split('"')[0]
        assert _get(f"{base}/image/{local}")[0] == 200
        # the remote reference is a link for the reviewer's own browser; the server never fetches it
        assert f'href="{REMOTE}"' in page
        remote_n = 1 - int(local)
        assert f'src="/image/{remote_n}"' not in page and _get(f"{base}/image/{remote_n}")[0] == 404
        evidence = page.split('name="evidence" value="')[1].split('"')[0]
        form = urllib.parse.urlencode({"tuple_id": "zh::mountain", "evidence": evidence, "decision": "reject",
                                       "label": "", "note": "", "culture": "zh", "status": "todo"}).encode()
        req = urllib.request.Request(base + "/decide", data=form, method="POST")
        with urllib.request.urlopen(req, timeout=10) as res:  # noqa: S310 (follows the 303 to the next page)
            assert res.status == 200
        assert [d.decision for d in read_ledger(ledger_path(kb))] == ["reject"]  # in the ledger at once
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn stops, the command applies the ledger
        out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert KnowledgeBase.load(kb).get("mountain", "zh").status == "rejected"  # type: ignore[union-attr]
