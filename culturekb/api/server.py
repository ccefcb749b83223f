"""`serve`: run the API with uvicorn, in one process or in N worker processes that each load the index
read-only (memory-mapped) and share admin reloads and metrics.

Each process reads the KB once: with one worker, the app is built (KB loaded, index built when missing and
allowed) before uvicorn starts; with N workers, the parent checks the KB and builds a missing index once
(`prepare_kb`), then each worker loads it once.

What N workers share and what each holds (uvicorn starts them as separate processes, not forks):

- shared, through the OS page cache: the index files. Each worker opens them read-only and memory-mapped
  (`open_retriever(..., mmap=True)`): FAISS flat/HNSW partitions with ``IO_FLAG_MMAP_IFC``, IVF with
  ``IO_FLAG_MMAP`` (`culturekb.retrieval.stores.faiss_store`), ``vectors.npy`` with ``np.load(mmap_mode="r")``;
  N workers map the same pages, so the vectors are in memory once, not N times. At start-up each worker reads
  the files once to check their sha256 (a read, not a copy).
- per worker: the parsed KB tuples and the exact-match tables, the embedding model (its weights are loaded by
  each process), the micro-batcher (`culturekb.api._batching`: one encode call at a time per worker) and its
  LRU of query embeddings (`embed_cache_size` entries each). Reloads travel through a sync file, metrics
  through PROMETHEUS_MULTIPROC_DIR.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any

from culturekb.api.settings import ENV_PREFIX, ApiSettings, load_api_settings
from culturekb.config import CONFIG_ENV, Settings, config_file, load_settings
from culturekb.errors import ConfigError, IndexError_, MissingExtraError

__all__ = ["serve", "prepare_kb", "settings_to_env"]

log = logging.getLogger(__name__)

APP_FACTORY = "culturekb.api.app:app_from_env"


def prepare_kb(settings: ApiSettings, library_settings: Settings | None = None) -> dict[str, Any]:
    """Check the KB and its index before any worker starts, and build the index once when it is missing and
    allowed; no embedding model is loaded unless an index is built.

    Building here (not in each worker) keeps N workers from writing the same index at the same time.
    """
    from culturekb.kb.store import KnowledgeBase
    from culturekb.retrieval.index import INDEX_META, index_backend, index_dir, load_index, read_index_meta
    from culturekb.retrieval.retriever import open_retriever

    if settings.kb_dir is None:
        raise ConfigError("no KB to serve; pass --kb DIR (a directory written by `culturekb build`)")
    library_settings = library_settings if library_settings is not None else load_settings()
    kb = KnowledgeBase.load(settings.kb_dir)
    backend = index_backend(kb, settings.backend, library_settings)
    folder = index_dir(kb, backend)
    built = False
    if (folder / INDEX_META).is_file():
        meta = read_index_meta(folder)
        index = load_index(kb, meta.embedder, backend, verify=False)  # KB version, files, sizes: no model needed
        index.close()
        if settings.embedder is not None and settings.embedder != meta.embedder_spec:
            from culturekb.models.factory import make_embedder

            index.check(kb, make_embedder(settings.embedder))  # a fixed embedder must be the index's own
    elif not settings.build_index:
        raise IndexError_(f"{settings.kb_dir} has no {backend} index; build it with `culturekb index "
                          f"--kb {settings.kb_dir} --backend {backend}`, or serve with --build-index")
    else:
        log.warning("building the %s index of %s before serving", backend, settings.kb_dir)
        open_retriever(kb, settings.embedder, backend, build=True, settings=library_settings).index.close()
        built = True
    return {"kb_version": kb.version, "tuples": len(kb), "index_built": built, "backend": backend}


def tcp_socket(sock: socket.socket) -> socket.socket:
    """`sock` re-labelled with protocol IPPROTO_TCP when it is a TCP socket created with protocol 0.

    uvicorn's `Config.bind_socket` (the socket its N workers share) creates ``socket(AF_INET, SOCK_STREAM)``:
    protocol 0. Accepted connections inherit it, and asyncio sets TCP_NODELAY only on sockets whose protocol is
    IPPROTO_TCP (`asyncio.base_events._set_nodelay`), so with 2 or more workers every response went out under
    Nagle's algorithm: a response written in two parts (headers, body) waited for the client's delayed ACK, about
    40 ms (issue 25: `/livez` at exactly 44 ms median with 2 workers, 1-2 ms with one).
    """
    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM and sock.proto == 0:
        return socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
    return sock


def _run_workers(uvicorn: Any, reuse_port: bool = True, **options: Any) -> None:
    """`uvicorn.run(APP_FACTORY, factory=True, **options)` with N workers.

    On Linux (with `reuse_port`) each worker listens on its own SO_REUSEPORT socket, so the kernel spreads
    connections over the workers (`culturekb.api._workers`: with one shared socket, the first worker to wake
    accepted every connection a client opened at once). Otherwise they share one listening socket whose accepted
    connections get TCP_NODELAY: uvicorn's `Config.bind_socket` is wrapped by `tcp_socket` while it runs."""
    from culturekb.api._workers import reuse_port_supported, run_reuse_port

    if reuse_port and reuse_port_supported():
        run_reuse_port(uvicorn, APP_FACTORY, **options)
        return
    from uvicorn.config import Config

    original = Config.bind_socket

    def bind_socket(self: Any) -> socket.socket:
        return tcp_socket(original(self))

    Config.bind_socket = bind_socket  # type: ignore[method-assign]
    try:
        uvicorn.run(APP_FACTORY, factory=True, **options)
    finally:
        Config.bind_socket = original  # type: ignore[method-assign]


