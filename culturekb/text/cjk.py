"""Chinese and Japanese: cutting text written without spaces into word candidates.

Chinese: text between punctuation is cut at boundary words (stopwords, non-concepts, function, instruction and
emotion words, function characters such as 的, 了, 我); each piece is then cut into the words of a packaged word
list (`culturekb.text.lexicon`), and what the list does not know stays whole when it is two to four characters
long (a longer unknown run gives its overlapping character bigrams). Japanese: runs of kanji and of katakana are
the candidates (a single kanji only before a particle such as が or の), hiragana being mostly grammar; text
written without kanji (in kana only, as in children's books and some posts) is cut at spaces, listed particles
and function words instead, and what remains of its hiragana, predicates left out, is the candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from culturekb.text.languages import (
    LanguageRules,
    emotion_words,
    instruction_words,
    language_rules,
    script_of,
)

__all__ = ["CJKSegmentation", "segment_cjk", "segment_cjk_detailed"]


# ----------------------------------------------------------------------------------------------------------
@lru_cache(maxsize=8)
def _cjk_boundaries(language: str) -> tuple[frozenset[str], int]:
    """Words that end a candidate in a no-space language (stopwords, non-concepts, emotion words, function
    characters), and the longest of them."""
    rules = language_rules(language)
    exact, stems, _ = emotion_words(language)
    cjk = {w for w in (*exact, *stems) if w and all(script_of(c) in ("han", "kana") for c in w)}
    words = (set(rules.stopwords) | set(rules.non_concepts) | cjk | set(rules.function_chars)
             | set(rules.function_words) | {"".join(p) for p in rules.function_phrases}
             | set(instruction_words(language)))
    words = {w.replace(" ", "") for w in words if w}
    if language == "zh":  # a single character ends a candidate only when it is a listed function character
        words = {w for w in words if len(w) >= 2} | set(rules.function_chars)
    return frozenset(words), max((len(w) for w in words), default=1)


def _split(run: str, word_at: Callable[[int, int], str], hits: list[str] | None = None) -> list[str]:
    """`run` cut, left to right, at each word `word_at(i, start)` finds starting at `i` (`start`: where the piece
    since the last cut begins; "" for none); the pieces between them. The words are appended to `hits` when given."""
    pieces: list[str] = []
    start = i = 0
    n = len(run)
    while i < n:
        word = word_at(i, start)
        if word:
            if i > start:
                pieces.append(run[start:i])
            if hits is not None:
                hits.append(word)
            i += len(word)
            start = i
        else:
            i += 1
    if start < n:
        pieces.append(run[start:])
    return pieces


def _longest_at(run: str, i: int, boundaries: frozenset[str], longest: int, shortest: int = 1) -> str:
    """The longest boundary word (of at least `shortest` characters) that starts at `run[i]`; "" when none does."""
    return next((run[i : i + k] for k in range(min(longest, len(run) - i), shortest - 1, -1)
                 if run[i : i + k] in boundaries), "")


def _cut(run: str, boundaries: frozenset[str], longest: int, hits: list[str] | None = None) -> list[str]:
    """`run` cut at every boundary word (greedy longest match, left to right); the pieces between them. The
    boundary words found are appended to `hits` when given."""
    return _split(run, lambda i, _: _longest_at(run, i, boundaries, longest), hits)


def _script_runs(text: str) -> list[tuple[str, str | None]]:
    """`text` as consecutive (run, script) pairs; digits and symbols are runs of script None."""
    runs: list[tuple[str, str | None]] = []
    for ch in text:
        s = script_of(ch)
        if runs and runs[-1][1] == s:
            runs[-1] = (runs[-1][0] + ch, s)
        else:
            runs.append((ch, s))
    return runs


@dataclass(frozen=True)
class CJKSegmentation:
    """The word candidates of a clause of Chinese or Japanese text (`words`, in text order), the boundary words
    the text was cut at (`cut_at`: stopwords, function, instruction and emotion words ...), and for Chinese read
    with a word list the `fragments`: candidates of the dictionary-free cut that the word list does not confirm
    (cross-word pieces such as 低风 from 低风险)."""

    words: list[str]
    cut_at: list[str]
    fragments: list[str]


def segment_cjk(clause: str, language: str) -> list[str]:
    """Word candidates of one clause (no punctuation inside) of Chinese or Japanese text, in text order (see
    `segment_cjk_detailed`)."""
    return segment_cjk_detailed(clause, language).words


def _han_candidates(piece: str, rules: LanguageRules) -> list[str]:
    """The dictionary-free candidates of one Han piece: the piece (2 to 4 characters) or its bigrams."""
    if len(piece) < rules.min_chars:
        return []
    return [piece] if len(piece) <= 4 else [piece[i : i + 2] for i in range(len(piece) - 1)]


def segment_cjk_detailed(clause: str, language: str) -> CJKSegmentation:
    """Word candidates of one clause (no punctuation inside) of Chinese or Japanese text, with what was cut.

    Chinese: each run of Han characters is cut at boundary words (see `_cjk_boundaries`); a listed locative or
    one-character verb at the end of a piece of three or more characters is dropped (满月下 -> 满月, 女人骑 ->
    女人). With a word list (`lexicon` in the language's settings) each piece is then cut into its listed words
    (`culturekb.text.lexicon`; unknown runs of 2 to 4 characters stay whole, one of the language's `[weak_chars]`
    ending such a run, so 很多人说 gives no 多人 or 人说; a listed modifier character before a
    listed word keeps the whole piece too, 红灯笼 with 灯笼; the dictionary-free candidates that
    are neither kept nor listed words are the `fragments`); without one, pieces of 2 to 4
    characters are candidates and a longer piece gives its overlapping bigrams. Japanese: the clause is cut at
    boundary words first; then runs of katakana (2+ characters) and of kanji are candidates, a single kanji only
    when a listed particle or the end of the clause follows it; a kanji run over 6 characters gives its bigrams.
    A Japanese clause without kanji is read by `_kana_words` (hiragana otherwise being grammar, it would give
    nothing).
    Runs in other scripts are left out (the caller reads them with their own language's rules).
    """
    rules = language_rules(language)
    boundaries, longest = _cjk_boundaries(rules.code)
    out: list[str] = []
    hits: list[str] = []
    fragments: list[str] = []
    if rules.segmentation == "han":
        from culturekb.text.lexicon import load_lexicon

        lexicon = load_lexicon(rules.lexicon) if rules.lexicon else None
        for run, script in _script_runs(clause):
            if script != "han":
                continue
            for piece in _cut(run, boundaries, longest, hits):
                while len(piece) >= 3 and piece.endswith((*rules.locatives, *rules.trailing_verbs)):
                    piece = piece[:-1]
                plain = _han_candidates(piece, rules)
                if lexicon is None or piece in lexicon:
                    out.extend(plain)
                    continue
                words, _ = lexicon.words(piece, breaks=rules.weak_chars)  # 多人说 -> 人 (no run), not 多人
                if 3 <= len(piece) <= 5 and piece[0] in rules.modifiers and piece[1:] in lexicon:
                    words = [piece, *words]  # a colour or size and a listed word: 红灯笼 stays, with 灯笼
                out.extend(words)
                fragments.extend(c for c in plain if c not in words and c not in lexicon)
        return CJKSegmentation(out, hits, fragments)
    if _kana_only(clause):
        return CJKSegmentation(_kana_words(clause, rules, boundaries, longest, hits), hits, fragments)
    for part in _cut(clause.replace(" ", ""), boundaries, longest, hits):
        runs = _script_runs(part)
        for i, (run, script) in enumerate(runs):
            if script not in ("han", "kana"):
                continue
            katakana = all(0x30A0 <= ord(c) <= 0x30FF or 0x31F0 <= ord(c) <= 0x31FF or 0xFF66 <= ord(c) <= 0xFF9F
                           for c in run)
            if script == "kana" and not katakana:
                continue  # hiragana beside kanji: particles, endings, auxiliaries
            if script == "kana":
                if len(run) >= 2:
                    out.append(run)
                continue
            if len(run) == 1:
                nxt = runs[i + 1][0] if i + 1 < len(runs) else ""
                if nxt and not nxt.startswith(rules.particles):
                    continue  # a kanji stem with its okurigana: a verb or an adjective (見る, 高い)
            out.extend([run] if len(run) <= 6 else [run[j : j + 2] for j in range(len(run) - 1)])
    return CJKSegmentation(out, hits, fragments)


# ----------------------------------------------------------------------------------------------------------
# Japanese written in kana only
# ----------------------------------------------------------------------------------------------------------
def _hiragana(ch: str) -> bool:
    return 0x3041 <= ord(ch) <= 0x309F


def _hiragana_runs(kana: str) -> list[str]:
    """A run of kana split into its runs of hiragana and of katakana (ねこのタマ -> ねこの, タマ)."""
    runs: list[str] = []
    for ch in kana:
        if runs and _hiragana(runs[-1][-1]) == _hiragana(ch):
            runs[-1] += ch
        else:
            runs.append(ch)
    return runs


def _kana_only(clause: str) -> bool:
    """Whether a Japanese clause has hiragana and no kanji (kana-only writing)."""
    return any(_hiragana(c) for c in clause) and not any(script_of(c) == "han" for c in clause)


def _particle_cut(run: str, rules: LanguageRules, boundaries: frozenset[str], longest: int,
                  hits: list[str]) -> list[str]:
    """A hiragana run cut at the boundary words of two or more characters (これ, とても ...) and at a listed
    particle (から, が, を ...), never so as to leave a piece of one character: a particle only after at least two
    characters of the piece or right after another cut (so the の of きのう and the と of とり stay), a boundary word
    also at its start."""
    particles = sorted(rules.particles, key=len, reverse=True)

    def word_at(i: int, start: int) -> str:
        word = ""
        if i == start or i - start >= 2:  # never leave a one-character piece: ねこの is ねこ + の, not ね + この
            word = _longest_at(run, i, boundaries, longest, shortest=2)
        if not word and (i - start >= 2 or 0 < i == start):  # これはねこ: は after a cut is a particle
            word = next((p for p in particles if run.startswith(p, i)), "")
        return word

    return _split(run, word_at, hits)


def _kana_words(clause: str, rules: LanguageRules, boundaries: frozenset[str], longest: int, hits: list[str]
                ) -> list[str]:
    """Word candidates of a Japanese clause written in kana only. Spaces separate phrases (a children's book puts
    one after each particle); katakana runs of 2+ characters are candidates as in mixed text; a hiragana run is
    cut at boundary words and particles (`_particle_cut`), a piece that is a boundary word or ends like a
    predicate (the `[verb_endings]` of ja.txt: ました, です, ない ...) is left out, and a piece of 2 to 5
    characters is a candidate, a longer one giving its overlapping character bigrams (no word list tells its
    words apart)."""
    out: list[str] = []
    for phrase in clause.split():
        kana = [run for run, script in _script_runs(phrase) if script == "kana"]
        for run in (r for k in kana for r in _hiragana_runs(k)):
            if not _hiragana(run[0]):
                if len(run) >= 2:
                    out.append(run)
                continue
            for piece in _particle_cut(run, rules, boundaries, longest, hits):
                if piece in boundaries or len(piece) < 2:
                    continue
                if rules.verb_endings and piece.endswith(rules.verb_endings):
                    hits.append(piece)
                    continue
                out.extend([piece] if len(piece) <= 5 else [piece[j : j + 2] for j in range(len(piece) - 1)])
    return out
