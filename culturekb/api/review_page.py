"""The review page (`culturekb review serve KB`): a local web page for native-speaker reviewers.

One flagged tuple at a time, with its label distribution, its rationales in the training texts they come from,
the judges' verdicts and the training items (images, texts) that mention its concept; approve, reject or relabel
it with a note, by button or key. Each decision is appended to the review ledger (`culturekb.kb.ledger`, beside
the KB) before the answer is sent, so a crash loses nothing; Apply (or leaving `culturekb review serve`, or any
rebuild) writes them into the KB. Several reviewers each give their name; once two decided the same tuples,
/agreement shows Cohen's kappa per culture.

Routes: ``GET /`` (the queue: ``culture``, ``status`` = todo|recheck|decided|all, ``t`` = a tuple id),
``POST /decide`` (``tuple_id``, ``evidence``, ``decision``, ``label``, ``note``), ``GET``/``POST /name``,
``GET /agreement``, ``POST /apply``, ``GET /ledger.jsonl``, ``GET /image/{n}``, ``GET /healthz``.
Server-rendered HTML with an inline style sheet and script: nothing is fetched from elsewhere.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response

from culturekb.api import _review_html as html
from culturekb.errors import CultureKBError
from culturekb.kb.ledger import (
    Decision,
    append_decisions,
    built_tuple,
    evidence_of,
    ledger_path,
    make_decision,
    read_ledger,
    review_facts,
)
from culturekb.kb.schema import Sample
from culturekb.kb.store import KnowledgeBase, read_manifest

__all__ = ["create_review_app", "serve_review"]

COOKIE = "culturekb_reviewer"
_ITEMS = 6


class _Evidence:
    """The training samples, indexed to show each tuple's rationales in context and the items behind it."""

    def __init__(self, samples: Sequence[Sample]) -> None:
        self.samples = list(samples)
        self.by_text: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.by_culture: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(self.samples):
            self.by_culture[s.culture].append(i)
            for e in s.explanations:
                self.by_text[(s.culture, e.strip())].append(i)

    def context(self, culture: str, rationale: str) -> list[dict[str, Any]]:
        found = self.by_text.get((culture, rationale.strip())) or [
            i for i in self.by_culture.get(culture, []) if rationale
            and any(rationale in x for x in (self.samples[i].text or "", *self.samples[i].explanations))]
        out = []
        for i in found[:2]:
            s = self.samples[i]
            text = next((e for e in s.explanations if rationale in e), None) or s.text or rationale
            out.append({"id": s.id, "label": s.label, "text": text})
        return out

    def items(self, culture: str, concept: str) -> list[dict[str, Any]]:
        needle = concept.lower()
        out = []
        for i in self.by_culture.get(culture, []):
            s = self.samples[i]
            words = " ".join([s.text or "", s.title or "", *s.explanations]).lower()
            if needle not in words and concept not in (s.concepts or []):
                continue
            local = bool(s.image) and not str(s.image).startswith(("http://", "https://"))
            out.append({"id": s.id, "label": s.label, "title": s.title, "text": s.text or " ".join(s.explanations),
                        "src": f"/image/{i}" if local else None, "url": s.image if not local else None})
            if len(out) >= _ITEMS:
                break
        return out


class _State:
    """The KB (reloaded when it is saved again), the ledger and the samples."""

    def __init__(self, kb_dir: Path, samples: Sequence[Sample], reviewer: str | None) -> None:
        self.kb_dir = kb_dir
        self.ledger = ledger_path(kb_dir)
        self.evidence = _Evidence(samples)
        self.has_data = bool(samples)
        self.default_reviewer = reviewer
        self.lock = threading.Lock()
        self._kb: KnowledgeBase | None = None
        self._version = ""

    @property
    def kb(self) -> KnowledgeBase:
        version = read_manifest(self.kb_dir).kb_version
        if self._kb is None or version != self._version:
            self._kb, self._version = KnowledgeBase.load(self.kb_dir), version
        return self._kb

    def decisions(self) -> list[Decision]:
        return read_ledger(self.ledger)


