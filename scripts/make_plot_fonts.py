"""Make the report plots' fonts in ``culturekb/data/fonts/`` from the Noto fonts published on PyPI.

The plots draw labels in every script the data has (Latin, Chinese, Arabic, Devanagari, Thai, Khmer, ...). DejaVu
Sans (matplotlib's own) covers Latin, Greek, Cyrillic, Hebrew and Arabic letters but no CJK, Indic or South-East
Asian script, so the package ships Noto Sans fonts (SIL Open Font License 1.1, ``culturekb/data/fonts/OFL.txt``)
that matplotlib falls back on glyph by glyph. To keep the package small the variable fonts are pinned to their
Regular instance and the CJK font is cut down: the 6,763 hanzi of GB 2312, KS X 1001's 2,350 Hangul
syllables, kana, CJK punctuation and full-width forms, plus every CJK character in the
package's data files.

Usage (needs network access to PyPI once; the fonts are committed, so nobody else runs this)::

    pip download --no-deps -d /tmp/fonts fontpkg-noto-sans-devanagari==2.7 fontpkg-noto-sans-arabic==2.12 \
        fontpkg-noto-sans-thai==2.2 fontpkg-noto-sans-khmer==2.4 noto-cjk-sans-otc==0.0.1
    python scripts/make_plot_fonts.py /tmp/fonts
"""

from __future__ import annotations

import argparse
import re
import sys
import zipfile
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTCollection, TTFont
from fontTools.varLib import instancer

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "culturekb" / "data" / "fonts"
SCRIPTS = {  # wheel name prefix -> (font file in the wheel, shipped file)
    "fontpkg_noto_sans_devanagari": ("NotoSansDevanagari[wdth,wght].ttf", "NotoSansDevanagari-Regular.ttf"),
    "fontpkg_noto_sans_arabic": ("NotoSansArabic[wdth,wght].ttf", "NotoSansArabic-Regular.ttf"),
    "fontpkg_noto_sans_thai": ("NotoSansThai[wdth,wght].ttf", "NotoSansThai-Regular.ttf"),
    "fontpkg_noto_sans_khmer": ("NotoSansKhmer[wdth,wght].ttf", "NotoSansKhmer-Regular.ttf"),
}
CJK_FACE = 2  # Noto Sans CJK SC in NotoSansCJK-Regular.ttc
CJK_OUT = "NotoSansCJKsc-Regular-subset.otf"
_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002ffff]")


def _encoded(codec: str, lead: range, trail: range) -> set[str]:
    chars = set()
    for a in lead:
        for b in trail:
            try:
                chars.add(bytes([a, b]).decode(codec))
            except UnicodeDecodeError:
                pass
    return chars


def cjk_characters() -> set[str]:
    """GB 2312, the Hangul syllables of KS X 1001, kana, CJK punctuation and forms, and every CJK or Hangul
    character in culturekb/data."""
    chars = _encoded("gb2312", range(0xA1, 0xF8), range(0xA1, 0xFF))
    chars |= _encoded("euc-kr", range(0xB0, 0xC9), range(0xA1, 0xFF))  # KS X 1001: 2,350 Hangul syllables
    chars |= {chr(c) for c in range(0x3130, 0x3190)}  # Hangul compatibility jamo
    chars |= {chr(c) for c in [*range(0x3000, 0x3100), *range(0xFF00, 0xFFF0)]}
    for path in (ROOT / "culturekb" / "data").rglob("*"):
        if path.is_file() and path.suffix in {".json", ".jsonl", ".csv", ".tsv", ".txt", ".md", ".toml"}:
            chars |= set(_CJK.findall(path.read_text(encoding="utf-8", errors="ignore")))
    return chars


def main() -> None:
    """Write the fonts into culturekb/data/fonts and list them with their sizes."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", type=Path, help="folder with the downloaded wheels (see the usage above)")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for prefix, (inner, shipped) in SCRIPTS.items():
        wheel = next(args.wheels.glob(f"{prefix}-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            font = TTFont(z.open(f"{prefix}/files/{inner}"))
        static = instancer.instantiateVariableFont(font, {"wght": 400, "wdth": 100})
        static.save(OUT / shipped)
    wheel = next(args.wheels.glob("noto_cjk_sans_otc-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        (args.wheels / "cjk.ttc").write_bytes(z.read("noto_cjk_sans_otc/NotoSansCJK-Regular.ttc"))
    cjk = TTCollection(str(args.wheels / "cjk.ttc")).fonts[CJK_FACE]
    options = subset.Options()
    # matplotlib shapes no text, so the OpenType layout features are never read; without the font's own hints
    # FreeType hints the glyphs itself. Leaving both out keeps the file under 2 MB (1.9 MB for 10,249 characters)
    options.layout_features = []
    options.hinting = False
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.notdef_outline = True
    sub = subset.Subsetter(options)
    sub.populate(text="".join(sorted(cjk_characters())))
    sub.subset(cjk)
    cjk.save(OUT / CJK_OUT)
    for path in sorted(OUT.glob("*.[ot]tf")):
        sys.stdout.write(f"{path.name}: {path.stat().st_size / 1e6:.2f} MB, "
                         f"{len(TTFont(path).getBestCmap())} characters\n")


if __name__ == "__main__":
    main()
