"""Eq. (1) frequency association: hand-computed distributions, ties, min_support, array API, naive cross-check."""

from __future__ import annotations

import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from culturekb.builders.association import (
    Association,
    associate,
    associate_arrays,
    dominant_labels,
    label_priority,
    pairs_from_samples,
)
from culturekb.errors import ConfigError, DataError
from culturekb.kb import KnowledgeTuple, Sample, get_scheme

A9 = get_scheme("artemis9")

# culture en: image labels v1 sadness, v2 sadness, v3 awe, v4 contentment, v5 awe
EN = [
    ("moon", "v1", "sadness"),
    ("moon", "v2", "sadness"),
    ("moon", "v3", "awe"),
    ("moon", "v1", "sadness"),  # repeated (concept, image): counts once
    ("tree", "v3", "awe"),
    ("tree", "v4", "contentment"),  # tree: awe 1, contentment 1 -> tie
    ("lamp", "v5", "awe"),  # support 1
]


def by_key(out: list[Association]) -> dict[tuple[str, str], Association]:
    return {(a.culture, a.concept): a for a in out}


def test_hand_computed_distribution() -> None:
    out = by_key(associate({"en": EN}, "artemis9", min_support=2))
    moon = out[("en", "moon")]
    assert moon.support == 3
    assert moon.image_ids == ("v1", "v2", "v3")
    assert moon.label == "sadness" == moon.dominant_emotion
    assert moon.distribution["sadness"] == pytest.approx(2 / 3)
    assert moon.distribution["awe"] == pytest.approx(1 / 3)
    assert list(moon.distribution) == list(A9.labels)
    assert sum(moon.distribution.values()) == pytest.approx(1.0)
    assert moon.counts == {**dict.fromkeys(A9.labels, 0), "sadness": 2, "awe": 1}


def test_min_support() -> None:
    assert ("en", "lamp") not in by_key(associate({"en": EN}, min_support=2))
    lamp = by_key(associate({"en": EN}, min_support=1))[("en", "lamp")]
    assert lamp.support == 1 and lamp.label == "awe" and lamp.distribution["awe"] == 1.0
    assert associate({"en": EN}, min_support=4) == []
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="min_support"):
            associate({"en": EN}, min_support=bad)  # type: ignore[arg-type]


def test_tie_break_prior_then_scheme_order() -> None:
    # prior over distinct en images: sadness 2 (v1, v2), awe 2 (v3, v5), contentment 1 (v4)
    tree = by_key(associate({"en": EN}, tie_break="prior"))[("en", "tree")]
    assert tree.distribution["awe"] == tree.distribution["contentment"] == 0.5
    assert tree.label == "awe"  # more frequent in the prior, although contentment comes first in the scheme
    tree_so = by_key(associate({"en": EN}, tie_break="scheme-order"))[("en", "tree")]
    assert tree_so.label == "contentment"
    # a tie in the prior as well falls back to scheme order: awe (index 1) before sadness (index 3)
    tied = [("x", "a", "sadness"), ("x", "b", "awe")]
    assert associate({"zh": tied})[0].label == "awe"
    # an explicit prior overrides the one computed from the images
    prior = {"en": {"contentment": 10.0, "awe": 1.0}}
    assert by_key(associate({"en": EN}, label_prior=prior))[("en", "tree")].label == "contentment"
    with pytest.raises(ConfigError, match="tie_break"):
        associate({"en": EN}, tie_break="random")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="names labels not in the scheme"):
        associate({"en": EN}, label_prior={"en": {"joy": 1.0}})


def test_cultures_are_independent_and_sorted() -> None:
    zh = [("moon", "v1", "悲伤"), ("moon", "v9", "sad"), ("moon", "v8", "contentment")]  # labels via translations
    out = associate({"zh": zh, "en": EN}, min_support=2)
    assert [(a.culture, a.concept) for a in out] == [("en", "moon"), ("en", "tree"), ("zh", "moon")]
    zmoon = out[-1]
    assert zmoon.label == "sadness" and zmoon.support == 3 and zmoon.image_ids == ("v1", "v8", "v9")
    assert associate({"ar": []}) == []


def test_bad_input() -> None:
    with pytest.raises(DataError, match=r"culture 'en': unknown label 'bliss'.*contentment"):
        associate({"en": [("moon", "v1", "bliss")]})
    with pytest.raises(DataError, match=r"culture 'en': image 'v1' has more than one label"):
        associate({"en": [("moon", "v1", "awe"), ("tree", "v1", "fear")]})
    with pytest.raises(DataError, match=r"\(concept, image_id, label\)"):
        associate({"en": [("moon", "v1")]})  # type: ignore[list-item]
    with pytest.raises(DataError, match=r"\(concept, image_id, label\)"):
        associate({"en": [("moon", "v1", "awe"), ("moon", "v2")]})  # type: ignore[list-item]
    with pytest.raises(DataError, match="strings"):
        associate({"en": [("moon", "v1", "awe"), (None, "v2", "awe")]})  # type: ignore[list-item]


def test_to_tuple() -> None:
    moon = by_key(associate({"en": EN}))[("en", "moon")]
    t = moon.to_tuple(["the moon is lonely"], {"build_id": "b1"})
    assert isinstance(t, KnowledgeTuple)
    assert (t.concept, t.culture, t.label, t.support) == ("moon", "en", "sadness", 3)
    assert t.rationales == ["the moon is lonely"]
    assert t.provenance == {"build_id": "b1"} and t.distribution == moon.distribution


