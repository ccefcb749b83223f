"""The knowledge-injection service: (concepts, culture, mode, budget, template) -> a rendered block + provenance.

Every path that puts KB knowledge into a prompt renders through `KnowledgeService`: the `Augmenter` (and so the
predictors and the HTTP ``/v1/augment`` route), the harness adapters (lmms-eval, VLMEvalKit, inspect_ai), the
Cedar and RICE-VL cue blocks, and `cues`. Callers differ only in the `BlockTemplate` and `Budget` they pass, so
the same inputs give the same block, byte for byte, whoever asks.

(Why one module over 500 lines: it is the one place every knowledge block is made; splitting selection from
rendering would put the placeholder reference below away from the code that fills it.)

One request goes through three steps:

1. **Select**, per the paper's mode: ``know`` looks the concepts up in the culture (exact, else semantic with
   cosine >= tau; one batched lookup for a whole batch); ``cross-culture-know`` in every other culture;
   ``random-know`` draws as many random tuples of the culture as the lookup matched (at least one), seeded by
   (seed, request key); ``orig`` and ``internal-know`` use no knowledge. Tuples a human rejected are never used.
   The **status filter** (``all``, the default: every tuple but rejected ones; ``accepted``: reviewed knowledge
   only; ``pending``: unreviewed only) decides which tuples the lookup and the random draw see: the service's own
   (`KnowledgeService(status=...)`, else its retriever's) or one per call (``status_filter=``).
2. **Budget**: one match per tuple (the best-scoring one, at its first position), ranked by score
   (``rank="score"``) or kept in concept order (``rank="salience"``), at most `max_tuples`; lines that would
   go past `max_chars` are left out whole, never cut.
3. **Render** in one language: the requested one (default: the culture's language in the KB's culture
   registry) when every template of the `BlockTemplate` exists in it, else English (the one fallback rule of
   `culturekb.text.prompts.resolve_prompt`, recorded as ``language_status="fallback:en"``); labels are
   translated into it through the KB's scheme. Each tuple is one line of the item template; an optional frame
   template puts the lines under a header.

Item template placeholders: {concept} {label} (required), {query} {share} {support} {rationales} (the first
`max_rationales` rationales) {rationale} (the first one), and the distribution-level ones
(`culturekb.inference.evidence`): {distribution} (the tuple's label and the next one with their counts, ``fear
(7/10), awe (2/10)``, labels in the block's language, a tie of the label said: `culturekb.kb.lines.tuple_summary`),
{tied} (only the tie remark, `` (tied: neutral, joy; neutral chosen as the most frequent in the culture)``, empty
without a tie: for templates that show {label} without {distribution}), {interval} (the 95% Wilson interval of
the dominant share, ``40-89%``), {count} (the dominant label's count, ``7/10``), {review} (the tuple's review
status) and {unreviewed}: written ``{unreviewed:TEXT}``, it shows TEXT (the marker in the template's language)
for a tuple nobody has reviewed (status ``pending``) and nothing for a reviewed one; a bare {unreviewed} shows
`` (unreviewed)``. Frame placeholders: {items} or {knowledge} (the lines),
{culture} (how prompts name the culture in the block's language, `culture_display_name`), {culture_name} (the
culture registry's name), {culture_id}.

The `KnowledgeBlock` carries its provenance: the tuples with the query, match kind, score and review status of
each, the status filter that served them, the KB version, the language and whether it is the one asked for
(`language_status`), the template id (``name.language@hash`` of each part) and a sha256 over the templates.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from culturekb._io import sha256_text
from culturekb.errors import ConfigError
from culturekb.inference.base import check_mode
from culturekb.inference.evidence import tuple_evidence
from culturekb.kb.cultures import Culture, CultureRegistry
from culturekb.kb.lines import kb_tie_break, tie_note
from culturekb.kb.schema import KnowledgeTuple, Sample
from culturekb.kb.stimulus import kb_stimulus_kind, stimulus_phrase
from culturekb.retrieval.filters import StatusFilter, check_status
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import ConceptExtractor
from culturekb.text.prompts import PromptTemplate, normalise_language, resolve_prompt

__all__ = ["Budget", "BlockTemplate", "KNOWLEDGE", "HARNESS", "CUES", "REGIONAL_CUES", "KnowledgeRequest",
           "KnowledgeBlock", "KnowledgeService", "CueStatus", "cue_budget", "cues", "load_block_template",
           "LoadedTemplates"]

log = logging.getLogger(__name__)

ITEM_FIELDS = ("concept", "label", "query", "share", "support", "rationales", "rationale", "distribution", "interval",
               "count", "review", "unreviewed", "tied")
FRAME_FIELDS = ("items", "knowledge", "culture", "culture_name", "culture_id", "stimuli")
"""What a frame may name; ``{stimuli}``: the KB's stimulus kind as a phrase of the frame's language
(`culturekb.kb.stimulus.stimulus_phrase`: "how many of the annotated texts")."""
_NO_KNOWLEDGE_MODES = ("orig", "internal-know")

CueStatus = Literal["matched", "no-match", "no-concepts", "culture-not-in-kb", "not-used", "fallback"]
"""Why a block is what it is: tuples were found (``matched``), none fit (``no-match``), the request had no
concepts, its culture is not in the KB (with ``on_unknown_culture="skip"``), the mode uses no knowledge
(``not-used``), or the caller gave the tuples itself (``fallback``, see `KnowledgeService.render`)."""


@dataclass(frozen=True)
class Budget:
    """How much knowledge one block may carry, and which tuples fill it first.

    `max_tuples`: most tuples; `max_rationales`: rationales per tuple in {rationales} ({rationale} is the first
    when this is >= 1); `max_chars`: most characters of the tuple lines together (None: no limit);
    `rank`: ``"score"`` (best match first) or ``"salience"`` (in the order of the query concepts).
    """

    max_tuples: int = 5
    max_rationales: int = 2
    max_chars: int | None = 1200
    rank: Literal["score", "salience"] = "score"

    def __post_init__(self) -> None:
        ok = (isinstance(self.max_tuples, int) and self.max_tuples >= 1 and self.max_rationales >= 0
              and (self.max_chars is None or self.max_chars >= 40) and self.rank in ("score", "salience"))
        if not ok:
            raise ConfigError(f"invalid knowledge budget {self}; need max_tuples >= 1, max_rationales >= 0, "
                              "max_chars >= 40 (or None for no limit) and rank 'score' or 'salience'")


def cue_budget(max_items: int = 5) -> Budget:
    """The budget of cue blocks: `max_items` tuples in concept order, their first rationale, no character cap."""
    if not isinstance(max_items, int) or isinstance(max_items, bool) or max_items < 1:
        raise ConfigError(f"max_items must be a positive integer; got {max_items!r}")
    return Budget(max_tuples=max_items, max_rationales=1, max_chars=None, rank="salience")


@dataclass(frozen=True)
class BlockTemplate:
    """How a block reads: one `item` line per tuple, optionally under a `frame` (prompt names or .txt paths).

    `frame_names`: whom the frame names: the requested culture (``"target"``, one frame: the audience the
    knowledge is for) or the culture each tuple comes from (``"source"``, one frame per culture, in order of
    first appearance: notes about places).
    """

    item: str | Path
    frame: str | Path | None = None
    frame_names: Literal["target", "source"] = "target"

    def __post_init__(self) -> None:
        if self.frame_names not in ("target", "source"):
            raise ConfigError(f"frame_names must be 'target' or 'source', got {self.frame_names!r}")

    def parts(self) -> list[str | Path]:
        """The templates this block reads with: the frame (when set), then the item."""
        return [p for p in (self.frame, self.item) if p is not None]


KNOWLEDGE = BlockTemplate("knowledge_item")
"""The bare block that fills {knowledge} in the prediction prompts (Augmenter, ``/v1/augment``)."""
HARNESS = BlockTemplate("knowledge_item", "harness_knowledge")
"""The block under a short header, put before a harness's own prompt (lmms-eval, VLMEvalKit, inspect_ai)."""
CUES = BlockTemplate("cue_item", "cues")
"""Cultural cue blocks (Cedar, `cues`)."""
REGIONAL_CUES = BlockTemplate("regional_cue_item", "regional_cues", frame_names="source")
"""Notes per country (RICE-VL)."""


