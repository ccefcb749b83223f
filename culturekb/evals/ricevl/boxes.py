"""Bounding boxes out of free model output, for visual grounding (RICE-VL).

`parse_box` reads the forms VLMs commonly produce and returns absolute ``[x1, y1, x2, y2]`` pixels:

- Qwen2-VL box tokens ``<|box_start|>(x1,y1),(x2,y2)<|box_end|>`` and Qwen-VL ``<box>(x1,y1),(x2,y2)</box>``:
  coordinates on a 0..1000 grid;
- ``<box>[[x1, y1, x2, y2]]</box>`` (Shikra / CogVLM style): 0..1000 grid;
- JSON: ``{"bbox_2d": [..]}`` (Qwen2.5-VL, absolute pixels), ``{"bbox" | "box" | "bounding_box" |
  "coordinates": [..]}``, ``{"x1", "y1", "x2", "y2"}``, ``{"xmin", "ymin", "xmax", "ymax"}``, ``{"x", "y", "w" |
  "width", "h" | "height"}``, ``{"left", "top", "width", "height"}``; also a list of such objects (the first with a
  box is used);
- a bare list or tuple of four numbers ``[x1, y1, x2, y2]``, or two points ``(x1, y1), (x2, y2)``.

Scale: ``auto`` reads boxes whose numbers are all within [0, 1] as normalised, box tokens as 0..1000, anything else
as pixels; force one with ``scale=`` (``pixels``, ``unit``, ``thousandths``). Layout: ``auto`` takes x/y/w/h only
when the keys say so or the answer says "x, y, w, h" / "xywh" / "width and height"; force with ``layout=``.

Gold boxes in data files name their form with a `BOX_FORMATS` value (``xyxy``, ``xywh``, ``xyxy_norm``,
``xywh_norm``, ``xyxy_1000``); `convert_box` turns them into pixels with the same rule (`to_pixels`) that model
boxes go through, and `BOX_KEY_LAYOUTS` is the one table of object keys both read.

Outcomes (`ParsedBox.status`), all counted by the grounding run: ``ok``; ``clipped`` (partly outside the image,
clipped to it, scored); ``outside`` (entirely outside the image: IoU 0); ``invalid`` (x2 <= x1 or y2 <= y1, or a
normalised box without an image size: IoU 0); ``unparsed`` (no box found: IoU 0).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from culturekb.errors import ConfigError

__all__ = ["BoxStatus", "ParsedBox", "parse_box", "format_box_token", "BOX_FORMATS", "BOX_KEY_LAYOUTS", "to_pixels",
           "convert_box"]

BoxStatus = Literal["ok", "clipped", "outside", "invalid", "unparsed"]
_SCALES = ("auto", "pixels", "unit", "thousandths")
_LAYOUTS = ("auto", "xyxy", "xywh")

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_QWEN2 = re.compile(rf"<\|box_start\|>\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)\s*,\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)"
                    r"\s*<\|box_end\|>")
_QWEN1 = re.compile(rf"<box>\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)\s*,\s*\(\s*({_NUM})\s*,\s*({_NUM})\s*\)\s*</box>")
_BOX_LIST = re.compile(rf"<box>\s*\[?\s*\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]\s*\]?\s*</box>")
_FOUR = re.compile(rf"[\[(]\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*[\])]")
_TWO_POINTS = re.compile(rf"\(\s*({_NUM})\s*,\s*({_NUM})\s*\)[^()\d]{{0,40}}\(\s*({_NUM})\s*,\s*({_NUM})\s*\)")
_XYWH_HINT = re.compile(r"\bx\s*,\s*y\s*,\s*w(?:idth)?\s*,\s*h(?:eight)?\b|\bxywh\b|width and height", re.IGNORECASE)

_LIST_KEYS = ("bbox_2d", "bbox", "box", "bounding_box", "boundingbox", "coordinates", "coords", "box_2d")
BOX_KEY_LAYOUTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("x1", "y1", "x2", "y2"), "xyxy"),
    (("xmin", "ymin", "xmax", "ymax"), "xyxy"),
    (("x_min", "y_min", "x_max", "y_max"), "xyxy"),
    (("left", "top", "right", "bottom"), "xyxy"),
    (("x", "y", "w", "h"), "xywh"),
    (("x", "y", "width", "height"), "xywh"),
    (("left", "top", "width", "height"), "xywh"),
)
"""The keys of a box given as an object, and the layout each set implies."""

BOX_FORMATS: tuple[str, ...] = ("xyxy", "xywh", "xyxy_norm", "xywh_norm", "xyxy_1000")
_FORMAT_SCALES = {"": "pixels", "_norm": "unit", "_1000": "thousandths"}


@dataclass(frozen=True)
class ParsedBox:
    """A box read from a model answer: absolute [x1, y1, x2, y2] pixels (None unless scored), and how it was read."""

    box: tuple[float, float, float, float] | None
    status: BoxStatus
    form: str = ""
    """Which form was found: qwen2-tokens, qwen-box, box-list, json-<key>, json-xyxy, json-xywh, list, points."""
    raw: tuple[float, ...] | None = None
    """The four numbers as written."""
    detail: str = ""

    @property
    def scored(self) -> bool:
        """True when the box takes part in IoU (ok or clipped)."""
        return self.status in ("ok", "clipped")


def format_box_token(box: tuple[float, float, float, float], width: float, height: float) -> str:
    """A pixel box as Qwen2-VL box tokens on the 0..1000 grid (for scripted models and tests)."""
    x1, y1, x2, y2 = box
    g = [round(x1 / width * 1000), round(y1 / height * 1000), round(x2 / width * 1000), round(y2 / height * 1000)]
    return f"<|box_start|>({g[0]},{g[1]}),({g[2]},{g[3]})<|box_end|>"


def to_pixels(values: tuple[float, ...] | list[float], layout: str, scale: str, width: float | None,
              height: float | None) -> tuple[float, float, float, float]:
    """Absolute ``(x1, y1, x2, y2)`` pixels from 4 numbers in `layout` (xyxy | xywh) and `scale` (pixels | unit
    | thousandths); a unit or thousandths box without the image size raises ConfigError."""
    a, b, c, d = (float(v) for v in values)
    if layout == "xywh":
        c, d = a + c, b + d
    if scale in ("unit", "thousandths"):
        if not width or not height:
            raise ConfigError(f"a {scale} box needs the image size to become pixels; give width and height (or an "
                              "image file the size can be read from)")
        f = 1000.0 if scale == "thousandths" else 1.0
        a, c = a / f * width, c / f * width
        b, d = b / f * height, d / f * height
    return a, b, c, d


def convert_box(values: tuple[float, ...] | list[float], box_format: str, width: float | None,
                height: float | None) -> tuple[float, float, float, float]:
    """Absolute [x1, y1, x2, y2] pixels from 4 numbers in `box_format` (one of `BOX_FORMATS`).

    Normalised formats need the image size (ConfigError without it).
    """
    if box_format not in BOX_FORMATS:
        raise ConfigError(f"unknown box format {box_format!r}; use one of {list(BOX_FORMATS)}")
    return to_pixels(values, box_format[:4], _FORMAT_SCALES[box_format[4:]], width, height)


def _floats(groups: tuple[str | Any, ...]) -> tuple[float, ...]:
    return tuple(float(g) for g in groups)


def _json_candidates(text: str) -> list[Any]:
    """Every JSON value starting at a '{' or '[' of the text (fenced or not), in order."""
    out: list[Any] = []
    decoder = json.JSONDecoder()
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        out.append(value)
    return out


def _from_obj(obj: Any) -> tuple[tuple[float, ...], str, str] | None:
    """(numbers, layout, form) from a JSON object or a list of objects."""
    if isinstance(obj, list):
        for item in obj:
            if isinstance(item, dict):
                found = _from_obj(item)
                if found is not None:
                    return found
        return None
    if not isinstance(obj, dict):
        return None
    keys = {str(k).strip().lower(): v for k, v in obj.items()}
    for key in _LIST_KEYS:
        value = keys.get(key)
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
            value = value[0]
        if isinstance(value, list) and len(value) == 4 and all(_is_num(v) for v in value):
            return tuple(float(v) for v in value), "auto", f"json-{key}"
        if isinstance(value, dict):
            inner = _from_obj(value)
            if inner is not None:
                return inner
    for names, layout in BOX_KEY_LAYOUTS:
        if all(n in keys and _is_num(keys[n]) for n in names):
            return tuple(float(keys[n]) for n in names), layout, f"json-{layout}"
    for value in keys.values():
        if isinstance(value, dict | list):
            inner = _from_obj(value)
            if inner is not None:
                return inner
    return None


def _is_num(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int | float):
        return math.isfinite(float(v))
    if isinstance(v, str):
        try:
            return math.isfinite(float(v))
        except ValueError:
            return False
    return False


def _find(text: str) -> tuple[tuple[float, ...], str, str, str] | None:
    """(numbers, layout, scale, form) of the first box form found, in order of specificity."""
    for pattern, form in ((_QWEN2, "qwen2-tokens"), (_QWEN1, "qwen-box"), (_BOX_LIST, "box-list")):
        m = pattern.search(text)
        if m:
            return _floats(m.groups()), "xyxy", "thousandths", form
    for obj in _json_candidates(text):
        found = _from_obj(obj)
        if found is not None:
            nums, layout, form = found
            return nums, layout, "auto", form
    m = _FOUR.search(text)
    if m:
        return _floats(m.groups()), "auto", "auto", "list"
    m = _TWO_POINTS.search(text)
    if m:
        return _floats(m.groups()), "xyxy", "auto", "points"
    return None


def parse_box(
    text: str | None,
    *,
    width: float | None = None,
    height: float | None = None,
    scale: str = "auto",
    layout: str = "auto",
) -> ParsedBox:
    """The box in a model answer as absolute pixels (see the module docstring for forms and statuses).

    `width`/`height`: the image size in pixels; needed for normalised or 0..1000 boxes and for the outside /
    clipped checks.
    """
    if scale not in _SCALES:
        raise ConfigError(f"unknown box scale {scale!r}; use one of {list(_SCALES)}")
    if layout not in _LAYOUTS:
        raise ConfigError(f"unknown box layout {layout!r}; use one of {list(_LAYOUTS)}")
    found = _find(text or "")
    if found is None:
        return ParsedBox(None, "unparsed", detail="no box in the answer")
    nums, found_layout, found_scale, form = found
    if layout == "auto":
        lay = found_layout if found_layout != "auto" else ("xywh" if _XYWH_HINT.search(text or "") else "xyxy")
    else:
        lay = layout
    if scale != "auto":
        sc = scale
    elif found_scale != "auto":
        sc = found_scale
    else:
        sc = "unit" if all(0.0 <= v <= 1.0 for v in nums) else "pixels"
    try:
        a, b, c, d = to_pixels(nums, lay, sc, width, height)
    except ConfigError:
        return ParsedBox(None, "invalid", form, nums, f"a {sc} box needs the image size to become pixels")
    if c <= a or d <= b:
        return ParsedBox(None, "invalid", form, nums, "x2 <= x1 or y2 <= y1")
    if width and height:
        if c <= 0 or d <= 0 or a >= width or b >= height:
            return ParsedBox(None, "outside", form, nums, f"entirely outside the {width:g}x{height:g} image")
        clipped = (max(a, 0.0), max(b, 0.0), min(c, float(width)), min(d, float(height)))
        if clipped != (a, b, c, d):
            return ParsedBox(clipped, "clipped", form, nums, "partly outside the image; clipped")
    return ParsedBox((a, b, c, d), "ok", form, nums)
