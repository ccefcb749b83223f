"""What the harness adapters share: a document's culture and concepts, the knowledge service, the block in the prompt.

A harness hands the adapter a document (a row of its dataset) and the text it is about to send. The
`KnowledgeInjector` reads the document's culture (a field, else the default culture) and concepts (a field,
else extracted from the text in its own language, as the augmenter reads a sample's stimulus fields) and asks
the `KnowledgeService` for the blocks of a whole batch (one batched lookup): the augmenter's lines under a short
header template (`harness_knowledge.<language>.txt`, the `HARNESS` block template) unless `template=None` (the
bare lines).

Concepts taken from the request text come from its parts (`culturekb.text.harness_prompt`): the question and
its context first, then the options, never the instruction sentences ("Answer with the option's letter ...");
instruction words are dropped everywhere. `prompt_language` sets the language of the block's header (the
benchmark's prompt language); without it the header is in the culture's language.

Every adapter takes `status`, the status filter of the knowledge it injects: ``all`` (every tuple but rejected
ones; a pending tuple's line is marked unreviewed), ``accepted`` (reviewed knowledge only) or ``pending``; left
out, the ``status`` setting (``CULTUREKB_STATUS``, the TOML file), ``all`` by default.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from culturekb.errors import ConfigError

if TYPE_CHECKING:
    from culturekb.inference.augmenter import Augmenter
    from culturekb.inference.injection import BlockTemplate, KnowledgeBlock
    from culturekb.kb.schema import Sample

__all__ = ["Injection", "KnowledgeInjector", "prepend_block", "HARNESS_EXTRA"]

logger = logging.getLogger(__name__)

HARNESS_EXTRA = "harness"
"""The pyproject extra that installs every supported harness."""

OnUnknown = Literal["error", "skip"]
_SPLIT = re.compile(r"[,;|\n]")


@dataclass(frozen=True)
class Injection:
    """The knowledge put into one request: the framed block ("" when none) and what it was made from."""

    block: str
    culture: str | None
    concepts: tuple[str, ...]
    tuple_ids: tuple[str, ...]
    skipped: str | None = None
    """Why nothing was looked up (an unknown culture with ``on_unknown_culture="skip"``), else None."""
    knowledge: KnowledgeBlock | None = None
    """The service's block with its provenance (None when skipped)."""

    def to_dict(self) -> dict[str, Any]:
        """The injection as plain JSON values, provenance included (what inspect_ai's store records)."""
        out: dict[str, Any] = {"block": self.block, "culture": self.culture, "concepts": list(self.concepts),
                               "tuple_ids": list(self.tuple_ids), "skipped": self.skipped}
        if self.knowledge is not None:
            out["provenance"] = self.knowledge.provenance()
        return out


def prepend_block(block: str, text: str) -> str:
    """`text` with the knowledge block on the lines before it (unchanged when the block is empty)."""
    return f"{block}\n{text}" if block else text


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


