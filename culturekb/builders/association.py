"""Frequency association, paper step 2, Eq. (1), vectorised with numpy.

For a concept q_r with image set N_r and a culture c_j::

    P_r^j(e) = |{v in N_r : label_j(v) = e}| / |N_r|        dominant emotion = argmax_e P_r^j(e)

An image counts once per concept, however often the concept was listed for it. Concepts with support
``|N_r| < min_support`` are left out.

Tie-break (when two or more labels share the top probability), deterministic:

* ``"prior"`` (default): the tied label that is most frequent in that culture's label prior, i.e. among the
  culture's distinct images (each image counted once, over all its concepts' images; or the `label_prior` you
  pass); if the prior ties too, the label that comes first in the scheme.
* ``"scheme-order"``: the tied label that comes first in the scheme (artemis9: contentment, awe, amusement,
  sadness, fear, excitement, disgust, anger, something else).

The counting is one label scatter (to check that each image has one label), one `np.argsort` of
``concept * n_images + image`` (to count each (concept, image) pair once) and one `np.bincount` over
``concept * n_labels + label``; no Python loop runs per input row.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.kb.schemes import EmotionScheme, get_scheme

__all__ = [
    "Association",
    "ArrayAssociation",
    "TieBreak",
    "associate",
    "associate_arrays",
    "dominant_labels",
    "label_priority",
    "pairs_from_samples",
]

logger = logging.getLogger(__name__)

TieBreak = Literal["prior", "scheme-order"]
Occurrence = tuple[str, str, str]
"""(concept, image_id, label) of one culture."""

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Association:
    """One (concept, culture) association: the dominant label and the full distribution P(e)."""

    concept: str
    culture: str
    label: str
    distribution: dict[str, float]
    """Probability of every scheme label (scheme order), summing to 1."""
    support: int
    """|N_r|: the number of distinct images of this culture that show the concept."""
    image_ids: tuple[str, ...]

    @property
    def dominant_emotion(self) -> str:
        """The paper's name for `label`: the argmax of P(e) for this concept in this culture."""
        return self.label

    @property
    def counts(self) -> dict[str, int]:
        """Images per label (support times probability)."""
        return {lab: int(round(p * self.support)) for lab, p in self.distribution.items()}

    def to_tuple(
        self, rationales: Sequence[str] = (), provenance: Mapping[str, Any] | None = None
    ) -> KnowledgeTuple:
        """A `KnowledgeTuple` carrying this association (rationales and verdicts are added by later steps)."""
        return KnowledgeTuple(
            concept=self.concept,
            culture=self.culture,
            label=self.label,
            distribution=dict(self.distribution),
            support=self.support,
            rationales=list(rationales),
            provenance=dict(provenance or {}),
        )


@dataclass(frozen=True)
class ArrayAssociation:
    """Result of `associate_arrays`: counts, supports, distributions and dominant labels as arrays."""

    counts: IntArray
    """(n_concepts, n_labels) images per concept and label."""
    support: IntArray
    """(n_concepts,) distinct images per concept."""
    distribution: npt.NDArray[np.float64]
    """(n_concepts, n_labels) P(e); all-zero rows where support is 0."""
    dominant: IntArray
    """(n_concepts,) index of the dominant label; -1 where support is 0."""
    pair_concept: IntArray
    """Concept of each distinct (concept, image) pair, sorted by concept then image."""
    pair_image: IntArray | None
    """Image of each distinct pair (None when no image ids were given)."""


def label_priority(prior_counts: npt.ArrayLike, tie_break: TieBreak = "prior") -> IntArray:
    """Rank of each label for breaking ties (0 = preferred): by prior count descending, then scheme order."""
    prior = np.asarray(prior_counts, dtype=np.float64)
    n = prior.shape[0]
    if tie_break == "scheme-order":
        return np.arange(n, dtype=np.int64)
    if tie_break != "prior":
        raise ConfigError(f"unknown tie_break {tie_break!r}; use 'prior' or 'scheme-order'")
    order = np.lexsort((np.arange(n), -prior))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n, dtype=np.int64)
    return rank


def dominant_labels(counts: npt.ArrayLike, priority: npt.ArrayLike) -> IntArray:
    """Argmax of each row of `counts`, ties broken by `priority` (lower rank wins); -1 for all-zero rows."""
    c = np.asarray(counts)
    rank = np.asarray(priority, dtype=np.int64)
    n_labels = c.shape[1]
    if c.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    top = c.max(axis=1, keepdims=True)
    score = np.where(c == top, n_labels - rank[None, :], 0)
    dom = score.argmax(axis=1).astype(np.int64)
    dom[top[:, 0] <= 0] = -1
    return dom


