"""Image loading and JPEG data URLs, shared by the builders and the inference layer (Pillow loads on first use).

Kept outside both subpackages so that neither imports the other for it. Every failure is a `DataError` that
names the image and the fix: a missing or unreadable file, a file that is not an image, or an image whose
pixel count is above `max_pixels` (a decompression-bomb guard checked from the header, before decoding).
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import warnings
from collections import OrderedDict
from pathlib import Path
from threading import Lock
from typing import Any

from culturekb._io import is_remote_url
from culturekb.errors import DataError, require

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "load_image",
    "check_image_file",
    "open_image_bytes",
    "image_data_url",
    "decode_data_url",
    "is_remote_url",
    "local_image_path",
]

DEFAULT_MAX_PIXELS = 89_478_485
"""Pillow's own default limit (about 0.25 GiB of RGBA); larger images are refused before they are decoded."""

_DATA_URL_CACHE_SIZE = 32
_data_url_cache: OrderedDict[tuple[Any, ...], str] = OrderedDict()
_cache_lock = Lock()


def _pil() -> Any:
    return require("PIL.Image", "vision", "image loading")


def local_image_path(ref: str) -> Path:
    """The local path of a plain path or a `file://` URL."""
    if ref.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(ref).path))
    return Path(ref).expanduser()


def _check_pixels(width: int, height: int, where: str, ref: str, max_pixels: int) -> None:
    """DataError when an image's header says it has more than `max_pixels` pixels."""
    if width * height > max_pixels:
        raise DataError(
            f"{where}: image {ref} is {width}x{height} = {width * height:,} pixels, above the limit of "
            f"{max_pixels:,} (a guard against decompression bombs); downscale the file, or raise max_pixels "
            "if you trust it"
        )


