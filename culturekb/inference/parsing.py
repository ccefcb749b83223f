"""Map a model's free answer to a label of the scheme, and say how the label was found.

Order of evidence:
1. JSON: the last JSON object in the answer with a label key (`emotion`, `label`, `answer`, in any case, or
   their Chinese / Arabic equivalents), found inside code fences or prose, tolerating single quotes, smart
   quotes and trailing commas. Its value may be the label, a synonym or a translation ("悲伤", "حزن").
2. Free text: a final answer line ("Answer: ...", "答案：...", "الإجابة: ...") wins; otherwise the first label,
   synonym or translation mentioned. A negated mention ("not sad", "不悲伤", "ليس حزنا") does not count, and a few
   surface forms that are also everyday words ("other", "content", "其他", "آخر") count only when nothing else
   is mentioned.
3. Otherwise the answer is invalid: recorded and scored wrong, never dropped.
"""

from __future__ import annotations

import ast
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal

from culturekb.kb.schemes import EmotionScheme

__all__ = ["ParsedAnswer", "ParseStatus", "parse_prediction", "find_label_mentions", "AMBIGUOUS_FORMS"]

ParseStatus = Literal["json", "text", "invalid"]

_LABEL_KEYS = (
    "emotion", "label", "answer", "final_answer", "predicted_emotion", "prediction", "emotion_label",
    "情绪", "情感", "答案", "标签", "العاطفة", "الشعور", "الإجابة", "الاجابة", "الجواب",
)
_EXPLANATION_KEYS = (
    "explanation", "reason", "reasoning", "rationale", "justification", "why",
    "解释", "理由", "原因", "说明", "التفسير", "الشرح", "السبب", "التبرير",
)

AMBIGUOUS_FORMS = frozenset(
    {"other", "others", "none", "neutral", "content", "mad", "wonder", "其他", "别的", "آخر", "اخر", "أخرى", "اخرى"}
)
"""Surface forms that double as everyday words ("the content of", "unlike other paintings", "另一个/其他"):
in free text they count only when no other label is mentioned. An exact JSON value or answer line still maps."""

_ANSWER_LINE = re.compile(
    r"(?:^|(?<=[\s.!?。！？]))[*#>_\-]*(?:final\s+answer|answer|predicted\s+emotion|emotion|label|最终答案|答案|情绪|情感|"
    r"الإجابة النهائية|الإجابة|الاجابة|الجواب|العاطفة)[\s*_]*[:：][\s*_]*(?P<value>.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_EXPLANATION_LINE = re.compile(
    r"^[\s*#>_\-]*(?:explanation|reason|reasoning|rationale|解释|理由|原因|التفسير|الشرح|السبب)[\s*_]*[:：][\s*_]*"
    r"(?P<value>.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_THINK_END = re.compile(r"</think>", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[.!?;:,。！？；：，、،؛\n]|\bbut\b|但是|但|لكن", re.IGNORECASE)
_EN_NEGATION = re.compile(
    r"\b(?:not|no|never|without|nor|neither|hardly|barely|rather\s+than|instead\s+of|lack\s+of|absence\s+of)\b"
    r"|n['’]t\b",
    re.IGNORECASE,
)
_EN_NOT_NEGATION = re.compile(r"\b(?:no\s+doubt|not\s+only|nothing\s+but|not\s+just)\b", re.IGNORECASE)
_ZH_NOT_NEGATION = re.compile(r"不禁|不由|不仅|不只|不安|不少|不错|不同|不已|不住|无比|无限|非常|未来")
_ZH_NEGATION = re.compile(r"不|没|无|非|未")
_AR_NEGATORS = frozenset({"لا", "ليس", "ليست", "لست", "ليسوا", "وليس", "غير", "بدون", "دون", "لم", "لن", "عدم", "بلا"})

_AR_LETTERS = "\u0621-\u064a\u066e-\u06d3"
_AR_DIACRITICS = re.compile(r"[\u0610-\u061a\u064b-\u065f\u0670\u0640]")
_HAS_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_HAS_ARABIC = re.compile(f"[{_AR_LETTERS}]")


@dataclass(frozen=True)
class ParsedAnswer:
    """The label read from an answer (None when invalid), its explanation, and how it was found."""

    label: str | None
    explanation: str
    status: ParseStatus


# -- normalisation ------------------------------------------------------------------------------------------


def _normalise_text(text: str) -> str:
    """NFKC, Arabic diacritics and tatweel removed, alef variants unified (applied to answers and forms alike)."""
    text = unicodedata.normalize("NFKC", text)
    text = _AR_DIACRITICS.sub("", text)
    return text.replace("أ", "ا").replace("إ", "ا").replace("آ", "ا").replace("ٱ", "ا")


