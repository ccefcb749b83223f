"""What one API worker serves (a KB, its index, a retriever and an augmenter) and how it is swapped.

A request reads `KBHolder.current` once and uses that snapshot to the end, so an admin reload, which builds the
new state aside and then replaces the reference in one assignment, never mixes two KBs in one answer. A new KB
that fails to load or validate leaves the old one serving.

Several workers of one server (`serve(workers=N)`) share reloads through a small JSON file (`ReloadSync`): the
worker that received the reload publishes the KB directory and version there, the others poll it and load the
same KB.

Each KB is read from disk once per worker: `KBHolder.start` takes the KB the caller already loaded, if any.
The embedder is the one each KB's index records unless one was fixed; a loaded model is reused by the next
KB whose index names the same spec.

The state serves one status filter by default (the server's ``status``: ``all`` unless configured); a request
that names another gets a retriever and augmenter over the same KB, index and embedder with that filter, made
once per filter (`ServingState.augmenter_for`).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from culturekb._io import atomic_write_json
from culturekb.config import Settings, load_settings
from culturekb.errors import ConfigError, CultureKBError, DataError
from culturekb.inference.augmenter import Augmenter
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import Embedder
from culturekb.models.embedding_cache import warm_up
from culturekb.retrieval.filters import StatusFilter, check_status
from culturekb.retrieval.retriever import Retriever, open_retriever
from culturekb.text.normalise import normalise_concept

__all__ = ["ServingState", "KBHolder", "ReloadSync", "ReloadOutcome"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class ServingState:
    """One loaded KB with everything needed to answer requests; never mutated after it starts serving."""

    kb: KnowledgeBase
    retriever: Retriever
    augmenter: Augmenter
    kb_dir: Path
    backend: str
    loaded_at: str
    generation: int = 0
    _exact: dict[tuple[str, str], KnowledgeTuple] = field(default_factory=dict, repr=False)
    _by_status: dict[str, Augmenter] = field(default_factory=dict, repr=False)

    @property
    def status(self) -> StatusFilter:
        """The status filter of requests that do not name one."""
        return self.retriever.tuple_filter.status

    def augmenter_for(self, status: str | None = None) -> Augmenter:
        """The augmenter serving `status` (None: the default one), made once per filter over the same index."""
        if status is None or status == self.status:
            return self.augmenter
        found = self._by_status.get(status)
        if found is None:  # two threads may both build it; either result is the same, the last one is kept
            found = Augmenter(self.retriever.with_filter(status=check_status(status)))
            self._by_status[status] = found
        return found

    def retriever_for(self, status: str | None = None) -> Retriever:
        """The retriever serving `status` (None: the default one)."""
        return self.augmenter_for(status).retriever

    @cached_property
    def kb_version(self) -> str:
        # KnowledgeBase.version hashes every tuple on each access; the state never changes, so hash once
        return self.kb.version

    @cached_property
    def served(self) -> str:
        """What this state serves: the KB version, plus its tuple filter when that hides more than rejected tuples
        (`culturekb calibrate` changes the filter, and so what is served, without changing the KB version)."""
        f = self.retriever.tuple_filter
        return self.kb_version if f.is_open else f"{self.kb_version} ({f.describe()})"

    @property
    def embedder_id(self) -> str:
        return str(self.retriever.embedder.id)

    def exact(self, culture: str, concept: str) -> KnowledgeTuple | None:
        """The tuple of `culture` whose normalised concept equals the normalised `concept` (plain text only)."""
        if not self._exact:
            for t in self.kb.tuples:
                key = normalise_concept(t.concept, self.retriever.language) or t.concept
                self._exact.setdefault((t.culture, key), t)
        norm = normalise_concept(concept.strip(), self.retriever.language) if concept.strip() else None
        return self._exact.get((culture, norm)) if norm else None

    @cached_property
    def label_prior(self) -> dict[str, dict[str, float]]:
        """Each culture's training label distribution (`KnowledgeBase.label_prior`), computed once."""
        return self.kb.label_prior()

    @cached_property
    def alignment(self) -> Any:
        """`compare`'s alignment of the served KB's concepts across cultures (identical strings and translations,
        `culturekb.retrieval.compare`), every tuple of support >= 1; None for a KB of one culture. Computed once,
        on the first request that needs it."""
        from culturekb.retrieval.compare import compare_cultures

        if len({t.culture for t in self.kb.tuples}) < 2:
            return None
        return compare_cultures(self.retriever, min_support=1)

    @cached_property
    def stats(self) -> dict[str, Any]:
        from culturekb.kb.stats import kb_stats

        # the cultures' disagreements as `compare` and `inspect` find them (translations aligned, not only
        # identical strings), the 10 strongest
        found = self.alignment.to_dict()["disagreements"][:10] if self.alignment is not None else []
        return {"manifest": self.kb.manifest().model_dump(mode="json"), "stats": kb_stats(self.kb),
                "divergence": found}


