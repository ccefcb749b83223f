"""A KB's vector index: concept vectors computed once, a vector store, and the metadata that pins both.

Layout of `<kb.path>/index/<backend>/` (written atomically: a crash leaves the old index or none):

- ``index.json``: format, kb_version, embedder id and spec, dim, backend, count, the tuple ids in row order,
  the file manifest and the store configuration, sealed by a ``digest`` (SHA-256 of the rest of the file). The
  manifest (``files``) lists **every** file of the index folder but ``index.json`` itself, the store's own
  ``store/store.json`` included, with its size and SHA-256; `load_index` refuses a folder with a file missing,
  altered or added, or an ``index.json`` edited after it was written, so no file can switch verification off.
  The embedder spec (``minilm``, ``use``, ``st:PATH``, ``openai-embed:MODEL``) is what `make_embedder`
  rebuilds the embedder from, so an index is reopened with its own embedder without being told; the id pins
  the exact model. Indexes written before the spec was recorded are read too (the spec is derived from the id
  where it can be, see `spec_from_id`).
- ``vectors.npy``: float32 (count, dim) unit vectors of each tuple's concept, in the order of ``ids``. Each
  distinct concept string is encoded once (a concept shared by three cultures costs one encode), and a build
  for a second backend reuses the vectors of an existing index of the same KB version and embedder.
- ``store/``: the backend's own files (see `culturekb.retrieval.stores`). The default backend ``faiss`` picks
  each culture's index and its parameters by that culture's size: exact flat up to 100,000 vectors, then IVF
  with nlist and nprobe from `culturekb.retrieval.stores.faiss_store.TUNED` (recall@1 >= 0.99 on real held-out
  concept queries at 10^4, 10^5 and 10^6 tuples, benchmarks/results/bench_stores.md); ``faiss:hnsw`` takes M,
  efConstruction and efSearch from the same table. The choice is recorded in ``store/store.json``.

`load_index` refuses an index built for another KB version or another embedder, and detects missing,
truncated, altered or added files, always with the command that fixes it. Indexes of format 1 (written before
the manifest covered the store's files) are read only when every file of the folder is covered by their two
manifests (``index.json`` for ``vectors.npy``, ``store.json`` for the rest) and all of them verify; otherwise the
message says to rebuild. `index_backend` says which of a KB's
indexes to open when the caller does not name one.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from culturekb._io import atomic_dir, atomic_write_json
from culturekb.config import Settings, load_settings
from culturekb.errors import ConfigError, DataError, IndexError_
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import Embedder
from culturekb.models.embedders import spec_from_id
from culturekb.retrieval._integrity import (
    REBUILD_HINT,
    check_digest,
    file_manifest,
    meta_digest,
    read_meta,
    tree_files,
    verify_files,
    verify_tree,
)
from culturekb.retrieval.stores.base import VectorStore, load_store, make_store, store_name

__all__ = [
    "INDEX_FORMAT",
    "INDEX_META",
    "VECTORS",
    "IndexMeta",
    "KBIndex",
    "build_index",
    "load_index",
    "index_dir",
    "index_backend",
    "read_index_meta",
    "carry_index",
]

log = logging.getLogger(__name__)

INDEX_FORMAT = 2
LEGACY_FORMATS = (1,)
"""Index formats still read (format 1: the manifest listed only vectors.npy, see `_verify_legacy`)."""
INDEX_META = "index.json"
VECTORS = "vectors.npy"
STORE_DIR = "store"


@dataclass(frozen=True)
class IndexMeta:
    """What an index was built from; compared with the KB and embedder on every load.

    `embedder` is the embedder's id (the exact model); `embedder_spec` the string `make_embedder` rebuilds it
    from (None for an old index of a model whose id does not say how to rebuild it).
    """

    kb_version: str
    embedder: str
    dim: int
    backend: str
    count: int
    ids: tuple[str, ...]
    created_at: str = ""
    store: dict[str, Any] = field(default_factory=dict)
    embedder_spec: str | None = None

    def require_spec(self, where: Path | None = None) -> str:
        """The embedder spec, or an IndexError_ saying how to go on when the index does not record one."""
        if self.embedder_spec:
            return self.embedder_spec
        place = f"the index at {where}" if where else "this index"
        raise IndexError_(
            f"{place} records only the embedder id {self.embedder!r}, which does not say how to load that model "
            "again (the index predates recorded embedder specs, or its embedder has no `spec`). Pass the embedder "
            f"explicitly (e.g. --embedder st:PATH, the model folder it was built with), or re-index the KB with "
            f"`culturekb index --kb <KB_DIR> --backend {self.backend} --embedder SPEC`"
        )


@dataclass
class KBIndex:
    """A loaded (or freshly built) index: metadata, the concept vectors (row i = ids[i]) and the store."""

    meta: IndexMeta
    vectors: np.ndarray
    store: VectorStore
    directory: Path | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        """Tuple id of each vector row."""
        return self.meta.ids

    def check(self, kb: KnowledgeBase, embedder: Embedder | str) -> None:
        """Raise IndexError_ unless this index was built for exactly this KB version and embedder."""
        _check_identity(self.meta, kb, _embedder_id(embedder), self.directory)

    def close(self) -> None:
        """Release the store's files and connections."""
        self.store.close()