@dataclass(frozen=True)
class KnowledgeRequest:
    """One block to make: `concepts` looked up for `culture` in `mode`.

    `culture`: a code or alias (resolved in the KB), or a `Culture` the caller resolved already (a runner, from its
    run's registry), not looked up again to find the KB's culture nor to name it (`resolved` holds it, `culture`
    its id). `language`: the block's language (default: the culture's); `key`: names the request (random-know
    draws are seeded by it); `scope`: cultures to search instead of `culture` (``know`` only; the block is still
    framed for `culture`).
    """

    concepts: Sequence[str]
    culture: str | Culture
    mode: str = "know"
    language: str | None = None
    key: str = ""
    scope: Sequence[str] | None = None
    resolved: Culture | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "concepts", tuple(self.concepts))
        if isinstance(self.culture, Culture):
            object.__setattr__(self, "resolved", self.culture)
            object.__setattr__(self, "culture", self.culture.id)
        if self.scope is not None:
            object.__setattr__(self, "scope", tuple(self.scope))


@dataclass(frozen=True)
class KnowledgeBlock:
    """A rendered block (`text`, "" when empty) and its provenance. True when it holds tuples."""

    text: str
    matches: tuple[Match, ...] = ()
    concepts: tuple[str, ...] = ()
    culture: str = ""
    mode: str = "know"
    status: str = "no-match"
    language: str = "en"
    template_id: str = ""
    template_sha: str = ""
    kb_version: str = ""
    scope: tuple[str, ...] = field(default_factory=tuple)
    status_filter: str = "all"
    """Which tuples could be served (``all``, ``accepted`` or ``pending``; `culturekb.retrieval.filters`)."""
    language_status: str = "native"
    """``native`` (the block is in the language asked for) or ``fallback:en`` (a template lacked it)."""

    def __bool__(self) -> bool:
        return bool(self.matches)

    @property
    def tuples(self) -> tuple[KnowledgeTuple, ...]:
        """The knowledge tuples in the block, in match order."""
        return tuple(m.tuple for m in self.matches)

    @property
    def tuple_ids(self) -> list[str]:
        """Ids (``culture::concept``) of the tuples in the block."""
        return [m.tuple.id for m in self.matches]

    @property
    def scores(self) -> tuple[float, ...]:
        """Match score of each tuple (1.0 for exact, else cosine similarity)."""
        return tuple(m.score for m in self.matches)

    @property
    def unreviewed(self) -> list[str]:
        """Ids of the tuples in the block that nobody has reviewed (status ``pending``), marked in its text."""
        return [m.tuple.id for m in self.matches if m.tuple.status == "pending"]

    def provenance(self) -> dict[str, Any]:
        """What the block was made from, as plain JSON values (recorded with predictions and API answers):
        `status_filter` says which tuples could be served, each tuple's `review` its review status."""
        return {
            "kb_version": self.kb_version, "culture": self.culture, "scope": list(self.scope), "mode": self.mode,
            "status": self.status, "status_filter": self.status_filter, "language": self.language,
            "language_status": self.language_status, "template_id": self.template_id,
            "template_sha": self.template_sha, "concepts": list(self.concepts),
            "tuples": [{"id": m.tuple.id, "query": m.query, "kind": m.kind, "score": round(float(m.score), 6),
                        "review": m.tuple.status} for m in self.matches],
        }


