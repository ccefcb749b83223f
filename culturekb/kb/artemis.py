"""ArtEmis aggregation: from parsed annotations to one `Sample` per (image, culture), and the split by image.

The file formats are read in `culturekb.kb.loaders`; this module holds the rules that turn annotations into
culture-level samples:

* one painting has one art style (it names the image folder) and one split (the split is by image);
* one row per annotation (ArtEmis / ArtELingo releases): the culture-level label of an image is the label chosen
  by the most annotators of that culture; an image whose top label is tied is dropped for that culture and
  counted (``dropped_no_majority``);
* one row per image (the ``artemis_dev.csv`` subset): the label is already the majority label and the utterance
  the joined explanations; a repeated (painting, culture) row is then an error.

`split_by_image` assigns train/valid/test by image, the same for every culture, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme

__all__ = [
    "Annotation",
    "Aggregated",
    "aggregate_annotations",
    "aggregate_repeated",
    "is_per_image",
    "split_by_image",
    "parse_painting_slug",
    "is_western_style",
]


@dataclass(frozen=True)
class Annotation:
    """One parsed annotation row: who (culture) said what (label, utterance) about which painting, and where."""

    painting: str
    art_style: str
    culture: str
    label: str
    utterance: str
    split: str | None
    repetition: int | None
    line: int


@dataclass
class _Image:
    art_style: str
    first_line: int
    splits: dict[str, int] = field(default_factory=dict)  # split -> first line
    repetition: int | None = None


@dataclass
class _Group:
    lines: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    utterances: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Aggregated:
    """Samples made from annotations, with the images dropped per culture for a tied top label."""

    samples: tuple[Sample, ...]
    dropped: dict[str, tuple[str, ...]]
    per_image: bool


# -- art styles and painting slugs ---------------------------------------------------------------------------
def _norm_style(style: str) -> str:
    return re.sub(r"[\s\-_]+", "_", style.strip().lower())


_STYLE_CACHE: dict[str, dict[str, bool]] = {}


def _style_table() -> dict[str, bool]:
    table = _STYLE_CACHE.get("default")
    if table is None:
        raw = json.loads(resources.files("culturekb.data").joinpath("art_styles.json").read_text("utf-8"))
        table = {_norm_style(s): True for s in raw["western"]}
        table.update({_norm_style(s): False for s in raw["non_western"]})
        _STYLE_CACHE["default"] = table
    return table


def is_western_style(art_style: str | None) -> bool | None:
    """True/False for an art style listed in ``culturekb/data/art_styles.json``; None for an unlisted style.

    WikiArt styles are European and American movements except the Japanese woodblock traditions (``Ukiyo_e``);
    the non-Western list also names Chinese, Korean, Indian, Islamic and mural traditions used by other data.
    """
    if not art_style:
        return None
    return _style_table().get(_norm_style(art_style))


_YEAR_TAIL = re.compile(r"-(?:1[0-9]{3}|20[0-9]{2})(?:-[0-9]{1,2})?$")
_COPY_TAIL = re.compile(r"\(\d+\)$")
_NUMBER_TAIL = re.compile(r"-([0-9]{1,2})$")
_KEEP_NUMBER_AFTER = {"no", "n", "nr", "number", "op", "opus", "part", "vol", "study", "composition", "series"}


def parse_painting_slug(slug: str) -> tuple[str, str]:
    """``"agostino-carracci_venus-and-mars-1600"`` -> ``("agostino carracci", "venus and mars")``.

    The WikiArt slug is ``artist_title``; a trailing year (``-1600``), a copy marker (``(2)``) and a small
    disambiguation number (``self-portrait-1``) are removed, except after words such as "no" or "op"
    (``composition-no-3`` keeps its number). Hyphens become spaces.
    """
    artist, sep, title = slug.strip().partition("_")
    if not sep:
        artist, title = "", artist
    title = _COPY_TAIL.sub("", title.strip())
    stripped = _YEAR_TAIL.sub("", title)
    if stripped == title:
        m = _NUMBER_TAIL.search(title)
        if m:
            head = title[: m.start()]
            last = head.rsplit("-", 1)[-1].lower()
            if head and last not in _KEEP_NUMBER_AFTER:
                stripped = head
    words = [w for w in re.split(r"[-_\s]+", stripped) if w]
    return " ".join(artist.replace("_", " ").split("-")).strip(), " ".join(words).lower()


# -- grouping and majority -----------------------------------------------------------------------------------
def _group(annotations: Sequence[Annotation], source: Path, keep: set[str] | None
           ) -> tuple[dict[str, _Image], dict[tuple[str, str], _Group]]:
    """Per-image facts (style, split, annotator count) checked across all rows, and per-(image, culture) groups
    of the kept cultures."""
    images: dict[str, _Image] = {}
    groups: dict[tuple[str, str], _Group] = {}
    for a in annotations:
        where = f"{source}, line {a.line}"
        img = images.get(a.painting)
        if img is None:
            img = images[a.painting] = _Image(art_style=a.art_style, first_line=a.line)
        elif img.art_style != a.art_style:
            raise DataError(
                f"{where}: painting {a.painting!r} has art_style {a.art_style!r} here but {img.art_style!r} on line "
                f"{img.first_line}; one painting has one style (it names the image folder). Fix one of the rows"
            )
        if a.split is not None:
            img.splits.setdefault(a.split, a.line)
            if len(img.splits) > 1:
                seen = ", ".join(f"{s!r} (line {ln})" for s, ln in img.splits.items())
                raise DataError(
                    f"{where}: painting {a.painting!r} is in more than one split: {seen}; the split is by image, "
                    "so all rows of one painting need the same split"
                )
        if a.repetition is not None:
            img.repetition = a.repetition
        if keep is not None and a.culture not in keep:
            continue
        g = groups.setdefault((a.painting, a.culture), _Group())
        g.lines.append(a.line)
        g.labels.append(a.label)
        g.utterances.append(a.utterance)
    return images, groups


def is_per_image(layout: str, has_repetition: bool, annotations_per_group: Sequence[int]) -> bool:
    """Whether rows are one per image: forced by `layout`, else (``auto``) a ``repetition`` column or no
    (painting, culture) pair that repeats."""
    if layout not in ("auto", "per-annotation", "per-image"):
        raise ConfigError(f"unknown CSV layout {layout!r}; use 'auto', 'per-annotation' or 'per-image'")
    return layout == "per-image" or (
        layout == "auto" and (has_repetition or all(n == 1 for n in annotations_per_group))
    )


def aggregate_annotations(
    annotations: Sequence[Annotation],
    scheme: EmotionScheme,
    *,
    source: str | Path,
    layout: str = "auto",
    has_repetition: bool = False,
    data_root: Path | None = None,
    keep: set[str] | None = None,
) -> Aggregated:
    """One `Sample` per (painting, culture) of the kept cultures; see the module docstring for the rules.

    Sample fields: ``id = "<painting>::<culture>"``, ``label`` (culture-level majority), ``explanations`` (that
    culture's non-empty utterances, in file order), ``title``, ``split``, ``image`` (under `data_root`, else None).
    """
    source = Path(source)
    images, groups = _group(annotations, source, keep)
    per_image = is_per_image(layout, has_repetition, [len(g.lines) for g in groups.values()])
    if per_image:
        for (painting, culture), g in groups.items():
            if len(g.lines) > 1:
                raise DataError(
                    f"{source}, line {g.lines[1]}: painting {painting!r} appears again for culture {culture!r} "
                    f"(first on line {g.lines[0]}); a one-row-per-image CSV has one row per painting and culture. "
                    "Remove the duplicate, or drop the 'repetition' column if the file has one row per annotation"
                )
    samples: list[Sample] = []
    dropped: dict[str, list[str]] = {}
    for (painting, culture), g in groups.items():
        dropped.setdefault(culture, [])
        counts = Counter(g.labels)
        top = max(counts.values())
        winners = [lab for lab, n in counts.items() if n == top]
        if len(winners) > 1:
            dropped[culture].append(painting)
            continue
        img = images[painting]
        artist, title = parse_painting_slug(painting)
        relpath = f"{img.art_style}/{painting}.jpg"
        metadata: dict[str, Any] = {
            "image_id": painting,
            "art_style": img.art_style,
            "western": is_western_style(img.art_style),
            "artist": artist,
            "image_relpath": relpath,
            "explanation_labels": [lab for lab, u in zip(g.labels, g.utterances, strict=True) if u],
            "n_annotators": img.repetition if (per_image and img.repetition) else len(g.labels),
            "source": source.name,
            "source_line": g.lines[0],
        }
        if not per_image:
            metadata["label_counts"] = {lab: counts[lab] for lab in scheme.labels if counts.get(lab)}
        samples.append(Sample(
            id=f"{painting}::{culture}",
            culture=culture,
            image=str(data_root / relpath) if data_root is not None else None,
            label=winners[0],
            explanations=[u for u in g.utterances if u],
            title=title or None,
            split=next(iter(img.splits), None),
            metadata=metadata,
        ))
    return Aggregated(tuple(samples), {c: tuple(v) for c, v in dropped.items()}, per_image)


# -- splitting -----------------------------------------------------------------------------------------------
def _rank_key(image_id: str, seed: int) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}\x00{image_id}".encode()).hexdigest(), image_id


def split_by_image(
    samples: Sequence[Sample], ratios: tuple[float, float, float] = (8, 1, 1), seed: int = 0
) -> list[Sample]:
    """Give samples without a split a train/valid/test split, by image id and the same for every culture.

    Images are ranked by ``sha256(seed, image_id)`` and the first ``round(n * r_train / sum)`` go to train, the
    next ``round(n * r_valid / sum)`` to valid, the rest to test: exact proportions, independent of input order,
    and reproducible for a given seed. An image that already has a split (in any of its samples) keeps it for all
    its samples; samples keep their order.
    """
    if len(ratios) != 3 or any((not math.isfinite(r)) or r < 0 for r in ratios) or sum(ratios) <= 0:
        raise ConfigError(f"split ratios must be three non-negative numbers with a positive sum, got {ratios}")
    fixed: dict[str, str] = {}
    for s in samples:
        if s.split:
            prev = fixed.setdefault(s.image_id, s.split)
            if prev != s.split:
                raise DataError(
                    f"image {s.image_id!r} has samples in split {prev!r} and {s.split!r} (sample {s.id!r}); "
                    "the split is by image, so give all its samples the same split"
                )
    todo = sorted({s.image_id for s in samples} - fixed.keys(), key=lambda i: _rank_key(i, seed))
    total = float(sum(ratios))
    n = len(todo)
    n_train = min(n, math.floor(n * ratios[0] / total + 0.5))
    n_valid = min(n - n_train, math.floor(n * ratios[1] / total + 0.5))
    if ratios[2] == 0:
        n_valid = n - n_train
    assigned = dict(fixed)
    for i, image_id in enumerate(todo):
        assigned[image_id] = "train" if i < n_train else "valid" if i < n_train + n_valid else "test"
    return [s if s.split else s.model_copy(update={"split": assigned[s.image_id]}) for s in samples]


def aggregate_repeated(samples: list[Sample], lines: dict[str, str], scheme: EmotionScheme, rule: str = "majority"
                       ) -> tuple[list[Sample], dict[str, list[str]], int, list[dict[str, Any]]]:
    """Samples with the rows that repeat an item (same ``image_id``) in one culture merged, the rule ArtEmis rows
    follow: the label chosen by most rows; a tied top label drops the item for that culture (returned per
    culture); explanations and concepts of every row kept, ``label_counts`` and the rows' places in metadata.
    ``rule="none"`` raises DataError naming each repeated item's file and lines. Returns (samples, dropped image ids
    per culture, rows merged into another row's sample, the dropped items with their rows and label counts)."""
    groups: dict[tuple[str, str], list[Sample]] = {}
    for s in samples:
        groups.setdefault((str(s.metadata.get("image_id") or s.id), s.culture), []).append(s)
    repeated = {k: g for k, g in groups.items() if len(g) > 1}
    if not repeated:
        return samples, {}, 0, []
    if rule == "none":
        shown = [f"{image!r} in culture {culture!r}: " + "; ".join(lines.get(s.id, s.id) for s in g)
                 for (image, culture), g in list(repeated.items())[:5]]
        raise DataError(f"{len(repeated)} item(s) appear more than once in one culture (--aggregate none): "
                        + " | ".join(shown) + ". Remove the repeats, or read them as annotations with "
                        "--aggregate majority")
    out: list[Sample] = []
    dropped: dict[str, list[str]] = {}
    tied: list[dict[str, Any]] = []
    for (image, culture), g in groups.items():
        if len(g) == 1:
            out.append(g[0])
            continue
        counts = Counter(s.label for s in g if s.label is not None)
        top = max(counts.values(), default=0)
        winners = [lab for lab, n in counts.items() if n == top]
        if len(winners) != 1:
            dropped.setdefault(culture, []).append(image)
            tied.append({"item": image, "culture": culture, "rows": [lines.get(s.id, s.id) for s in g],
                         "labels": {lab: counts[lab] for lab in scheme.labels if counts.get(lab)}})
            continue
        first = g[0]
        meta = {**first.metadata, "label_counts": {lab: counts[lab] for lab in scheme.labels if counts.get(lab)},
                "aggregated_from": [lines.get(s.id, s.id) for s in g],
                "explanation_labels": [s.label for s in g for _ in s.explanations]}
        concepts = list(dict.fromkeys(c for s in g for c in (s.concepts or []))) or None
        out.append(first.model_copy(update={
            "label": winners[0], "explanations": [e for s in g for e in s.explanations], "concepts": concepts,
            "metadata": meta}))
    tied_keys = {(t["item"], t["culture"]) for t in tied}
    merged = sum(len(g) - 1 for k, g in repeated.items() if k not in tied_keys)
    return out, dropped, merged, tied
