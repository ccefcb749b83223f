"""Word lists with frequencies for languages written without spaces, and segmentation by them.

The dictionary-free Chinese segmentation of `culturekb.text.languages` cuts text at function characters and
stopwords; what is left between two cuts is often more than one word (低风险地区, 很多人) and its character bigrams
cross word boundaries (低风, 险地, 多人). A packaged word list with word frequencies cuts such a piece into its
most probable words (maximum product of unigram probabilities, the way jieba's dictionary step does, without its
HMM for unknown words): 低风险地区 -> 低 风险 地区. Characters the list cannot place into a word stay together,
so a new word the list lacks (新冠, 热搜) is still a candidate when it is two to four characters long.

A word list is a gzipped text file under `culturekb/data/languages/words/`: comment lines starting with '#', then
one ``word weight`` per line, the weight being round(log2(frequency)) in the source corpus. `NOTICE.md` in
`culturekb/data/languages/` names each list's source; `benchmarks/make_zh_lexicon.py` rebuilds the Chinese one.
"""

from __future__ import annotations

import gzip
import hashlib
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from culturekb.errors import DataError

__all__ = ["Lexicon", "load_lexicon"]

_WORDS_DIR = "languages/words"
_UNKNOWN_PENALTY = 3.0  # natural-log units below the rarest listed word, for a character outside every word


@dataclass(frozen=True)
class Lexicon:
    """A word list with log probabilities; `segment` and `words` cut a run of characters into its words."""

    name: str
    logp: dict[str, float]
    longest: int
    unknown: float
    sha: str

    def __contains__(self, word: object) -> bool:
        return word in self.logp

    def segment(self, piece: str) -> list[str]:
        """The most probable cut of `piece` into listed words and single characters (Viterbi over the word
        lattice; a character outside every listed word scores `unknown`)."""
        n = len(piece)
        if n == 0:
            return []
        best = [0.0] + [-math.inf] * n
        back = [0] * (n + 1)
        for i in range(n):
            if best[i] == -math.inf:
                continue
            for k in range(1, min(self.longest, n - i) + 1):
                word = piece[i : i + k]
                score = self.logp.get(word)
                if score is None:
                    if k > 1:
                        continue
                    score = self.unknown
                if best[i] + score > best[i + k]:
                    best[i + k] = best[i] + score
                    back[i + k] = i
        out: list[str] = []
        j = n
        while j > 0:
            i = back[j]
            out.append(piece[i:j])
            j = i
        return out[::-1]

    def words(self, piece: str, max_unknown: int = 4, breaks: frozenset[str] = frozenset()
              ) -> tuple[list[str], list[str]]:
        """(words, unknown runs) of `piece`: the listed words of two or more characters of its `segment`, and
        each run of consecutive characters the list could not place: kept whole when it has 2..`max_unknown`
        characters, as its overlapping bigrams when longer, left out (a lone character) when shorter. A
        character of `breaks` (a function character such as 多 or 说) ends an unknown run and is left out."""
        words: list[str] = []
        unknown: list[str] = []
        run = ""
        for w in [*self.segment(piece), ""]:
            if len(w) == 1 and w not in self.logp and w not in breaks:
                run += w
                continue
            if 2 <= len(run) <= max_unknown:
                unknown.append(run)
                words.append(run)
            elif len(run) > max_unknown:
                grams = [run[i : i + 2] for i in range(len(run) - 1)]
                unknown.extend(grams)
                words.extend(grams)
            run = ""
            if len(w) >= 2:
                words.append(w)
        return words, unknown


@lru_cache(maxsize=8)
def load_lexicon(name: str) -> Lexicon:
    """The packaged word list `name` (a file `culturekb/data/languages/words/<name>.txt.gz`)."""
    where = f"culturekb/data/{_WORDS_DIR}/{name}.txt.gz"
    try:
        raw = resources.files("culturekb.data").joinpath(f"{_WORDS_DIR}/{name}.txt.gz").read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"word list {where} is missing; reinstall culturekb or remove 'lexicon = {name}' from the "
                        "language's [settings]") from exc
    weights: dict[str, int] = {}
    for lineno, line in enumerate(gzip.decompress(raw).decode("utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        word, _, weight = line.strip().partition(" ")
        try:
            weights[word] = int(weight)
        except ValueError as exc:
            raise DataError(f"{where} line {lineno}: expected 'word weight' with an integer weight, got {line!r}") \
                from exc
    if not weights:
        raise DataError(f"{where}: no words")
    total = math.log(sum(2.0**w for w in weights.values()))
    logp = {w: v * math.log(2) - total for w, v in weights.items()}
    return Lexicon(name, logp, max(len(w) for w in logp), min(logp.values()) - _UNKNOWN_PENALTY,
                   hashlib.sha256(raw).hexdigest())