@dataclass(frozen=True)
class ReloadOutcome:
    previous_version: str | None
    state: ServingState
    seconds: float
    previous_served: str | None = None


class KBHolder:
    """Holds the serving state of one worker and replaces it atomically on reload.

    `embedder` (an Embedder or a spec), `backend`, `tau` and `status` (the default status filter) fix what every
    KB is opened with; left out, each KB's index decides the embedder, and `settings` (default `load_settings()`)
    the backend, tau and status filter. `wrap` wraps every embedder the holder serves (the server's micro-batcher
    and LRU, `culturekb.api._batching`).
    """

    def __init__(
        self,
        embedder: Embedder | str | None = None,
        backend: str | None = None,
        tau: float | None = None,
        build_index: bool = False,
        sync: ReloadSync | None = None,
        settings: Settings | None = None,
        status: str | None = None,
        wrap: Callable[[Embedder], Embedder] | None = None,
    ) -> None:
        self.wrap = wrap
        self.embedder = wrap(embedder) if wrap is not None and embedder is not None and not isinstance(
            embedder, str) else embedder
        self.backend = backend
        self.tau = tau
        self.build_index = build_index
        self.sync = sync
        self.settings = settings if settings is not None else load_settings()
        self.status: StatusFilter = check_status(status if status is not None else self.settings.status)
        self.current: ServingState | None = None
        self._lock = threading.Lock()
        self._generation = 0

    def _embedder_for(self, spec: str) -> Embedder:
        """The served embedder when it has this spec (no second copy of a model in memory), else a new one."""
        current = self.current.retriever.embedder if self.current is not None else None
        if current is not None and getattr(current, "spec", None) == spec:
            return current
        from culturekb.models.factory import make_embedder

        made = make_embedder(spec)
        return self.wrap(made) if self.wrap is not None else made

    def load(
        self, kb_dir: str | Path, *, build_index: bool | None = None, kb: KnowledgeBase | None = None
    ) -> ServingState:
        """Load and validate a KB and its index read-only (memory-mapped); does not change what is served.

        `kb`: the KB of `kb_dir` when the caller has loaded it already (it is not read again).
        """
        directory = Path(kb_dir)
        try:
            exists = directory.is_dir()
        except (OSError, ValueError) as exc:  # e.g. a NUL byte or a name too long for the filesystem
            raise DataError(f"KB directory {str(directory)[:200]!r} is not a usable path ({exc})") from None
        if not exists:
            raise DataError(f"KB directory {str(directory)[:200]!r} does not exist; pass a directory written by "
                            "`culturekb build`")
        if kb is None:
            kb = KnowledgeBase.load(directory)
        build = self.build_index if build_index is None else build_index
        retriever = open_retriever(kb, self.embedder, self.backend, build=build, tau=self.tau, mmap=True,
                                   settings=self.settings, embedder_factory=self._embedder_for, status=self.status)
        state = ServingState(
            kb=kb,
            retriever=retriever,
            augmenter=Augmenter(retriever),
            kb_dir=directory.resolve(),
            backend=retriever.index.meta.backend,
            loaded_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        )
        state.exact("", "")  # builds the exact-match table before the state serves
        _ = state.kb_version
        warm_up(retriever.embedder)  # the model loaded and run once before /readyz says ready (issue 25)
        return state

    def start(self, kb_dir: str | Path, kb: KnowledgeBase | None = None) -> ServingState:
        """Load the first KB (or the one a sibling worker switched to, when a sync file says so).

        `kb`: the KB of `kb_dir`, when the caller has loaded it already.
        """
        if self.sync is not None:
            published = self.sync.read()
            if published and published.get("kb_dir"):
                if Path(published["kb_dir"]) != Path(kb_dir):
                    kb = None
                kb_dir = published["kb_dir"]
                self._generation = int(published.get("generation", 0))
        state = self.load(kb_dir, kb=kb)
        state.generation = self._generation
        self.current = state
        return state

    def reload(self, kb_dir: str | Path | None = None, *, publish: bool = True) -> ReloadOutcome:
        """Load `kb_dir` (default: the directory served now) and swap it in; the old state keeps serving on error."""
        t0 = time.perf_counter()
        with self._lock:
            old = self.current
            target = Path(kb_dir) if kb_dir is not None else (old.kb_dir if old is not None else None)
            if target is None:
                raise ConfigError("no KB is loaded and no kb_dir was given; pass the KB directory to load")
            new = self.load(target, build_index=False)
            self._generation += 1
            new.generation = self._generation
            self.current = new  # one reference assignment: requests see the old or the new state, never a mix
        if publish and self.sync is not None:
            self.sync.publish(new.kb_dir, new.kb_version, new.served)
        log.info("reloaded KB %s -> %s from %s", old.served if old else None, new.served, new.kb_dir)
        return ReloadOutcome(old.kb_version if old else None, new, time.perf_counter() - t0,
                             old.served if old else None)

    def follow(self) -> bool:
        """Apply a reload published by a sibling worker; True when the served KB changed."""
        if self.sync is None:
            return False
        published = self.sync.poll()
        if not published:
            return False
        cur = self.current
        same_dir = cur is not None and Path(published["kb_dir"]) == cur.kb_dir
        if same_dir and cur is not None and published.get("served", published.get("kb_version")) == cur.served:
            return False  # (a recalibrated KB keeps its version; what it serves is in "served")
        try:
            self.reload(published["kb_dir"], publish=False)
        except CultureKBError as exc:
            log.error("could not follow the reload to %s published by another worker (%s); still serving %s",
                      published["kb_dir"], exc, cur.kb_version if cur else None)
            return False
        return True


class ReloadSync:
    """A JSON file `{"generation", "kb_dir", "kb_version", "served"}` shared by the workers of one server."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen: int | None = None
        current = self.read()
        if current:
            self._seen = int(current.get("generation", 0))

    def read(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("reload sync file %s unreadable (%s); ignoring it", self.path, exc)
            return None
        return data if isinstance(data, dict) and "kb_dir" in data else None

    def publish(self, kb_dir: Path, kb_version: str, served: str | None = None) -> None:
        generation = time.time_ns()
        atomic_write_json(self.path, {"generation": generation, "kb_dir": str(kb_dir), "kb_version": kb_version,
                                      "served": served or kb_version, "pid": os.getpid()})
        self._seen = generation

    def poll(self) -> dict[str, Any] | None:
        """The published entry when it is newer than the last one seen, else None."""
        data = self.read()
        if not data:
            return None
        generation = int(data.get("generation", 0))
        if self._seen is not None and generation <= self._seen:
            return None
        self._seen = generation
        return data


def set_torch_threads(n: int | None) -> None:
    """Limit torch's intra-op threads (several workers on one machine would otherwise oversubscribe the cores)."""
    if n and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(n)
