"""The CLI end to end, and every kind of bad input: a clear message, exit status 2, no KB on disk."""

import json

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.testing import ScriptedOpenAIServer

runner = CliRunner()

HEADER = "painting,art_style,emotion,language,utterance\n"
ROWS = "".join(
    f"{p},Impressionism,{e},{lang},the quiet harbor with boats at dusk\n"
    for p in ("artist-a_harbor-boats", "artist-b_harbor-at-night", "artist-c_boats-and-harbor")
    for e, lang in (("contentment", "english"), ("contentment", "english"), ("awe", "chinese"), ("awe", "chinese"))
)


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _write(path, content: str | bytes):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing_column.csv", "painting,art_style,utterance\nx,Impressionism,hello\n", "emotion"),
        ("unknown_label.csv", HEADER + "x_y,Impressionism,happyish,english,hi\n", "happyish"),
        ("unknown_culture.csv", HEADER + "x_y,Impressionism,awe,klingon,hi\n", "klingon"),
        ("empty.csv", "", "empty"),
        ("latin1.csv", (HEADER + "x_y,Impressionism,awe,english,caf").encode() + b"\xe9\n", "UTF-8"),
        ("dups.jsonl", '{"id": "a", "culture": "en", "label": "awe"}\n{"id": "a", "culture": "en", "label": "awe"}\n',
         "duplicate"),
        ("escape.jsonl", '{"id": "a", "culture": "en", "label": "awe", "image": "../../etc/passwd"}\n', "escape"),
        ("wrong.txt", "hello", "unknown data format"),
    ],
)
def test_bad_input_exits_2_with_message_and_no_kb(tmp_path, name, content, message):
    data = _write(tmp_path / name, content)
    out = tmp_path / "kb"
    res = _run("build", data, "--out", out, "--data-root", tmp_path, "--cache-dir", tmp_path / "c")
    assert res.exit_code == 2, res.output
    assert message.lower() in res.output.lower()
    assert name in res.output or "line" in res.output or "row" in res.output or "format" in res.output
    assert not out.exists()


def test_missing_file_and_bad_options(tmp_path):
    res = _run("build", tmp_path / "nope.csv", "--out", tmp_path / "kb")
    assert res.exit_code == 2 and "does not exist" in res.output
    data = _write(tmp_path / "d.csv", HEADER + ROWS)
    res = _run("build", data, "--out", tmp_path / "kb", "--policy", "maybe")
    assert res.exit_code == 2 and "policy" in res.output
    res = _run("build", data, "--out", tmp_path / "kb", "--judges", "lexicon")
    assert res.exit_code == 2 and "two judges" in res.output
    assert not (tmp_path / "kb").exists()


def test_malformed_model_answer_fails_cleanly(tmp_path):
    data = _write(tmp_path / "d.csv", HEADER + ROWS)
    out = tmp_path / "kb"
    with ScriptedOpenAIServer(responder="this is not JSON at all") as srv:
        res = _run("build", data, "--out", out, "--split", "all", "--rationales", "openai:judge-model",
                   "--judges", "lexicon,lexicon", "--base-url", srv.base_url, "--cache-dir", tmp_path / "c")
    assert res.exit_code == 2, res.output
    assert "judge-model" in res.output
    assert not out.exists()


def test_refuses_to_overwrite_a_non_kb_directory(tmp_path):
    data = _write(tmp_path / "d.csv", HEADER + ROWS)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.txt").write_text("do not delete")
    res = _run("build", data, "--out", precious, "--split", "all", "--judges", "lexicon,lexicon",
               "--cache-dir", tmp_path / "c")
    assert res.exit_code == 2 and "not a knowledge base" in res.output
    assert (precious / "thesis.txt").read_text() == "do not delete"


def test_build_inspect_review_roundtrip(tmp_path):
    data = _write(tmp_path / "d.csv", HEADER + ROWS)
    kb = tmp_path / "kb"
    res = _run("build", data, "--out", kb, "--split", "all", "--judges", "lexicon,lexicon", "--policy", "pending",
               "--cache-dir", tmp_path / "c", "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output[res.output.index("{"):])
    assert report["tuples"] >= 2 and set(report["per_culture"]) == {"en", "zh"}
    res = _run("inspect", kb, "--json")
    assert res.exit_code == 0, res.output
    info = json.loads(res.output[res.output.index("{"):])
    assert info["kb_version"] == report["kb_version"]
    # divergence: 'harbor' is contentment in en and awe in zh
    assert any(d["concept"] == "harbor" for d in info["divergence"])
    queue = tmp_path / "queue.jsonl"
    res = _run("review", "export", kb, "--out", queue)
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in queue.read_text(encoding="utf-8").splitlines()]
    if rows:
        rows[0]["decision"] = "reject"
        queue.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        res = _run("review", "import", kb, queue)
        assert res.exit_code == 0, res.output
        res = _run("inspect", kb, "--json")
        assert json.loads(res.output[res.output.index("{"):])["kb_version"] != report["kb_version"]
    res = _run("inspect", tmp_path / "nokb")
    assert res.exit_code == 2 and "manifest.json" in res.output
