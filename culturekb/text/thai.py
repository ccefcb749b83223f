"""Thai word segmentation: Thai is written without spaces between words, so its text is cut by the dictionary
tokenizer of pythainlp (engine ``newmm``: maximal matching over the word list packaged with pythainlp, no model
and no download). Only the ground floor imports this; pythainlp is imported on the first Thai text."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from culturekb.errors import ConfigError

__all__ = ["segment_thai", "segmenter_stopwords", "segmenter_version"]

_THAI_LETTER = re.compile(r"[\u0e01-\u0e4e]")


def _pythainlp() -> object:
    os.environ.setdefault("PYTHAINLP_OFFLINE", "1")  # never reach for a corpus download
    try:
        import pythainlp
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise ConfigError("Thai text needs the package pythainlp: pip install 'pythainlp>=5.1,<6'") from exc
    return pythainlp


def segmenter_version() -> str:
    """The segmenter and its version, for cache keys ("pythainlp-5.4.0:newmm")."""
    return f"pythainlp-{getattr(_pythainlp(), '__version__', '?')}:newmm"


@lru_cache(maxsize=1)
def segmenter_stopwords() -> frozenset[str]:
    """pythainlp's packaged Thai stopword list."""
    _pythainlp()
    from pythainlp.corpus import thai_stopwords

    return frozenset(thai_stopwords())


def segment_thai(text: str) -> list[str]:
    """The Thai words of `text`, in order (runs without a Thai letter left out: the caller reads them with their
    own language's rules)."""
    if not _THAI_LETTER.search(text):
        return []
    _pythainlp()
    from pythainlp.tokenize import word_tokenize

    return [w.strip() for w in word_tokenize(text, engine="newmm", keep_whitespace=False)
            if _THAI_LETTER.search(w)]
