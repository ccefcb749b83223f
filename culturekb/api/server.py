"""`serve`: run the API with uvicorn, in one process or in N worker processes that each load the index
read-only (memory-mapped) and share admin reloads and metrics."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from culturekb.api.settings import ENV_PREFIX, ApiSettings, load_api_settings
from culturekb.errors import ConfigError, IndexError_, MissingExtraError

__all__ = ["serve", "prepare_kb", "settings_to_env"]

log = logging.getLogger(__name__)

APP_FACTORY = "culturekb.api.app:app_from_env"


def prepare_kb(settings: ApiSettings) -> dict[str, Any]:
    """Check the KB before any worker starts, and build its index once when it is missing and allowed.

    Building here (not in each worker) keeps N workers from writing the same index at the same time.
    """
    from culturekb.kb.store import KnowledgeBase
    from culturekb.retrieval.index import INDEX_META, index_dir

    if settings.kb_dir is None:
        raise ConfigError("no KB to serve; pass --kb DIR (a directory written by `culturekb build`)")
    kb = KnowledgeBase.load(settings.kb_dir)
    built = False
    if not (index_dir(kb, settings.backend) / INDEX_META).is_file():
        if not settings.build_index:
            raise IndexError_(f"{settings.kb_dir} has no {settings.backend} index; build it with `culturekb index "
                              f"--kb {settings.kb_dir} --backend {settings.backend}`, or serve with --build-index")
        from culturekb.workflows import index_kb

        log.warning("building the %s index of %s before serving", settings.backend, settings.kb_dir)
        index_kb(settings.kb_dir, settings.backend, settings.embedder)
        built = True
    return {"kb_version": kb.version, "tuples": len(kb), "index_built": built}


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
    backend: str = "faiss",
    embedder: str = "minilm",
    tau: float | None = None,
    api_keys_file: str | Path | None = None,
    build_index: bool = True,
    log_level: str = "info",
    **limits: Any,
) -> None:
    """Serve the KB in `kb_dir` over HTTP until interrupted.

    One worker runs the app in this process. With `workers > 1`, uvicorn starts that many processes from the
    import string `culturekb.api.app:app_from_env`; the settings travel through CULTUREKB_API_* environment
    variables, admin reloads through a sync file, and metrics through PROMETHEUS_MULTIPROC_DIR (temporary, removed
    on exit). `limits`: further `ApiSettings` fields (max_batch, max_body_bytes, ...).
    """
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingExtraError("uvicorn", "api", "culturekb serve") from exc
    if workers < 1:
        raise ConfigError(f"workers must be at least 1; got {workers}")
    settings = load_api_settings(kb_dir=Path(kb_dir), backend=backend, embedder=embedder, tau=tau,
                                 api_keys_file=api_keys_file, build_index=build_index, **limits)
    settings.keys()  # a broken keys file fails now, not in every worker
    info = prepare_kb(settings)
    log.info("serving KB %s (%d tuples) on http://%s:%d with %d worker(s)", info["kb_version"], info["tuples"],
             host, port, workers)
    # Requests run concurrently in the threadpool, so each encode call gets one torch thread: intra-op threads on
    # top of concurrent requests oversubscribe the cores (measured: 10x slower single lookups on a busy machine).
    threads = settings.torch_threads or 1
    if workers == 1:
        from culturekb.api.app import create_app

        app = create_app(settings=settings.model_copy(update={"build_index": False, "torch_threads": threads}))
        uvicorn.run(app, host=host, port=port, log_level=log_level)
        return

    runtime = Path(tempfile.mkdtemp(prefix="culturekb-serve-"))
    saved = dict(os.environ)
    try:
        worker_settings = settings.model_copy(update={"build_index": False, "sync_file": runtime / "reload.json",
                                                      "torch_threads": threads})
        env = settings_to_env(worker_settings)
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            (runtime / "metrics").mkdir()
            env["PROMETHEUS_MULTIPROC_DIR"] = str(runtime / "metrics")
        os.environ.update(env)
        uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, workers=workers, log_level=log_level)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(runtime, ignore_errors=True)