def _queue(kb: KnowledgeBase, decisions: Sequence[Decision], reviewer: str | None, culture: str,
           status: str) -> tuple[list[Any], dict[str, int], dict[str, str]]:
    """The tuples under the filters, the count per status (within the culture) and each tuple's state."""
    latest: dict[str, Decision] = {}
    mine: dict[str, Decision] = {}
    for d in decisions:
        latest[d.tuple_id] = d
        if d.reviewer == reviewer:
            mine[d.tuple_id] = d
    counts: dict[str, int] = defaultdict(int)
    state: dict[str, str] = {}
    chosen = []
    for t in kb.tuples:
        if not (t.flagged or t.id in latest):
            continue
        if culture and t.culture != culture:
            continue
        ev = evidence_of(t)
        last = latest.get(t.id)
        states = {"all"}
        if last is not None and last.evidence != ev:
            states.add("recheck")
        elif last is not None:
            states.add("decided")
        own = mine.get(t.id)
        if own is None or own.evidence != ev:
            states.add("todo")
        state[t.id] = "recheck" if "recheck" in states else "decided" if "decided" in states else "todo"
        for s in states:
            counts[s] += 1
        if status in states:
            chosen.append(t)
    return chosen, counts, state


def _form(body: bytes) -> dict[str, str]:
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: next((x for x in reversed(v) if x), "") for k, v in parsed.items()}


