"""Image loading for the image-based concept extractors: a re-export of `culturekb._images`.

The implementation lives in `culturekb/_images.py`, shared with the inference layer without either subpackage
importing the other.
"""

from __future__ import annotations

from culturekb._images import DEFAULT_MAX_PIXELS, decode_data_url, image_data_url, load_image

__all__ = ["load_image", "image_data_url", "decode_data_url", "DEFAULT_MAX_PIXELS"]
