"""Qdrant store: local (`:memory:`, `path=`) for tests and single users, `url=` for a server or a cluster.

- Vectors live in one collection per KB version (cosine distance); `culture` is a payload field, indexed as a
  keyword on a server (local mode has no payload indexes and filters by scanning), and every search passes it
  as a filter, so no other culture's point can come back.
- Point ids are integers 0..n-1; the string id is the payload field ``item_id``.
- `save()` publishes the collection under an alias (default ``culturekb``) in one atomic alias switch, so a
  service reading the alias moves from the old KB version to the new one at once; the old collection is kept
  unless `drop_previous=True` (for rollback). A loaded store queries the concrete collection it was built
  into, never whatever the alias points at later.
- Searches are batched with `query_batch_points` (`search_batch` requests per call).
- A server that cannot be reached raises `StoreUnavailableError` (a ProviderError and an IndexError_) after at
  most `timeout` seconds, naming the URL and the fix.

Local mode is for tests and small KBs: qdrant-client keeps points as Python objects and evaluates the culture
filter in Python for every point and query (about 20-25 us per point per query with qdrant-client 1.20, so
~0.2 s per query at 10^4 points and ~2.5 s at 10^5; benchmarks/results/bench_stores.md). Beyond a few
thousand tuples use a Qdrant server (`url=`, where the payload index makes the filter cheap) or FAISS.
"""

from __future__ import annotations

import logging
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from culturekb._io import atomic_dir, atomic_write_json
from culturekb.errors import ConfigError, DataError, IndexError_, require
from culturekb.retrieval._integrity import file_manifest, read_meta, verify_files
from culturekb.retrieval.stores.base import (
    STORE_FORMAT,
    STORE_META,
    CultureFilter,
    SearchResult,
    StoreUnavailableError,
    check_add_inputs,
    check_queries,
    culture_list,
)

__all__ = ["QdrantStore", "LOCAL_DIR", "ID_FIELD"]

log = logging.getLogger(__name__)

LOCAL_DIR = "qdrant"
"""Sub-directory of a saved store that holds the local Qdrant storage."""
ID_FIELD = "item_id"


def _qdrant() -> Any:
    return require("qdrant_client", "retrieval", "The Qdrant vector store")


