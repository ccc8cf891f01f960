"""Values read once per read-only request: the planner's row count of a table
(``pg_class.reltuples``, which chooses a search's plan shape), a scope's parent chain and
whether a scope chain's full-text statistics are fresh (a follow-up round's BM25 search does
not ask again: graph_flows.query.evidence._fulltext).

A question runs a dozen searches; before this each read these again (3.5 and 2.2 times a
question on MuSiQue). A read-only request (:func:`storage.replicas.read_only`) installs a
fresh memo (a :class:`~contextvars.ContextVar`, copied into the search pool's threads with
the rest of the request's context): it lives as long as the request and is never shared
with another request. Outside a read-only request (writes, migrations, ingest) nothing is
kept: every call reads again, so a write is never answered from a stale value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from threading import Lock
from typing import Any, TypeVar

T = TypeVar("T")

_memo: ContextVar[dict[Hashable, Any] | None] = ContextVar("krag_request_memo", default=None)
_LOCKS = object()  # the memo's own key for its per-key locks


@contextmanager
def request_memo() -> Iterator[dict[Hashable, Any]]:
    """A fresh memo for the request this block runs (see the module docstring)."""
    token = _memo.set({_LOCKS: ({}, Lock())})
    try:
        yield _memo.get() or {}
    finally:
        try:
            _memo.reset(token)
        except ValueError:  # ended in another context (a generator closed elsewhere)
            _memo.set(None)


def once(key: Hashable, read: Callable[[], T]) -> T:
    """``read()``, called once per request for ``key`` (every time outside a request).
    Two threads of one request asking at the same moment: the second waits for the first's
    read (a lock per key, so reads of other keys go on)."""
    memo = _memo.get()
    if memo is None:
        return read()
    if key in memo:
        return memo[key]  # type: ignore[no-any-return]
    locks, guard = memo[_LOCKS]
    with guard:
        lock = locks.setdefault(key, Lock())
    with lock:
        if key not in memo:
            memo[key] = read()
    value: T = memo[key]
    return value


def peek(key: Hashable) -> Any:
    """The value :func:`once` kept for ``key`` in this request, or None (not read yet, or
    no request): lets a caller skip opening a transaction just to be answered from it."""
    memo = _memo.get()
    return None if memo is None else memo.get(key)


def keep(key: Hashable, value: Any) -> None:
    """Keep ``value`` for ``key`` in this request (:func:`peek` answers it); nothing kept
    outside a request."""
    memo = _memo.get()
    if memo is not None:
        memo[key] = value