def _as_index(a: npt.ArrayLike, n: int, name: str) -> IntArray:
    arr = np.asarray(a)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise DataError(f"{name} must be a 1-D integer array, got shape {arr.shape} and dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise DataError(f"{name} has values outside [0, {n}); got min {arr.min()} and max {arr.max()}")
    return arr


def associate_arrays(
    concept_idx: npt.ArrayLike,
    label_idx: npt.ArrayLike,
    n_concepts: int,
    n_labels: int,
    *,
    image_idx: npt.ArrayLike | None = None,
    tie_break: TieBreak | npt.ArrayLike = "prior",
    image_names: Sequence[Any] | None = None,
) -> ArrayAssociation:
    """Eq. (1) on integer arrays, one row per (concept, image) occurrence of one culture.

    With `image_idx`, repeated (concept, image) rows count once and every image must have one label; without it
    each row is taken to be a distinct (concept, image) pair. `tie_break` is ``"prior"`` (label prior over the
    distinct images, or over the rows without `image_idx`), ``"scheme-order"``, or an explicit rank per label.
    `image_names` (indexed by image index) only makes error messages readable.
    """
    if n_labels < 1 or n_concepts < 0:
        raise ConfigError(f"need n_labels >= 1 and n_concepts >= 0, got {n_labels} and {n_concepts}")
    c = _as_index(concept_idx, n_concepts, "concept_idx")
    lab = _as_index(label_idx, n_labels, "label_idx")
    if c.shape != lab.shape:
        raise DataError(f"concept_idx and label_idx differ in length ({c.size} != {lab.size})")
    img: IntArray | None = None
    if image_idx is not None:
        raw_img = _as_index(image_idx, np.iinfo(np.int64).max, "image_idx")
        if raw_img.shape != c.shape:
            raise DataError(f"image_idx and concept_idx differ in length ({raw_img.size} != {c.size})")
        n_images = max(int(raw_img.max()) + 1 if raw_img.size else 0, 1)
        # one label per image: scatter each row's label to its image, then every row must read its own back
        image_label = np.full(n_images, -1, dtype=np.int64)
        image_label[raw_img] = lab
        conflict = np.flatnonzero(image_label[raw_img] != lab)
        if conflict.size:
            bad = int(raw_img[conflict[0]])
            name = repr(image_names[bad]) if image_names is not None else f"index {bad}"
            raise DataError(
                f"image {name} has more than one label in one culture; give each image its culture-level "
                "(majority) label once"
            )
        # distinct (concept, image) pairs; any row of a pair is representative (one label per image)
        key = c * n_images + raw_img
        order = np.argsort(key)
        key = key[order]
        distinct = np.empty(key.size, dtype=bool)
        distinct[:1] = True
        np.not_equal(key[1:], key[:-1], out=distinct[1:])
        key = key[distinct]
        c = key // n_images
        img = key % n_images
        lab = lab[order[distinct]]
        prior_src = image_label[image_label >= 0]
    else:
        order = np.argsort(c, kind="stable")
        c, lab = c[order], lab[order]
        prior_src = lab
    counts = np.bincount(c * n_labels + lab, minlength=n_concepts * n_labels).reshape(n_concepts, n_labels)
    counts = counts.astype(np.int64, copy=False)
    support = counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = np.where(support[:, None] > 0, counts / np.maximum(support, 1)[:, None], 0.0)
    if isinstance(tie_break, str):
        rank = label_priority(np.bincount(prior_src, minlength=n_labels), tie_break)  # type: ignore[arg-type]
    else:
        rank = np.asarray(tie_break, dtype=np.int64)
        if rank.shape != (n_labels,):
            raise ConfigError(f"an explicit tie_break needs one rank per label ({n_labels}), got shape {rank.shape}")
    return ArrayAssociation(
        counts=counts,
        support=support,
        distribution=dist.astype(np.float64),
        dominant=dominant_labels(counts, rank),
        pair_concept=c,
        pair_image=img,
    )


def _factorise(values: Sequence[Any], what: str, culture: str) -> tuple[list[Any], IntArray]:
    """Sorted vocabulary and the index of each value in it (a C-level map, no per-row Python loop)."""
    try:
        vocab = sorted(set(values))
    except TypeError as exc:
        raise DataError(f"culture {culture!r}: {what} values must all be strings ({exc})") from exc
    index = {v: i for i, v in enumerate(vocab)}
    return vocab, np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))


