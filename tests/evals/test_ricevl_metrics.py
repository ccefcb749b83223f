"""RICE-VL's SEA-LAVE and box IoU (culturekb.evals.ricevl.metrics) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.evals.ricevl import metrics as rm

nan = float("nan")


def test_sea_lave_values() -> None:
    assert rm.sea_lave(1, 1, 2) == pytest.approx(1.0)  # (1+1+1)/3
    assert rm.sea_lave(1, 0, 1) == pytest.approx(0.5)  # (1+0+0.5)/3
    assert rm.sea_lave(0, 1, 2) == pytest.approx(2 / 3)
    assert rm.sea_lave(0, 0, 0) == 0.0
    assert rm.sea_lave(1.0, 0.0, 2.0) == pytest.approx(2 / 3)


@pytest.mark.parametrize(("tu", "cu", "ci", "field"), [(2, 0, 0, "TU"), (0, -1, 0, "CU"), (0, 0, 3, "CI"),
                                                        (True, 0, 0, "TU"), (nan, 0, 0, "TU"), ("1", 0, 0, "TU"),
                                                        (0, 0, 1.5, "CI")])
def test_sea_lave_rejects_out_of_range(tu: object, cu: object, ci: object, field: str) -> None:
    with pytest.raises(DataError, match=f"{field}="):
        rm.sea_lave(tu, cu, ci)  # type: ignore[arg-type]


def test_box_iou_by_hand() -> None:
    assert rm.box_iou([0, 0, 2, 2], [1, 1, 3, 3]) == pytest.approx(1 / 7)  # inter 1, union 4+4-1
    assert rm.box_iou([0, 0, 4, 4], [1, 1, 3, 3]) == pytest.approx(0.25)  # contained: 4/16
    assert rm.box_iou([1, 1, 3, 3], [1, 1, 3, 3]) == 1.0
    assert rm.box_iou([0, 0, 1, 1], [1, 0, 2, 1]) == 0.0  # touching edges
    assert rm.box_iou([0, 0, 1, 1], [5, 5, 6, 6]) == 0.0


def test_box_iou_degenerate_and_missing() -> None:
    assert rm.box_iou([1, 1, 1, 3], [0, 0, 2, 2]) == 0.0  # zero width
    assert rm.box_iou([2, 0, 0, 2], [0, 0, 2, 2]) == 0.0  # x2 < x1
    assert rm.box_iou([0, 0, 2, 2], [0, 3, 2, 1]) == 0.0  # degenerate gold
    assert rm.box_iou(None, [0, 0, 2, 2]) == 0.0  # unparsed prediction
    with pytest.raises(DataError, match="expected \\[x1, y1, x2, y2\\]"):
        rm.box_iou([0, 0, 2], [0, 0, 2, 2])
    with pytest.raises(DataError, match="non-finite"):
        rm.box_iou([0, 0, nan, 2], [0, 0, 2, 2])


def test_mean_iou_and_accuracy_at_half() -> None:
    out = rm.mean_iou_by_group([[0, 0, 2, 2], None, [0, 0, 1, 1]], [[1, 1, 3, 3], [0, 0, 1, 1], [0, 0, 1, 1]],
                              ["MY", "MY", "SG"])
    assert out == {"MY": pytest.approx(1 / 14), "SG": 1.0}  # (1/7 + 0) / 2
    assert rm.iou_accuracy([0.5, 0.49, 1.0, 0.0]) == 0.5  # 0.5 counts (>=)
    assert rm.iou_accuracy([0.5, 0.7], threshold=0.75) == 0.0
    assert math.isnan(rm.iou_accuracy([]))
    with pytest.raises(ConfigError):
        rm.iou_accuracy([0.2], threshold=1.5)
