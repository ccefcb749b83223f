"""Wire models of the HTTP API (requests, answers, errors) with the examples shown in the OpenAPI document.

Length limits here are hard ceilings; the configured limits (`ApiSettings.max_*`) are checked per request and
written into the served OpenAPI document (`culturekb.api.limits`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from culturekb.inference.evidence import TupleEvidence
from culturekb.kb.schema import KnowledgeTuple

__all__ = [
    "StatusName",
    "Text",
    "valid_text",
    "EvidenceOut",
    "PriorOut",
    "evidence_fields",
    "HARD_MAX_BATCH",
    "HARD_MAX_CHARS",
    "HARD_MAX_K",
    "ErrorOut",
    "Health",
    "Ready",
    "CultureOut",
    "CulturesOut",
    "KBOut",
    "TupleOut",
    "LookupRequest",
    "LookupItem",
    "MatchOut",
    "LookupOut",
    "AugmentRequest",
    "AugmentMatch",
    "AugmentOut",
    "ConceptOut",
    "ReloadRequest",
    "ReloadOut",
    "tuple_out",
]

HARD_MAX_BATCH = 10_000
HARD_MAX_CHARS = 1_000_000
HARD_MAX_K = 100

StatusName = Literal["all", "accepted", "pending"]
"""The status filters a request may name (`culturekb.retrieval.filters`)."""

def valid_text(value: str) -> str:
    """`value` unchanged, or a ValueError (a 422) when it holds a lone surrogate code point: such a string is not
    Unicode text, cannot be encoded as UTF-8, and could not be echoed back in an answer."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # only surrogates fail: every other code point has a UTF-8 form
        i = exc.start
        raise ValueError(f"contains a lone surrogate U+{ord(value[i]):04X} at character {i}; send valid Unicode "
                         "text (UTF-8): a surrogate code point is only valid as half of a pair inside UTF-16") from None
    return value


Text = Annotated[str, AfterValidator(valid_text)]
"""A request string: any Unicode text (NUL, bidi marks and line separators included), but no lone surrogates."""

_STATUS_DESCRIPTION = ("which tuples to serve: all (every tuple but rejected ones; pending ones are marked "
                       "unreviewed), accepted (reviewed: both judges agreed or a person approved) or pending "
                       "(flagged, awaiting review); default: the server's (all unless configured)")

class ErrorOut(BaseModel):
    """Every error answer: what was wrong and what to change; `errors` lists each invalid field for 422s."""

    detail: str = Field(examples=["culture 'xx' is not in this KB; its cultures are: en, zh. Use one of these ids"])
    errors: list[dict[str, Any]] | None = Field(
        None, description="one entry per invalid field (loc, msg, type) for request validation errors"
    )


class Health(BaseModel):
    """Liveness answer (/livez): the process is up."""

    status: Literal["ok"] = "ok"


class Ready(BaseModel):
    """Readiness answer (/readyz): the KB and index this worker serves, and when it loaded them."""

    status: Literal["ready"] = "ready"
    kb_version: str = Field(examples=["1f78b532861bb5b5"])
    embedder: str = Field(description="id of the embedder the index was built with", examples=["st:all-MiniLM-L6-v2"])
    backend: str = Field(examples=["faiss"])
    tuples: int = Field(examples=[193])
    cultures: list[str] = Field(examples=[["en", "zh"]])
    loaded_at: str = Field(description="UTC time this worker loaded the KB", examples=["2025-01-01T12:00:00+00:00"])
    pid: int | None = Field(None, description="process id of the worker that answered (one per worker under "
                            "`serve`); only for admin keys, or local clients when no keys are configured")
    cpus: list[int] | None = Field(None, description="the CPUs this worker may run on (each worker of `serve "
                                   "--workers N` holds its own share); shown like `pid`")


class CultureOut(BaseModel):
    """One culture of the KB: id, display name, language, and how many tuples and concepts it holds."""

    id: str = Field(examples=["zh"])
    name: str = Field(examples=["Chinese"])
    language: str | None = Field(None, examples=["zh"])
    tuples: int = Field(examples=[120])
    concepts: int = Field(description="distinct concepts of this culture", examples=[118])