def associate(
    pairs: Mapping[str, Iterable[Occurrence]],
    scheme: str | EmotionScheme = "artemis9",
    min_support: int = 2,
    tie_break: TieBreak | str = "prior",
    label_prior: Mapping[str, Mapping[str, float]] | None = None,
) -> list[Association]:
    """Eq. (1) for every culture: `pairs[culture]` lists (concept, image_id, label) occurrences.

    Returns one `Association` per (concept, culture) with support >= `min_support`, sorted by culture then
    concept. Labels may be synonyms or translations of scheme labels. See the module docstring for the
    tie-break; `label_prior` (culture -> label -> weight) replaces the prior computed from the images.
    """
    scheme_ = get_scheme(scheme)
    if isinstance(min_support, bool) or not isinstance(min_support, int) or min_support < 1:
        raise ConfigError(f"min_support must be an integer >= 1, got {min_support!r}")
    if tie_break not in ("prior", "scheme-order"):
        raise ConfigError(f"unknown tie_break {tie_break!r}; use 'prior' or 'scheme-order'")
    labels = scheme_.labels
    n_labels = len(labels)
    out: list[Association] = []
    for culture in sorted(pairs):
        rows = list(pairs[culture])
        if not rows:
            continue
        try:
            lengths = set(map(len, rows))
        except TypeError as exc:
            raise DataError(
                f"culture {culture!r}: every occurrence must be a (concept, image_id, label) tuple ({exc})"
            ) from exc
        if lengths != {3}:
            raise DataError(
                f"culture {culture!r}: occurrences have {sorted(lengths)} fields; expected (concept, image_id, label)"
            )
        concepts, images, raw_labels = (list(map(itemgetter(k), rows)) for k in range(3))
        c_vocab, c_idx = _factorise(concepts, "concept", culture)
        i_vocab, i_idx = _factorise(images, "image_id", culture)
        raw_vocab, raw_idx = _factorise(raw_labels, "label", culture)
        to_scheme = np.empty(len(raw_vocab), dtype=np.int64)
        for k, raw in enumerate(raw_vocab):
            found = scheme_.match(str(raw))
            if found is None:
                raise DataError(
                    f"culture {culture!r}: unknown label {raw!r} for scheme {scheme_.name!r}; expected one of "
                    f"{list(labels)} (or a listed synonym/translation)"
                )
            to_scheme[k] = labels.index(found)
        l_idx = to_scheme[raw_idx]
        rank: str | IntArray = tie_break
        if tie_break == "prior" and label_prior is not None and culture in label_prior:
            weights = label_prior[culture]
            unknown = set(weights) - set(labels)
            if unknown:
                raise ConfigError(f"label_prior for {culture!r} names labels not in the scheme: {sorted(unknown)}")
            rank = label_priority([float(weights.get(lab, 0.0)) for lab in labels], "prior")
        try:
            arr = associate_arrays(
                c_idx, l_idx, len(c_vocab), n_labels, image_idx=i_idx, tie_break=rank, image_names=i_vocab
            )
        except DataError as exc:
            raise DataError(f"culture {culture!r}: {exc}") from exc
        assert arr.pair_image is not None
        bounds = np.searchsorted(arr.pair_concept, np.arange(len(c_vocab) + 1)).tolist()
        keep = np.flatnonzero(arr.support >= min_support)
        # bulk conversions: one numpy -> list call each, then only per-association slicing
        image_names = np.asarray([str(i) for i in i_vocab], dtype=object)[arr.pair_image].tolist()
        dists = arr.distribution[keep].tolist()
        dominant = arr.dominant[keep].tolist()
        supports = arr.support[keep].tolist()
        for k, r in enumerate(keep.tolist()):
            out.append(
                Association(
                    concept=str(c_vocab[r]),
                    culture=culture,
                    label=labels[dominant[k]],
                    distribution=dict(zip(labels, dists[k], strict=True)),
                    support=supports[k],
                    image_ids=tuple(image_names[bounds[r] : bounds[r + 1]]),
                )
            )
        logger.debug(
            "culture %s: %d rows, %d concepts, %d with support >= %d",
            culture, len(rows), len(c_vocab), keep.size, min_support,
        )
    return out


def pairs_from_samples(
    samples: Iterable[Sample], concepts: Sequence[Sequence[str]] | None = None, split: str | None = "train"
) -> dict[str, list[Occurrence]]:
    """Per culture, the (concept, image_id, label) occurrences of labelled samples.

    `concepts` gives each sample's concepts in order (as a `ConceptExtractor` returns them); without it,
    `Sample.concepts` is used. Only samples of `split` are used (None: all samples); unlabelled samples are
    skipped, so the KB is built from labelled training data only.
    """
    items = list(samples)
    if concepts is not None and len(concepts) != len(items):
        raise DataError(f"got {len(concepts)} concept lists for {len(items)} samples; give one list per sample")
    out: dict[str, list[Occurrence]] = {}
    for k, s in enumerate(items):
        if s.label is None or (split is not None and s.split != split):
            continue
        cs = concepts[k] if concepts is not None else s.concepts
        if cs is None:
            raise DataError(
                f"sample {s.id!r} has no concepts; run concept extraction first or pass concepts=[...] per sample"
            )
        bucket = out.setdefault(s.culture, [])
        bucket.extend((c, s.image_id, s.label) for c in cs)
    return out
