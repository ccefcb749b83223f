"""Two checks of what a build made (issue 27).

- Every culture yields tuples or the build says why: a culture whose training samples gave no tuple is named in a
  warning with the reason (its texts gave no concepts, and in which scripts and languages; or its concepts never
  reached the minimum support), and a build where no culture yields any stops (DataError, exit 2).
- Rationales on topic: how many rationales name their concept, how many tuples were left without a rationale on
  topic, and per judge the share of tuples with no evidence (the build report's `rationale_topic`).
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from culturekb.errors import DataError
from culturekb.kb.schema import Sample

__all__ = ["check_coverage", "culture_coverage", "lexicon_coverage", "rationale_topic_report"]

logger = logging.getLogger(__name__)


def _scripts(samples: Sequence[Sample]) -> Counter[str]:
    from culturekb.text.languages import dominant_script

    out: Counter[str] = Counter()
    for s in samples:
        for text in (s.title, s.text, s.question, *s.explanations):
            script = dominant_script(unicodedata.normalize("NFKC", str(text))) if text else None
            if script:
                out[script] += 1
    return out


def _reason(culture: str, samples: Sequence[Sample], concepts: int, min_support: int) -> str:
    from culturekb.text.languages import SCRIPT_LANGUAGE, culture_language, supported_languages
    from culturekb.text.scripts import NGRAM_SCRIPTS

    if concepts:
        return (f"its {len(samples)} labelled samples gave {concepts} distinct concepts, none seen in at least "
                f"{min_support} samples (min_support); add samples or lower --min-support")
    scripts = _scripts(samples)
    if not scripts:
        return f"its {len(samples)} labelled samples have no text to read concepts from; give precomputed concepts"
    unread = {sc: SCRIPT_LANGUAGE.get(sc) for sc in scripts
              if SCRIPT_LANGUAGE.get(sc) not in supported_languages() and sc != "latin" and sc not in NGRAM_SCRIPTS}
    written = ", ".join(f"{sc} ({n} texts)" for sc, n in scripts.most_common())
    if unread:
        langs = ", ".join(f"{sc}: {lang or 'no language known'}" for sc, lang in unread.items())
        return (f"its texts are written in {written}; no word lists for {langs} (languages with word lists: "
                f"{', '.join(supported_languages())}); add culturekb/data/languages/<code>.txt or give precomputed "
                "concepts")
    lang = culture_language(culture)
    return (f"its texts ({written}; culture language {lang or 'unknown'}) gave no concept: the extractor kept no "
            "word of them (each was a stopword, shorter than the language's minimum, a predicate form, or a "
            "function, instruction, emotion, name or listed non-concept word; the report's dropped concept "
            "candidates lists all but stopwords and short words); give more text or precomputed concepts")


def culture_coverage(samples: Sequence[Sample], concept_lists: Sequence[Sequence[str]],
                     tuples_per_culture: Mapping[str, int], min_support: int) -> dict[str, Any]:
    """Per culture without tuples: the reason (see the module docstring)."""
    by_culture: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        by_culture.setdefault(s.culture, []).append(i)
    out: dict[str, Any] = {}
    for culture, idx in sorted(by_culture.items()):
        if tuples_per_culture.get(culture, 0):
            continue
        concepts = len({c for i in idx for c in concept_lists[i]})
        out[culture] = _reason(culture, [samples[i] for i in idx], concepts, min_support)
    return out


def check_coverage(samples: Sequence[Sample], concept_lists: Sequence[Sequence[str]], associations: Sequence[Any],
                   min_support: int) -> dict[str, str]:
    """Warn for each culture without a tuple; DataError (exit 2) when no culture has any. Returns culture -> why."""
    per = Counter(a.culture for a in associations)
    empty = culture_coverage(samples, concept_lists, per, min_support)
    if not associations:
        raise DataError("the build produced no knowledge tuple for any culture: "
                        + "; ".join(f"{c}: {why}" for c, why in empty.items()))
    for culture, why in empty.items():
        logger.warning("culture %s yields no tuples: %s", culture, why)
    return empty


def rationale_topic_report(tuples: Sequence[Any], report: dict[str, Any]) -> dict[str, Any]:
    """Whether the rationales speak about their concepts, and how often a judge found no evidence: rationales
    that name their concept, those that do not (kept by embedding support, or off topic for a generator without
    the topic check), tuples left without a rationale because none of their evidence was on topic, and per judge
    the share of tuples it could infer no emotion for."""
    from culturekb.builders._topic import names_concept

    rationales = [(t.concept, r) for t in tuples for r in t.rationales]
    named = sum(names_concept(r, c) for c, r in rationales)
    n_tuples = max(len(tuples), 1)
    return {
        "rationales": len(rationales),
        "naming_concept": named,
        "not_naming_concept": len(rationales) - named,
        "not_naming_rate": round((len(rationales) - named) / max(len(rationales), 1), 4),
        "tuples_off_topic": sum(1 for t in tuples if t.provenance.get("evidence") == "off topic"),
        "no_evidence_share": {j: round(n / n_tuples, 4) for j, n in (report.get("no_evidence_by_judge") or {}).items()},
        "lexicon_judge": lexicon_coverage(tuples),
        "read_estimate": "benchmarks/results/rationale_topic.md (100 rationales read by hand, before and after)",
    }


def lexicon_coverage(tuples: Sequence[Any]) -> dict[str, Any] | None:
    """Which languages the lexicon judge has a lexicon of its own for (the others get the English lexicon and the
    label words only), and its no-evidence count per tuple language, with the share over the covered languages;
    None when no tuple has a lexicon verdict."""
    from culturekb.builders._emolex import TRANSLATED_LEXICONS
    from culturekb.text.languages import culture_language

    covered = sorted({"en", "zh", *TRANSLATED_LEXICONS})
    per: dict[str, list[int]] = {}
    for t in tuples:
        verdict = next((v for v in t.verdicts if v.judge.startswith("lexicon:")), None)
        if verdict is None:
            continue
        row = per.setdefault(culture_language(t.culture) or "unknown", [0, 0])
        row[0] += verdict.label is None
        row[1] += 1
    if not per:
        return None
    none, n = (sum(r[i] for lang, r in per.items() if lang in covered) for i in (0, 1))
    return {"languages": covered, "uncovered": sorted(lang for lang in per if lang not in covered),
            "no_evidence_by_language": {lang: {"no_evidence": r[0], "tuples": r[1]} for lang, r in sorted(per.items())},
            "no_evidence_share_covered": round(none / n, 4) if n else None}