@dataclass(frozen=True)
class LoadedTemplates:
    """A `BlockTemplate`'s templates loaded in one `language`; `id`, `sha` and `language_status` (``native``, or
    ``fallback:en`` when a part lacked the language asked for) go into the block's provenance."""

    item: PromptTemplate
    frame: PromptTemplate | None
    language: str
    language_status: str = "native"

    @property
    def id(self) -> str:
        """The templates' ids, frame first, joined with '+'."""
        return f"{self.frame.id}+{self.item.id}" if self.frame is not None else self.item.id

    @property
    def sha(self) -> str:
        """sha256 over the templates' hashes, frame first."""
        return sha256_text("+".join(t.sha for t in (self.frame, self.item) if t is not None))


def _load(name: str | Path, language: str, kind: str) -> PromptTemplate:
    if kind == "item":
        return resolve_prompt(name, language, required=("concept", "label"), allowed=ITEM_FIELDS)
    frame = resolve_prompt(name, language, required=(), allowed=FRAME_FIELDS)
    if not frame.placeholders & {"items", "knowledge"}:
        raise ConfigError(f"frame template {frame.source}: it has no {{items}} (or {{knowledge}}) placeholder, so "
                          "the tuple lines have nowhere to go; add one where they belong")
    return frame


def load_block_template(template: BlockTemplate, language: str) -> LoadedTemplates:
    """The templates of `template` in `language` when all of them exist in it, else all in English (one block,
    one language), marked ``fallback:en``. Packaged templates are read once per process (`resolve_prompt`); a
    user's file on every use (it may be edited)."""
    lang = normalise_language(language)
    frame = _load(template.frame, lang, "frame") if template.frame is not None else None
    item = _load(template.item, lang, "item")
    if all(t.language_status == "native" for t in (frame, item) if t is not None):
        return LoadedTemplates(item, frame, lang)
    frame = _load(template.frame, "en", "frame") if template.frame is not None else None
    return LoadedTemplates(_load(template.item, "en", "item"), frame, "en", "fallback:en")


