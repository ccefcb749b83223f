"""Rebuild culturekb/data/languages/words/zh.txt.gz from jieba's dictionary.

The list is the words of two to four Han characters with a frequency of at least 30 in `dict.txt` of the PyPI
package jieba 0.42.1 (MIT licence, Sun Junyi), each with round(log2(frequency)); part-of-speech tags are not kept.
Usage (jieba need not be installed, only its source archive unpacked):

    pip download --no-deps jieba==0.42.1 -d /tmp/jieba && tar xzf /tmp/jieba/jieba-0.42.1.tar.gz -C /tmp/jieba
    python benchmarks/make_zh_lexicon.py /tmp/jieba/jieba-0.42.1/jieba/dict.txt
"""

from __future__ import annotations

import argparse
import gzip
import math
import re
from pathlib import Path

HEADER = """# Chinese word list of culturekb's offline concept extractor (culturekb.text.lexicon).
# Source: dict.txt of the PyPI package jieba 0.42.1 (Sun Junyi, MIT licence; see ../NOTICE.md): the words of two to
# four Han characters with a frequency of at least {min_freq}; the number after each word is round(log2(frequency)).
# Rebuilt by benchmarks/make_zh_lexicon.py.
"""
_HAN = re.compile(r"^[\u4e00-\u9fff]{2,4}$")


def main() -> None:
    """Read jieba's dict.txt and write the gzipped list (deterministic: sorted, no timestamp)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dict_txt", type=Path, help="jieba/dict.txt from the jieba 0.42.1 source archive")
    parser.add_argument("--min-freq", type=int, default=30)
    parser.add_argument("--out", type=Path, default=Path("culturekb/data/languages/words/zh.txt.gz"))
    args = parser.parse_args()
    rows: dict[str, int] = {}
    for line in args.dict_txt.read_text("utf-8").splitlines():
        parts = line.split()
        if len(parts) >= 2 and _HAN.match(parts[0]) and int(parts[1]) >= args.min_freq:
            rows[parts[0]] = max(1, round(math.log2(int(parts[1]))))
    text = HEADER.format(min_freq=args.min_freq) + "".join(f"{w} {rows[w]}\n" for w in sorted(rows))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0))
    print(f"{len(rows)} words -> {args.out}")  # noqa: T201


if __name__ == "__main__":
    main()
