"""One HTTP/1.1 request over a blocking keep-alive socket, with no client library: for tests and benchmarks that
must know which connection (and so which server worker) a request goes to; and stopping the server process they
started."""

from __future__ import annotations

import json
import socket
import subprocess
from typing import Any

__all__ = ["raw_request", "stop_server"]


def raw_request(conn: socket.socket, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    """Send one request on `conn` (a JSON `body` when given) and read its answer: (status, body bytes)."""
    data = b"" if body is None else json.dumps(body).encode()
    conn.sendall(f"{method} {path} HTTP/1.1\r\nHost: culturekb\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection before answering {method} {path}")
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(rest) < length:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError(f"the server closed the connection in the middle of the answer to {method} {path}")
        rest += chunk
    return int(head.split()[1]), rest


def stop_server(proc: subprocess.Popen[Any], timeout_s: float = 30) -> None:
    """Stop a server started in its own process: SIGTERM (it shuts its workers down), then SIGKILL after
    `timeout_s`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