def _embedder_id(embedder: Embedder | str) -> str:
    return embedder if isinstance(embedder, str) else str(embedder.id)


def _embedder_spec(embedder: Embedder) -> str | None:
    spec = getattr(embedder, "spec", None)
    return spec if isinstance(spec, str) and spec else spec_from_id(str(embedder.id))


def _command(kb: KnowledgeBase, backend: str) -> str:
    return f"`culturekb index --kb {kb.path or '<KB_DIR>'} --backend {backend}`"


def _fix(kb: KnowledgeBase, backend: str) -> str:
    return f"rebuild it with {_command(kb, backend)}"


def _check_identity(meta: IndexMeta, kb: KnowledgeBase, embedder_id: str, where: Path | None) -> None:
    place = f"index at {where}" if where else "this index"
    if meta.kb_version != kb.version:
        raise IndexError_(
            f"{place} was built for KB version {meta.kb_version}, but the KB{' at ' + str(kb.path) if kb.path else ''} "
            f"has version {kb.version}; it would serve stale tuples. R{_fix(kb, meta.backend)[1:]}"
        )
    if meta.embedder != embedder_id:
        own = f" (spec {meta.embedder_spec!r})" if meta.embedder_spec else ""
        raise IndexError_(
            f"{place} was built with embedder {meta.embedder!r}{own}, but lookups would use {embedder_id!r}; "
            "vectors of different models are not comparable. Leave the embedder out (an index is opened with its "
            f"own), or {_fix(kb, meta.backend)} --embedder SPEC"
        )


def index_dir(kb: KnowledgeBase, backend: str) -> Path:
    """The default index directory of a saved KB: `<kb.path>/index/<backend>`."""
    if kb.path is None:
        raise ConfigError(
            "the KB has no directory (it was built in memory); save it first (kb.save(DIR)) or pass directory="
        )
    return Path(kb.path) / "index" / store_name(backend)


def _built_backends(kb: KnowledgeBase) -> list[str]:
    root = Path(kb.path) / "index" if kb.path is not None else None
    if root is None or not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / INDEX_META).is_file())


def index_backend(kb: KnowledgeBase, backend: str | None = None, settings: Settings | None = None) -> str:
    """The backend spec to open or build for `kb` when a caller may leave it out.

    Precedence: `backend`; a backend configured in `settings` (option, environment or file); the KB's only
    index, or, when it has several, the default backend's; the default backend (`settings.backend`).
    """
    if backend:
        return backend
    settings = settings if settings is not None else load_settings()
    if settings.is_set("backend"):
        return settings.backend
    built = _built_backends(kb)
    default = store_name(settings.backend)
    if len(built) == 1 and built[0] != default:
        log.info("using the KB's only index, %s", built[0])
        return built[0]
    if len(built) > 1 and default not in built:
        raise ConfigError(
            f"the KB at {kb.path} has indexes for {', '.join(built)}; choose one with --backend NAME "
            "(or the backend setting)"
        )
    return settings.backend


def read_index_meta(directory: str | Path, hint: str = REBUILD_HINT) -> IndexMeta:
    """The metadata of the index in `directory` (format, fields, spec of old indexes), without opening it;
    `hint` ends the message of an IndexError_ (what fixes a missing or damaged file)."""
    target = Path(directory)
    raw = read_meta(target / INDEX_META, "index metadata", hint=hint)
    return _meta_from_raw(raw, target, hint)[0]


