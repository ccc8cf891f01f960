"""Scope hierarchy: parent chains, read visibility (own scope + ancestors), no cycles."""

from __future__ import annotations

from sqlalchemy import Connection

from storage.errors import InvalidInputError
from storage.request_memo import once, peek
from storage.statements import fetch, text

MAX_DEPTH = 16
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/")

_CHAIN = """
WITH RECURSIVE chain(name, parent, depth) AS (
    SELECT name, parent, 0 FROM scopes WHERE name = :scope
    UNION ALL
    SELECT s.name, s.parent, c.depth + 1 FROM scopes s JOIN chain c ON s.name = c.parent
    WHERE c.depth < :max_depth
)
SELECT name FROM chain ORDER BY depth
"""


def check_name(scope: str) -> str:
    """A scope name: 1-100 characters of letters, digits and ``-_.:/``."""
    if not scope or len(scope) > 100 or not set(scope) <= _NAME_CHARS:
        raise InvalidInputError(
            f"invalid scope name {scope[:40]!r}: use 1-100 letters, digits or -_.:/")
    return scope


def scope_chain(conn: Connection, scope: str) -> list[str]:
    """``scope`` followed by its ancestors, nearest first (just ``[scope]`` for a root); read
    once per read-only request (:mod:`storage.request_memo`)."""
    return list(once(("scope_chain", scope), lambda: _read_chain(conn, scope)))


def known_chain(scope: str) -> list[str] | None:
    """``scope``'s chain when this request read it already (no statement), else None."""
    chain = peek(("scope_chain", scope))
    return None if chain is None else list(chain)


def _read_chain(conn: Connection, scope: str) -> tuple[str, ...]:
    chain = tuple(r[0] for r in fetch(conn, _CHAIN, {"scope": scope, "max_depth": MAX_DEPTH}))
    return chain or (scope,)


def set_parent(conn: Connection, scope: str, parent: str | None) -> list[str]:
    """Declare ``scope`` (child of ``parent``, or a root); refuse cycles. Returns the chain."""
    check_name(scope)
    if parent is not None:
        check_name(parent)
        if scope in scope_chain(conn, parent):
            raise InvalidInputError(
                f"scope {parent!r} descends from {scope!r}: a parent link would make a cycle")
        conn.execute(text("INSERT INTO scopes (name) VALUES (:p) ON CONFLICT DO NOTHING"),
                     {"p": parent})
    conn.execute(text(
        "INSERT INTO scopes (name, parent) VALUES (:s, :p) "
        "ON CONFLICT (name) DO UPDATE SET parent = EXCLUDED.parent"), {"s": scope, "p": parent})
    chain = scope_chain(conn, scope)
    if len(chain) > MAX_DEPTH:
        raise InvalidInputError(f"scope chains are limited to {MAX_DEPTH} levels")
    return chain


def subtree(conn: Connection, scope: str) -> list[str]:
    """``scope`` and every scope descending from it (declared parents), ``scope`` first."""
    rows = conn.execute(text("""
        WITH RECURSIVE down(name, depth) AS (
            SELECT CAST(:scope AS text), 0
            UNION
            SELECT s.name, d.depth + 1 FROM scopes s JOIN down d ON s.parent = d.name
            WHERE d.depth < :max_depth)
        SELECT name FROM down ORDER BY depth, name"""),
        {"scope": scope, "max_depth": MAX_DEPTH}).scalars()
    return list(dict.fromkeys(rows))


def list_scopes(conn: Connection) -> list[tuple[str, str | None]]:
    """Every declared scope and every scope holding documents, with its parent."""
    return [tuple(r) for r in conn.execute(text("""
        SELECT name, parent FROM scopes
        UNION SELECT DISTINCT d.scope, NULL FROM documents d
        WHERE NOT EXISTS (SELECT 1 FROM scopes s WHERE s.name = d.scope)
        ORDER BY 1""")).all()]


def held_scopes(conn: Connection) -> list[str]:
    """Every scope holding entities, sorted."""
    return list(conn.execute(text(
        "SELECT DISTINCT scope FROM entities ORDER BY scope")).scalars())
