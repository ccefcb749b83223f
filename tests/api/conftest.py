"""A small real KB on disk (two cultures, FAISS index built with the packaged embedder) and apps over it."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from culturekb.kb import KnowledgeBase, KnowledgeTuple  # noqa: E402
from culturekb.retrieval.index import build_index  # noqa: E402

READ_KEY = "read-key-0123456789"
ADMIN_KEY = "admin-key-0123456789"


def _t(concept: str, culture: str, dist: dict[str, float], support: int = 4,
       rationales: Sequence[str] = ("a reason",)) -> KnowledgeTuple:
    label = max(dist, key=lambda name: dist[name])
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution=dist, support=support,
                          rationales=list(rationales))


def small_tuples() -> list[KnowledgeTuple]:
    return [
        _t("bamboo", "zh", {"contentment": 0.7, "awe": 0.3}, rationales=["竹子象征气节与宁静"]),
        _t("full moon", "zh", {"sadness": 0.6, "contentment": 0.4}, support=5,
           rationales=["the full moon recalls family far away"]),
        _t("crane", "zh", {"awe": 0.8, "contentment": 0.2}),
        _t("skull", "zh", {"fear": 0.9, "sadness": 0.1}),
        _t("bamboo", "en", {"amusement": 0.6, "contentment": 0.4}, rationales=["pandas eat it, funny"]),
        _t("full moon", "en", {"fear": 0.5, "awe": 0.3, "contentment": 0.2}, rationales=["werewolves and night"]),
        _t("storm", "en", {"fear": 0.7, "excitement": 0.3}, support=9, rationales=["a storm at sea is frightening"]),
        _t("sea", "en", {"awe": 0.6, "contentment": 0.4}, support=6),
    ]


def save_kb(directory: Path, tuples: list[KnowledgeTuple], embedder: Any) -> Path:
    kb = KnowledgeBase(tuples, build_config={"cultures": sorted({t.culture for t in tuples})})
    kb.save(directory)
    build_index(kb, embedder, "faiss")
    return directory


@pytest.fixture(scope="session")
def kb_dirs(tmp_path_factory, default_embedder) -> dict[str, Path]:
    """`main`: the KB served by default; `other`: a second valid KB (one more tuple); `broken`: a KB whose
    tuples were edited after the build (fails validation); `noindex`: a valid KB without an index."""
    root = tmp_path_factory.mktemp("api-kbs")
    main = save_kb(root / "main", small_tuples(), default_embedder)
    other = save_kb(root / "other", [*small_tuples(), _t("dragon", "zh", {"awe": 0.9, "fear": 0.1}, support=7)],
                    default_embedder)
    broken = save_kb(root / "broken", small_tuples(), default_embedder)
    lines = (broken / "tuples.jsonl").read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[0])
    row["label"] = "fear"
    row["distribution"] = {"fear": 1.0}
    lines[0] = json.dumps(row)
    (broken / "tuples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    noindex = root / "noindex"
    KnowledgeBase(small_tuples()).save(noindex)
    return {"main": main, "other": other, "broken": broken, "noindex": noindex}


@pytest.fixture(scope="session")
def make_client(kb_dirs, default_embedder) -> Callable[..., Any]:
    """`make_client(**settings)` -> a TestClient over a new app on the main KB (entered: lifespan running)."""
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    def make(kb_dir: Path | None = None, **settings: Any) -> TestClient:
        app = create_app(kb_dir or kb_dirs["main"], embedder=default_embedder, **settings)
        return TestClient(app, raise_server_exceptions=False)

    return make


@pytest.fixture(scope="module")
def client(make_client):
    with make_client() as c:
        yield c
