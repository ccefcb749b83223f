"""How a run whose calls failed names the causes (`culturekb.evals.failures`): failures grouped by what does not
vary per item, each group shown by its first failure's own words (issue 24: "model … at" read as nothing)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from culturekb.errors import RunFailedError
from culturekb.evals.failures import check_failed_share, failure_causes


def _result(*errors: str | None) -> Any:
    preds = [SimpleNamespace(sample_id=f"item{i}", parse_status="json" if e is None else "error", error=e)
             for i, e in enumerate(errors)]
    return SimpleNamespace(runner="cedar", out_dir="/runs/x", predictions={"orig": preds})


def test_failures_are_grouped_by_cause_and_shown_in_their_own_words() -> None:
    refused = "model 'm' at http://127.0.0.1:9/v1: connection failed after {} attempts; check that the server runs"
    gone = "sample '{0}': image file /data/{0}.png does not exist; fix the sample's 'image' path"
    result = _result(refused.format(3), gone.format("a"), refused.format(5), gone.format("b"), gone.format("c"),
                     None)
    failed, total, causes = failure_causes(result)
    assert (failed, total) == (5, 6)
    assert causes == [(gone.format("a"), 3, "item1"), (refused.format(3), 2, "item0")]


def test_a_long_cause_is_cut_after_a_whole_sentence() -> None:
    first = "ProviderError: model 'm' answered with something this client cannot read as JSON. "
    text = first * 3 + "Fix: " + "check the server's logs and its model name " * 10
    (cause, n, _), = failure_causes(_result(text))[2]
    assert n == 1 and cause.endswith(". [...]") and cause.startswith(first) and "…" not in cause
    assert len(cause) <= 410 and cause[:-6] in text


def test_the_share_check_names_the_first_item_and_its_words() -> None:
    with pytest.raises(RunFailedError) as info:
        check_failed_share(_result("the server answered 500 (boom)", "the server answered 500 (boom)", None), 0.5)
    assert "2 of 3 predictions failed" in str(info.value)
    assert "2 x the server answered 500 (boom) (first: item0)" in str(info.value)
    check_failed_share(_result("the server answered 500 (boom)", None, None), 0.5)  # 1 of 3: within the share
