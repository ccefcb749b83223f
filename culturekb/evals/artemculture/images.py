"""Where an image run's images are, checked before any model is built or called.

An ArtEmis / ArtELingo CSV names no image file: each row's image is ``<data_root>/<art_style>/<painting>.jpg``
(the layout of the ArtEmis WikiArt download, `DEFAULT_IMAGE_TEMPLATE`). A JSONL data file names its images in
``image`` (relative to ``--data-root``, else to the file's folder, or a URL). ``--image-template`` replaces both
with a format string over each item's fields: its metadata (``art_style``, ``artist`` ...), ``painting`` /
``image_id`` (the image id), ``id`` and ``culture``, under ``--data-root``.

`check_images` counts the items of a run whose image is a URL or an existing file; `require_images` refuses the
run (DataError, exit 2) when any is missing, naming the layout it looked for, an example path, and the fixes:
``--data-root``, ``--image-template``, or ``--text-only`` to run without images on purpose. Nothing half-done: a
run with some images missing is refused too, listing how many and the first few paths, rather than sending a
mix of image and text prompts. `text_only` strips the images, so every item gets the text prompt.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb._io import is_uri, resolve_image_ref
from culturekb.errors import DataError
from culturekb.kb.schema import Sample

__all__ = [
    "DEFAULT_IMAGE_TEMPLATE",
    "ImageCheck",
    "image_fields",
    "wants_image",
    "apply_image_template",
    "check_images",
    "require_images",
    "describe_images",
    "text_only",
]

DEFAULT_IMAGE_TEMPLATE = "{art_style}/{painting}.jpg"
"""The ArtEmis layout: the WikiArt style folder, then the painting slug with ``.jpg``."""

_SHOWN_MISSING = 3


@dataclass(frozen=True)
class ImageCheck:
    """What `check_images` found among a run's items."""

    items: int
    """Items checked."""
    with_reference: int
    """Items that name an image (a path, a layout or a URL); the others are text items."""
    found: int
    """Items whose image is a URL or an existing file."""
    missing: tuple[str, ...]
    """The paths looked for and not found, in item order."""
    layout: str
    """How the paths were made: ``--image-template '...'``, the ArtEmis layout, or the data's ``image`` field."""
    data_root: str | None

    @property
    def is_image_run(self) -> bool:
        """Whether the data has images at all (else it is a text dataset)."""
        return self.with_reference > 0

    def to_dict(self) -> dict[str, Any]:
        """The report's record of the check."""
        return {"items": self.items, "with_image_reference": self.with_reference, "found": self.found,
                "missing": len(self.missing), "layout": self.layout, "data_root": self.data_root}


def image_fields(sample: Sample) -> dict[str, str]:
    """The fields an image template may name: the item's metadata (strings and numbers), ``painting`` and
    ``image_id`` (the image id), ``id`` and ``culture``."""
    fields = {k: str(v) for k, v in sample.metadata.items() if isinstance(v, str | int | float) and
              not isinstance(v, bool)}
    fields.setdefault("image_id", sample.image_id)
    fields.setdefault("painting", sample.image_id)
    fields.update(id=sample.id, culture=sample.culture)
    return fields


def wants_image(sample: Sample) -> bool:
    """Whether the item names an image: an ``image`` value, or the ArtEmis layout (a CSV row read without
    ``--data-root`` keeps its relative path in ``metadata['image_relpath']``)."""
    return bool(sample.image) or bool(sample.metadata.get("image_relpath"))


