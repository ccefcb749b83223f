"""KnowledgeBase store: round trip, atomic save, schema version check, tamper detection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import culturekb.kb.store as store_mod
from culturekb.errors import DataError, SchemaError
from culturekb.kb import SCHEMA_VERSION, JudgeVerdict, KnowledgeBase, KnowledgeTuple
from culturekb.kb.store import MANIFEST, TUPLES


def tup(concept: str, culture: str, label: str, support: int = 3, **kw: Any) -> KnowledgeTuple:
    dist = {label: 1.0}
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution=dist, support=support, **kw)


@pytest.fixture
def kb() -> KnowledgeBase:
    return KnowledgeBase(
        [
            tup("moon", "zh", "sadness", rationales=["月亮让人思念远方的亲人。"],
                verdicts=[JudgeVerdict(judge="lexicon", label="sadness", agrees=True, scores={"sadness": 0.9})]),
            tup("moon", "en", "contentment", rationales=["A full moon feels calm."]),
            tup("crow", "en", "fear", support=5, flagged=True, status="pending"),
        ],
        scheme="artemis9",
        build_config={"min_support": 2, "cultures": ["en", "zh"]},
        embedder="minilm",
    )


def test_round_trip(tmp_path: Path, kb: KnowledgeBase) -> None:
    out = kb.save(tmp_path / "kb")
    assert (out / MANIFEST).is_file() and (out / TUPLES).is_file()
    again = KnowledgeBase.load(out)
    assert again.version == kb.version
    assert [t.model_dump() for t in again] == [t.model_dump() for t in kb]
    assert again.scheme.labels == kb.scheme.labels
    assert again.embedder == "minilm" and again.build_config["min_support"] == 2
    assert again.get("moon", "zh") is not None and again.get("moon", "zh").verdicts[0].judge == "lexicon"  # type: ignore[union-attr]
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["kb_version"] == kb.version
    assert manifest["counts"]["tuples"] == 3 and manifest["counts"]["pending"] == 1
    assert manifest["cultures"] == ["en", "zh"]
    # saving over an existing KB replaces it
    kb.replace([tup("sun", "en", "awe")]).save(out)
    assert [t.concept for t in KnowledgeBase.load(out)] == ["sun"]


def test_version_is_content_hash(kb: KnowledgeBase) -> None:
    same = KnowledgeBase(list(reversed(kb.tuples)), scheme="artemis9", build_config=kb.build_config)
    assert same.version == kb.version  # order-independent
    assert KnowledgeBase(kb.tuples, scheme="artemis9").version != kb.version  # the build config is versioned
    other = kb.replace([*(t for t in kb.tuples if t.concept != "crow"), tup("crow", "en", "fear", support=6)])
    assert other.version != kb.version


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_atomic_save_failure_leaves_nothing(tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: Any, **__: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store_mod, "atomic_write_json", boom)  # the manifest is written after the tuples
    with pytest.raises(OSError, match="disk full"):
        kb.save(tmp_path / "kb")
    assert _leftovers(tmp_path) == []  # no target, no temporary directory


def test_atomic_save_failure_keeps_previous_kb(
    tmp_path: Path, kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = kb.save(tmp_path / "kb")
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    real = store_mod.write_jsonl

    def half_then_boom(path: Path, rows: Any) -> None:
        real(path, list(rows)[:1])
        raise RuntimeError("killed mid-write")

    monkeypatch.setattr(store_mod, "write_jsonl", half_then_boom)
    with pytest.raises(RuntimeError, match="killed mid-write"):
        kb.replace([tup("sun", "en", "awe")]).save(target)
    assert _leftovers(tmp_path) == ["kb"]
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert KnowledgeBase.load(target).version == kb.version


def test_newer_schema_refused(tmp_path: Path, kb: KnowledgeBase) -> None:
    out = kb.save(tmp_path / "kb")
    m = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    m["schema_version"] = SCHEMA_VERSION + 1
    (out / MANIFEST).write_text(json.dumps(m), encoding="utf-8")
    with pytest.raises(SchemaError, match=rf"schema version {SCHEMA_VERSION + 1} is newer .* upgrade culturekb"):
        KnowledgeBase.load(out)


def test_tampered_tuples_detected(tmp_path: Path, kb: KnowledgeBase) -> None:
    out = kb.save(tmp_path / "kb")
    path = out / TUPLES
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("A full moon feels calm.", "A full moon feels eerie."), encoding="utf-8")
    with pytest.raises(DataError, match="do not match the manifest's kb_version"):
        KnowledgeBase.load(out)
    path.write_text(text.splitlines()[0] + "\n", encoding="utf-8")  # truncated
    with pytest.raises(DataError, match="edited or truncated"):
        KnowledgeBase.load(out)
    path.write_text(text.replace('"support": 5', '"support": 0'), encoding="utf-8")
    with pytest.raises(DataError, match=r"tuples.jsonl, line \d+: invalid tuple"):
        KnowledgeBase.load(out)
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(DataError, match="not valid UTF-8"):
        KnowledgeBase.load(out)


def test_load_errors(tmp_path: Path, kb: KnowledgeBase) -> None:
    with pytest.raises(DataError, match="manifest.json is missing"):
        KnowledgeBase.load(tmp_path)
    out = kb.save(tmp_path / "kb")
    (out / TUPLES).unlink()
    with pytest.raises(DataError, match="tuples.jsonl is missing"):
        KnowledgeBase.load(out)
    (out / MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        KnowledgeBase.load(out)


def test_invalid_contents_rejected() -> None:
    with pytest.raises(DataError, match="duplicate tuple"):
        KnowledgeBase([tup("moon", "en", "awe"), tup("moon", "en", "fear")])
    with pytest.raises(DataError, match="not in scheme"):
        KnowledgeBase([tup("moon", "en", "happiness")], scheme="artemis9")
    assert len(KnowledgeBase([tup("moon", "en", "happiness")], scheme="cedar14")) == 1


def test_queries(kb: KnowledgeBase) -> None:
    assert kb.cultures == ["en", "zh"]
    assert [t.concept for t in kb.for_culture("en")] == ["crow", "moon"]
    assert kb.get("moon", "ar") is None
    counts = kb.counts()
    assert counts["flagged"] == 1 and counts["rationales"] == 2 and counts["per_culture"] == {"en": 2, "zh": 1}