class CulturesOut(BaseModel):
    """The cultures of the served KB (/v1/cultures)."""

    kb_version: str
    cultures: list[CultureOut]


class KBOut(BaseModel):
    """The served KB (/v1/kb): version, source, backend, embedder, manifest, stats and divergent concepts."""

    kb_version: str
    kb_dir: str | None = Field(None, description="directory the KB was loaded from; only for admin keys, or local "
                               "clients when no keys are configured")
    backend: str
    embedder: str
    manifest: dict[str, Any] = Field(description="the KB's manifest.json (schema, label scheme, build config, counts)")
    stats: dict[str, Any] = Field(description="counts per culture, support histogram, label counts (kb_stats)")
    divergence: list[dict[str, Any]] = Field(description="the 10 concepts on which the cultures diverge most")
    card: str | None = Field(default=None, description="the KB card (KB_CARD.md, Markdown: sources, licences, "
                             "cultures, counts, judges and their kappa, review status, intended use, known limits); "
                             "None when the KB has none (`culturekb kb card KB` writes it)")
    review: dict[str, Any] = Field(default_factory=dict, description="the human review: tuples accepted, approved, "
                                   "relabelled, pending, rejected, flagged; ledger decisions to re-check, gone, not "
                                   "yet applied; reviewers and their Cohen's kappa per culture (culturekb.kb.ledger)")


class TupleOut(BaseModel):
    """A knowledge tuple: concept, culture, dominant label, label distribution P(e), support, rationales, verdicts."""

    id: str = Field(examples=["zh::full moon"])
    concept: str = Field(examples=["full moon"])
    culture: str = Field(examples=["zh"])
    label: str = Field(description="dominant emotion (or category)", examples=["sadness"])
    distribution: dict[str, float] = Field(examples=[{"sadness": 0.6, "contentment": 0.4}])
    support: int = Field(description="number of training images behind the tuple", examples=[5])
    rationales: list[str] = Field(examples=[["the full moon recalls family far away"]])
    verdicts: list[dict[str, Any]] = Field(default_factory=list, description="the judges' verdicts")
    status: str = Field(examples=["accepted"])
    flagged: bool = False


def tuple_out(t: KnowledgeTuple) -> TupleOut:
    """The wire form of a knowledge tuple (without its provenance)."""
    return TupleOut(id=t.id, **t.model_dump(mode="json", exclude={"provenance"}))


class EvidenceOut(BaseModel):
    """The numbers behind a tuple: its label distribution and support, the counts per label, the 95% Wilson
    interval of the dominant label's share, a one-line summary, and the tuple's review status."""

    distribution: dict[str, float] = Field(examples=[{"fear": 0.7, "excitement": 0.3}])
    support: int = Field(description="training images (or texts) behind the tuple", examples=[10])
    counts: dict[str, int] = Field(description="images per label (support x P(e), rounded)",
                                   examples=[{"fear": 7, "excitement": 3}])
    interval: list[float] = Field(description="95% Wilson interval [lo, hi] of the dominant label's share",
                                  examples=[[0.397, 0.892]])
    summary: str = Field(description="the tuple's label first, then the next label, with their counts; a tie of the "
                                     "label is said with the tie-break that chose it",
                         examples=["fear (7/10), excitement (3/10)"])
    tied: list[str] = Field(default_factory=list, description="labels sharing the label's count, its own first "
                                                             "(empty: no tie)", examples=[[]])
    tie_break: str | None = Field(default=None, description="the build's tie-break that chose the label among the "
                                                           "tied ones (prior or scheme-order; null without a tie)")
    review: str = Field(description="review status: accepted (judges agreed), approved (a person approved) or "
                                    "pending (unreviewed)", examples=["accepted"])


def evidence_fields(e: TupleEvidence) -> dict[str, Any]:
    """The `EvidenceOut` fields of a tuple's evidence, for the models that carry them."""
    d = e.to_dict()
    return {k: d[k] for k in EvidenceOut.model_fields}