def _target(retriever: Retriever, request: KnowledgeRequest) -> str:
    """The request's KB culture: the caller's resolved one as it is, else its code resolved by the retriever."""
    if request.resolved is not None and request.resolved.id in retriever.cultures:
        return request.resolved.id
    return retriever.resolve_culture(str(request.culture))


def _names(culture: str, language: str, registry: CultureRegistry, known: Culture | None = None) -> dict[str, str]:
    from culturekb.inference.prompts import culture_display_name

    if known is None and culture not in registry:
        return {"culture": culture, "culture_name": culture, "culture_id": culture}
    found = known if known is not None else registry.resolve(culture)
    return {"culture": culture_display_name(found, language), "culture_name": found.name, "culture_id": culture}


class _Marker:
    """The value of {unreviewed}: ``{unreviewed:TEXT}`` renders TEXT when `on`, nothing otherwise."""

    __slots__ = ("on",)
    DEFAULT = " (unreviewed)"

    def __init__(self, on: bool) -> None:
        self.on = on

    def __format__(self, spec: str) -> str:
        return (spec or self.DEFAULT) if self.on else ""

    def __str__(self) -> str:
        return format(self, "")


def _select(matches: Sequence[Match], budget: Budget) -> list[Match]:
    """One match per tuple (its best-scoring one, at its first position), rejected tuples left out, ranked."""
    best: dict[str, Match] = {}
    for m in matches:
        if m.tuple.status == "rejected":
            continue
        if m.tuple.id not in best or m.score > best[m.tuple.id].score:
            best[m.tuple.id] = m
    chosen = list(best.values())
    if budget.rank == "score":
        chosen.sort(key=lambda m: -m.score)
    return chosen[: budget.max_tuples]