def _finish(img: Any, where: str, ref: str, max_side: int | None, max_pixels: int) -> Any:
    """Check the size from the header, decode (drafting JPEGs down when possible), orient, flatten to RGB."""
    pil_image = _pil()
    from PIL import ImageOps

    width, height = img.size
    _check_pixels(width, height, where, ref, max_pixels)
    if max_side is not None and img.format == "JPEG":
        img.draft("RGB", (max_side, max_side))  # decode at a reduced scale: much faster for large photos
    img.load()
    img = ImageOps.exif_transpose(img)
    if img.mode in ("RGBA", "LA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        flat = pil_image.new("RGB", rgba.size, (255, 255, 255))
        flat.paste(rgba, mask=rgba.getchannel("A"))
        img = flat
    elif img.mode != "RGB":
        img = img.convert("RGB")
    if max_side is not None and max(img.size) > max_side:
        scale = max_side / max(img.size)
        size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
        img = img.resize(size, pil_image.Resampling.LANCZOS)
    return img


def _open(source: Any, where: str, ref: str, max_side: int | None, max_pixels: int) -> Any:
    pil_image = _pil()
    try:
        with pil_image.open(source) as img:
            return _finish(img, where, ref, max_side, max_pixels)
    except pil_image.DecompressionBombError as exc:
        raise DataError(
            f"{where}: image {ref} is too large to decode safely ({exc}); downscale the file (Pillow refuses "
            "images above twice PIL.Image.MAX_IMAGE_PIXELS, whatever max_pixels says)"
        ) from exc
    except DataError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:  # Pillow reports corrupt files with any of these
        raise DataError(
            f"{where}: cannot read image {ref} ({type(exc).__name__}: {exc}); check that the file is a complete "
            "JPEG, PNG or WebP image, or re-save it as JPEG or PNG"
        ) from exc


def load_image(
    ref: str, where: str, max_side: int | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> Any:
    """Open the image at path `ref` (or a `file://` URL) as an RGB `PIL.Image`.

    `where` names the sample in error messages. With `max_side`, the image is shrunk so that its longer side is
    at most `max_side` pixels (never enlarged).
    """
    if is_remote_url(ref) or ref.startswith("data:"):
        raise DataError(f"{where}: image {ref[:80]} is a URL, not a local file; download it or pass a file path")
    path = local_image_path(ref)
    if not path.is_file():
        what = "is a folder, not an image file" if path.is_dir() else "does not exist"
        raise DataError(
            f"{where}: image file {ref} {what}; fix the sample's 'image' path (relative paths are read from the "
            "current directory)"
        )
    if not os.access(path, os.R_OK):
        raise DataError(f"{where}: image file {ref} is not readable (permission denied); fix its permissions")
    return _open(path, where, ref, max_side, max_pixels)


def check_image_file(ref: str, where: str, max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """(width, height) of the local image `ref`, read from its header only (nothing is decoded): the checks a
    loader runs before any model loads. A missing file, a file that is not an image (whatever its name says), or
    an image above `max_pixels` (a decompression bomb) raises the same DataError `load_image` would."""
    path = local_image_path(ref)
    if not path.is_file():
        hint = "it is a directory" if path.is_dir() else "it does not exist"
        raise DataError(f"{where}: image file {ref} cannot be read ({hint}); fix the sample's 'image' path")
    pil_image = _pil()
    try:
        with warnings.catch_warnings():  # Pillow warns before it refuses; the refusal below says it all
            warnings.simplefilter("ignore", pil_image.DecompressionBombWarning)
            with pil_image.open(path) as img:
                width, height = img.size
    except pil_image.DecompressionBombError as exc:
        raise DataError(
            f"{where}: image {ref} is too large to decode safely ({exc}); downscale the file"
        ) from exc
    except (OSError, ValueError, SyntaxError) as exc:
        raise DataError(
            f"{where}: {ref} is not an image Pillow can read ({type(exc).__name__}: {exc}); check that the file is "
            "a complete JPEG, PNG or WebP image (its name may say .jpg when it is not), or re-save it"
        ) from exc
    _check_pixels(width, height, where, ref, max_pixels)
    return width, height


def open_image_bytes(
    data: bytes, where: str, max_side: int | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> Any:
    """Decode image bytes as an RGB `PIL.Image` with the same checks as `load_image`."""
    return _open(io.BytesIO(data), where, "<image bytes>", max_side, max_pixels)


def decode_data_url(
    url: str, where: str, max_side: int | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> Any:
    """The RGB `PIL.Image` inside a `data:image/...;base64,...` URL."""
    head, sep, payload = url.partition(",")
    if not sep or not head.startswith("data:image/") or not head.endswith(";base64"):
        raise DataError(
            f"{where}: {url[:60]!r} is not a base64 image data URL; expected 'data:image/<type>;base64,<data>'"
        )
    try:
        raw = base64.b64decode(payload, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"{where}: the image data URL is not valid base64 ({exc}); re-encode the image") from exc
    return open_image_bytes(raw, where, max_side, max_pixels)


def _encode_jpeg(img: Any, quality: int) -> str:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def image_data_url(
    ref: str, where: str, max_side: int = 768, quality: int = 90, max_pixels: int = DEFAULT_MAX_PIXELS
) -> str:
    """A `data:image/jpeg;base64,...` URL of a local image, shrunk so its longer side is at most `max_side`.

    `http(s):` and `data:image/` URLs are passed through unchanged (the model server fetches or decodes them).
    Results for the same unchanged file and settings are kept in a small in-memory cache, so asking for one
    image in several prompt modes encodes it once.
    """
    if is_remote_url(ref):
        return ref
    if ref.startswith("data:"):
        if not ref.startswith("data:image/"):
            raise DataError(f"{where}: {ref[:60]!r} is a data URL but not an image; expected 'data:image/...'")
        return ref
    if max_side < 1:
        raise DataError(f"{where}: max_side must be >= 1, got {max_side}")
    path = local_image_path(ref)
    try:
        stat = path.stat()
        key: tuple[Any, ...] | None = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, max_side, quality,
                                       max_pixels)
    except OSError:
        key = None  # load_image raises the clear error below
    if key is not None:
        with _cache_lock:
            hit = _data_url_cache.get(key)
            if hit is not None:
                _data_url_cache.move_to_end(key)
                return hit
    url = _encode_jpeg(load_image(ref, where, max_side=max_side, max_pixels=max_pixels), quality)
    if key is not None:
        with _cache_lock:
            _data_url_cache[key] = url
            while len(_data_url_cache) > _DATA_URL_CACHE_SIZE:
                _data_url_cache.popitem(last=False)
    return url
