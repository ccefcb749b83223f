from __future__ import annotations

import base64
import io
import os
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from culturekb._images import decode_data_url, load_image
from culturekb._images import image_data_url as builders_image_data_url
from culturekb.errors import ConfigError, DataError
from culturekb.inference.messages import build_messages, image_part


def _save(img: Image.Image, path: Path, **kw: Any) -> str:
    img.save(path, **kw)
    return str(path)


def _part_url(part: dict[str, object]) -> str:
    """The URL inside an `image_url` content part (as `image_part` returns it)."""
    inner = part["image_url"]
    assert isinstance(inner, dict)
    url = inner["url"]
    assert isinstance(url, str)
    return url


def _decode(url: str) -> Image.Image:
    assert url.startswith("data:image/jpeg;base64,")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares `width` x `height` pixels but holds almost no data (a decompression-bomb shape)."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b"")


def test_text_only_message() -> None:
    assert build_messages("Which emotion?", None) == [{"role": "user", "content": "Which emotion?"}]
    assert build_messages("Which emotion?", "  ") == [{"role": "user", "content": "Which emotion?"}]


def test_system_message_comes_first() -> None:
    messages = build_messages("Which emotion?", None, system="You are an art critic.")
    assert messages[0] == {"role": "system", "content": "You are an art critic."}
    assert messages[1]["role"] == "user"


def test_local_image_becomes_a_jpeg_data_url_part_before_the_text(tmp_path: Path) -> None:
    path = _save(Image.new("RGB", (64, 48), (200, 30, 30)), tmp_path / "red.png")
    [message] = build_messages("Which emotion?", path)
    image, text = message["content"]
    assert text == {"type": "text", "text": "Which emotion?"}
    assert image["type"] == "image_url"
    decoded = _decode(image["image_url"]["url"])
    assert decoded.size == (64, 48)  # small images are not enlarged
    pixel = decoded.convert("RGB").getpixel((32, 24))
    assert isinstance(pixel, tuple)
    r, g, b = pixel
    assert r > 150 and g < 80 and b < 80


def test_oversized_image_is_resized_to_the_max_side(tmp_path: Path) -> None:
    path = _save(Image.new("RGB", (3000, 2000), (10, 120, 200)), tmp_path / "big.jpg", quality=80)
    [message] = build_messages("Which emotion?", path)  # default max side 1024
    assert _decode(message["content"][0]["image_url"]["url"]).size == (1024, 683)
    [message] = build_messages("Which emotion?", path, max_image_side=300)
    assert _decode(message["content"][0]["image_url"]["url"]).size == (300, 200)
    tall = _save(Image.new("RGB", (500, 2500)), tmp_path / "tall.png")
    assert _decode(_part_url(image_part(tall, 250))).size == (50, 250)


def test_transparent_png_is_flattened_on_white(tmp_path: Path) -> None:
    path = _save(Image.new("RGBA", (20, 20), (0, 0, 0, 0)), tmp_path / "clear.png")
    decoded = _decode(_part_url(image_part(path))).convert("RGB")
    pixel = decoded.getpixel((10, 10))
    assert isinstance(pixel, tuple)
    assert min(pixel) > 240


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    img = Image.new("RGB", (40, 20))
    exif = img.getexif()
    exif[0x0112] = 6  # rotate 90 degrees on display
    path = _save(img, tmp_path / "rotated.jpg", exif=exif)
    assert _decode(_part_url(image_part(path))).size == (20, 40)


def test_remote_and_data_urls_pass_through() -> None:
    url = "https://example.org/art/crane.jpg"
    assert build_messages("q", url)[0]["content"][0]["image_url"]["url"] == url
    data = "data:image/png;base64,iVBORw0KGgo="
    assert build_messages("q", data)[0]["content"][0]["image_url"]["url"] == data
    with pytest.raises(DataError, match="not an image"):
        build_messages("q", "data:text/plain;base64,aGVsbG8=")


def test_file_url_is_read_locally(tmp_path: Path) -> None:
    path = _save(Image.new("RGB", (10, 10)), tmp_path / "a b.png")
    url = _part_url(image_part("file://" + str(path).replace(" ", "%20")))
    assert _decode(url).size == (10, 10)


def test_missing_image_names_the_path_and_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jpg"
    with pytest.raises(DataError, match=r"sample 'x1'.*nope\.jpg does not exist.*fix the sample's 'image' path"):
        build_messages("q", str(missing), where="sample 'x1'")
    with pytest.raises(DataError, match="is a folder, not an image file"):
        build_messages("q", str(tmp_path))


def test_unreadable_image_is_a_data_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"this is not a JPEG at all")
    with pytest.raises(DataError, match=r"cannot read image .*broken\.jpg.*re-save it"):
        build_messages("q", str(bad))
    truncated = tmp_path / "truncated.png"
    buf = io.BytesIO()
    Image.new("RGB", (200, 200), (1, 2, 3)).save(buf, format="PNG")
    truncated.write_bytes(buf.getvalue()[:60])
    with pytest.raises(DataError, match="cannot read image"):
        build_messages("q", str(truncated))


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_permission_denied_is_a_data_error(tmp_path: Path) -> None:
    path = Path(_save(Image.new("RGB", (4, 4)), tmp_path / "locked.png"))
    path.chmod(0)
    try:
        with pytest.raises(DataError, match="not readable"):
            build_messages("q", str(path))
    finally:
        path.chmod(0o644)


def test_decompression_bomb_gives_a_clear_error(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png_header(100_000, 100_000))  # 10 gigapixels declared in 60 bytes
    with pytest.raises(DataError, match=r"bomb\.png.*(too large|above the limit).*downscale"):
        build_messages("q", str(bomb))


def test_pixel_limit_is_checked_before_decoding(tmp_path: Path) -> None:
    header_only = tmp_path / "huge.png"
    header_only.write_bytes(_png_header(3_000, 1_000))  # decoding it would fail; the check comes first
    with pytest.raises(DataError, match=r"3000x1000 = 3,000,000 pixels, above the limit of 1,000,000"):
        build_messages("q", str(header_only), max_pixels=1_000_000)
    path = _save(Image.new("RGB", (2000, 1000)), tmp_path / "real.png")
    with pytest.raises(DataError, match="above the limit"):
        build_messages("q", path, max_pixels=1_000_000)
    assert build_messages("q", path, max_pixels=2_000_000)[0]["content"][0]["type"] == "image_url"


def test_same_image_is_encoded_once_and_refreshed_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "img.png"
    Image.new("RGB", (30, 30), (255, 0, 0)).save(path)
    first = _part_url(image_part(str(path)))
    assert _part_url(image_part(str(path))) is first  # served from the in-memory cache
    Image.new("RGB", (30, 30), (0, 0, 255)).save(path)
    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock resolution
    assert _part_url(image_part(str(path))) != first


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="prompt text is empty"):
        build_messages("  ", None)
    with pytest.raises(ConfigError, match="max_image_side"):
        build_messages("q", "https://example.org/a.jpg", max_image_side=0)


def test_data_url_round_trip_and_builders_reexport(tmp_path: Path) -> None:
    path = _save(Image.new("RGB", (900, 300)), tmp_path / "wide.png")
    url = builders_image_data_url(path, "sample 's'")  # the builders keep their 768 px default
    assert decode_data_url(url, "x").size == (768, 256)
    assert load_image(path, "x", max_side=90).size == (90, 30)
    with pytest.raises(DataError, match="not a base64 image data URL"):
        decode_data_url("data:image/png,rawbytes", "x")
    with pytest.raises(DataError, match="URL, not a local file"):
        load_image("https://example.org/a.jpg", "x")
