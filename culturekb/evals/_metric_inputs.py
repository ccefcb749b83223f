"""Checks and grouping shared by the metric modules (`culturekb.evals.metrics`, `culturekb.evals.stats` and the
benchmarks' own metrics): aligned inputs, required golds, per-group application, deterministic key order.

The conventions they enforce are written once, in `culturekb.evals.metrics`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from culturekb.errors import DataError

__all__ = ["NAN", "K", "check_aligned", "check_golds", "sorted_dict", "group_indices", "per_group"]

NAN = float("nan")
"""An undefined value (a zero denominator); reports write it as JSON null and ``n/a``."""

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


def check_aligned(name_a: str, a: Sequence[Any], name_b: str, b: Sequence[Any], where: str) -> None:
    """`DataError` unless `a` and `b` have one item each per position (`where` names the metric)."""
    if len(a) != len(b):
        raise DataError(
            f"{where}: {name_a} has {len(a)} items but {name_b} has {len(b)}; pass one {name_a[:-1]} per "
            f"{name_b[:-1]}, in the same order"
        )


def check_golds(golds: Sequence[str | None], where: str) -> None:
    """`DataError` naming the first position whose gold label is None."""
    for i, g in enumerate(golds):
        if g is None:
            raise DataError(f"{where}: gold label at position {i} is None; every scored item needs a gold label")


def sorted_dict(d: Mapping[K, Any]) -> dict[K, Any]:
    """`d` with its keys sorted by ``str(key)``, so that reports are deterministic."""
    return {k: d[k] for k in sorted(d, key=str)}


def group_indices(groups: Sequence[K]) -> dict[K, list[int]]:
    """The positions of each group that occurs, groups sorted by ``str(key)``."""
    out: dict[K, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        out[g].append(i)
    return sorted_dict(out)


def per_group(metric: Callable[[list[str | None], list[str | None]], R], preds: Sequence[str | None],
               golds: Sequence[str | None], groups: Sequence[K], where: str) -> dict[K, R]:
    """`metric(preds, golds)` over the items of each group that occurs (groups sorted by ``str(key)``)."""
    check_aligned("preds", preds, "golds", golds, where)
    check_aligned("preds", preds, "groups", groups, where)
    return {g: metric([preds[i] for i in idx], [golds[i] for i in idx]) for g, idx in group_indices(groups).items()}
