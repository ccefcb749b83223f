"""Optional API keys: read keys for the /v1 routes and /metrics, admin keys for the admin routes.

A key is sent as `Authorization: Bearer KEY` or `X-API-Key: KEY`. The read routes need a key only when read keys
are configured (an admin key then opens them too); the admin routes always need an admin key, and are refused when
none is configured (an admin route is never open by accident). /livez and /readyz never need a key.

Server details (the KB's absolute directory in /v1/kb, the worker's pid in /readyz) are shown only to a request
with an admin key, or, on a server with no keys at all, to a client on the loopback address (a developer's own
machine); everyone else gets null (`shows_private`). Behind a reverse proxy on the same host every client looks
local: configure keys there.
"""

from __future__ import annotations

import hmac
import ipaddress
from dataclasses import dataclass
from typing import Annotated, Literal

from fastapi import Depends, HTTPException, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

__all__ = ["ApiKeys", "require_read", "require_admin", "shows_private", "request_key"]

Role = Literal["read", "admin"]

_bearer = HTTPBearer(auto_error=False, scheme_name="BearerKey", description="an API key as a bearer token")
_header = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="HeaderKey",
                       description="an API key in the X-API-Key header")


@dataclass(frozen=True)
class ApiKeys:
    """The configured read and admin keys; `check` tells whether a request's key grants a role."""

    read: frozenset[str] = frozenset()
    admin: frozenset[str] = frozenset()

    @property
    def read_required(self) -> bool:
        """True when read keys are configured, so the /v1 routes and /metrics need a key."""
        return bool(self.read)

    def role_of(self, key: str) -> Role | None:
        """The role `key` grants (admin before read), or None for an unknown key."""
        # compare every key, in constant time per key, so timing does not tell which one nearly matched
        is_admin = any(hmac.compare_digest(key.encode(), k.encode()) for k in self.admin)
        is_read = any(hmac.compare_digest(key.encode(), k.encode()) for k in self.read)
        return "admin" if is_admin else "read" if is_read else None

    def check(self, key: str | None, role: Role) -> None:
        """Raise 401 (no or unknown key) or 403 (key without the role) unless `key` grants `role`."""
        if role == "read" and not self.read_required:
            return
        if role == "admin" and not self.admin:
            raise HTTPException(403, "admin routes are disabled because no admin key is configured; start the "
                                     "server with an admin key (CULTUREKB_API_ADMIN_KEYS or --api-keys-file)")
        challenge = {"WWW-Authenticate": 'Bearer realm="culturekb"'}
        if not key:
            raise HTTPException(401, f"this route needs {'an admin' if role == 'admin' else 'an API'} key; send it "
                                     "as 'Authorization: Bearer KEY' or 'X-API-Key: KEY'", headers=challenge)
        granted = self.role_of(key)
        if granted is None:
            raise HTTPException(401, "the API key is not valid; check the key you send", headers=challenge)
        if role == "admin" and granted != "admin":
            raise HTTPException(403, "this route needs an admin key; the key sent only grants read access")


async def _key(
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    header: Annotated[str | None, Depends(_header)],
) -> str | None:
    return bearer.credentials if bearer is not None else header


async def require_read(request: Request, key: Annotated[str | None, Depends(_key)]) -> None:
    """Dependency of the read routes (async: a sync dependency would cost a threadpool hop per request)."""
    request.app.state.api_keys.check(key, "read")


async def require_admin(request: Request, key: Annotated[str | None, Depends(_key)]) -> None:
    """Dependency of the admin routes."""
    request.app.state.api_keys.check(key, "admin")


def request_key(request: Request) -> str | None:
    """The API key a request sends (`Authorization: Bearer KEY`, else `X-API-Key: KEY`), read without a
    dependency (for routes that need no key but show more to admin keys)."""
    auth = request.headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("x-api-key") or None


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client is not None else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def shows_private(request: Request) -> bool:
    """Whether this request may see server details (paths, pids): an admin key, or no keys configured and a
    loopback client."""
    keys: ApiKeys = request.app.state.api_keys
    if not keys.read and not keys.admin:
        return _loopback(request)
    key = request_key(request)
    return key is not None and keys.role_of(key) == "admin"
