"""Image loading shared by the image-based concept extractors (Pillow is imported on first use)."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from culturekb.errors import DataError, require

__all__ = ["load_image", "image_data_url"]


def load_image(ref: str, where: str) -> Any:
    """Open the image at path `ref` as an RGB `PIL.Image`; `where` names the sample in error messages."""
    pil_image: Any = require("PIL.Image", "vision", "image loading")
    path = Path(ref)
    if not path.is_file():
        raise DataError(f"{where}: image file {ref} does not exist; fix the sample's 'image' path")
    try:
        with pil_image.open(path) as img:
            img.load()
            return img.convert("RGB")
    except (OSError, ValueError) as exc:
        raise DataError(f"{where}: cannot read image {ref} ({exc}); re-save it as JPEG or PNG") from exc


def image_data_url(ref: str, where: str, max_side: int = 768, quality: int = 90) -> str:
    """A `data:image/jpeg;base64,...` URL of the image, resized so its longer side is at most `max_side`.

    `http(s):` and `data:` URLs are passed through unchanged (the model server fetches them).
    """
    if ref.startswith(("http://", "https://", "data:")):
        return ref
    img = load_image(ref, where)
    if max(img.size) > max_side:
        scale = max_side / max(img.size)
        img = img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