def _meta_from_raw(raw: dict[str, Any], target: Path, fix: str) -> tuple[IndexMeta, dict[str, Any]]:
    if raw.get("format") != INDEX_FORMAT and raw.get("format") not in LEGACY_FORMATS:
        raise IndexError_(f"{target / INDEX_META}: index format {raw.get('format')!r} is not {INDEX_FORMAT}; {fix}")
    try:
        embedder = str(raw["embedder"])
        meta = IndexMeta(
            kb_version=str(raw["kb_version"]),
            embedder=embedder,
            dim=int(raw["dim"]),
            backend=str(raw["backend"]),
            count=int(raw["count"]),
            ids=tuple(raw["ids"]),
            created_at=str(raw.get("created_at", "")),
            store=dict(raw.get("store", {})),
            embedder_spec=str(raw["embedder_spec"]) if raw.get("embedder_spec") else spec_from_id(embedder),
        )
        files = dict(raw["files"])
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexError_(
            f"{target / INDEX_META}: field {exc} missing or invalid; the file is corrupted, {fix}"
        ) from exc
    return meta, files


def carry_index(kb_dir: str | Path, kb: KnowledgeBase, old_version: str) -> list[str]:
    """Re-seal the indexes under `<kb_dir>/index/` built for KB version `old_version` for `kb`, whose tuple ids
    (hence concepts, hence vectors) are the same: a review changes labels and statuses only, so nothing is
    re-encoded. An index that is damaged, of another version or of other ids is left as it is (its load says how
    to rebuild it). Returns the backends carried over."""
    carried = []
    root = Path(kb_dir) / "index"
    ids = [t.id for t in kb.tuples]
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        path = folder / INDEX_META
        try:
            raw = read_meta(path, "index metadata")
            check_digest(raw, path)
        except IndexError_:
            continue
        if raw.get("kb_version") != old_version or raw.get("ids") != ids:
            continue
        raw["kb_version"] = kb.version
        raw["digest"] = meta_digest(raw)
        atomic_write_json(path, raw)
        carried.append(folder.name)
    return carried


def _encode_concepts(kb: KnowledgeBase, embedder: Embedder, batch_size: int) -> np.ndarray:
    concepts = [t.concept for t in kb.tuples]
    unique = list(dict.fromkeys(concepts))
    log.info("encoding %d distinct concepts of %d tuples with %s", len(unique), len(concepts), embedder.id)
    vecs = np.asarray(embedder.encode(unique, batch_size=batch_size), dtype=np.float32)
    if vecs.shape != (len(unique), embedder.dim):
        raise DataError(
            f"embedder {embedder.id} returned shape {vecs.shape} for {len(unique)} texts; expected "
            f"({len(unique)}, {embedder.dim}). The embedder is broken or its `dim` is wrong."
        )
    if not np.isfinite(vecs).all():
        raise DataError(f"embedder {embedder.id} returned NaN or infinite values; check the model files")
    row = {c: i for i, c in enumerate(unique)}
    return np.ascontiguousarray(vecs[[row[c] for c in concepts]])


def _reusable_vectors(kb: KnowledgeBase, embedder_id: str, ids: Sequence[str]) -> np.ndarray | None:
    """Vectors of another backend's index of the same KB version and embedder, if one is intact."""
    if kb.path is None or not (Path(kb.path) / "index").is_dir():
        return None
    for other in sorted((Path(kb.path) / "index").iterdir()):
        try:
            raw = read_meta(other / INDEX_META, "index metadata")
            if raw.get("kb_version") != kb.version or raw.get("embedder") != embedder_id or raw.get("ids") != list(ids):
                continue
            verify_files(other, {VECTORS: raw["files"][VECTORS]})
            vecs = np.load(other / VECTORS, allow_pickle=False)
        except (IndexError_, KeyError, TypeError, ValueError, OSError):
            continue
        log.info("reusing concept vectors from %s", other)
        return np.ascontiguousarray(vecs, dtype=np.float32)
    return None


