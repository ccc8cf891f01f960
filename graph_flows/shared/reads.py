"""Read-only requests and client sessions, for the read replicas of :mod:`storage.replicas`.

Services whose requests only read (the query graph, ``kag_query``, ``recall``, the
retriever and tool, Explore, ``krag ask``, ``krag status``) run under :func:`read_only`:
a configured, healthy replica serves them. A surface keeps one :class:`ReadSession` per
client (an MCP session, a UI session) and installs it around each of the client's calls
(:func:`use_session`), so a client reads its own writes; a write made for the session in
another process (an ingest's workers) is noted with :func:`note_write`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from storage.replicas import ReadSession, note_write, read_only, use_session

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["ReadSession", "note_write", "read_only", "read_only_request", "use_session"]


def read_only_request(func: F) -> F:
    """Decorate a use case or graph node that only reads: it runs under :func:`read_only`
    (inside a request marked already, it keeps that request's choice of replica)."""

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        with read_only():
            return func(*args, **kwargs)

    return run  # type: ignore[return-value]