def settings_to_env(settings: ApiSettings) -> dict[str, str]:
    """The environment that makes `ApiSettings()` in a worker equal to `settings` (every field that is not None)."""
    env: dict[str, str] = {}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        if isinstance(value, list):
            text = ",".join(value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        env[f"{ENV_PREFIX}{name.upper()}"] = text
    return env


def serve(
    kb_dir: str | Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    *,
    backend: str | None = None,
    embedder: str | None = None,
    tau: float | None = None,
    config: str | Path | None = None,
    api_keys_file: str | Path | None = None,
    build_index: bool = True,
    log_level: str = "info",
    status: str | None = None,
    **limits: Any,
) -> None:
    """Serve the KB in `kb_dir` over HTTP until interrupted.

    `backend`, `embedder`, `tau` and `status` (the status filter of requests that name none) default to the
    library settings (`config`: a TOML file, else $CULTUREKB_CONFIG or ./culturekb.toml; then CULTUREKB_*
    variables) and to what the KB's index records.
    One worker runs the app in this process. With `workers > 1`, uvicorn starts that many processes from the
    import string `culturekb.api.app:app_from_env`; the settings travel through CULTUREKB_API_* environment
    variables (and CULTUREKB_CONFIG), admin reloads through a sync file, and metrics through
    PROMETHEUS_MULTIPROC_DIR (temporary, removed on exit). `limits`: further `ApiSettings` fields (max_batch,
    max_body_bytes, ...).
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "api", "culturekb serve") from exc
    if workers < 1:
        raise ConfigError(f"workers must be at least 1; got {workers}")
    library_settings = load_settings(config)
    if status is not None:
        from culturekb.retrieval.filters import check_status

        check_status(status)  # says which filters exist, before any setting names an environment variable
    settings = load_api_settings(kb_dir=Path(kb_dir), backend=backend, embedder=embedder, tau=tau,
                                 api_keys_file=api_keys_file, build_index=build_index,
                                 status=status if status is not None else library_settings.status, **limits)
    settings.keys()  # a broken keys file fails now, not in every worker
    # One torch thread per worker: without micro-batching requests encode concurrently in the threadpool, and
    # intra-op threads on top of them oversubscribe the cores (measured: 10x slower single lookups on a busy
    # machine); with it, 2 intra-op threads for the one batcher thread were 4x slower than 1 on a busy 2-core
    # machine (benchmarks/bench_api.py, minilm:st).
    threads = settings.torch_threads or 1
    # each worker's micro-batcher encodes on its share of the cores this process may use (taskset, container CPU
    # sets; not os.cpu_count(), the machine's): one encoder thread per core
    from culturekb.models.threads import available_cores

    encoders = settings.batch_encoders or max(1, available_cores() // workers)
    # each worker answers one real lookup before it accepts connections (`culturekb.api.app.warm_request`), unless
    # CULTUREKB_API_WARM_REQUEST=false says otherwise
    warm = settings.warm_request if "warm_request" in settings.model_fields_set else True
    if workers == 1:
        from culturekb.api.app import create_app

        app = create_app(settings=settings.model_copy(update={"torch_threads": threads, "batch_encoders": encoders,
                                                           "warm_request": warm}),
                         library_settings=library_settings)
        state = app.state.holder.current
        log.info("serving KB %s (%d tuples, %s index) on http://%s:%d with 1 worker", state.kb_version,
                 len(state.kb), state.backend, host, port)
        uvicorn.run(app, host=host, port=port, log_level=log_level)
        return

    info = prepare_kb(settings, library_settings)
    log.info("serving KB %s (%d tuples, %s index) on http://%s:%d with %d workers", info["kb_version"],
             info["tuples"], info["backend"], host, port, workers)
    runtime = Path(tempfile.mkdtemp(prefix="culturekb-serve-"))
    saved = dict(os.environ)
    try:
        pin_dir = runtime if settings.pin_workers else None  # each worker holds its own cores (api/_pinning.py)
        worker_settings = settings.model_copy(update={"build_index": False, "sync_file": runtime / "reload.json",
                                                      "pin_dir": pin_dir,
                                                      "torch_threads": threads, "batch_encoders": encoders,
                                                      "warm_request": warm})
        env = settings_to_env(worker_settings)
        config_path = config_file(config)
        if config_path is not None:  # the workers read the same settings file as this process
            env[CONFIG_ENV] = str(config_path.resolve())
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            (runtime / "metrics").mkdir()
            env["PROMETHEUS_MULTIPROC_DIR"] = str(runtime / "metrics")
        from culturekb.models.threads import PROCESSES_ENV

        env[PROCESSES_ENV] = str(workers)  # each worker computes on its share of the cores (models/threads.py)
        os.environ.update(env)
        _run_workers(uvicorn, settings.reuse_port, host=host, port=port, workers=workers, log_level=log_level)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(runtime, ignore_errors=True)
