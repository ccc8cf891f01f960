"""Bearer tokens for MCP over HTTP (table ``api_tokens``, migration 0013): rows by name or
by the SHA-256 hash of the token. The token itself is never stored; hashing and the token
format live in :mod:`graph_flows.services.tokens`.

``api_tokens`` is not scoped data: it is read to authenticate a request before any scope is
known.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from storage.errors import InvalidInputError, NotFoundError
from storage.statements import text

_COLUMNS = ("t.name, t.scope, t.read_only, t.created_at, t.expires_at, t.revoked_at, "
            "t.last_used_at, EXISTS (SELECT 1 FROM scopes s WHERE s.name = t.scope)")


@dataclass(frozen=True, slots=True)
class TokenRow:
    """One stored token (without its hash). ``scope_exists``: the scope still has its row
    in ``scopes`` (``krag token create`` declares it)."""

    name: str
    scope: str
    read_only: bool
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    scope_exists: bool


def insert_token(conn: Connection, name: str, scope: str, token_hash: str, read_only: bool,
                 expires_at: datetime | None) -> TokenRow:
    """Store a token (its hash) and declare its scope as a root when not declared yet.

    A name already taken raises :class:`InvalidInputError` and writes nothing."""
    conn.execute(text("INSERT INTO scopes (name) VALUES (:s) ON CONFLICT DO NOTHING"),
                 {"s": scope})
    try:
        with conn.begin_nested():
            conn.execute(text(
                "INSERT INTO api_tokens (name, scope, token_hash, read_only, expires_at) "
                "VALUES (:n, :s, :h, :r, :e)"),
                {"n": name, "s": scope, "h": token_hash, "r": read_only, "e": expires_at})
    except IntegrityError:
        raise InvalidInputError(
            f"a token named {name!r} already exists; choose another --name or revoke it "
            "(`krag token list` shows them)") from None
    row = get_token(conn, name)
    assert row is not None
    return row


def get_token(conn: Connection, name: str) -> TokenRow | None:
    """The token named ``name``, or None."""
    row = conn.execute(text(f"SELECT {_COLUMNS} FROM api_tokens t WHERE t.name = :n"),
                       {"n": name}).one_or_none()
    return TokenRow(*row) if row is not None else None


def list_tokens(conn: Connection) -> list[TokenRow]:
    """Every stored token, revoked ones included, by name."""
    return [TokenRow(*r) for r in conn.execute(text(
        f"SELECT {_COLUMNS} FROM api_tokens t ORDER BY t.name")).all()]


def find_by_hash(conn: Connection, token_hash: str) -> tuple[TokenRow, str] | None:
    """(the token row, its stored hash) for ``token_hash``, or None (an index lookup)."""
    row = conn.execute(text(
        f"SELECT {_COLUMNS}, t.token_hash FROM api_tokens t WHERE t.token_hash = :h"),
        {"h": token_hash}).one_or_none()
    return (TokenRow(*row[:-1]), row[-1]) if row is not None else None


def revoke(conn: Connection, name: str) -> TokenRow:
    """Mark the token named ``name`` revoked (kept for `krag token list`); revoking twice
    keeps the first time. An unknown name raises :class:`NotFoundError`."""
    done = conn.execute(text(
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE name = :n"),
        {"n": name}).rowcount
    if not done:
        raise NotFoundError(f"no token named {name[:64]!r}; `krag token list` shows them")
    row = get_token(conn, name)
    assert row is not None
    return row


def touch(conn: Connection, name: str) -> None:
    """Record a use of the token (at most one write a minute per token)."""
    conn.execute(text(
        "UPDATE api_tokens SET last_used_at = now() WHERE name = :n AND "
        "(last_used_at IS NULL OR last_used_at < now() - interval '1 minute')"), {"n": name})


def active_count(conn: Connection) -> int:
    """Tokens that would be accepted: neither revoked nor expired, their scope declared."""
    return int(conn.execute(text(
        "SELECT count(*) FROM api_tokens t WHERE t.revoked_at IS NULL "
        "AND (t.expires_at IS NULL OR t.expires_at > now()) "
        "AND EXISTS (SELECT 1 FROM scopes s WHERE s.name = t.scope)")).scalar() or 0)