def _key(name: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


# -- surface-form matching ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Matcher:
    pattern: re.Pattern[str]
    labels: tuple[str, ...]  # group index -> label
    weak: tuple[bool, ...]


def _form_regex(form: str, group: str) -> str:
    words = [re.escape(w) for w in re.split(r"[\s_\-]+", form) if w]
    core = r"[\s_\-]+".join(words)
    if _HAS_CJK.search(form):
        return f"(?P<{group}>{core})"
    if _HAS_ARABIC.search(form):
        prefix = "(?:[وفبلك]?ال|لل|[وفبلك])?"
        suffix = "(?:ا|ة|ه|ها|هم|ي)?"
        return f"(?<![{_AR_LETTERS}]){prefix}(?P<{group}>{core}){suffix}(?![{_AR_LETTERS}])"
    return rf"(?<!\w)(?P<{group}>{core})(?!\w)"


_MATCHERS: dict[tuple[int, str | None], tuple[EmotionScheme, _Matcher]] = {}
_MATCHERS_MAX = 64


def _matcher(scheme: EmotionScheme, language: str | None) -> _Matcher:
    """The compiled surface-form matcher of a scheme (schemes are unhashable: cached by identity)."""
    key = (id(scheme), language)
    hit = _MATCHERS.get(key)
    if hit is not None and hit[0] is scheme:
        return hit[1]
    built = _build_matcher(scheme, language)
    if len(_MATCHERS) >= _MATCHERS_MAX:
        _MATCHERS.pop(next(iter(_MATCHERS)))
    _MATCHERS[key] = (scheme, built)
    return built


def _build_matcher(scheme: EmotionScheme, language: str | None) -> _Matcher:
    forms = scheme.surface_forms(language)  # normalised form -> label
    items: dict[str, str] = {}
    for form, label in forms.items():
        items.setdefault(_normalise_text(form).lower(), label)
    ordered = sorted(items.items(), key=lambda kv: (-len(kv[0]), kv[0]))  # longer forms win at one position
    parts, labels, weak = [], [], []
    for i, (form, label) in enumerate(ordered):
        parts.append(_form_regex(form, f"g{i}"))
        labels.append(label)
        weak.append(form in _WEAK_NORMALISED)
    return _Matcher(re.compile("|".join(parts), re.IGNORECASE), tuple(labels), tuple(weak))


_WEAK_NORMALISED = frozenset(_normalise_text(f).lower() for f in AMBIGUOUS_FORMS)


def _negated(text: str, start: int) -> bool:
    """Whether the mention starting at `start` is negated within its clause ("not sad", "不悲伤", "ليس حزنا")."""
    window = text[max(0, start - 40) : start]
    breaks = list(_CLAUSE_BREAK.finditer(window))
    if breaks:
        window = window[breaks[-1].end() :]
    if _HAS_CJK.search(window[-4:]):
        tail = _ZH_NOT_NEGATION.sub("", window[-4:])
        return bool(_ZH_NEGATION.search(tail))
    words = window.split()[-4:]
    if any(w.strip("()[]\"'«»") in _AR_NEGATORS for w in words[-3:]):
        return True
    tail = _EN_NOT_NEGATION.sub(" ", " ".join(words))
    return bool(_EN_NEGATION.search(tail))


def find_label_mentions(text: str, scheme: EmotionScheme, language: str | None = None) -> list[tuple[int, str]]:
    """(position, label) of every non-negated mention of a label, synonym or translation, in reading order.

    `language` restricts translations to that language (English labels and synonyms always count). Everyday
    words in `AMBIGUOUS_FORMS` are kept only when no other mention exists.
    """
    norm = _normalise_text(text)
    matcher = _matcher(scheme, language)
    strong: list[tuple[int, str]] = []
    weak: list[tuple[int, str]] = []
    for m in matcher.pattern.finditer(norm):
        group = m.lastgroup
        if group is None:
            continue
        idx = int(group[1:])
        if _negated(norm, m.start()):
            continue
        (weak if matcher.weak[idx] else strong).append((m.start(), matcher.labels[idx]))
    return strong or weak


def _first_mention(text: str, scheme: EmotionScheme, language: str | None) -> str | None:
    mentions = find_label_mentions(text, scheme, language)
    if not mentions and language is not None:
        mentions = find_label_mentions(text, scheme, None)
    return mentions[0][1] if mentions else None


# -- JSON ---------------------------------------------------------------------------------------------------


_OBJECT_START = re.compile(r"\{\s*[\"'“]")
_MAX_LENIENT_TRIES = 32
_MAX_OBJECT_CHARS = 20_000


def _balanced_end(text: str, start: int) -> int | None:
    """Index after the `}` closing the `{` at `start`, skipping braces inside quoted strings."""
    depth = 0
    quote: str | None = None
    i = start
    stop = min(len(text), start + _MAX_OBJECT_CHARS)
    while i < stop:
        ch = text[i]
        if quote is not None:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'“”":
            quote = '"' if ch in "“”" else ch
            if ch == "“":
                quote = "”"
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _lenient_load(snippet: str) -> Any:
    try:
        return json.loads(snippet)
    except ValueError:
        pass
    fixed = snippet.replace("“", '"').replace("”", '"').replace("„", '"')
    fixed = re.sub(r",\s*([}\]])", r"\1", fixed)
    try:
        return json.loads(fixed)
    except ValueError:
        pass
    try:
        return ast.literal_eval(fixed)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _json_objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """Top-level JSON objects in `text` as (start, end, object), in order."""
    found: list[tuple[int, int, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    lenient_left = _MAX_LENIENT_TRIES
    pos = text.find("{")
    while pos != -1:
        obj: Any = None
        end: int | None = None
        try:
            obj, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            # Repair only what looks like an object with quoted keys, a bounded number of times, so that prose
            # full of braces stays linear.
            if lenient_left > 0 and _OBJECT_START.match(text, pos):
                lenient_left -= 1
                end = _balanced_end(text, pos)
                if end is not None:
                    obj = _lenient_load(text[pos:end])
        if isinstance(obj, dict) and end is not None:
            found.append((pos, end, obj))
            pos = text.find("{", end)
        else:
            pos = text.find("{", pos + 1)
    return found


def _field(obj: dict[str, Any], keys: tuple[str, ...]) -> tuple[bool, Any]:
    lowered = {_key(k): v for k, v in obj.items()}
    for key in keys:
        if key in lowered:
            return True, lowered[key]
    return False, None


def _label_from_value(value: Any, scheme: EmotionScheme, language: str | None) -> str | None:
    if isinstance(value, dict):
        has, inner = _field(value, _LABEL_KEYS)
        return _label_from_value(inner, scheme, language) if has else None
    if isinstance(value, list):
        for item in value:
            label = _label_from_value(item, scheme, language)
            if label is not None:
                return label
        return None
    if not isinstance(value, str):
        return None
    text = _normalise_text(value).strip()
    exact = scheme.match(text) or scheme.match(text.strip(" \t.,;:!?。！？\"'`*<>()[]{}"))
    if exact is not None:
        return exact
    return _first_mention(text, scheme, language)


def _explanation_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip()


def _from_json(text: str, scheme: EmotionScheme, language: str | None) -> ParsedAnswer | None:
    for start, end, outer in reversed(_json_objects(text)):
        nested = [v for v in outer.values() if isinstance(v, dict)]
        found = [o for o in (outer, *nested) if _field(o, _LABEL_KEYS)[0]]
        if not found:
            continue
        obj = found[0]
        value = _field(obj, _LABEL_KEYS)[1]
        has_expl, expl = _field(obj, _EXPLANATION_KEYS)
        explanation = _explanation_text(expl) if has_expl else (text[:start] + text[end:]).strip(" \n`")
        label = _label_from_value(value, scheme, language)
        return ParsedAnswer(label, explanation, "json" if label is not None else "invalid")
    return None


# -- free text ----------------------------------------------------------------------------------------------


def _text_explanation(text: str) -> str:
    """The value of an 'Explanation: ...' line if there is one, else the whole answer."""
    lines = list(_EXPLANATION_LINE.finditer(text))
    if lines:
        return lines[-1].group("value").strip()
    return text.strip()


def _from_text(text: str, scheme: EmotionScheme, language: str | None) -> ParsedAnswer | None:
    for m in reversed(list(_ANSWER_LINE.finditer(text))):
        label = _label_from_value(m.group("value"), scheme, language)
        if label is not None:
            return ParsedAnswer(label, _text_explanation(text), "text")
    label = _first_mention(text, scheme, language)
    if label is not None:
        return ParsedAnswer(label, _text_explanation(text), "text")
    return None


def parse_prediction(text: str | None, scheme: EmotionScheme, language: str | None = None) -> ParsedAnswer:
    """The label in a model's answer: JSON first, then free text, else status 'invalid' (label None).

    `language`: the prompt language; its translations are searched first in free text (then all languages).
    """
    if language is not None:
        language = language.strip().lower().replace("_", "-").split("-")[0] or None
    raw = (text or "").strip()
    if not raw:
        return ParsedAnswer(None, "", "invalid")
    parts = _THINK_END.split(raw)
    candidates = [parts[-1].strip(), raw] if len(parts) > 1 and parts[-1].strip() else [raw]
    for candidate in candidates:
        parsed = _from_json(candidate, scheme, language)
        if parsed is not None:
            return parsed
        parsed = _from_text(candidate, scheme, language)
        if parsed is not None:
            return parsed
    return ParsedAnswer(None, raw, "invalid")