class KnowledgeInjector:
    """Knowledge blocks for harness documents, one batched lookup per batch of requests.

    `culture`: the default culture (id or alias) for documents without one; `culture_field`: the document
    field holding each document's culture (None: always the default). `concepts_field`: a field with the
    document's concepts (a list, or one string separated by , ; or |); without it the concepts are extracted
    from the request text by the augmenter's offline text extractor (`Augmenter.text_concepts`, any language
    with word lists). `mode`: an Augmenter mode (know, random-know, cross-culture-know ...).
    `on_unknown_culture`: "error" (default) raises on a culture the KB lacks; "skip" sends that request
    without knowledge and records why. `template`: the header template name or file (None: the bare block of
    the augmenter's template), or a whole `BlockTemplate`. The budget is the augmenter's. `status`: the status
    filter (``all``, ``accepted``, ``pending``; default: the augmenter's). `prompt_language`: the language of the
    block's header (default: the culture's language).
    """

    def __init__(
        self,
        augmenter: Augmenter,
        *,
        culture: str | None = None,
        culture_field: str | None = "culture",
        concepts_field: str | None = "concepts",
        mode: str = "know",
        on_unknown_culture: OnUnknown = "error",
        template: str | Path | BlockTemplate | None = "harness_knowledge",
        seed: int = 0,
        status: str | None = None,
        prompt_language: str | None = None,
    ) -> None:
        from culturekb.inference.base import check_mode
        from culturekb.inference.injection import BlockTemplate, load_block_template
        from culturekb.inference.prompts import normalise_language
        from culturekb.retrieval.filters import check_status

        check_mode(mode)
        self.status = augmenter.status if _missing(status) else check_status(str(status).strip())
        if on_unknown_culture not in ("error", "skip"):
            raise ConfigError(f"on_unknown_culture must be 'error' or 'skip', got {on_unknown_culture!r}")
        self.augmenter = augmenter
        self.culture = None if _missing(culture) else augmenter.retriever.resolve_culture(str(culture))
        self.culture_field = culture_field or None
        self.concepts_field = concepts_field or None
        self.mode = mode
        self.on_unknown_culture: OnUnknown = on_unknown_culture
        item = augmenter.template.item
        self.template: BlockTemplate = (
            template if isinstance(template, BlockTemplate)
            else BlockTemplate(item) if template is None else BlockTemplate(item, template)
        )
        self.seed = seed
        self.prompt_language = None if _missing(prompt_language) else normalise_language(str(prompt_language))
        load_block_template(self.template, "en")  # fail now, not at the first request, on a broken template

    @classmethod
    def open(
        cls,
        kb_dir: str | Path,
        *,
        backend: str | None = None,
        embedder: str | None = None,
        tau: float | None = None,
        status: str | None = None,
        **kwargs: Any,
    ) -> KnowledgeInjector:
        """An injector over a saved KB (its index loaded read-only, built first when missing).

        `backend`, `embedder` and `tau` default to the settings and to what the KB's index records (see
        `culturekb.retrieval.open_retriever`); `status` (the status filter) to the ``status`` setting. The
        embedding model is loaded once per process and spec, so a harness that builds its model several times
        (one lmms-eval run after another, VLMEvalKit's registry) does not load it again each time.
        """
        from culturekb.config import load_settings
        from culturekb.inference.augmenter import Augmenter
        from culturekb.retrieval.filters import check_status
        from culturekb.retrieval.retriever import open_retriever

        if not Path(kb_dir).is_dir():
            raise ConfigError(f"KB directory {kb_dir} does not exist; build one with `culturekb build` or fix the path")
        settings = load_settings()
        chosen = check_status(settings.status if _missing(status) else str(status).strip())
        retriever = open_retriever(kb_dir, embedder, backend, tau=tau, embedder_factory=_shared_embedder,
                                   settings=settings, status=chosen)
        return cls(Augmenter(retriever), **kwargs)

    @property
    def kb_version(self) -> str:
        return self.augmenter.kb_version

    def check_version(self, expected: Any, where: str) -> None:
        """Raise unless `expected` names this KB's version (`where` says how the user passes it); None (not
        given) passes: the version is then read from the KB."""
        actual = self.kb_version
        if _missing(expected):
            return
        if str(expected).strip() != actual and not _same_after_parse(expected, actual):
            raise ConfigError(
                f"{where}: kb_version={expected} does not match the KB, whose version is {actual}; the KB was "
                f"rebuilt or another KB was given. Use kb_version={actual} (cached answers of the old KB then "
                "stay apart), or leave kb_version out to take the KB's"
            )

    # -- documents -------------------------------------------------------------------------------------------
    def culture_of(self, doc: Mapping[str, Any] | None) -> str | None:
        if doc is not None and self.culture_field is not None:
            value = _get(doc, self.culture_field)
            if not _missing(value):
                return str(value).strip()
        return self.culture

    def concepts_of(self, doc: Mapping[str, Any] | None) -> list[str] | None:
        if doc is None or self.concepts_field is None:
            return None
        value = _get(doc, self.concepts_field)
        if _missing(value):
            return None
        items = _SPLIT.split(value) if isinstance(value, str) else [str(v) for v in value]
        out = [c.strip() for c in items if c and c.strip()]
        return out or None

    def inject_many(self, items: Sequence[tuple[Mapping[str, Any] | None, str, str]]) -> list[Injection]:
        """One Injection per (document, text, reference) with one batched lookup; `reference` names the
        document in error messages (e.g. "task mmbench, doc 12")."""
        from culturekb.inference.injection import KnowledgeRequest
        from culturekb.kb.schema import Sample

        out: list[Injection | None] = [None] * len(items)
        todo: list[tuple[int, Sample]] = []
        for i, (doc, text, ref) in enumerate(items):
            raw = self.culture_of(doc)
            if raw is None:
                field = f"field {self.culture_field!r} is missing or empty and " if self.culture_field else ""
                raise ConfigError(
                    f"{ref}: no culture for this document: {field}no default culture was given. Pass a default "
                    "culture (culture=ID) or name the document field that holds it (culture_field=NAME)"
                )
            try:
                culture = self.augmenter.retriever.resolve_culture(raw)
            except ConfigError as exc:
                if self.on_unknown_culture == "skip":
                    logger.debug("%s: culture %r not in the KB; sent without knowledge", ref, raw)
                    out[i] = Injection("", raw, (), (), skipped=f"culture {raw!r} is not in this KB")
                    continue
                raise ConfigError(f"{ref}: {exc} (or pass on_unknown_culture=skip)") from exc
            todo.append((i, Sample(id=f"doc{i}", culture=culture, text=text or None, concepts=self.concepts_of(doc))))
        need_text = [s for _, s in todo if s.concepts is None]
        if need_text:
            by_id = dict(zip((s.id for s in need_text), self.prompt_concepts(need_text), strict=True))
            # the text is dropped so that no concepts (empty: none found) are extracted again from the whole prompt
            todo = [(i, s.model_copy(update={"concepts": by_id[s.id], "text": None}) if s.id in by_id else s)
                    for i, s in todo]
        if todo:
            concepts = self.augmenter.concepts_for([s for _, s in todo])
            requests = [KnowledgeRequest(cs, s.culture, self.mode, language=self.prompt_language, key=s.id)
                        for (_, s), cs in zip(todo, concepts, strict=True)]
            blocks = self.augmenter.service.inject_many(requests, template=self.template, seed=self.seed,
                                                        status_filter=self.status)
            for (i, _), block in zip(todo, blocks, strict=True):
                out[i] = Injection(block.text, block.culture, block.concepts, tuple(block.tuple_ids), knowledge=block)
        return [o for o in out if o is not None]


    def prompt_concepts(self, samples: Sequence[Sample]) -> list[list[str]]:
        """Concepts of each sample's prompt text: its question and context first, then its options (one batched
        extraction); instruction sentences give none (`culturekb.text.harness_prompt`)."""
        from culturekb.text.harness_prompt import parse_harness_prompt

        parts: list[Sample] = []
        for s in samples:
            prompt = parse_harness_prompt(s.text or "")
            parts.append(s.model_copy(update={"text": prompt.stem or None, "concepts": None}))
            parts.append(s.model_copy(update={"id": f"{s.id}:options", "text": ". ".join(prompt.options) or None,
                                              "concepts": None}))
        found = self.augmenter.text_concepts(parts)
        return [list(dict.fromkeys([*found[2 * k], *found[2 * k + 1]])) for k in range(len(samples))]


@functools.lru_cache(maxsize=4)
def _shared_embedder(spec: str) -> Any:
    from culturekb.models.factory import make_embedder

    return make_embedder(spec)


def _get(doc: Mapping[str, Any], field: str) -> Any:
    """A field of a dict-like document; dotted names reach into nested dicts ("metadata.country")."""
    value: Any = doc
    for part in field.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            try:
                value = value[part]
            except (KeyError, TypeError, IndexError):
                return None
    return value


def _same_after_parse(given: Any, actual: str) -> bool:
    """Whether `given` is what a harness's argument parser makes of `actual` (e.g. lmms-eval turns an
    all-digit version into an int)."""
    if isinstance(given, bool) or not isinstance(given, int | float):
        return False
    if actual.isnumeric():
        return isinstance(given, int) and given == int(actual)
    try:
        return isinstance(given, float) and given == float(actual)
    except ValueError:
        return False