class LookupRequest(BaseModel):
    """Exact-then-semantic lookup of a batch of concepts in one culture."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [
            {"concepts": ["full moon", "stormy sea"], "culture": "en"},
            {"concepts": ["storm"], "culture": "English", "tau": 0.75, "k": 3, "cross_culture": False},
        ]},
    )

    concepts: list[Text] = Field(
        min_length=1, max_length=HARD_MAX_BATCH, description="query concepts, short phrases",
        examples=[["full moon", "stormy sea"]],
    )
    culture: Text = Field(min_length=1, max_length=64, description="culture id or alias (see /v1/cultures)",
                          examples=["en"])
    tau: float | None = Field(None, ge=0.0, le=1.0, description="cosine threshold of a semantic match "
                              "(default: the server's)", examples=[0.7])
    k: int = Field(1, ge=1, le=HARD_MAX_K, description="alternatives: up to k-1 further matches per concept",
                   examples=[1])
    cross_culture: bool = Field(False, description="search every other culture instead (the cross-culture ablation)")
    status: StatusName | None = Field(None, description=_STATUS_DESCRIPTION, examples=["accepted"])


class MatchOut(EvidenceOut):
    """A tuple found for a query concept: an exact match, or a semantic one with its cosine similarity (>= tau),
    with the tuple's evidence (distribution, counts, interval, review status)."""

    kind: Literal["exact", "semantic"] = Field(examples=["exact"])
    score: float = Field(description="1.0 for exact, else cosine similarity", examples=[1.0])
    tuple: TupleOut


class LookupItem(BaseModel):
    """The lookup of one query concept: its normalised form, the best match (or null) and any alternatives."""

    query: str = Field(examples=["full moon"])
    normalised: str | None = Field(description="lookup form of the query; null when it has no content words",
                                   examples=["full moon"])
    match: MatchOut | None
    alternatives: list[MatchOut] = Field(default_factory=list)


class LookupOut(BaseModel):
    """Answer of /v1/lookup: one item per query concept, in request order, with the tau that was applied."""

    kb_version: str
    culture: str = Field(description="the culture id the request resolved to", examples=["en"])
    tau: float
    status_filter: StatusName = Field(description="the status filter that served the request")
    results: list[LookupItem]


_LANGUAGE_CODE = r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$"
VISIBLE_TEXT = r"[^\s\x1c-\x1f\x85\ufeff]"
"""A character that is not blank, the same in Python's and ECMAScript's regular expressions (their \\s differ on
U+001C-U+001F, U+0085 and U+FEFF): the server's test of a prompt and the schema's pattern."""


def _augment_schema(schema: dict[str, Any]) -> None:
    """What the server checks beyond the fields, said in the schema too: `concepts`, or a `prompt` with some
    non-blank text to take them from (so that a client or a schema-driven tester sees the same rule)."""
    schema["examples"] = [
        {"prompt": "What emotion does this painting evoke?", "culture": "zh", "concepts": ["full moon"]},
        {"prompt": "A stormy sea under a full moon. Which emotion?", "culture": "en", "prompt_language": "en"},
    ]
    schema["anyOf"] = [
        {"required": ["concepts"], "properties": {"concepts": {"type": "array"}}},
        {"required": ["prompt"], "properties": {"prompt": {"type": "string", "pattern": VISIBLE_TEXT}}},
    ]


class AugmentRequest(BaseModel):
    """Knowledge block for a prompt: give the concepts, or a prompt to extract them from (at least one)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_augment_schema)

    prompt: Text | None = Field(None, max_length=HARD_MAX_CHARS, description="the prompt to put the block before; "
                               "without `concepts`, they are extracted from it, so it needs some non-blank text",
                               examples=["What emotion does this painting evoke?"])
    prompt_language: Text | None = Field(
        None, min_length=2, max_length=16, pattern=_LANGUAGE_CODE, json_schema_extra={"pattern": _LANGUAGE_CODE},
        description="language of the block's template, a code such as en, zh or zh-CN (default: the culture's "
                    "language), as the harness adapters' prompt_language; a language without the packaged template "
                    "falls back to English, and the answer's `language` says which one the block is in",
        examples=["en"])
    culture: Text = Field(min_length=1, max_length=64, examples=["zh"])
    concepts: list[Text] | None = Field(
        None, max_length=HARD_MAX_BATCH,
        description="concepts to retrieve (default: extracted from the prompt)", examples=[["full moon"]],
    )
    mode: Literal["orig", "know", "internal-know", "random-know", "cross-culture-know"] = Field(
        "know", description="the paper's setting; `know` retrieves for the culture")
    status: StatusName | None = Field(None, description=_STATUS_DESCRIPTION, examples=["accepted"])


class AugmentMatch(EvidenceOut):
    """Which tuple a query concept retrieved for the block: its concept, culture, match kind and score, and the
    tuple's evidence (distribution, counts, interval, review status)."""

    query: str
    concept: str
    culture: str
    kind: Literal["exact", "semantic"]
    score: float


