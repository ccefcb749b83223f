"""Loaders of the Cedar and RICE-VL formats: real-data fixtures, accepted variants, and every bad input."""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from PIL import Image

from culturekb.errors import ConfigError, DataError
from culturekb.evals.cedar.data import load_cedar
from culturekb.evals.loaders import normalise_truth
from culturekb.evals.ricevl.boxes import convert_box
from culturekb.evals.ricevl.data import load_cue_metadata, load_ricevl_grounding, load_ricevl_vqa, normalise_format

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "cedar_ricevl"


def write(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


CEDAR_ROW = {"id": "a", "language": "en", "modality": "text", "narrative": "A dog is lost.",
             "question": "How does the owner feel?", "label": "sadness"}


# -- Cedar --------------------------------------------------------------------------------------------------------


def test_cedar_real_fixture():
    samples = load_cedar(FIX / "cedar_sample.jsonl")
    assert len(samples) == 18
    assert {s.culture for s in samples} == {"en", "ar", "zh"}
    toyen_zh = next(s for s in samples if s.id == "artelingo-toyen_crying::zh")
    assert toyen_zh.label == "sadness" and toyen_zh.question == "这幅画让你产生了哪种情绪？"
    assert toyen_zh.metadata["modality"] == "text" and toyen_zh.metadata["votes"] == {"sadness": 4, "fear": 1}
    assert load_cedar(FIX / "cedar_sample.jsonl", languages=["Chinese"])[0].culture == "zh"


def test_cedar_variants(tmp_path):
    img = tmp_path / "imgs" / "x.png"
    img.parent.mkdir()
    Image.new("RGB", (8, 8)).save(img)
    rows: list[dict[str, object]] = [
        {"ID": 7, "lang": "Arabic", "story": "s", "prompt": "q", "emotion": "happy"},      # aliases, synonym
        {"id": "m", "culture": "zh", "image_path": "x.png", "question": "q", "gold": "恐惧"},  # translation, mm
        {"id": "t", "language": "es", "type": "text-only", "text": "n", "question": "q", "label": "Awe"},
    ]
    samples = load_cedar(write(tmp_path / "c.jsonl", rows), data_root=tmp_path / "imgs")
    assert [s.id for s in samples] == ["7", "m", "t"]
    assert [s.label for s in samples] == ["happiness", "fear", "awe"]
    assert [s.metadata["modality"] for s in samples] == ["text", "multimodal", "text"]
    assert samples[1].image == str(tmp_path / "imgs" / "x.png")
    # a .json array file works as well
    (tmp_path / "c.json").write_text(json.dumps([CEDAR_ROW]), encoding="utf-8")
    assert load_cedar(tmp_path / "c.json")[0].label == "sadness"
    assert [s.id for s in load_cedar(write(tmp_path / "c2.jsonl", rows), data_root=tmp_path / "imgs",
                                     modalities=["mm"])] == ["m"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"language": "klingon"}, "unknown language 'klingon'"),
        ({"language": "en,zh"}, "more than one language"),
        ({"language": "en/ar"}, "more than one language"),
        ({"label": "nostalgia"}, "not in scheme 'cedar14'"),
        ({"modality": "multimodal"}, "needs an image"),
        ({"modality": "hologram"}, "unknown modality"),
        ({"question": ""}, "'question' is missing"),
        ({"narrative": None}, "needs a narrative"),
        ({"image": "nowhere.png", "modality": "multimodal"}, "not found"),
        ({"image": "../x.png", "modality": "multimodal"}, "must not contain '..'"),
        ({"image": "x.png"}, "modality 'text' but an image"),
    ],
)
def test_cedar_bad_rows(tmp_path, change, message):
    row = {**CEDAR_ROW, **change}
    with pytest.raises(DataError, match=message) as info:
        load_cedar(write(tmp_path / "bad.jsonl", [row]))
    assert "line 1" in str(info.value)


