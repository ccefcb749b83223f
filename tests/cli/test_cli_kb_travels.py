"""A KB carries its label scheme and its cultures: built from the CLI with a custom comma-list scheme, with a scheme
file that is then deleted, and with data in de, am and a made-up xx-YY described by a cultures file (also deleted),
it is evaluated (`eval artemculture`, kb-prior, every mode), looked up, predicted on and served (the FastAPI app)
with nothing but the KB directory."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase
from culturekb.kb.cultures import reset_default_registry

runner = CliRunner()
LABELS = ("joy", "sadness", "anger", "fear", "guilt", "neutral")
# per culture: concept -> label its images carry (each concept on several images, so it passes min_support)
ASSOCIATIONS = {
    "en": {"storm": "fear", "wedding": "joy", "grave": "sadness"},
    "zh": {"storm": "anger", "wedding": "joy", "grave": "guilt"},
    "de": {"storm": "fear", "wedding": "neutral", "grave": "sadness"},
    "am": {"storm": "joy", "wedding": "joy", "grave": "sadness"},
    "xx-YY": {"storm": "neutral", "wedding": "joy", "grave": "fear"},
}
WORDS = {"joy": "joyful and happy", "sadness": "sad and mournful", "anger": "angry and furious",
         "fear": "scary and frightening", "guilt": "guilty and ashamed", "neutral": "plain and ordinary"}


def _run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _fresh_process_registry() -> Iterator[None]:
    """Each test starts like a new process: only the packaged cultures are known."""
    reset_default_registry()
    yield
    reset_default_registry()


def _write_data(path: Path, cultures: tuple[str, ...]) -> Path:
    rows = []
    for culture in cultures:
        for i in range(12):
            concept = ("storm", "wedding", "grave")[i % 3]
            label = ASSOCIATIONS[culture][concept]
            rows.append({"id": f"img{i}::{culture}", "culture": culture, "label": label, "concepts": [concept],
                         "title": f"a {concept}", "explanations": [f"the {concept} looks {WORDS[label]}"],
                         "split": "test" if i >= 9 else "train", "metadata": {"image_id": f"img{i}"}})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _build(data: Path, kb: Path, scheme: str | Path, *extra: Any) -> Any:
    res = _run("build", data, "--out", kb, "--scheme", scheme, "--concepts", "precomputed",
               "--judges", "lexicon,lexicon", "--cache-dir", kb.parent / "cache", *extra)
    assert res.exit_code == 0, res.output
    return res


def _check_served(kb: Path, tmp_path: Path, cultures: tuple[str, ...], default_embedder: Any) -> None:
    """eval (kb-prior, all modes), lookup, predict (a file and one image) and the API, from the KB alone."""
    assert _run("index", "--kb", kb).exit_code == 0
    data = _write_data(tmp_path / "eval.jsonl", cultures)  # the same rows, written again: no build-time state
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "run")
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "run" / "artemculture.json").read_text(encoding="utf-8"))
    assert set(report["settings"]) == {"orig", "know", "internal-know", "random-know", "cross-culture-know"}
    assert report["n_samples"] == 3 * len(cultures) and set(report["per_culture_n"]) == set(cultures)
    know = report["settings"]["know"]
    # kb-prior with knowledge gives each culture's dominant label of the test image's concept: every one right
    assert know["accuracy"] == 1.0 and know["with_knowledge"] == 3 * len(cultures) and know["invalid"] == 0
    assert know["confusion"]["labels"] == list(LABELS)

    for culture in cultures:
        res = _run("lookup", "storm", "--culture", culture, "--kb", kb, "--json")
        assert res.exit_code == 0, res.output
        match = json.loads(res.stdout)[0]["match"]
        assert (match["culture"], match["label"]) == (culture, ASSOCIATIONS[culture]["storm"])
    res = _run("lookup", "storm", "--culture", "klingon", "--kb", kb)
    assert res.exit_code == 2 and "klingon" in res.output

    res = _run("predict", "--kb", kb, "--samples", data)
    assert res.exit_code == 0, res.output
    predictions = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert len(predictions) == 12 * len(cultures) and {p["label"] for p in predictions} <= set(LABELS)
    res = _run("predict", "--kb", kb, "--culture", cultures[-1], "--concepts", "grave")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["label"] == ASSOCIATIONS[cultures[-1]]["grave"]

    from fastapi.testclient import TestClient

    from culturekb.api import create_app

    with TestClient(create_app(kb, embedder=default_embedder)) as client:
        manifest = client.get("/v1/kb").json()["manifest"]
        assert tuple(manifest["scheme"]["labels"]) == LABELS
        served = {c["id"]: c for c in client.get("/v1/cultures").json()["cultures"]}
        assert set(served) == set(cultures)
        looked = client.post("/v1/lookup", json={"concepts": ["grave"], "culture": cultures[-1]}).json()
        assert looked["results"][0]["match"]["tuple"]["label"] == ASSOCIATIONS[cultures[-1]]["grave"]
        block = client.post("/v1/augment", json={"concepts": ["storm"], "culture": cultures[0]})
        assert block.status_code == 200 and "storm" in block.json()["block"]
        assert client.post("/v1/lookup", json={"concepts": ["storm"], "culture": "klingon"}).status_code in (400, 404,
                                                                                                           422)


def test_custom_comma_list_scheme_travels_with_the_kb(tmp_path: Path, default_embedder: Any) -> None:
    kb = tmp_path / "kb"
    _build(_write_data(tmp_path / "train.jsonl", ("en", "zh")), kb, ",".join(LABELS))
    assert KnowledgeBase.load(kb).scheme.labels == LABELS
    _check_served(kb, tmp_path, ("en", "zh"), default_embedder)


def test_scheme_file_is_not_needed_after_the_build(tmp_path: Path, default_embedder: Any) -> None:
    scheme_file = tmp_path / "feelings.json"
    scheme_file.write_text(json.dumps({
        "name": "feelings6", "labels": list(LABELS),
        "translations": {"de": {"guilt": ["Schuld", "schuldig"]}, "am": {"sadness": ["ሀዘን"]}},
        "descriptions": {"guilt": "having done wrong"},
    }, ensure_ascii=False), encoding="utf-8")
    kb = tmp_path / "kb"
    _build(_write_data(tmp_path / "train.jsonl", ("en", "zh")), kb, scheme_file)
    scheme_file.unlink()
    scheme = KnowledgeBase.load(kb).scheme
    assert scheme.name == "feelings6" and scheme.match("schuldig") == "guilt" and scheme.match("ሀዘን") == "sadness"
    assert scheme.descriptions == {"guilt": "having done wrong"} and scheme.vocabulary  # ties kept too
    _check_served(kb, tmp_path, ("en", "zh"), default_embedder)


def test_new_cultures_from_the_data_and_a_cultures_file(
    tmp_path: Path, default_embedder: Any, caplog: pytest.LogCaptureFixture, openai_server: Callable[..., Any]
) -> None:
    cultures_file = tmp_path / "cultures.toml"
    cultures_file.write_text('[[cultures]]\nid = "xx-YY"\nname = "Xanadu"\naliases = ["xanadu"]\nlanguage = "xx"\n'
                             "western = true\n", encoding="utf-8")
    data = _write_data(tmp_path / "train.jsonl", ("de", "am", "xx-YY"))
    kb = tmp_path / "kb"
    with caplog.at_level(logging.WARNING, logger="culturekb.kb.cultures"):
        _build(data, kb, ",".join(LABELS), "--cultures-file", cultures_file)
    registered = [r.getMessage() for r in caplog.records if "registered from the data" in r.getMessage()]
    assert len(registered) == 2  # de and am, once each although every row names them; xx-YY came from the file
    assert "'de' registered from the data as German" in registered[0]
    assert "'am' registered from the data as Amharic" in registered[1]
    details = json.loads((kb / "manifest.json").read_text(encoding="utf-8"))["culture_details"]
    assert details["xx-YY"] == {"id": "xx-YY", "name": "Xanadu", "language": "xx", "western": True,
                                "aliases": ["xanadu"]}
    assert (details["de"]["name"], details["am"]["language"]) == ("German", "am")

    cultures_file.unlink()
    reset_default_registry()  # a new process: the KB alone describes xx-YY
    res = _run("lookup", "storm", "--culture", "Xanadu", "--kb", kb, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)[0]["match"]["culture"] == "xx-YY"
    reset_default_registry()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="culturekb.kb.cultures"):
        _check_served(kb, tmp_path, ("de", "am", "xx-YY"), default_embedder)
    # eval and predict read the data files after the KB has declared its cultures: nothing is registered again
    assert not [r for r in caplog.records if "registered from the data" in r.getMessage()]

    # a model's prompt names the culture as the (deleted) cultures file did, in English (no "xx" prompts)
    reset_default_registry()
    server = openai_server(['{"emotion": "fear"}'])
    res = _run("predict", "--kb", kb, "--culture", "xanadu", "--concepts", "grave", "--model", "openai:m",
               "--base-url", server.base_url, "--cache-dir", tmp_path / "responses")
    assert res.exit_code == 0, res.output
    prediction = json.loads(res.stdout)
    assert (prediction["culture"], prediction["label"], prediction["prompt_language"]) == ("xx-YY", "fear", "en")
    prompt = json.dumps(server.requests[0]["messages"], ensure_ascii=False)
    assert "Xanadu" in prompt and "grave" in prompt


def test_unknown_shapes_still_stop_the_build(tmp_path: Path) -> None:
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps({"id": "a", "culture": "Chinese!", "label": "joy"}) + "\n", encoding="utf-8")
    res = _run("build", data, "--out", tmp_path / "kb", "--scheme", ",".join(LABELS))
    assert res.exit_code == 2
    assert "unknown culture 'Chinese!'" in res.output and "pt-BR" in res.output