class KnowledgeService:
    """Turns (concepts, culture, mode, budget, template) into a `KnowledgeBlock` over one KB's retriever.

    The cosine threshold of semantic matches is the retriever's (`Retriever.with_tau` for another); `budget` and
    `template`: the defaults of calls that do not pass their own; `status`: which tuples are served (``all``,
    ``accepted`` or ``pending``; default: the retriever's filter), overridable per call with ``status_filter=``.
    """

    def __init__(self, retriever: Retriever, *, budget: Budget | None = None,
                 template: BlockTemplate = KNOWLEDGE, status: StatusFilter | None = None) -> None:
        self.retriever = retriever if status is None else retriever.with_filter(status=check_status(status))
        self.budget = budget or Budget()
        self.template = template
        self._by_status: dict[str, Retriever] = {self.status: self.retriever}

    @property
    def status(self) -> StatusFilter:
        """The status filter of calls that do not pass their own."""
        return self.retriever.tuple_filter.status

    def retriever_for(self, status_filter: str | None = None) -> Retriever:
        """The retriever serving `status_filter` (None: the service's own), made once per filter."""
        if status_filter is None:
            return self.retriever
        found = self._by_status.get(status_filter)
        if found is None:
            found = self.retriever.with_filter(status=check_status(status_filter))
            self._by_status[status_filter] = found
        return found

    @property
    def kb_version(self) -> str:
        """Version of the KB the blocks come from."""
        return self.retriever.kb.version

    # -- one request, many requests -------------------------------------------------------------------------------
    def inject(
        self,
        concepts: Sequence[str],
        culture: str | Culture,
        *,
        mode: str = "know",
        budget: Budget | None = None,
        template: BlockTemplate | None = None,
        language: str | None = None,
        seed: int = 0,
        key: str = "",
        scope: Sequence[str] | None = None,
        on_unknown_culture: Literal["error", "skip"] = "error",
        status_filter: str | None = None,
    ) -> KnowledgeBlock:
        """The block for one request; see `inject_many`."""
        request = KnowledgeRequest(concepts, culture, mode, language, key, scope)
        return self.inject_many([request], budget=budget, template=template, seed=seed,
                                on_unknown_culture=on_unknown_culture, status_filter=status_filter)[0]

    def inject_many(
        self,
        requests: Sequence[KnowledgeRequest],
        *,
        budget: Budget | None = None,
        template: BlockTemplate | None = None,
        seed: int = 0,
        on_unknown_culture: Literal["error", "skip"] = "error",
        status_filter: str | None = None,
    ) -> list[KnowledgeBlock]:
        """One block per request, in order, with one batched lookup per kind of search (own culture, other
        cultures, a given scope). A culture the KB lacks raises ConfigError, or with ``on_unknown_culture="skip"``
        gives an empty block with status ``culture-not-in-kb`` (``no-concepts`` when it had no concepts either).
        `status_filter`: which tuples to serve for these requests (default: the service's `status`).
        """
        retriever = self.retriever_for(status_filter)
        served = retriever.tuple_filter.status
        budget = budget or self.budget
        template = template or self.template
        if on_unknown_culture not in ("error", "skip"):
            raise ConfigError(f"on_unknown_culture must be 'error' or 'skip', got {on_unknown_culture!r}")
        targets: list[str | None] = []
        for r in requests:
            check_mode(r.mode)
            if r.scope is not None and r.mode != "know":
                raise ConfigError(f"a lookup scope works with mode 'know' only, not {r.mode!r}")
            try:
                targets.append(_target(retriever, r))
            except ConfigError:
                if on_unknown_culture == "error":
                    raise
                targets.append(None)
        found = self._lookup(retriever, requests, targets)
        out = []
        for i, (r, target) in enumerate(zip(requests, targets, strict=True)):
            if target is None:
                status = "culture-not-in-kb" if r.concepts else "no-concepts"
                out.append(self.render([], str(r.culture), template=template, budget=budget, language=r.language,
                                       concepts=r.concepts, mode=r.mode, status=status, status_filter=served))
                continue
            matches = found[i]
            if r.mode == "random-know":
                matches = self._random(retriever, target, max(1, len(matches)), seed, r.key, budget)
            why = ("not-used" if r.mode in _NO_KNOWLEDGE_MODES
                   else "no-concepts" if not r.concepts and r.mode != "random-know" else None)
            out.append(self.render(matches, target, template=template, budget=budget, language=r.language,
                                   concepts=r.concepts, mode=r.mode, status=why,
                                   scope=self._scope_of(r, target), status_filter=served, resolved=r.resolved))
        return out

    def _scope_of(self, r: KnowledgeRequest, target: str) -> tuple[str, ...]:
        if r.scope is not None:
            return tuple(dict.fromkeys(self.retriever.resolve_culture(c) for c in r.scope))
        if r.mode == "cross-culture-know":
            return tuple(c for c in self.retriever.cultures if c != target)
        return () if r.mode in _NO_KNOWLEDGE_MODES else (target,)

    def _lookup(self, retriever: Retriever, requests: Sequence[KnowledgeRequest],
                targets: Sequence[str | None]) -> list[list[Match]]:
        """Matches per request: one `lookup_many` per kind of search (own culture, other cultures, each scope)."""
        found: list[list[Match]] = [[] for _ in requests]
        groups: dict[Any, list[int]] = {}
        single_culture = len(retriever.cultures) < 2
        unanswerable = 0
        for i, (r, target) in enumerate(zip(requests, targets, strict=True)):
            if target is None or not r.concepts or r.mode in _NO_KNOWLEDGE_MODES:
                continue
            if r.mode == "cross-culture-know":
                if single_culture:
                    unanswerable += 1
                    continue
                groups.setdefault(True, []).append(i)
            else:
                groups.setdefault(r.scope if r.scope is not None else False, []).append(i)
        if unanswerable:  # one line per batch, not one per request
            log.warning("cross-culture-know: the KB has one culture only (%s); no tuples to give to %d request(s)",
                        retriever.cultures, unanswerable)
        for spec, idx in groups.items():
            cross: bool | list[str] = list(spec) if isinstance(spec, tuple) else spec
            rows = retriever.lookup_many([(list(requests[i].concepts), targets[i] or "") for i in idx],
                                         cross_culture=cross, on_invalid="skip")
            for i, row in zip(idx, rows, strict=True):
                found[i] = [m for m in row if m is not None]
        return found

    @staticmethod
    def _random(retriever: Retriever, culture: str, n: int, seed: int, key: str, budget: Budget) -> list[Match]:
        pool = retriever.served(culture)
        rng = random.Random(f"{seed}:{key}")
        picks = rng.sample(pool, min(n, len(pool), budget.max_tuples))
        return [Match(t.concept, t, 1.0, "exact") for t in picks]

    # -- rendering ------------------------------------------------------------------------------------------------
    def render(
        self,
        matches: Sequence[Match],
        culture: str,
        *,
        template: BlockTemplate | None = None,
        budget: Budget | None = None,
        language: str | None = None,
        concepts: Sequence[str] = (),
        mode: str = "know",
        status: str | None = None,
        scope: Sequence[str] = (),
        status_filter: str | None = None,
        resolved: Culture | None = None,
    ) -> KnowledgeBlock:
        """The block of given matches (selected and budgeted as any other): for callers that choose tuples
        themselves, e.g. RICE-VL's best-supported fallback (`status="fallback"`). `status` defaults to
        ``matched`` or ``no-match``; `status_filter` (recorded in the provenance) to the service's. `resolved`:
        `culture` as the caller resolved it already (its language and names are then not looked up again)."""
        template, budget = template or self.template, budget or self.budget
        resolved = resolved if resolved is not None and resolved.id == culture else None
        reg = self.retriever.kb.culture_registry
        requested = language or (resolved.language if resolved is not None
                                 else reg.resolve(culture).language if culture in reg else "en")
        loaded = load_block_template(template, requested)
        lang = loaded.language
        scheme = self.retriever.kb.scheme
        tie_break = kb_tie_break(self.retriever.kb)
        lines: list[tuple[Match, str]] = []
        total = 0
        for m in _select(matches, budget):
            t = m.tuple
            share = t.distribution.get(t.label)
            rationales = [r.strip() for r in t.rationales[: budget.max_rationales]]
            evidence = tuple_evidence(t, scheme, lang, tie_break=tie_break)
            note = tie_note(t, scheme.labels, tie_break)
            line = loaded.item.fill({
                "concept": t.concept,
                "query": m.query,
                "label": scheme.translate(t.label, lang) if lang != "en" else t.label,
                "share": f"{share:.0%}" if isinstance(share, int | float) else "n/a",
                "support": t.support,
                "rationales": " ".join(rationales),
                "rationale": rationales[0] if rationales else "",
                "distribution": evidence.summary,
                "interval": evidence.interval_text,
                "count": f"{evidence.counts.get(t.label, 0)}/{t.support}",
                "review": t.status,
                "unreviewed": _Marker(evidence.unreviewed),
                "tied": note.text(lang, {lab: scheme.translate(lab, lang) for lab in note.tied} if lang != "en"
                                  else None) if note is not None else "",
            }).strip()
            if budget.max_chars is not None and total + len(line) + 1 > budget.max_chars:
                continue  # a tuple that does not fit is left out whole, never cut
            lines.append((m, line))
            total += len(line) + 1
        used = tuple(m for m, _ in lines)
        if status is None:
            status = "matched" if used else "no-match"
        stimuli = stimulus_phrase(kb_stimulus_kind(self.retriever.kb), loaded.language)
        return KnowledgeBlock(
            text=self._frame(loaded, template.frame_names, lines, culture, reg, stimuli, resolved), matches=used,
            concepts=tuple(concepts),
            culture=culture, mode=mode, status=status, language=lang, template_id=loaded.id, template_sha=loaded.sha,
            kb_version=self.kb_version, scope=tuple(scope), language_status=loaded.language_status,
            status_filter=status_filter if status_filter is not None else self.status,
        )

    @staticmethod
    def _frame(loaded: LoadedTemplates, names: str, lines: Sequence[tuple[Match, str]], culture: str,
               registry: CultureRegistry, stimuli: str, resolved: Culture | None = None) -> str:
        if not lines:
            return ""
        if loaded.frame is None:
            return "\n".join(line for _, line in lines)
        groups: dict[str, list[str]] = {}  # one frame for the target, or one per source culture
        for m, line in lines:
            groups.setdefault(culture if names == "target" else m.tuple.culture, []).append(line)
        parts = []
        for name, group in groups.items():
            body = "\n".join(group)
            known = resolved if resolved is not None and name == resolved.id else None
            values = {"items": body, "knowledge": body, "stimuli": stimuli, **_names(name, loaded.language, registry,
                                                                                    known)}
            parts.append(loaded.frame.fill(values).strip())
        return "\n".join(parts)