def _template_fields(template: str) -> list[str]:
    try:
        return [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise DataError(f"--image-template {template!r} is not a format string ({exc}); write fields in braces, "
                        f"e.g. {DEFAULT_IMAGE_TEMPLATE!r}") from exc


def apply_image_template(samples: Sequence[Sample], template: str, data_root: str | Path | None,
                         base_dir: str | Path | None = None) -> list[Sample]:
    """`samples` with ``image`` made from `template` over each item's fields (`image_fields`), under `data_root`
    (else `base_dir`, else the working folder). A field an item lacks raises DataError naming the item, the field
    and the fields it has."""
    names = _template_fields(template)
    if not names:
        raise DataError(f"--image-template {template!r} names no field, so every item would get the same image; "
                        f"name the item's fields in braces, e.g. {DEFAULT_IMAGE_TEMPLATE!r}")
    out = []
    for s in samples:
        fields = image_fields(s)
        absent = [n for n in names if n not in fields]
        if absent:
            raise DataError(f"item {s.id!r}: --image-template {template!r} names {absent}, which the item does not "
                            f"have; its fields are {sorted(fields)}")
        ref = template.format(**fields)
        image = resolve_image_ref(ref, f"item {s.id!r} (--image-template)", data_root=data_root, base_dir=base_dir)
        out.append(s.model_copy(update={"image": image}))
    return out


def text_only(samples: Sequence[Sample]) -> list[Sample]:
    """`samples` without their images: every item gets the text prompt (``--text-only``)."""
    return [s.model_copy(update={"image": None}) if s.image else s for s in samples]


def _layout(samples: Sequence[Sample], template: str | None) -> str:
    if template is not None:
        return f"--image-template {template!r}"
    if any(s.metadata.get("image_relpath") for s in samples):
        return f"the ArtEmis layout <data-root>/{DEFAULT_IMAGE_TEMPLATE}"
    return "the data's 'image' field"


def check_images(samples: Sequence[Sample], *, data_root: str | Path | None = None,
                 template: str | None = None) -> ImageCheck:
    """Count the items whose image can be sent: a URL, or a local file that exists. An ArtEmis row read without
    a data root (image None, ``image_relpath`` kept) counts as missing at its relative path."""
    found = 0
    missing: list[str] = []
    with_ref = 0
    for s in samples:
        if not wants_image(s):
            continue
        with_ref += 1
        ref = s.image or str(s.metadata.get("image_relpath"))
        if s.image and (is_uri(ref) or Path(ref).is_file()):
            found += 1
        else:
            missing.append(ref)
    return ImageCheck(items=len(samples), with_reference=with_ref, found=found, missing=tuple(missing),
                      layout=_layout(samples, template), data_root=None if data_root is None else str(data_root))


def require_images(check: ImageCheck, *, what: str = "this run") -> None:
    """Refuse `check`'s run (DataError) unless every item that names an image has it; say what was looked for
    and the three ways out."""
    if not check.missing:
        return
    n_missing = len(check.missing)
    shown = ", ".join(repr(p) for p in check.missing[:_SHOWN_MISSING])
    more = f" and {n_missing - _SHOWN_MISSING} more" if n_missing > _SHOWN_MISSING else ""
    where = (f"under --data-root {check.data_root}" if check.data_root is not None
             else "with no --data-root given (ArtEmis rows name no file of their own)"
             if "ArtEmis" in check.layout else "with no --data-root given")
    head = ("none of the" if check.found == 0 else f"{n_missing} of the") + f" {check.with_reference} items' images"
    raise DataError(
        f"{what} sends each item's image to the model, but {head} were found: looked for {check.layout} {where}; "
        f"missing: {shown}{more}. Give --data-root FOLDER (the folder the paths are relative to; for ArtEmis, the "
        f"one holding the art-style folders), --image-template '{DEFAULT_IMAGE_TEMPLATE}' (or your own files' "
        "layout, over the item's fields) if the images are laid out otherwise, or --text-only to run without "
        "images on purpose. No model was called"
    )


def describe_images(check: ImageCheck, items_with_image: int, items: int, *, text_only_run: bool) -> str:
    """One line for the report: how many items went to the model with an image, or that the run was text-only."""
    if text_only_run:
        return (f"text-only run (--text-only): no image sent; {items} items asked with the text prompts (the "
                "item's text or title)")
    if not check.is_image_run:
        return f"text data: no item names an image; {items} items asked with the text prompts"
    return f"{items_with_image} of {items} items sent with their image ({check.layout})"
