"""The `culturekb serve` command (registered in culturekb/cli.py); also runnable as `python -m culturekb.api.cli`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from culturekb._cli_errors import guard as _guard

__all__ = ["serve_command"]


def serve_command(
    kb: Annotated[Path, typer.Option("--kb", help="KB directory to serve (written by `culturekb build`)")],
    host: Annotated[str, typer.Option(help="interface to listen on; 0.0.0.0 for every interface")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="worker processes, each loading the index read-only")] = 1,
    backend: Annotated[str | None, typer.Option(
        help="vector store of the index: faiss | qdrant (default: the backend setting, else the KB's only "
             "index)")] = None,
    embedder: Annotated[str | None, typer.Option(
        help="embedder the index was built with (default: the one the index records; another one is "
             "refused)")] = None,
    tau: Annotated[float | None, typer.Option(
        help="default cosine threshold of semantic matches (default: the tau setting, 0.70)")] = None,
    status: Annotated[str | None, typer.Option(
        help="status filter of requests that name none: all (every tuple but rejected ones; pending ones marked "
             "unreviewed), accepted (reviewed only) or pending (default: the status setting, all)")] = None,
    config: Annotated[Path | None, typer.Option(
        help="TOML settings file (default $CULTUREKB_CONFIG, else ./culturekb.toml)")] = None,
    api_keys_file: Annotated[Path | None, typer.Option(
        help="TOML file with `read = [...]` and `admin = [...]` key lists; or set CULTUREKB_API_READ_KEYS and "
             "CULTUREKB_API_ADMIN_KEYS (comma-separated). Without keys, /v1 is open and admin routes are off")] = None,
    build_index: Annotated[bool, typer.Option(help="build the index first when it is missing")] = True,
    max_batch: Annotated[int | None, typer.Option(help="most concepts per request (default 256)")] = None,
    max_body_bytes: Annotated[int | None, typer.Option(help="largest request body (default 1 MiB)")] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        min=1, help="most /v1 requests one worker serves at once; beyond, 503 with Retry-After (default 64; "
        "CULTUREKB_API_MAX_IN_FLIGHT)")] = None,
    batching: Annotated[bool | None, typer.Option(
        "--batching/--no-batching", help="gather the query embeddings of concurrent requests into one encode call "
        "(default on; CULTUREKB_API_BATCHING)")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level")] = "info",
) -> None:
    """Serve the HTTP retrieval API (FastAPI + uvicorn): lookups, knowledge blocks, KB stats, metrics."""
    from culturekb.api.server import serve

    _guard(lambda: check_listen_address(host, port))
    _guard(lambda: serve(kb, host, port, workers, backend=backend, embedder=embedder, tau=tau, config=config,
                         api_keys_file=api_keys_file, build_index=build_index, log_level=log_level,
                         max_batch=max_batch, max_body_bytes=max_body_bytes, status=status, batching=batching,
                         max_in_flight=max_in_flight))


def check_listen_address(host: str, port: int) -> None:
    """Bind `host`:`port` once and let it go, before the KB and index load: a port in use or a host that is not
    this machine's raises ConfigError (exit 2) saying which and what to do (uvicorn would log it and exit 3)."""
    import errno
    import socket

    from culturekb.errors import ConfigError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host!r}: not an address of this machine ({exc.strerror}); give 127.0.0.1, "
                          "0.0.0.0 or one of its interfaces' addresses") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"cannot listen on {host}:{port}: the port is in use by another program; stop "
                                  "it, or choose another --port") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; give another --host or "
                              "--port (ports below 1024 need privileges)") from None


if __name__ == "__main__":  # pragma: no cover
    typer.run(serve_command)
