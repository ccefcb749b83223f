"""N uvicorn workers that share the connections: one listening socket per worker in one SO_REUSEPORT group.

Why (issue 25, measured with `benchmarks/bench_api.py --workers`): uvicorn's workers share the parent's one
listening socket, and asyncio accepts up to `backlog` (2,048) waiting connections each time that socket is
readable (`selector_events._accept_connection`). A client that opens its keep-alive connections together (a
connection pool, a load balancer) therefore hands them all to whichever worker woke first: with 16 connections
one worker used 0.89 of a core and the other 0.09, and 2 workers served 1.02x the one-concept lookups of one.

With SO_REUSEPORT (Linux) each worker binds its own listening socket to the same address and the kernel spreads
new connections over the workers whose socket listens (a hash of the connection's addresses), so every worker
gets its share, whether or not it is in the middle of a request. A worker joins the group only once it listens,
that is after its app is built and warmed (`culturekb.api.app.create_app`), so no connection waits on a worker
that is still loading.

The parent binds the address first with SO_REUSEPORT and never listens on it: it reserves the port (and finds
it when port 0 is asked for), and a socket that does not listen gets no connections. Elsewhere (macOS, Windows:
no balancing SO_REUSEPORT) or with a uvicorn whose supervisor cannot be told to do this, the workers share the
parent's socket as before (`reuse_port_supported`).
"""

from __future__ import annotations

import socket
import sys
from typing import Any

from uvicorn.supervisors import multiprocess

__all__ = ["ReusePortProcess", "bind_reuse_port", "reuse_port_supported", "worker_listener"]


def reuse_port_supported() -> bool:
    """Whether this platform spreads connections over SO_REUSEPORT sockets (Linux) and this uvicorn lets each
    worker process choose its own sockets (a `Process` class with a `target(sockets)` method, uvicorn >= 0.30)."""
    process = getattr(multiprocess, "Process", None)
    return (sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")
            and isinstance(process, type) and callable(getattr(process, "target", None)))


def _reuse_port_socket(family: int) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # IPPROTO_TCP: asyncio sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def bind_reuse_port(host: str, port: int) -> socket.socket:
    """The parent's socket: bound to (host, port) with SO_REUSEPORT, not listening, inheritable.

    A port that another program holds fails here with one line that says which and what to do."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = _reuse_port_socket(family)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        from culturekb.errors import ConfigError

        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); stop the program that holds "
                          "the port or choose another with --port") from None
    sock.set_inheritable(True)
    return sock


def worker_listener(parent: socket.socket) -> socket.socket:
    """In a worker: its own socket bound to the parent's address in the same SO_REUSEPORT group (asyncio makes
    it listen when the worker starts serving). The worker's copy of the parent's socket is closed."""
    own = _reuse_port_socket(parent.family)
    own.bind(parent.getsockname())
    own.set_inheritable(False)
    parent.close()
    return own


class ReusePortProcess(multiprocess.Process):  # type: ignore[misc]
    """uvicorn's worker process, listening on its own SO_REUSEPORT socket instead of the parent's shared one."""

    def target(self, sockets: list[socket.socket] | None = None) -> None:  # pragma: no cover - runs in the worker
        own = [worker_listener(s) if _is_reuse_port(s) else s for s in sockets or []]
        super().target(own if sockets is not None else sockets)


def _is_reuse_port(sock: socket.socket) -> bool:
    try:
        return bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT))
    except OSError:  # pragma: no cover - a socket type without the option
        return False


def run_reuse_port(uvicorn: Any, app: str, **options: Any) -> None:
    """`uvicorn.run(app, factory=True, **options)` with N workers, each on its own SO_REUSEPORT socket:
    `Config.bind_socket` gives the parent's bound, non-listening socket and the supervisor starts
    `ReusePortProcess` workers; both are restored when it returns."""
    from uvicorn.config import Config

    original_bind, original_process = Config.bind_socket, multiprocess.Process

    def bind_socket(self: Any) -> socket.socket:
        if self.uds is not None or self.fd is not None:
            return original_bind(self)
        return bind_reuse_port(self.host, self.port)

    Config.bind_socket = bind_socket  # type: ignore[method-assign]
    multiprocess.Process = ReusePortProcess  # type: ignore[misc]
    try:
        uvicorn.run(app, factory=True, **options)
    finally:
        Config.bind_socket = original_bind  # type: ignore[method-assign]
        multiprocess.Process = original_process  # type: ignore[misc]
