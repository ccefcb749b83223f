"""Every file of a real built index is covered by its manifest: tampering with any of them is refused, by
`load_index`, by `culturekb lookup` (exit 2) and by the API (start-up and admin reload)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.errors import IndexError_
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval import build_index, load_index
from culturekb.retrieval._integrity import tree_files

BACKENDS = ("faiss", "qdrant")  # the backends that write files (numpy is in-memory reference only)


def _t(concept: str, culture: str, label: str) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 1.0}, support=3)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, default_embedder: Any) -> dict[str, Path]:
    """One KB per file-writing backend, with its index, built once; tests tamper with copies."""
    pytest.importorskip("faiss")
    out = {}
    for backend in BACKENDS:
        if backend == "qdrant":
            pytest.importorskip("qdrant_client")
        kb = KnowledgeBase([_t("puppy", "en", "amusement"), _t("door", "en", "fear"), _t("moon", "en", "awe"),
                            _t("moon", "zh", "sadness"), _t("bamboo", "zh", "contentment")])
        kb_dir = tmp_path_factory.mktemp(f"tamper-{backend}") / "kb"
        kb.save(kb_dir)
        build_index(KnowledgeBase.load(kb_dir), default_embedder, backend)
        out[backend] = kb_dir
    return out


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "kb"
    shutil.copytree(src, dst)
    return dst


def _edit_byte(path: Path) -> None:
    """Change one ASCII letter or digit (the last one) into another of its kind: same size, usually still valid
    JSON, so only a hash can tell."""
    data = bytearray(path.read_bytes())
    pos = max(i for i, b in enumerate(data) if chr(b).isascii() and chr(b).isalnum())
    c = chr(data[pos])
    data[pos] = ord(str((int(c) + 1) % 10) if c.isdigit() else ("b" if c == "a" else "a"))
    path.write_bytes(bytes(data))


def _rewrite_json(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw, indent=2, sort_keys=True), encoding="utf-8")


def _rotate_ids(folder: Path) -> None:
    part = next(p for p in sorted((folder / "store").glob("part-*.json")))

    def rotate(raw: dict[str, Any]) -> None:
        raw["ids"] = raw["ids"][1:] + raw["ids"][:1]

    _rewrite_json(part, rotate)


def _empty_files(raw: dict[str, Any]) -> None:
    raw["files"] = {}


def _files_of(backend: str, built: dict[str, Path]) -> list[str]:
    folder = built[backend] / "index" / backend
    return ["index.json", *tree_files(folder, skip=["index.json"])]


def _open(kb_dir: Path, backend: str) -> None:
    load_index(KnowledgeBase.load(kb_dir), "st:all-MiniLM-L6-v2", backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_manifest_lists_every_file_and_a_pristine_copy_opens(backend: str, built: dict[str, Path],
                                                                 tmp_path: Path) -> None:
    folder = built[backend] / "index" / backend
    raw = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    assert raw["format"] == 2 and isinstance(raw["digest"], str)
    assert set(raw["files"]) == set(tree_files(folder, skip=["index.json"]))
    assert "store/store.json" in raw["files"]
    _open(_copy(built[backend], tmp_path), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_editing_one_byte_of_any_file_is_refused(backend: str, built: dict[str, Path], tmp_path: Path) -> None:
    names = _files_of(backend, built)
    assert len(names) >= 4
    for i, name in enumerate(names):
        kb_dir = _copy(built[backend], tmp_path / str(i))
        _edit_byte(kb_dir / "index" / backend / name)
        with pytest.raises(IndexError_, match=r"SHA-256|digest|corrupted|invalid JSON|culturekb index") as info:
            _open(kb_dir, backend)
        assert "culturekb index" in str(info.value) or "rebuild" in str(info.value), (name, info.value)


@pytest.mark.parametrize("backend", BACKENDS)
def test_deleting_any_file_is_refused(backend: str, built: dict[str, Path], tmp_path: Path) -> None:
    for i, name in enumerate(_files_of(backend, built)):
        kb_dir = _copy(built[backend], tmp_path / str(i))
        (kb_dir / "index" / backend / name).unlink()
        with pytest.raises(IndexError_, match=r"missing|no .*index"):
            _open(kb_dir, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("where", ["extra.bin", "store/part-9999.json", "store/notes.txt"])
def test_an_added_file_is_refused(backend: str, where: str, built: dict[str, Path], tmp_path: Path) -> None:
    kb_dir = _copy(built[backend], tmp_path)
    (kb_dir / "index" / backend / where).write_text("{}", encoding="utf-8")
    with pytest.raises(IndexError_, match=r"files its manifest does not list \(" + where.replace(".", r"\.")):
        _open(kb_dir, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_emptying_either_files_map_is_refused(backend: str, built: dict[str, Path], tmp_path: Path) -> None:
    kb_dir = _copy(built[backend], tmp_path / "store")
    _rewrite_json(kb_dir / "index" / backend / "store" / "store.json", _empty_files)
    with pytest.raises(IndexError_, match=r"store\.json.* (SHA-256|bytes)"):
        _open(kb_dir, backend)
    kb_dir = _copy(built[backend], tmp_path / "index")
    _rewrite_json(kb_dir / "index" / backend / "index.json", _empty_files)
    with pytest.raises(IndexError_, match="digest"):
        _open(kb_dir, backend)


def test_the_puppy_door_attack_is_refused_everywhere(built: dict[str, Path], tmp_path: Path,
                                                     default_embedder: Any) -> None:
    """The probe's attack: empty store.json's own `files` map and rotate ids in part-0000.json (it served
    "puppy" -> "door" with exit 0). Refused by load_index, `culturekb lookup` (exit 2) and the API."""
    from culturekb.cli import app

    kb_dir = _copy(built["faiss"], tmp_path)
    folder = kb_dir / "index" / "faiss"
    _rewrite_json(folder / "store" / "store.json", _empty_files)
    _rotate_ids(folder)
    with pytest.raises(IndexError_, match=r"store/(store|part-0000)\.json"):
        _open(kb_dir, "faiss")
    result = CliRunner().invoke(app, ["lookup", "puppies", "--culture", "en", "--kb", str(kb_dir)])
    assert result.exit_code == 2, result.output
    assert "part-0000.json" in result.output and "culturekb index" in result.output

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with pytest.raises(IndexError_, match="part-0000.json"):
        create_app(kb_dir, embedder=default_embedder)
    admin = "admin-key-0123456789"
    good = create_app(built["faiss"], embedder=default_embedder, admin_keys=[admin])
    with TestClient(good) as client:
        before = client.post("/v1/lookup", json={"concepts": ["puppies"], "culture": "en"}).json()
        r = client.post("/v1/admin/reload", json={"kb_dir": str(kb_dir)}, headers={"X-API-Key": admin})
        assert r.status_code == 422 and "reload refused" in r.json()["detail"] and "part-0000" in r.json()["detail"]
        after = client.post("/v1/lookup", json={"concepts": ["puppies"], "culture": "en"}).json()
    served = [answer["results"][0]["match"]["tuple"]["concept"] for answer in (before, after)]
    assert served == ["puppy", "puppy"]  # the old KB keeps serving, unaltered


def _as_format_1(folder: Path) -> None:
    """Rewrite a fresh index's metadata as culturekb wrote it before format 2 (manifest: vectors.npy only)."""
    def old(raw: dict[str, Any]) -> None:
        raw["format"] = 1
        raw["files"] = {"vectors.npy": raw["files"]["vectors.npy"]}
        raw.pop("digest")

    _rewrite_json(folder / "index.json", old)


def test_an_old_format_index_opens_only_when_its_manifests_cover_every_file(built: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    kb_dir = _copy(built["faiss"], tmp_path / "ok")
    _as_format_1(kb_dir / "index" / "faiss")
    _open(kb_dir, "faiss")  # verifies: both manifests cover every file

    kb_dir = _copy(built["faiss"], tmp_path / "attacked")
    folder = kb_dir / "index" / "faiss"
    _as_format_1(folder)
    _rewrite_json(folder / "store" / "store.json", _empty_files)
    _rotate_ids(folder)
    with pytest.raises(IndexError_, match=r"older culturekb \(index format 1\).*culturekb index --kb"):
        _open(kb_dir, "faiss")

    kb_dir = _copy(built["faiss"], tmp_path / "rotated")
    _as_format_1(kb_dir / "index" / "faiss")
    _rotate_ids(kb_dir / "index" / "faiss")
    with pytest.raises(IndexError_, match="part-0000.json"):
        _open(kb_dir, "faiss")