@contextmanager
def _quiet_local() -> Iterator[None]:
    """Silence qdrant-client's local-mode advice warnings (we log our own, once)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]ocal.*", category=UserWarning)
        yield


class QdrantStore:
    """A Qdrant collection behind the VectorStore contract. Give at most one of `location`, `path`, `url`."""

    backend = "qdrant"

    def __init__(
        self,
        argument: str = "",
        *,
        dim: int,
        location: str | None = None,
        path: str | Path | None = None,
        url: str | None = None,
        api_key: str | None = None,
        collection: str | None = None,
        alias: str = "culturekb",
        timeout: float = 5.0,
        upload_batch: int = 1024,
        search_batch: int = 256,
        drop_previous: bool = False,
        on_disk: bool = False,
        shard_number: int | None = None,
        replication_factor: int | None = None,
    ) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ConfigError(f"store dimension must be a positive integer; got {dim!r}")
        given = [n for n, v in (("location", location), ("path", path), ("url", url)) if v is not None]
        if argument:  # the spec's value after ':': "qdrant:http://host:6333", "qdrant::memory:", "qdrant:/data/q"
            if given:
                raise ConfigError(f"store 'qdrant:{argument}' names where the collection lives, and so does "
                                  f"{given[0]}=; give one of them")
            if argument.startswith(("http://", "https://")):
                url = argument
            elif argument == ":memory:":
                location = argument
            else:
                path = argument
        elif len(given) > 1:
            raise ConfigError(f"QdrantStore takes one of location=, path=, url=; got {', '.join(given)}")
        self.dim = dim
        self.url = url
        self.path = Path(path) if path is not None else None
        self.location = location if location is not None else (None if (path or url) else ":memory:")
        self.api_key = api_key
        self.collection = collection or f"culturekb-{uuid.uuid4().hex[:12]}"
        self.alias = alias
        self.timeout = float(timeout)
        self.upload_batch = int(upload_batch)
        self.search_batch = int(search_batch)
        self.drop_previous = drop_previous
        self.on_disk = on_disk
        for name, value in (("shard_number", shard_number), ("replication_factor", replication_factor)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer; got {value!r}")
        # cluster layout of a new collection on a server (docs/scaling.md); None: the server's default
        self.shard_number = shard_number
        self.replication_factor = replication_factor
        self.read_only = False
        self.source: Path | None = None
        self._models = _qdrant().models
        self._client: Any = None
        self._created = False
        self._count = 0
        self._cultures: set[str] = set()
        self._id_set: set[str] = set()

    # -- connection -----------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        """Where the collection lives: 'url' (a server), 'path' (local files) or 'memory'."""
        return "url" if self.url else ("path" if self.path is not None else "memory")

    def _unavailable(self, exc: BaseException) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"Qdrant server at {self.url} cannot be reached ({type(exc).__name__}: {exc}). Start it "
            "(e.g. `docker run -p 6333:6333 qdrant/qdrant`), check the URL and API key, "
            "or use the embedded FAISS backend (--backend faiss)"
        )

    @property
    def client(self) -> Any:
        """The qdrant-client instance, opened on first use (and again after `save` closed a local path)."""
        if self._client is not None:
            return self._client
        qc = _qdrant()
        if self.mode == "url":
            client = qc.QdrantClient(
                url=self.url, api_key=self.api_key, timeout=max(1, int(round(self.timeout))), check_compatibility=False
            )
            try:
                client.get_collections()
            except Exception as exc:  # noqa: BLE001 - any transport failure means the server is unusable
                raise self._unavailable(exc) from exc
        elif self.mode == "path":
            try:
                with _quiet_local():
                    client = qc.QdrantClient(path=str(self.path))
            except Exception as exc:  # noqa: BLE001 - qdrant local raises bare RuntimeError/sqlite errors
                raise IndexError_(
                    f"cannot open the local Qdrant storage at {self.path} ({type(exc).__name__}: {exc}). If another "
                    "QdrantStore or process has it open, close that one first (store.close()); if it is corrupted, "
                    "rebuild it with `culturekb index --kb <KB_DIR> --backend qdrant`"
                ) from exc
        else:
            client = qc.QdrantClient(location=self.location)
        self._client = client
        return client

    @contextmanager
    def _calls(self, what: str) -> Iterator[None]:
        """Turn transport errors of a server call into StoreUnavailableError."""
        try:
            yield
        except (IndexError_, ConfigError, DataError):
            raise
        except Exception as exc:
            if self.mode == "url" and _is_transport_error(exc):
                raise self._unavailable(exc) from exc
            raise IndexError_(
                f"Qdrant {what} on collection {self.collection!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def close(self) -> None:
        """Close the Qdrant client, if one is open."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __del__(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001, S110 - interpreter shutdown; nothing left to report to
                pass

    # -- contract -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    def cultures(self) -> list[str]:
        """The cultures that have at least one vector."""
        return sorted(self._cultures)

    def _ensure_collection(self) -> None:
        if self._created:
            return
        m = self._models
        with self._calls("create collection"), _quiet_local():
            if self.client.collection_exists(self.collection):
                log.info("qdrant: replacing existing collection %s", self.collection)
                self.client.delete_collection(self.collection)
            self.client.create_collection(
                self.collection,
                vectors_config=m.VectorParams(size=self.dim, distance=m.Distance.COSINE, on_disk=self.on_disk or None),
                shard_number=self.shard_number if self.mode == "url" else None,
                replication_factor=self.replication_factor if self.mode == "url" else None,
            )
            if self.mode == "url":
                self.client.create_payload_index(self.collection, "culture", field_schema=m.PayloadSchemaType.KEYWORD)
        self._created = True

    def add(self, ids: Sequence[str], vectors: np.ndarray, payloads: Sequence[Mapping[str, Any]]) -> None:
        """Upsert unit vectors with unique ids and their payloads; refused on a collection loaded read-only."""
        refused = (f"Qdrant collection {self.collection!r} was loaded from a saved index and is read-only; "
                   "build a new index (one collection per KB version) to add vectors")
        id_list, vecs, pays = check_add_inputs(self.dim, ids, vectors, payloads, existing=self._id_set,
                                               read_only=refused if self.read_only else None)
        self._ensure_collection()
        m = self._models
        with self._calls("upsert"), _quiet_local():
            for start in range(0, len(id_list), self.upload_batch):
                stop = min(start + self.upload_batch, len(id_list))
                self.client.upsert(
                    self.collection,
                    points=m.Batch(
                        ids=list(range(self._count + start, self._count + stop)),
                        vectors=vecs[start:stop].tolist(),
                        payloads=[{**pays[i], ID_FIELD: id_list[i]} for i in range(start, stop)],
                    ),
                    wait=True,
                )
        self._count += len(id_list)
        self._id_set.update(id_list)
        self._cultures.update(p["culture"] for p in pays)

    def _filter(self, culture: CultureFilter) -> Any:
        wanted = culture_list(culture)
        if wanted is None:
            return None
        m = self._models
        match = m.MatchValue(value=wanted[0]) if len(wanted) == 1 else m.MatchAny(any=list(wanted))
        return m.Filter(must=[m.FieldCondition(key="culture", match=match)])

    def search(self, query_vectors: np.ndarray, k: int = 1, culture: CultureFilter = None) -> SearchResult:
        """Top-k (id, cosine) per query row within the given culture(s), in batched Qdrant queries."""
        q = check_queries(self.dim, query_vectors, k)
        wanted = culture_list(culture)
        if q.shape[0] == 0 or self._count == 0 or (wanted is not None and not wanted):
            return [[] for _ in range(q.shape[0])]
        m = self._models
        flt = self._filter(culture)
        out: SearchResult = []
        with self._calls("search"):
            for start in range(0, q.shape[0], self.search_batch):
                reqs = [
                    m.QueryRequest(query=row.tolist(), filter=flt, limit=int(k), with_payload=[ID_FIELD])
                    for row in q[start : start + self.search_batch]
                ]
                for res in self.client.query_batch_points(self.collection, requests=reqs):
                    out.append([(str(p.payload[ID_FIELD]), float(p.score)) for p in res.points])
        return out

    # -- alias and persistence ------------------------------------------------------------------------
    def publish(self) -> None:
        """Point the alias at this collection in one atomic switch (dropping the previous one if asked)."""
        self._ensure_collection()
        m = self._models
        with self._calls("alias switch"):
            previous = next(
                (a.collection_name for a in self.client.get_aliases().aliases if a.alias_name == self.alias), None
            )
            ops: list[Any] = []
            if previous is not None:
                ops.append(m.DeleteAliasOperation(delete_alias=m.DeleteAlias(alias_name=self.alias)))
            ops.append(
                m.CreateAliasOperation(
                    create_alias=m.CreateAlias(collection_name=self.collection, alias_name=self.alias)
                )
            )
            self.client.update_collection_aliases(change_aliases_operations=ops)
            if previous and previous != self.collection:
                log.info("qdrant: alias %s moved from %s to %s", self.alias, previous, self.collection)
                if self.drop_previous:
                    self.client.delete_collection(previous)

    def _meta(self) -> dict[str, Any]:
        return {
            "format": STORE_FORMAT,
            "backend": self.backend,
            "dim": self.dim,
            "count": self._count,
            "mode": "url" if self.mode == "url" else "local",
            "url": self.url,
            "collection": self.collection,
            "alias": self.alias,
            "cultures": self.cultures(),
            "config": {"upload_batch": self.upload_batch, "search_batch": self.search_batch, "on_disk": self.on_disk},
        }

    def save(self, directory: str | Path) -> Path:
        """Publish the alias and write `store.json`.

        A server collection stays on the server (`store.json` records URL, collection and alias). A local
        store is written as local Qdrant storage under `directory/qdrant`: a `path=` store already living
        there is closed (reopen it with `load_store`); any other local store is copied there.
        """
        directory = Path(directory)
        self._ensure_collection()
        self.publish()
        meta = self._meta()
        if self.mode == "url":
            meta["files"] = {}
            with atomic_dir(directory) as tmp:
                atomic_write_json(tmp / STORE_META, meta)
            return directory
        local = directory / LOCAL_DIR
        if self.path is not None and self.path.resolve() == local.resolve():
            self.close()
            meta["files"] = _local_manifest(local)
            atomic_write_json(directory / STORE_META, meta)
            return directory
        with atomic_dir(directory) as tmp:
            self._copy_to(tmp / LOCAL_DIR)
            meta["files"] = _local_manifest(tmp / LOCAL_DIR)
            atomic_write_json(tmp / STORE_META, meta)
        return directory

    def _copy_to(self, path: Path) -> None:
        m = self._models
        qc = _qdrant()
        with _quiet_local():
            dest = qc.QdrantClient(path=str(path))
            try:
                dest.create_collection(
                    self.collection, vectors_config=m.VectorParams(size=self.dim, distance=m.Distance.COSINE)
                )
                offset: Any = None
                while True:
                    with self._calls("scroll"):
                        points, offset = self.client.scroll(
                            self.collection,
                            limit=self.upload_batch,
                            offset=offset,
                            with_payload=True,
                            with_vectors=True,
                        )
                    if points:
                        dest.upsert(
                            self.collection,
                            points=[m.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points],
                            wait=True,
                        )
                    if offset is None:
                        break
                dest.update_collection_aliases(
                    change_aliases_operations=[
                        m.CreateAliasOperation(
                            create_alias=m.CreateAlias(collection_name=self.collection, alias_name=self.alias)
                        )
                    ]
                )
            finally:
                dest.close()

    @classmethod
    def load(
        cls,
        directory: str | Path,
        meta: dict[str, Any] | None = None,
        mmap: bool = True,
        verify: bool = True,
        url: str | None = None,
        api_key: str | None = None,
        timeout: float = 5.0,
        **_: Any,
    ) -> QdrantStore:
        """Reopen a saved store (read-only): local storage from `directory/qdrant`, or the recorded server.

        `url` overrides the recorded server address (e.g. the same collection behind another host name).
        """
        directory = Path(directory)
        meta = meta if meta is not None else read_meta(directory / STORE_META, "store metadata")
        try:
            dim, count, collection = int(meta["dim"]), int(meta["count"]), str(meta["collection"])
            mode = meta["mode"]
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexError_(f"{directory / STORE_META}: field {exc} missing or invalid; rebuild the index") from exc
        cfg = dict(meta.get("config", {}))
        if mode == "url":
            store = cls(
                dim=dim,
                url=url or meta.get("url"),
                api_key=api_key,
                collection=collection,
                alias=meta.get("alias", "culturekb"),
                timeout=timeout,
                **cfg,
            )
        else:
            local = directory / LOCAL_DIR
            verify_files(local, meta.get("files", {}), verify_hash=verify)
            store = cls(dim=dim, path=local, collection=collection, alias=meta.get("alias", "culturekb"), **cfg)
        with store._calls("load"), _quiet_local():
            if not store.client.collection_exists(collection):
                raise IndexError_(
                    f"Qdrant collection {collection!r} recorded in {directory / STORE_META} does not exist "
                    f"{'on ' + str(store.url) if mode == 'url' else 'in ' + str(directory / LOCAL_DIR)}; "
                    "rebuild the index with `culturekb index --kb <KB_DIR> --backend qdrant`"
                )
            found = store.client.count(collection, exact=True).count
            aliases = {a.alias_name: a.collection_name for a in store.client.get_aliases().aliases}
        if found != count:
            raise IndexError_(
                f"Qdrant collection {collection!r} holds {found} points but the index recorded {count}; "
                "it was modified or partly written, rebuild the index"
            )
        if aliases.get(store.alias) not in (None, collection):
            log.warning(
                "qdrant: alias %s now points at %s (a newer build?); this index keeps serving %s",
                store.alias,
                aliases.get(store.alias),
                collection,
            )
        store._created = True
        store._count = count
        store._cultures = set(meta.get("cultures", []))
        store.read_only = True
        store.source = directory
        return store


def _local_manifest(local: Path) -> dict[str, dict[str, Any]]:
    names = [str(p.relative_to(local)) for p in sorted(local.rglob("*")) if p.is_file() and p.name != ".lock"]
    return file_manifest(local, names)


def _is_transport_error(exc: BaseException) -> bool:
    """True for connection failures and timeouts (httpx/grpc/qdrant wrappers), whatever the transport."""
    names = {t.__name__ for t in type(exc).__mro__}
    transport = {
        "ResponseHandlingException",
        "ConnectError",
        "ConnectTimeout",
        "ReadTimeout",
        "TimeoutException",
        "NetworkError",
        "RpcError",
        "TransportError",
        "ConnectionError",
        "TimeoutError",
    }
    return bool(names & transport) or (exc.__cause__ is not None and _is_transport_error(exc.__cause__))
