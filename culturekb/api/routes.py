"""The endpoints. Each request reads the serving state once (`_state`) and answers from that snapshot."""

from __future__ import annotations

import functools
import os
import re
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Body, Depends, HTTPException, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from culturekb.api._batching import BatchingEmbedder
from culturekb.api._state import ServingState
from culturekb.api.auth import require_admin, require_read, shows_private
from culturekb.api.limits import InvalidRequestError, check_strings
from culturekb.api.metrics import ApiMetrics
from culturekb.api.schemas import (
    VISIBLE_TEXT,
    AlignedOut,
    AugmentMatch,
    AugmentOut,
    AugmentRequest,
    ConceptOut,
    CultureOut,
    CulturesOut,
    ErrorOut,
    Health,
    KBOut,
    LookupItem,
    LookupOut,
    LookupRequest,
    MatchOut,
    PriorOut,
    Ready,
    ReloadOut,
    ReloadRequest,
    StatusName,
    Text,
    evidence_fields,
    tuple_out,
)
from culturekb.errors import ConfigError, CultureKBError
from culturekb.inference.evidence import tuple_evidence
from culturekb.kb.lines import kb_tie_break, tuple_summary
from culturekb.kb.schemes import EmotionScheme
from culturekb.models.threads import available_cores
from culturekb.retrieval.retriever import Match, Retriever

__all__ = ["health_router", "v1_router", "admin_router", "metrics_router"]


def _err(description: str) -> dict[str, Any]:
    return {"model": ErrorOut, "description": description}


_AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: _err("no API key, or an unknown one (only when keys are configured)"),
    403: _err("the key does not grant this route"),
}
_BODY_ERRORS: dict[int | str, dict[str, Any]] = {
    400: _err("the request body could not be decoded (not UTF-8 JSON)"),
    413: _err("the request body is over the size limit"),
    422: _err("invalid request: malformed JSON, wrong types, over a limit, or an unknown culture"),
}
_NOT_READY: dict[int | str, dict[str, Any]] = {503: _err("no KB is loaded")}

health_router = APIRouter(tags=["health"])
v1_router = APIRouter(prefix="/v1", tags=["knowledge"], dependencies=[Depends(require_read)],
                      responses={**_AUTH_ERRORS, **_NOT_READY, 422: _err("invalid request")})
admin_router = APIRouter(prefix="/v1/admin", tags=["admin"], dependencies=[Depends(require_admin)],
                         responses={**_AUTH_ERRORS})
metrics_router = APIRouter(tags=["health"], dependencies=[Depends(require_read)], responses={**_AUTH_ERRORS})


def _state(request: Request) -> ServingState:
    state: ServingState | None = request.app.state.holder.current
    if state is None:
        raise HTTPException(503, "no KB is loaded yet; wait for start-up to finish or POST /v1/admin/reload")
    return state


# -- health ------------------------------------------------------------------------------------------------
@health_router.get("/livez", summary="The process is up", response_model=Health)
async def livez() -> Health:
    """Always 200 while the process serves HTTP; no key needed."""
    return Health()


@health_router.get("/readyz", summary="The KB and index are loaded", response_model=Ready, responses=_NOT_READY)
async def readyz(request: Request) -> Ready | JSONResponse:
    """200 with the served KB version and embedder id once a KB is loaded, else 503; no key needed (the worker's
    pid only for an admin key, or a local client of a server without keys)."""
    state: ServingState | None = request.app.state.holder.current
    if state is None:
        return JSONResponse({"detail": "no KB is loaded yet"}, status_code=503)
    private = shows_private(request)
    return Ready(kb_version=state.kb_version, embedder=state.embedder_id, backend=state.backend,
                 tuples=len(state.kb), cultures=state.retriever.cultures, loaded_at=state.loaded_at,
                 pid=os.getpid() if private else None, cpus=_cpus() if private else None)


def _cpus() -> list[int] | None:
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


@metrics_router.get(
    "/metrics", summary="Prometheus metrics", response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                     "description": "Prometheus text exposition format"}},
)
async def metrics(request: Request) -> Response:
    """Requests and latency by route and status, lookup hits by culture and kind (exact, semantic, none)."""
    from culturekb.api.metrics import CONTENT_TYPE_LATEST

    return Response(request.app.state.metrics.render(), media_type=CONTENT_TYPE_LATEST)