# -- array API -------------------------------------------------------------------------------------------------
def test_associate_arrays_counts() -> None:
    # concepts 0..2, labels 0..2; concept 2 never occurs
    res = associate_arrays([0, 0, 1, 0, 1], [1, 1, 2, 0, 2], n_concepts=3, n_labels=3, tie_break="scheme-order")
    assert res.counts.tolist() == [[1, 2, 0], [0, 0, 2], [0, 0, 0]]
    assert res.support.tolist() == [3, 2, 0]
    assert res.dominant.tolist() == [1, 2, -1]
    assert res.distribution[0].tolist() == pytest.approx([1 / 3, 2 / 3, 0])
    assert res.distribution[2].tolist() == [0, 0, 0]
    assert res.pair_image is None


def test_associate_arrays_dedupes_images_and_breaks_ties() -> None:
    # image 0 (label 1) listed twice for concept 0; concept 1: images 1 (label 0) and 2 (label 2) -> tie
    c = [0, 0, 0, 1, 1]
    img = [0, 0, 3, 1, 2]
    lab = [1, 1, 0, 0, 2]
    res = associate_arrays(c, lab, 2, 3, image_idx=img, tie_break="scheme-order")
    assert res.support.tolist() == [2, 2]
    assert res.counts.tolist() == [[1, 1, 0], [1, 0, 1]]
    assert res.dominant.tolist() == [0, 0]
    ranked = associate_arrays(c, lab, 2, 3, image_idx=img, tie_break=np.array([2, 1, 0]))
    assert ranked.dominant.tolist() == [1, 2]
    assert ranked.pair_concept.tolist() == [0, 0, 1, 1] and ranked.pair_image is not None
    assert ranked.pair_image.tolist() == [0, 3, 1, 2]


def test_array_helpers_and_errors() -> None:
    assert label_priority([1, 5, 5, 0]).tolist() == [2, 0, 1, 3]
    assert label_priority([1, 5, 5, 0], "scheme-order").tolist() == [0, 1, 2, 3]
    assert dominant_labels(np.array([[2, 2, 1], [0, 0, 0]]), np.array([1, 0, 2])).tolist() == [1, -1]
    with pytest.raises(DataError, match="outside"):
        associate_arrays([0, 3], [0, 0], 3, 2)
    with pytest.raises(DataError, match="differ in length"):
        associate_arrays([0, 1], [0], 3, 2)
    with pytest.raises(DataError, match="integer"):
        associate_arrays([0.5], [0], 3, 2)
    with pytest.raises(ConfigError, match="one rank per label"):
        associate_arrays([0], [0], 1, 2, tie_break=np.array([0]))
    with pytest.raises(DataError, match="more than one label"):
        associate_arrays([0, 1], [0, 1], 2, 2, image_idx=[5, 5])


def naive(pairs: dict[str, list[tuple[str, str, str]]], min_support: int) -> dict[tuple[str, str], tuple[str, int]]:
    """Per-row Python reference: distinct images per concept, prior over distinct images, prior/scheme tie-break."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    for culture, rows in pairs.items():
        seen: set[tuple[str, str]] = set()
        counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        image_label: dict[str, str] = {}
        for concept, image, label in rows:
            image_label[image] = label
            if (concept, image) not in seen:
                seen.add((concept, image))
                counts[concept][label] += 1
        prior = Counter(image_label.values())
        for concept, cnt in counts.items():
            support = sum(cnt.values())
            if support < min_support:
                continue
            best = max(A9.labels, key=lambda lab: (cnt[lab], prior[lab], -A9.labels.index(lab)))
            out[(culture, concept)] = (best, support)
    return out


def test_matches_naive_reference_on_random_data() -> None:
    rng = random.Random(7)
    pairs: dict[str, list[tuple[str, str, str]]] = {}
    for culture in ("en", "zh", "ar"):
        image_label = {f"img{i}": rng.choice(A9.labels[:4]) for i in range(60)}
        pairs[culture] = [
            (f"c{rng.randrange(25)}", img, image_label[img]) for img in rng.choices(list(image_label), k=400)
        ]
    vec = {(a.culture, a.concept): (a.label, a.support) for a in associate(pairs, min_support=2)}
    assert vec == naive(pairs, 2)
    assert len(vec) > 50


def test_pairs_from_samples() -> None:
    samples = [
        Sample(id="a::en", culture="en", label="awe", split="train", concepts=["moon"], metadata={"image_id": "a"}),
        Sample(id="a::zh", culture="zh", label="sadness", split="train", concepts=["moon"], metadata={"image_id": "a"}),
        Sample(id="b::en", culture="en", label="fear", split="test", concepts=["moon"], metadata={"image_id": "b"}),
        Sample(id="c::en", culture="en", split="train", concepts=["moon"]),  # unlabelled
    ]
    pairs = pairs_from_samples(samples)
    assert pairs == {"en": [("moon", "a", "awe")], "zh": [("moon", "a", "sadness")]}
    assert len(pairs_from_samples(samples, split=None)["en"]) == 2
    explicit = pairs_from_samples(samples[:1], concepts=[["sky", "moon"]])
    assert explicit == {"en": [("sky", "a", "awe"), ("moon", "a", "awe")]}
    with pytest.raises(DataError, match="one list per sample"):
        pairs_from_samples(samples, concepts=[["x"]])
    with pytest.raises(DataError, match="has no concepts"):
        pairs_from_samples([Sample(id="x", culture="en", label="awe", split="train")])
