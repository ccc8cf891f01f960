"""Bearer tokens for MCP over streamable HTTP, on the official SDK's resource-server hooks.

The SDK does the authentication: :class:`StoreTokenVerifier` is its ``TokenVerifier``
(passed to ``MCPServer(token_verifier=..., auth=AuthSettings(...))``), its
``BearerAuthBackend`` reads the ``Authorization`` header and calls the verifier, its
``RequireAuthMiddleware`` answers 401 to any request without a verified token, and its
``AuthContextMiddleware`` puts the verified ``AccessToken`` where the tools read it
(``get_access_token()``). The verified token carries the krag scope and the read-only flag
in its ``claims``.

One addition, :class:`AuthReasons`: the SDK's verifier interface can only return ``None``
for a refused token, and its middleware then always says "Authentication required". This
outer ASGI wrapper gives each request a place to note why (a missing or malformed header,
noted here; an unknown, expired or revoked token or a deleted scope, noted by the verifier)
and, when the SDK answers 401, puts that one line into the ``WWW-Authenticate``
``error_description`` and the JSON body. It accepts nothing itself, and refuses only a
request with more than one ``Authorization`` header (the SDK would verify the first; a proxy
in front might have judged another).

:func:`decide_http` is the policy: tokens required as soon as one is active; a non-loopback
address without any active token is refused; loopback without tokens stays open.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graph_flows.services.tokens import verify_token
from storage import KnowledgeStore
from ui.hosts import is_loopback

log = logging.getLogger(__name__)

SCOPE_CLAIM = "krag_scope"
READ_ONLY_CLAIM = "krag_read_only"
CREATE_HINT = "`krag token create --scope S` makes one"
AMBIGUOUS = "more than one Authorization header"
_reasons: ContextVar[list[str] | None] = ContextVar("krag_auth_reasons", default=None)


def _note(reason: str) -> None:
    """Remember why this request's token was refused (see :class:`AuthReasons`)."""
    found = _reasons.get()
    if found is not None:
        found.append(reason)


class StoreTokenVerifier:
    """The SDK's ``TokenVerifier`` backed by the ``api_tokens`` table."""

    def __init__(self, store: KnowledgeStore) -> None:
        self._store = store

    async def verify_token(self, token: str) -> AccessToken | None:
        """An ``AccessToken`` carrying the token's scope and read-only flag, or None (the
        reason noted for the 401)."""
        verdict = await anyio.to_thread.run_sync(verify_token, self._store, token)
        row = verdict.row
        if row is None:
            log.info("bearer token refused: %s", verdict.reason)
            _note(verdict.reason)
            return None
        return AccessToken(
            token="", client_id=row.name, subject=row.name,  # the secret is not kept
            scopes=["read"] if row.read_only else ["read", "write"],
            expires_at=int(row.expires_at.timestamp()) if row.expires_at else None,
            claims={SCOPE_CLAIM: row.scope, READ_ONLY_CLAIM: row.read_only})


def auth_settings() -> AuthSettings:
    """Resource-server settings: krag issues its own tokens (`krag token create`), so no
    authorization server or protected-resource metadata is published (the SDK requires an
    issuer URL all the same; it is not used without ``resource_server_url``)."""
    return AuthSettings(issuer_url="http://localhost", resource_server_url=None)


def header_problem(scope: Scope) -> str:
    """Why the request's ``Authorization`` header cannot carry a bearer token ('' if it can)."""
    values = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
    if not values:
        return f"missing Authorization header: send 'Authorization: Bearer <token>' " \
               f"({CREATE_HINT})"
    if len(values) > 1:
        return f"{AMBIGUOUS}: send exactly one"
    if values[0][:7].lower() != b"bearer ":
        return "malformed Authorization header: expected 'Bearer <token>'"
    return ""


def _one_line(reason: str) -> str:
    """``reason`` fit for a quoted header parameter: one line, no quotes or backslashes."""
    return " ".join(reason.split()).replace('"', "'").replace("\\", "/")[:300]


class AuthReasons:
    """Outer ASGI wrapper: the SDK's 401 answers say why (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        reasons = [r for r in (header_problem(scope),) if r]
        if reasons and reasons[0].startswith(AMBIGUOUS):
            # the SDK would read the first header; a proxy in front might have read another
            send_401 = _rewriting(send, reasons)
            await send_401({"type": "http.response.start", "status": 401, "headers": []})
            await send_401({"type": "http.response.body", "body": b""})
            return
        token = _reasons.set(reasons)
        try:
            await self.app(scope, receive, _rewriting(send, reasons))
        finally:
            _reasons.reset(token)


def _rewriting(send: Send, reasons: list[str]) -> Send:
    """``send`` with a 401's description and body replaced by the noted reason."""
    body: list[bytes] = []

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 401:
            reason = _one_line(reasons[0] if reasons else "bearer token refused")
            body.append(json.dumps({"error": "invalid_token",
                                    "error_description": reason}).encode())
            kept = [(k, v) for k, v in message.get("headers", [])
                    if k.lower() not in (b"www-authenticate", b"content-length")]
            kept += [(b"www-authenticate",
                      f'Bearer error="invalid_token", error_description="{reason}"'.encode()),
                     (b"content-length", str(len(body[0])).encode())]
            message = {**message, "headers": kept}
        elif message["type"] == "http.response.body" and body:
            message = {**message, "body": body[0], "more_body": False}
        await send(message)

    return wrapped


# -- policy ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class HttpPolicy:
    """How to serve MCP over HTTP: tokens required or not, a refusal or a notice (one line)."""

    require_tokens: bool
    refusal: str = ""
    notice: str = ""


def decide_http(host: str, port: int, active_tokens: bool) -> HttpPolicy:
    """Tokens required as soon as one is active; a non-loopback address with none is
    refused; loopback without tokens is open to local processes (said once)."""
    if active_tokens:
        return HttpPolicy(True)
    if not is_loopback(host):
        return HttpPolicy(False, refusal=(
            f"refusing to serve MCP on {host} without a token: anyone who can reach it "
            f"could read and write the graph; run `krag token create --scope S` first, "
            f"then send 'Authorization: Bearer <token>'"))
    return HttpPolicy(False, notice=(
        f"MCP over HTTP on {host}:{port} has no token: open to every local process "
        f"({CREATE_HINT} and then required)"))


def access_claims(token: AccessToken | None) -> tuple[str, bool] | None:
    """(scope, read_only) of a verified token, or None without one. A token without the
    scope claim (not ours) is refused rather than given the server's scope."""
    if token is None:
        return None
    claims: dict[str, Any] = token.claims or {}
    scope = claims.get(SCOPE_CLAIM)
    if not isinstance(scope, str) or not scope:
        raise PermissionError("the verified token names no krag scope")
    return scope, bool(claims.get(READ_ONLY_CLAIM, True))