class AugmentOut(BaseModel):
    """Answer of /v1/augment: the knowledge block, the prompt after it, and the tuples and templates behind it."""

    kb_version: str
    culture: str
    mode: str
    concepts: list[str] = Field(description="the concepts looked up")
    block: str = Field(description="the knowledge block ('' when nothing was found); a pending tuple's line says "
                                   "it is unreviewed",
                       examples=["- full moon: mostly sadness (3/5), contentment (2/5); 95% CI for sadness: "
                                 "23-88%. the full moon recalls family far away"])
    prompt: str | None = Field(description="the block followed by the prompt")
    template_id: str = Field(description="the block's templates, name.language@hash of each")
    template_sha: str = Field(description="sha256 over the block's templates")
    language: str = Field(description="the block's language")
    status: str = Field(description="matched, no-match, no-concepts or not-used (a mode without knowledge)")
    status_filter: StatusName = Field(description="the status filter that served the request")
    tuples: list[TupleOut]
    matches: list[AugmentMatch]
    provenance: dict[str, Any] = Field(description="what the block was made from (KnowledgeBlock.provenance): KB "
                                                   "version, templates, status filter, each tuple's id, match and "
                                                   "review status")


class AlignedOut(BaseModel):
    """The same concept in another culture, as `culturekb compare` aligns it: the identical string, or its
    translation by the multilingual embedder (mutual nearest neighbours by CSLS)."""

    concept: str
    culture: str
    label: str
    summary: str = Field(description="its label line, the label first (as `summary`)")
    support: int
    kind: str = Field(description="'same string' or 'semantic'", examples=["semantic"])
    similarity: float = Field(description="cosine of the two concepts (1.0 for the same string)")
    tuple_id: str


class ConceptOut(EvidenceOut):
    """Answer of /v1/concepts/{culture}/{concept}: that culture's tuple for the concept, with its evidence, and the
    same concept in the other cultures (`aligned`)."""

    kb_version: str
    status_filter: StatusName = Field(description="the status filter the tuple passed")
    tuple: TupleOut
    aligned: list[AlignedOut] = Field(default_factory=list, description="the concept in the other cultures, aligned "
                                      "as `culturekb compare` aligns them (identical strings and translations)")


class PriorOut(BaseModel):
    """Answer of /v1/prior: each culture's label prior, its training label distribution over the scheme."""

    kb_version: str
    scheme: str = Field(examples=["artemis9"])
    priors: dict[str, dict[str, float]] = Field(examples=[{"en": {"fear": 0.25, "sadness": 0.75}}])


class ReloadRequest(BaseModel):
    """Admin reload: load the served KB again, or another KB directory, and swap it in once it validates."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{}, {"kb_dir": "/srv/kb/v2"}]})

    kb_dir: Text | None = Field(None, min_length=1, max_length=4096,
                               description="KB directory to load (default: reload the one served now)")


class ReloadOut(BaseModel):
    """Result of a reload: the previous and the new KB version, where it came from and how long loading took."""

    previous_version: str | None
    kb_version: str
    kb_dir: str
    changed: bool = Field(description="whether what is served changed: the KB version, or the tuple filter of "
                                      "its calibration (`culturekb calibrate` keeps the version)")
    seconds: float = Field(description="time to load and validate the new KB and index")