# -- knowledge ---------------------------------------------------------------------------------------------
@v1_router.get("/kb", summary="Manifest and stats of the served KB", response_model=KBOut)
def kb_info(request: Request) -> KBOut:
    """The manifest, counts per culture, the support histogram, the most divergent concepts and the KB card."""
    from culturekb.kb.card import read_card

    state = _state(request)
    stats = state.stats
    try:
        card = read_card(state.kb_dir)  # read per request: an edited card shows without a reload
    except CultureKBError:
        card = None  # an unreadable card is the user's file to fix; the rest of /v1/kb still answers
    kb_dir = str(state.kb_dir) if shows_private(request) else None  # paths only for admin keys
    return KBOut(kb_version=state.kb_version, kb_dir=kb_dir, backend=state.backend,
                 embedder=state.embedder_id, manifest=stats["manifest"],
                 stats=stats["stats"], divergence=stats["divergence"], card=card, review=_review(state))


def _review(state: ServingState) -> dict[str, Any]:
    """The review's counts (read per request: the review page writes the ledger while the API serves)."""
    from culturekb.kb.card import card_facts
    from culturekb.kb.ledger import ledger_path, read_ledger

    try:
        decisions = read_ledger(ledger_path(state.kb_dir))
    except CultureKBError:
        decisions = []
    review = card_facts(state.kb, None, decisions)["review"]
    return {k: v for k, v in review.items() if k != "to_recheck_tuples"}


@v1_router.get("/cultures", summary="Cultures of the served KB", response_model=CulturesOut)
async def cultures(request: Request) -> CulturesOut:
    """Each culture of the KB with its display name, language and number of tuples."""
    state = _state(request)
    registry = state.kb.culture_registry  # the KB's own descriptions (manifest), over the process registry
    out = []
    for cid in state.retriever.cultures:
        tuples = state.kb.for_culture(cid)
        name, language = cid, None
        if cid in registry:
            c = registry.resolve(cid)
            name, language = c.name, c.language
        out.append(CultureOut(id=cid, name=name, language=language, tuples=len(tuples),
                              concepts=len({t.concept for t in tuples})))
    return CulturesOut(kb_version=state.kb_version, cultures=out)


@v1_router.get("/prior", summary="Each culture's label prior", response_model=PriorOut,
               responses={404: _err("unknown culture")})
async def prior(
    request: Request,
    culture: Annotated[Text | None, Query(max_length=64, description="one culture (id or alias); default: every "
                                         "culture", examples=["en"])] = None,
) -> PriorOut:
    """The training label distribution of each culture (or of one): what the labels look like before any
    concept is seen, and what a tuple's distribution is read against."""
    state = _state(request)
    priors = state.label_prior
    if culture is not None:
        try:
            cid = state.retriever.resolve_culture(culture)
        except ConfigError as exc:
            raise HTTPException(404, str(exc)) from None
        priors = {cid: priors.get(cid, {})}
    return PriorOut(kb_version=state.kb_version, scheme=state.kb.scheme.name, priors=priors)


def _match_out(m: Match, scheme: EmotionScheme, tie_break: str | None = None) -> MatchOut:
    return MatchOut(kind=m.kind, score=round(float(m.score), 6), tuple=tuple_out(m.tuple),
                    **evidence_fields(tuple_evidence(m.tuple, scheme, tie_break=tie_break)))


@v1_router.post("/lookup", summary="Exact-then-semantic lookup of a batch of concepts", response_model=LookupOut,
                responses=_BODY_ERRORS)
async def lookup(body: Annotated[LookupRequest, Body()], request: Request) -> LookupOut:
    """Per concept: the culture's tuple with the same normalised concept (`exact`), else the most similar concept
    with cosine >= tau (`semantic`), else null, each with its label counts, the 95% interval of its dominant
    share and its review status. Only tuples the status filter admits are found (`status`, default the
    server's). Concepts are plain text; nothing is read from disk for them."""
    settings = request.app.state.settings
    check_strings(settings, body.concepts)
    if body.k > settings.max_k:
        raise InvalidRequestError(["body", "k"], f"k is {body.k}; the limit is {settings.max_k}. "
                                  "Ask for fewer alternatives")
    state = _state(request)
    r = state.retriever_for(body.status)
    culture = r.resolve_culture(body.culture)
    vectors: dict[str, np.ndarray] = {}
    if isinstance(r.embedder, BatchingEmbedder):
        # the embeddings are awaited on the event loop (no thread sits waiting for the batch); the search after
        # them runs on the loop in a worker held to one core, where a thread hop buys nothing, else in the
        # threadpool beside other requests (docs/scaling.md, "Workers that add up")
        texts = r.to_encode([(body.concepts, culture)], k=body.k, cross_culture=body.cross_culture,
                            on_invalid="skip")
        vectors = dict(zip(texts, await r.embedder.encode_async(texts), strict=True))
    run = functools.partial(_lookup, state, r, culture, body, request.app.state.metrics, vectors)
    return run() if available_cores() == 1 else await run_in_threadpool(run)


