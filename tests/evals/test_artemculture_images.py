"""`eval artemculture` sends the images it says it sends: an image run without its images stops before any model
call (exit 2), ``--text-only`` runs on purpose with text prompts and says so, and a run with images sends them and
counts them. Over real HTTP to the scripted server; the data are the packaged ArtELingo rows, the images the two
packaged public-domain WikiArt JPEGs laid out as ArtEmis does (``<art_style>/<painting>.jpg``)."""

from __future__ import annotations

import csv
import json
import shutil
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.errors import DataError
from culturekb.evals.artemculture.images import apply_image_template, check_images, require_images, text_only
from culturekb.kb.schema import Sample

runner = CliRunner()
DEMO = resources.files("culturekb.data").joinpath("demo")
IMAGED = {"willard-metcalf_havana-harbor": "Impressionism",
          "viktor-vasnetsov_ivan-tsarevich-riding-the-grey-wolf-1889": "Romanticism"}
ANSWER = '{"emotion": "awe", "explanation": "the scene is vast."}'


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def artelingo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(CSV, KB, image root): the packaged ArtELingo rows, the two imaged paintings as the test split."""
    root = tmp_path_factory.mktemp("artelingo")
    rows = list(csv.DictReader(DEMO.joinpath("artelingo_demo.csv").read_text("utf-8").splitlines()))
    for r in rows:
        r["split"] = "test" if r["painting"] in IMAGED else "train"
    data = root / "artelingo.csv"
    with data.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    images = root / "wikiart"
    for painting, style in IMAGED.items():
        (images / style).mkdir(parents=True, exist_ok=True)
        src = DEMO.joinpath("culturaltom", "images", f"{painting}.jpg")
        shutil.copyfile(str(src), images / style / f"{painting}.jpg")
    kb = root / "kb"
    res = _run("build", data, "--out", kb, "--split", "all", "--min-support", "1", "--judges", "lexicon,lexicon",
               "--cache-dir", root / "cache")
    assert res.exit_code == 0, res.output
    return data, kb, images


def _user_content(request: dict) -> object:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


def test_no_images_exits_2_before_any_request(artelingo, openai_server, tmp_path):
    data, kb, images = artelingo
    server = openai_server(responder=ANSWER)
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "run", "--model", "openai:vlm",
               "--base-url", server.base_url, "--modes", "orig")
    assert res.exit_code == 2, res.output
    assert server.requests == []
    out = " ".join(res.output.split())
    assert "{art_style}/{painting}.jpg" in out and "--data-root" in out and "--image-template" in out
    assert "--text-only" in out and "Impressionism/willard-metcalf_havana-harbor.jpg" in out
    # a data root without the images is refused the same way
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "run2", "--model", "openai:vlm",
               "--base-url", server.base_url, "--modes", "orig", "--data-root", tmp_path / "empty")
    assert res.exit_code == 2, res.output
    assert "none of the" in " ".join(res.output.split())
    assert server.requests == []


def test_text_only_runs_with_text_prompts_and_says_so(artelingo, openai_server, tmp_path):
    data, kb, _ = artelingo
    server = openai_server(responder=ANSWER)
    out = tmp_path / "run"
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--model", "openai:vlm",
               "--base-url", server.base_url, "--modes", "orig,know", "--text-only")
    assert res.exit_code == 0, res.output
    assert server.requests
    for request in server.requests:
        content = _user_content(request)
        assert isinstance(content, str)  # no image part
        assert "artwork" not in content.lower()
        assert "havana harbor" in content.lower() or "grey wolf" in content.lower()  # the title is the text
    metrics = json.loads((out / "artemculture.json").read_text())
    assert metrics["images"]["text_only"] is True and metrics["images"]["items_with_image"] == 0
    assert "text-only run" in (out / "artemculture.md").read_text()
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["text_only"] is True
    preds = [json.loads(x)["prediction"] for x in (out / "predictions.jsonl").read_text().splitlines() if x.strip()]
    assert preds and all(p["with_image"] is False for p in preds)
    assert all(p["template_id"].startswith("predict_text_") for p in preds)


def test_images_are_sent_and_counted(artelingo, openai_server, tmp_path):
    data, kb, images = artelingo
    server = openai_server(responder=ANSWER)
    out = tmp_path / "run"
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--model", "openai:vlm",
               "--base-url", server.base_url, "--modes", "orig", "--data-root", images)
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "artemculture.json").read_text())
    n = metrics["n_samples"]
    assert len(server.requests) == n
    for request in server.requests:
        content = _user_content(request)
        assert isinstance(content, list)
        assert content[0]["type"] == "image_url"
        assert content[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
        assert content[1]["type"] == "text"
    assert metrics["images"]["items_with_image"] == n and metrics["settings"]["orig"]["with_image"] == n
    assert metrics["images"]["text_only"] is False
    assert f"{n} of {n} items sent with their image" in (out / "artemculture.md").read_text()
    preds = [json.loads(x)["prediction"] for x in (out / "predictions.jsonl").read_text().splitlines() if x.strip()]
    assert all(p["with_image"] is True and p["template_id"].startswith("predict_orig.") for p in preds)


def test_kb_prior_needs_no_image(artelingo, tmp_path):
    data, kb, _ = artelingo
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "run", "--modes", "orig")
    assert res.exit_code == 0, res.output


def test_image_template_and_partial_images(tmp_path):
    (tmp_path / "Impressionism").mkdir()
    (tmp_path / "Impressionism" / "a.jpg").write_bytes(b"x")
    samples = [Sample(id=f"{p}::en", culture="en", label="awe", split="test",
                      metadata={"image_id": p, "art_style": "Impressionism", "image_relpath": f"Impressionism/{p}.jpg"})
               for p in ("a", "b")]
    placed = apply_image_template(samples, "{art_style}/{painting}.jpg", tmp_path)
    check = check_images(placed, data_root=tmp_path, template="{art_style}/{painting}.jpg")
    assert (check.found, len(check.missing)) == (1, 1)
    with pytest.raises(DataError, match=r"1 of the 2 items' images.*b\.jpg"):
        require_images(check)
    with pytest.raises(DataError, match="artist"):
        apply_image_template(samples, "{artist}/{painting}.jpg", tmp_path)
    assert all(s.image is None for s in text_only(placed))
    text = [Sample(id="t", culture="en", text="It was the dance of my heart.")]
    assert not check_images(text).is_image_run
    require_images(check_images(text))  # a text dataset needs no image


@pytest.mark.parametrize("mode", ["orig", "know", "internal-know", "random-know", "cross-culture-know"])
def test_text_templates_show_the_text_and_no_artwork(mode):
    from culturekb.inference.prompts import prediction_template, prediction_values
    from culturekb.kb.schemes import get_scheme

    template = prediction_template(mode, "en", text=True)
    assert template.id.startswith("predict_text_")
    values = prediction_values("en", get_scheme("artemis9"), "en", knowledge="- dance -> joy",
                               text="It was the dance of my heart.", title="ignored when there is a text")
    rendered = template.fill(values)
    assert "It was the dance of my heart." in rendered and "ignored" not in rendered
    assert "artwork" not in rendered.lower() and '{"emotion": "' in rendered
    # the seven prompt languages have text templates (tests/inference/test_text_prompts.py); Korean has none:
    # English, recorded as a fallback on the prediction
    assert prediction_template(mode, "zh", text=True).language_status == "native"
    assert prediction_template(mode, "ko", text=True).language_status == "fallback:en"