def cues(
    text_or_concepts: str | Sequence[str],
    culture: str,
    retriever: Retriever,
    extractor: ConceptExtractor | None = None,
    max_items: int = 5,
    *,
    tau: float | None = None,
    cross_culture: bool | str | Sequence[str] = False,
    language: str = "en",
    block_template: str | Path = "cues",
    item_template: str | Path = "cue_item",
    status: StatusFilter | None = None,
) -> KnowledgeBlock:
    """Cue block for a narrative or question (concepts extracted with `extractor`, default the offline English
    `TextConceptExtractor`) or for a list of concepts, looked up in `culture` with one batched lookup.

    At most `max_items` distinct tuples, in the extractor's salience order (list order for a list).
    `cross_culture`: True searches every other culture (the cross-culture ablation), a culture id or list searches
    those; the block is framed for `culture` either way. The templates are the packaged ``cues``/``cue_item`` or
    a user's own files. `status`: which tuples are served (``all``, ``accepted``, ``pending``; default: the
    retriever's filter).
    """
    budget = cue_budget(max_items)
    target = retriever.resolve_culture(culture)
    if isinstance(text_or_concepts, str):
        from culturekb.text.concepts import TextConceptExtractor

        ext = extractor or TextConceptExtractor(fields=("text",), scheme=retriever.kb.scheme)
        concepts = (ext.extract([Sample(id="cue-query", culture=target, text=text_or_concepts)])[0]
                    if text_or_concepts.strip() else [])
    else:
        concepts = list(text_or_concepts)
    mode = "cross-culture-know" if cross_culture is True else "know"
    scope = None if isinstance(cross_culture, bool) else (
        [cross_culture] if isinstance(cross_culture, str) else list(cross_culture))
    if scope is not None and not scope:
        raise ConfigError("cross_culture is an empty list; pass True, False, or the cultures to search")
    service = KnowledgeService(retriever.with_tau(tau), status=status)
    return service.inject(concepts, target, mode=mode, budget=budget, language=language, scope=scope,
                          template=BlockTemplate(item_template, block_template))