def test_cedar_duplicate_ids_and_bad_json(tmp_path):
    with pytest.raises(DataError, match="occurs twice"):
        load_cedar(write(tmp_path / "d.jsonl", [CEDAR_ROW, CEDAR_ROW]))
    (tmp_path / "j.jsonl").write_text(json.dumps(CEDAR_ROW) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2: invalid JSON"):
        load_cedar(tmp_path / "j.jsonl")
    with pytest.raises(DataError, match="does not exist"):
        load_cedar(tmp_path / "missing.jsonl")
    # a custom label list is another scheme
    row = {**CEDAR_ROW, "label": "nostalgia"}
    assert load_cedar(write(tmp_path / "n.jsonl", [row]), scheme="nostalgia,joy")[0].label == "nostalgia"


# -- RICE-VL VQA --------------------------------------------------------------------------------------------------


def test_vqa_real_fixture():
    samples = load_ricevl_vqa(FIX / "ricevl_vqa.jsonl", allow_unknown_countries=True)
    assert len(samples) == 9
    assert {s.metadata["format"] for s in samples} == {"qa", "tf", "fill"}
    tf = [s for s in samples if s.metadata["format"] == "tf"]
    assert all(s.label in ("true", "false") for s in tf)
    assert samples[0].culture == "India" and samples[0].metadata["category"] == "painting"
    with pytest.raises(DataError, match="unknown country 'India'.*--any-country"):
        load_ricevl_vqa(FIX / "ricevl_vqa.jsonl")


def test_vqa_variants_and_errors(tmp_path):
    base = {"id": "q", "country": "singapore", "category": "Food", "sub-culture": "chilli crab",
            "question": "Which dish is this?", "question_type": "open-ended", "answer": "chilli crab"}
    s = load_ricevl_vqa(write(tmp_path / "v.jsonl", [base]))[0]
    assert (s.culture, s.metadata["category"], s.metadata["format"], s.metadata["sub_culture"]) == \
        ("SG", "food and desserts", "qa", "chilli crab")
    tf = {**base, "question_type": "True/False", "answer": "Yes"}
    assert load_ricevl_vqa(write(tmp_path / "t.jsonl", [tf]))[0].label == "true"
    for change, message in [
        ({"question_type": "essay"}, "unknown question format"),
        ({"question_type": "tf", "answer": "maybe"}, "truth value"),
        ({"question_type": "fill"}, "must contain a blank"),
        ({"category": "cars"}, "category 'cars' is not in scheme 'ricevl14'"),
        ({"country": "Atlantis"}, "unknown country"),
        ({"answer": " "}, "reference answer"),
    ]:
        with pytest.raises(DataError, match=message):
            load_ricevl_vqa(write(tmp_path / "bad.jsonl", [{**base, **change}]))
    fill = {**base, "question_type": "cloze", "question": "Singapore's national dish is [BLANK]."}
    assert load_ricevl_vqa(write(tmp_path / "f.jsonl", [fill]))[0].metadata["format"] == "fill"


@pytest.mark.parametrize(("value", "expected"), [("fib", "fill"), ("Yes/No", "tf"), ("OEQ", "qa"),
                                                  ("fill in the blank", "fill"), ("true_false", "tf")])
def test_normalise_format(value, expected):
    assert normalise_format(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(True, "true"), (0, "false"), ("T", "true"), ("no.", "false"),
                                                  ("perhaps", None), (2, None)])
def test_normalise_truth(value, expected):
    assert normalise_truth(value) == expected


# -- RICE-VL grounding ---------------------------------------------------------------------------------------------


def test_convert_box_by_hand():
    assert convert_box([10, 20, 30, 40], "xywh", None, None) == (10, 20, 40, 60)
    assert convert_box([0.1, 0.2, 0.5, 0.6], "xyxy_norm", 200, 100) == pytest.approx((20, 20, 100, 60))
    assert convert_box([0.1, 0.2, 0.4, 0.4], "xywh_norm", 200, 100) == pytest.approx((20, 20, 100, 60))
    assert convert_box([100, 200, 500, 600], "xyxy_1000", 200, 100) == pytest.approx((20, 20, 100, 60))
    with pytest.raises(ConfigError, match="needs the image size"):
        convert_box([0.1, 0.2, 0.5, 0.6], "xyxy_norm", None, None)


