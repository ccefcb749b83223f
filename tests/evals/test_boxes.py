"""Box parsing for grounding: every common output form, scales, layouts, and the counted failure statuses."""

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.ricevl.boxes import format_box_token, parse_box
from culturekb.evals.ricevl.metrics import box_iou


@pytest.mark.parametrize(
    ("text", "form", "box"),
    [
        # Qwen2-VL box tokens: 0..1000 grid of a 200 x 100 image
        ("<|object_ref_start|>crab<|object_ref_end|><|box_start|>(100,200),(500,600)<|box_end|>", "qwen2-tokens",
         (20, 20, 100, 60)),
        ("<ref>crab</ref><box>(100,200),(500,600)</box>", "qwen-box", (20, 20, 100, 60)),
        ("<box>[[100, 200, 500, 600]]</box>", "box-list", (20, 20, 100, 60)),
        # Qwen2.5-VL JSON in a fence, absolute pixels
        ('```json\n[{"bbox_2d": [20, 20, 100, 60], "label": "crab"}]\n```', "json-bbox_2d", (20, 20, 100, 60)),
        ('The box is {"bbox": [0.1, 0.2, 0.5, 0.6]}.', "json-bbox", (20, 20, 100, 60)),
        ('{"x1": 20, "y1": 20, "x2": 100, "y2": 60}', "json-xyxy", (20, 20, 100, 60)),
        ('{"x": 20, "y": 20, "width": 80, "height": 40}', "json-xywh", (20, 20, 100, 60)),
        ('{"answer": {"box": {"left": 20, "top": 20, "width": 80, "height": 40}}}', "json-xywh", (20, 20, 100, 60)),
        ("It is at [20, 20, 100, 60].", "list", (20, 20, 100, 60)),
        ("It is at (0.1, 0.2, 0.5, 0.6)", "list", (20, 20, 100, 60)),
        ("Top-left (20, 20) to bottom-right (100, 60).", "points", (20, 20, 100, 60)),
        ("As x, y, w, h: [20, 20, 80, 40]", "list", (20, 20, 100, 60)),
    ],
)
def test_forms(text, form, box):
    parsed = parse_box(text, width=200, height=100)
    assert parsed.status == "ok", parsed
    assert parsed.form == form
    assert parsed.box == pytest.approx(box)


def test_statuses_are_counted_not_dropped():
    assert parse_box("on the left", width=200, height=100).status == "unparsed"
    assert parse_box(None).status == "unparsed"
    inverted = parse_box("[100, 20, 20, 60]", width=200, height=100)
    assert inverted.status == "invalid" and inverted.box is None and "x2 <= x1" in inverted.detail
    outside = parse_box("[300, 120, 400, 160]", width=200, height=100)
    assert outside.status == "outside" and outside.box is None
    clipped = parse_box("[150, 50, 260, 130]", width=200, height=100)
    assert clipped.status == "clipped" and clipped.box == (150, 50, 200, 100) and clipped.scored
    # a normalised box without the image size cannot become pixels
    assert parse_box("[0.1, 0.2, 0.5, 0.6]").status == "invalid"
    # without a size, absolute boxes are kept as given
    assert parse_box("[20, 20, 100, 60]").box == (20, 20, 100, 60)


def test_forced_scale_and_layout():
    # "auto" would read all-<=1 numbers as normalised; forced pixels keep them
    assert parse_box("[0, 0, 1, 1]", width=200, height=100, scale="pixels").box == (0, 0, 1, 1)
    assert parse_box("[100, 200, 500, 600]", width=200, height=100, scale="thousandths").box == \
        pytest.approx((20, 20, 100, 60))
    assert parse_box("[20, 20, 80, 40]", width=200, height=100, layout="xywh").box == (20, 20, 100, 60)
    with pytest.raises(ConfigError):
        parse_box("[1, 2, 3, 4]", scale="inches")
    with pytest.raises(ConfigError):
        parse_box("[1, 2, 3, 4]", layout="cxcywh")


def test_token_round_trip_and_iou_by_hand():
    token = format_box_token((20, 20, 100, 60), 200, 100)
    assert token == "<|box_start|>(100,200),(500,600)<|box_end|>"
    pred = parse_box(token, width=200, height=100).box
    assert box_iou(pred, [20, 20, 100, 60]) == pytest.approx(1.0)
    # half-overlapping boxes: inter 40x40 = 1600, union 3200 + 3200 - 1600 = 4800
    half = parse_box("[60, 20, 140, 60]", width=200, height=100).box
    assert box_iou(half, [20, 20, 100, 60]) == pytest.approx(1600 / 4800)