def _lookup(state: ServingState, r: Retriever, culture: str, body: LookupRequest, metrics: ApiMetrics,
            vectors: dict[str, np.ndarray]) -> LookupOut:
    scheme = state.kb.scheme
    tie_break = kb_tie_break(state.kb)
    norms = r.normalise(body.concepts, on_invalid="skip")
    matches = r.lookup(body.concepts, culture, tau=body.tau, k=body.k, cross_culture=body.cross_culture,
                       on_invalid="skip", vectors=vectors)
    results = [
        LookupItem(query=q, normalised=n, match=_match_out(m, scheme, tie_break) if m else None,
                   alternatives=[_match_out(a, scheme, tie_break) for a in m.alternatives] if m else [])
        for q, n, m in zip(body.concepts, norms, matches, strict=True)
    ]
    metrics.count_concepts("lookup", len(body.concepts))
    metrics.count_hits(culture, [m.kind if m else None for m in matches])
    return LookupOut(kb_version=state.kb_version, culture=culture, tau=r.tau if body.tau is None else body.tau,
                     status_filter=r.tuple_filter.status, results=results)


@v1_router.post("/augment", summary="Knowledge block and tuples for a prompt", response_model=AugmentOut,
                responses=_BODY_ERRORS)
def augment(body: Annotated[AugmentRequest, Body()], request: Request) -> AugmentOut:
    """The knowledge block for (prompt, culture, concepts) in one of the paper's modes, the tuples in it (with
    their counts, intervals and review status), the block followed by the prompt, and the block's provenance.
    Without `concepts`, they are extracted from the prompt's text. Only tuples the status filter admits are used
    (`status`, default the server's); a pending tuple's line in the block is marked unreviewed."""
    settings = request.app.state.settings
    check_strings(settings, body.concepts)
    if body.prompt is not None and len(body.prompt) > settings.max_prompt_chars:
        raise InvalidRequestError(["body", "prompt"], f"the prompt has {len(body.prompt)} characters; the limit is "
                         f"{settings.max_prompt_chars}. Send a shorter prompt, or only its concepts")
    if body.concepts is None and not (body.prompt and re.search(VISIBLE_TEXT, body.prompt)):
        raise InvalidRequestError(["body"], "give `concepts`, or a `prompt` to extract them from", "no_concepts")
    state = _state(request)
    augmenter = state.augmenter_for(body.status)
    culture = augmenter.retriever.resolve_culture(body.culture)
    language = prompt_language(body.prompt_language)
    ap = augmenter.augment(prompt=body.prompt, culture=culture, concepts=body.concepts, mode=body.mode,
                           language=language)
    k = ap.knowledge  # the knowledge service's block and its provenance
    scheme = state.kb.scheme
    metrics = request.app.state.metrics
    metrics.count_concepts("augment", len(k.concepts))
    metrics.count_hits(culture, [m.kind for m in k.matches])
    return AugmentOut(
        kb_version=k.kb_version, culture=k.culture, mode=k.mode, concepts=list(k.concepts), block=k.text,
        prompt=ap.prompt, template_id=k.template_id, template_sha=k.template_sha, language=k.language,
        status=k.status, status_filter=k.status_filter, tuples=[tuple_out(t) for t in k.tuples],
        matches=[AugmentMatch(query=m.query, concept=m.concept, culture=m.culture, kind=m.kind,
                              score=round(float(m.score), 6),
                              **evidence_fields(tuple_evidence(m.tuple, scheme, tie_break=kb_tie_break(state.kb))))
                 for m in k.matches],
        provenance=k.provenance(),
    )