def test_grounding_loader(tmp_path):
    Image.new("RGB", (200, 100)).save(tmp_path / "p.png")
    rows: list[dict[str, object]] = [
        {"id": "a", "country": "TH", "category": "transport", "image": "p.png", "phrase": "tuk-tuk",
         "bbox": [10, 20, 30, 40], "bbox_format": "xywh"},
        {"id": "b", "country": "VN", "category": "clothing", "image": "p.png", "expression": "ao dai",
         "box": {"xmin": 0.1, "ymin": 0.2, "xmax": 0.5, "ymax": 0.6}},
        {"id": "c", "country": "PH", "category": "festivals", "image": "p.png", "phrase": "mask",
         "bbox": [[0, 0, 200.5, 100]], "box_format": "xyxy"},  # within a pixel of the edge: clipped
    ]
    # row b has no format of its own: the file-wide one (normalised) applies
    samples = load_ricevl_grounding(write(tmp_path / "g.jsonl", rows), bbox_format="xyxy_norm")
    assert samples[0].metadata["bbox"] == [10, 20, 40, 60]
    assert samples[1].metadata["bbox"] == pytest.approx([20, 20, 100, 60])
    assert samples[1].text == "ao dai" and samples[1].metadata["width"] == 200
    assert samples[2].metadata["bbox"] == [0, 0, 200, 100]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bbox": [30, 20, 10, 40]}, "x2 <= x1"),
        ({"bbox": [0, 0, 300, 50]}, "outside the 200x100 image"),
        ({"bbox": [1, 2, 3]}, "must be 4 numbers"),
        ({"bbox": [1, 2, "x", 4]}, "not a number"),
        ({"bbox": None}, "'bbox' is missing"),
        ({"bbox_format": "yolo"}, "unknown bbox_format"),
        ({"image": None}, "'image' is missing"),
        ({"width": 200}, "both width and height"),
        ({"image": "gone.png"}, "not found"),
    ],
)
def test_grounding_bad_rows(tmp_path, change, message):
    Image.new("RGB", (200, 100)).save(tmp_path / "p.png")
    row = {"id": "a", "country": "TH", "category": "transport", "image": "p.png", "phrase": "boat",
           "bbox": [10, 10, 50, 50], **change}
    with pytest.raises(DataError, match=message):
        load_ricevl_grounding(write(tmp_path / "g.jsonl", [row]))


def test_grounding_normalised_box_needs_a_size(tmp_path):
    row: dict[str, object] = {"id": "a", "country": "TH", "category": "transport", "image": "https://example.org/p.jpg",
           "phrase": "boat", "bbox": [0.1, 0.1, 0.5, 0.5], "bbox_format": "xyxy_norm"}
    with pytest.raises(DataError, match="needs the image size"):
        load_ricevl_grounding(write(tmp_path / "g.jsonl", [row]))
    row["width"], row["height"] = 100, 50
    assert load_ricevl_grounding(write(tmp_path / "g.jsonl", [row]))[0].metadata["bbox"] == \
        pytest.approx([10, 5, 50, 25])


# -- cue metadata -------------------------------------------------------------------------------------------------


def test_cue_metadata_real_fixture(tmp_path):
    samples = load_cue_metadata(FIX / "ricevl_cue_metadata.jsonl", allow_unknown_countries=True)
    assert len(samples) == 9
    india = [s for s in samples if s.culture == "India"]
    assert india[0].concepts is not None
    assert india[0].concepts[0] == "mughal painting" and "krishna" in india[0].concepts
    assert india[0].label == "painting" and india[0].split == "train" and india[0].explanations
    row = {"country": "MY", "category": "food", "sub_culture": "nasi lemak", "facts": "Coconut rice."}
    s = load_cue_metadata(write(tmp_path / "m.jsonl", [row]))[0]
    assert (s.culture, s.label, s.concepts, s.explanations) == ("MY", "food and desserts", ["nasi lemak"],
                                                                 ["Coconut rice."])
    with pytest.raises(DataError, match="'sub_culture' is missing"):
        load_cue_metadata(write(tmp_path / "m.jsonl", [{**row, "sub_culture": ""}]))
    with pytest.raises(DataError, match="'facts' must be"):
        load_cue_metadata(write(tmp_path / "m.jsonl", [{**row, "facts": [1, 2]}]))