def build_index(
    kb: KnowledgeBase,
    embedder: Embedder,
    backend: str | None = None,
    directory: str | Path | None = None,
    *,
    persist: bool = True,
    batch_size: int = 256,
    mmap: bool = True,
    embedder_spec: str | None = None,
    **store_kw: Any,
) -> KBIndex:
    """Encode the KB's concepts, fill a `backend` store ("faiss", "faiss:hnsw", "numpy", "qdrant" ...), save.

    `backend` defaults to the backend setting (`culturekb.config`). `directory` defaults to
    `<kb.path>/index/<backend>`; `persist=False` keeps the index in memory only (for a KB built in code).
    `embedder_spec`: what `make_embedder` rebuilds the embedder from, recorded in the index (default: the
    embedder's own `spec`). `store_kw` go to the store (e.g. `url=` for a Qdrant server, `kind=` for FAISS).
    A persisted index is returned as `load_index` would open it (memory-mapped when `mmap`).
    """
    if not kb.tuples:
        raise DataError("the KB has no tuples; there is nothing to index. Build the KB from a training split first")
    backend = backend or load_settings().backend
    name = store_name(backend)
    ids = [t.id for t in kb.tuples]
    payloads = [{"culture": t.culture, "concept": t.concept} for t in kb.tuples]
    vectors = _reusable_vectors(kb, embedder.id, ids) if persist else None
    if vectors is None or vectors.shape != (len(ids), embedder.dim):
        vectors = _encode_concepts(kb, embedder, batch_size)
    store_kw = dict(store_kw)
    if name == "qdrant":
        store_kw.setdefault("collection", f"culturekb-{kb.version}-{_short(embedder.id)}")
    meta = IndexMeta(
        kb_version=kb.version,
        embedder=embedder.id,
        dim=embedder.dim,
        backend=name,
        count=len(ids),
        ids=tuple(ids),
        created_at=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        store={"spec": backend, **{k: v for k, v in store_kw.items() if k not in ("api_key",)}},
        embedder_spec=embedder_spec or _embedder_spec(embedder),
    )
    if not persist:
        store = make_store(backend, embedder.dim, **store_kw)
        store.add(ids, vectors, payloads)
        return KBIndex(meta, vectors, store, None)

    target = Path(directory) if directory is not None else index_dir(kb, name)
    with atomic_dir(target) as tmp:
        kw = dict(store_kw)
        if name == "qdrant" and not any(k in kw for k in ("url", "path", "location")):
            from culturekb.retrieval.stores.qdrant_store import LOCAL_DIR

            kw["path"] = tmp / STORE_DIR / LOCAL_DIR
        store = make_store(backend, embedder.dim, **kw)
        try:
            store.add(ids, vectors, payloads)
            with open(tmp / VECTORS, "wb") as fh:
                np.save(fh, vectors)
            store.save(tmp / STORE_DIR)
        finally:
            store.close()
        raw = {
            "format": INDEX_FORMAT,
            "kb_version": meta.kb_version,
            "embedder": meta.embedder,
            "embedder_spec": meta.embedder_spec,
            "dim": meta.dim,
            "backend": meta.backend,
            "count": meta.count,
            "created_at": meta.created_at,
            "store": _jsonable(meta.store),
            "files": file_manifest(tmp, tree_files(tmp, skip=[INDEX_META])),
            "ids": ids,
        }
        raw["digest"] = meta_digest(raw)
        atomic_write_json(tmp / INDEX_META, raw)
    log.info("built %s index of %d tuples (KB %s, %s) at %s", name, len(ids), kb.version, embedder.id, target)
    return load_index(
        kb,
        embedder,
        backend,
        directory=target,
        mmap=mmap,
        **{k: v for k, v in store_kw.items() if k in ("api_key", "timeout")},
    )