def prompt_language(value: str | None) -> str | None:
    """``prompt_language`` of /v1/augment as a normalised code (``zh-CN`` -> ``zh``), as the harness adapters take
    it: a language without the packaged block template falls back to English, and the answer's `language` says
    which one the block is in."""
    if value is None:
        return None
    from culturekb.inference.prompts import normalise_language

    return normalise_language(value)


@v1_router.get("/concepts/{culture}/{concept:path}", summary="The tuple of one concept in one culture",
               response_model=ConceptOut, responses={404: _err("unknown culture, or no tuple for the concept")})
async def concept(
    request: Request,
    culture: Annotated[Text, Path(max_length=64, description="culture id or alias", examples=["zh"])],
    concept: Annotated[Text, Path(max_length=1024, description="concept, matched after normalisation; plain "
                                 "text, URL-encoded (slashes allowed)", examples=["full moon"])],
    status: Annotated[StatusName | None, Query(description="status filter (default: the server's)")] = None,
) -> ConceptOut:
    """Exact match after normalisation ('Full Moons' finds 'full moon'), with the tuple's counts, interval and
    review status; use POST /v1/lookup for semantic ones. A tuple the status filter hides is not found."""
    state = _state(request)
    retriever = state.retriever_for(status)
    try:
        cid = retriever.resolve_culture(culture)
    except ConfigError as exc:
        raise HTTPException(404, str(exc)) from None
    t = state.exact(cid, concept)
    shown = concept if len(concept) <= 80 else concept[:77] + "..."
    if t is None:
        raise HTTPException(404, f"no tuple for concept {shown!r} in culture {cid!r}; this route matches the "
                                 "normalised concept exactly, use POST /v1/lookup for semantic matches")
    served = retriever.tuple_filter.status
    hidden = retriever.hidden.get(t.id)
    if hidden is not None:
        why = (f"its review status is {t.status!r}, which the status filter {served!r} does not serve; ask with "
               "?status=all" if hidden == "status" else f"it is hidden ({hidden})")
        raise HTTPException(404, f"the tuple for concept {shown!r} in culture {cid!r} is not served: {why}")
    tie_break = kb_tie_break(state.kb)
    comparison = state.alignment
    aligned = [AlignedOut(concept=c["tuple"].concept, culture=c["tuple"].culture, label=c["tuple"].label,
                          summary=tuple_summary(c["tuple"], scheme=state.kb.scheme, tie_break=tie_break),
                          support=c["tuple"].support, kind=c["kind"], similarity=c["similarity"],
                          tuple_id=c["tuple"].id)
               for c in (comparison.counterparts(t.id) if comparison is not None else [])
               if retriever.hidden.get(c["tuple"].id) is None]
    return ConceptOut(kb_version=state.kb_version, status_filter=served, tuple=tuple_out(t), aligned=aligned,
                      **evidence_fields(tuple_evidence(t, state.kb.scheme, tie_break=tie_break)))


# -- admin -------------------------------------------------------------------------------------------------
@admin_router.post("/reload", summary="Load a KB and swap it in atomically", response_model=ReloadOut,
                   responses={**_BODY_ERRORS, 422: _err("the new KB or its index failed to load or validate; the "
                                                         "old KB keeps serving")})
async def reload(request: Request, body: Annotated[ReloadRequest | None, Body()] = None) -> ReloadOut:
    """Load the KB directory given (default: the one served now) with its index, validate both, and swap them in
    while requests continue. On any failure the old KB keeps serving. With several workers, the others follow
    within `sync_interval_s`."""
    holder = request.app.state.holder
    metrics = request.app.state.metrics
    old = holder.current
    try:
        outcome = await run_in_threadpool(holder.reload, body.kb_dir if body else None)
    except CultureKBError as exc:
        metrics.reloads.labels(outcome="failed").inc()
        serving = old.kb_version if old else "none"
        raise InvalidRequestError(["body", "kb_dir"], f"reload refused, still serving KB {serving}: {exc}",
                         "reload_failed") from None
    metrics.reloads.labels(outcome="ok").inc()
    new = outcome.state
    return ReloadOut(previous_version=outcome.previous_version, kb_version=new.kb_version, kb_dir=str(new.kb_dir),
                     changed=outcome.previous_served != new.served, seconds=round(outcome.seconds, 3))