def create_review_app(kb_dir: str | Path, *, samples: Sequence[Sample] = (), reviewer: str | None = None) -> FastAPI:
    """The review page's app for the KB at `kb_dir` (see the module docstring)."""
    st = _State(Path(kb_dir), samples, reviewer)
    st.kb  # noqa: B018 - load now: a broken KB fails at start, not on the first page
    app = FastAPI(title="culturekb review", docs_url=None, redoc_url=None, openapi_url=None)

    def who(request: Request) -> str | None:
        return unquote(request.cookies.get(COOKIE, "")) or st.default_reviewer

    def render(request: Request, title: str, body: str, status_code: int = 200, **kw: Any) -> HTMLResponse:
        facts = review_facts(st.kb, st.decisions())
        return HTMLResponse(html.page(title, body, reviewer=who(request), kb_version=st.kb.version,
                                      pending_apply=facts["not_applied"], **kw), status_code=status_code)

    @app.get("/healthz", response_class=PlainTextResponse)
    def healthz() -> str:
        return "ok"

    @app.get("/", response_class=HTMLResponse)
    def queue(request: Request, culture: str = "", status: str = "todo", t: str = "", flash: str = "",
              error: str = "") -> HTMLResponse:
        kb, decisions, reviewer = st.kb, st.decisions(), who(request)
        status = status if status in html.STATUSES else "todo"
        chosen, counts, states = _queue(kb, decisions, reviewer, culture, status)
        filters = {"culture": culture, "status": status}
        if not chosen:
            return render(request, "queue", html.empty_view(kb.cultures, filters, counts), flash=flash, error=error)
        ids = [x.id for x in chosen]
        i = ids.index(t) if t in ids else 0
        if t and t not in ids and kb.get(t.partition("::")[2], t.partition("::")[0]) is not None:
            chosen.insert(0, kb.get(t.partition("::")[2], t.partition("::")[0]))  # just decided: still shown
            ids.insert(0, t)
        tup = chosen[i]
        body = html.tuple_view(
            tup, labels=list(kb.scheme.labels), state=states.get(tup.id, "todo"), filters=filters,
            cultures=kb.cultures, counts=counts, position=(i + 1, len(ids)),
            neighbours=(ids[i - 1] if i > 0 else None, ids[i + 1] if i + 1 < len(ids) else None),
            context={r: st.evidence.context(tup.culture, r) for r in tup.rationales},
            items=st.evidence.items(tup.culture, tup.concept),
            decisions=[d for d in decisions if d.tuple_id == tup.id], reviewer=reviewer, evidence=evidence_of(tup),
            label_before=built_tuple(tup).label, has_data=st.has_data)
        return render(request, tup.id, body, flash=flash, error=error)

    @app.post("/decide")
    async def decide(request: Request) -> Response:
        if not _same_origin(request):
            return PlainTextResponse("cross-site form refused", status_code=403)
        form = _form(await request.body())
        reviewer = who(request)
        back = {k: form.get(k, "") for k in ("culture", "status") if form.get(k)}
        if not reviewer:
            return RedirectResponse("/name", status_code=303)
        with st.lock:
            kb = st.kb
            try:
                d = make_decision(kb, form.get("tuple_id", ""), form.get("decision", ""), reviewer=reviewer,
                                  label=form.get("label") or None, note=form.get("note", ""), source="page",
                                  evidence=form.get("evidence") or None)
            except CultureKBError as exc:
                query = urlencode({**back, "t": form.get("tuple_id", ""), "error": str(exc)})
                return RedirectResponse(f"/?{query}", status_code=303)
            append_decisions(st.ledger, [d])  # on disk before the answer: a crash loses nothing
        chosen, _, _ = _queue(kb, st.decisions(), reviewer, back.get("culture", ""), back.get("status", "todo"))
        ids = [x.id for x in chosen]
        nxt = next((x for x in ids if x != d.tuple_id), "")
        flash = f"{d.decision} {d.tuple_id}" + (f" → {d.label}" if d.label else "") + " saved to the ledger"
        return RedirectResponse(f"/?{urlencode({**back, 't': nxt, 'flash': flash})}", status_code=303)

    @app.get("/name", response_class=HTMLResponse)
    def name_page(request: Request, back: str = "/") -> HTMLResponse:
        return render(request, "name", html.name_form(who(request), back))

    @app.post("/name")
    async def set_name(request: Request) -> Response:
        form = _form(await request.body())
        name = " ".join(form.get("reviewer", "").split())[:80]
        back = form.get("back", "/")
        resp = RedirectResponse(back if back.startswith("/") and not back.startswith("//") else "/",
                                status_code=303)
        if name:
            resp.set_cookie(COOKIE, quote(name), max_age=60 * 60 * 24 * 365, samesite="strict", httponly=True)
        return resp

    @app.get("/agreement", response_class=HTMLResponse)
    def agreement_page(request: Request) -> HTMLResponse:
        return render(request, "agreement", html.agreement_view(review_facts(st.kb, st.decisions())))

    @app.post("/apply")
    def apply(request: Request) -> Response:
        if not _same_origin(request):
            return PlainTextResponse("cross-site form refused", status_code=403)
        from culturekb.workflows.review import apply_review_ledger

        with st.lock:
            try:
                res = apply_review_ledger(st.kb_dir)
            except CultureKBError as exc:
                return RedirectResponse(f"/?{urlencode({'error': str(exc)})}", status_code=303)
        flash = f"KB saved as version {res['kb_version']}: applied {res['applied']}"
        return RedirectResponse(f"/?{urlencode({'flash': flash})}", status_code=303)

    @app.get("/ledger.jsonl")
    def ledger() -> Response:
        text = st.ledger.read_text(encoding="utf-8") if st.ledger.is_file() else ""
        return PlainTextResponse(text, media_type="application/x-ndjson")

    @app.get("/image/{n}")
    def image(n: int) -> Response:
        if not 0 <= n < len(st.evidence.samples) or not st.evidence.samples[n].image:
            return PlainTextResponse("no such image", status_code=404)
        path = Path(str(st.evidence.samples[n].image).removeprefix("file://"))
        return FileResponse(path) if path.is_file() else PlainTextResponse("image file missing", status_code=404)

    return app


def _same_origin(request: Request) -> bool:
    """A form posted from this page (or by a client that sends no Origin, such as a test)."""
    origin = request.headers.get("origin")
    return origin is None or origin == "null" or origin.split("://", 1)[-1] == request.headers.get("host")


def serve_review(kb_dir: str | Path, *, host: str = "127.0.0.1", port: int = 8765, reviewer: str | None = None,
                 samples: Sequence[Sample] = (), log_level: str = "warning") -> None:
    """Serve the review page with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(create_review_app(kb_dir, samples=samples, reviewer=reviewer), host=host, port=port,
                log_level=log_level)