def load_index(
    kb: KnowledgeBase,
    embedder: Embedder | str,
    backend: str | None = None,
    directory: str | Path | None = None,
    *,
    mmap: bool = True,
    verify: bool = True,
    **store_kw: Any,
) -> KBIndex:
    """Open a saved index, refusing one built for another KB version or embedder, or with damaged files.

    `embedder`: the Embedder that will encode queries, or only its id (to check an index without loading a
    model); `backend` defaults as in `index_backend`. `mmap`: keep vectors on disk (read-only) where the
    backend allows; `verify`: check recorded SHA-256 sums (sizes are always checked). `store_kw` go to the
    store loader (e.g. `url=`, `api_key=` for Qdrant, `ef_search=` / `nprobe=` for FAISS).
    """
    if directory is not None:  # a backend left out means: whatever this folder holds
        target = Path(directory)
        name = store_name(backend) if backend else ""
    else:
        name = store_name(index_backend(kb, backend))
        target = index_dir(kb, name)
    fix = _fix(kb, name or "<BACKEND>")
    if not (target / INDEX_META).is_file():
        raise IndexError_(
            f"no {name} index at {target} ({INDEX_META} missing); build it with {_command(kb, name or '<BACKEND>')}"
        )
    raw = read_meta(target / INDEX_META, "index metadata", hint=fix)
    meta, files = _meta_from_raw(raw, target, fix)
    if raw.get("format") == INDEX_FORMAT:
        check_digest(raw, target / INDEX_META, hint=fix)
    name = name or meta.backend
    if meta.backend != name:
        raise IndexError_(
            f"{target} holds a {meta.backend!r} index, not {name!r}; pass backend={meta.backend!r} or {fix}"
        )
    _check_identity(meta, kb, _embedder_id(embedder), target)
    if not isinstance(embedder, str) and embedder.dim != meta.dim:
        raise IndexError_(
            f"index at {target} has dimension {meta.dim} but embedder {embedder.id} gives {embedder.dim}; {fix}"
        )
    if list(meta.ids) != [t.id for t in kb.tuples] or meta.count != len(meta.ids):
        raise IndexError_(
            f"{target / INDEX_META}: its id list does not match the KB's tuples; the index is corrupted, {fix}"
        )
    if raw.get("format") == INDEX_FORMAT:
        verify_tree(target, files, skip=[INDEX_META], verify_hash=verify, hint=fix)
    else:
        _verify_legacy(target, files, verify, fix)
    try:
        vectors = np.load(target / VECTORS, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise IndexError_(f"cannot read {target / VECTORS} ({exc}); it is corrupted, {fix}") from exc
    if vectors.shape != (meta.count, meta.dim) or vectors.dtype != np.float32:
        raise IndexError_(
            f"{target / VECTORS} holds {vectors.dtype} {vectors.shape}, "
            f"expected float32 ({meta.count}, {meta.dim}); {fix}"
        )
    # the index manifest has hashed every store file already; the store checks only sizes and its own consistency
    store_verify = verify and raw.get("format") != INDEX_FORMAT
    store = load_store(target / STORE_DIR, mmap=mmap, verify=store_verify, **store_kw)
    if len(store) != meta.count or store.dim != meta.dim or store.backend != name:
        store.close()
        raise IndexError_(
            f"{target / STORE_DIR}: the {store.backend} store holds {len(store)} vectors of dimension {store.dim}, "
            f"but the index recorded {meta.count} of dimension {meta.dim}; {fix}"
        )
    return KBIndex(meta, vectors, store, target)


def _verify_legacy(target: Path, files: dict[str, Any], verify: bool, fix: str) -> None:
    """A format-1 index: `index.json` lists vectors.npy and `store/store.json` the store's files. Read it only when
    those two manifests together cover every file of the folder and all of them verify."""
    store_meta = read_meta(target / STORE_DIR / "store.json", "store metadata", hint=fix)
    store_files = store_meta.get("files")
    if not isinstance(store_files, dict) or not files:
        raise IndexError_(f"{target}: an index of format 1 whose manifests are empty or missing; {fix}")
    prefix = f"{STORE_DIR}/qdrant/" if store_meta.get("backend") == "qdrant" else f"{STORE_DIR}/"
    covered = set(files) | {f"{STORE_DIR}/store.json"} | {prefix + str(n) for n in store_files}
    unlisted = sorted(set(tree_files(target, skip=[INDEX_META])) - covered)
    if unlisted or store_meta.get("mode") != "url" and not store_files:
        shown = ", ".join(unlisted[:5]) or "the store's files"
        raise IndexError_(
            f"index at {target} was written by an older culturekb (index format 1) and its manifests do not cover "
            f"every file ({shown}); it cannot be verified, {fix}"
        )
    verify_files(target, files, verify_hash=verify, hint=fix)
    log.warning("index at %s has the older format 1 (store.json is not hashed); %s to have every file verified",
                target, fix)


def _short(text: str) -> str:
    from culturekb._io import sha256_text

    return sha256_text(text)[:8]


def _jsonable(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in obj.items()}
