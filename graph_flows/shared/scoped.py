"""Database access of a request in one scope (:mod:`storage.access`), for the services
and the graphs' nodes.

The services install it for the scope of the request (:func:`scope_access`) before
touching the store. A graph's node runs in a copy of its caller's context: a graph invoked
by a service inherits the service's access; one invoked directly (LangGraph Studio,
``flow.invoke``) gets its state's scope's access from :func:`scoped_node` around each node.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from graph_flows.shared.control_chars import control_message
from graph_flows.shared.resources import get_resources
from storage.access import WHOLE_STORE, Access, current, use_access
from storage.errors import InvalidInputError
from storage.scopes import check_name


def check_scope(scope: str) -> str:
    """``scope`` when it is a valid scope name, else a one-line InvalidInputError (a control
    character said as every surface says it: graph_flows.shared.control_chars)."""
    if isinstance(scope, str) and (message := control_message("scope", scope)):
        raise InvalidInputError(message)
    return check_name(scope)


@contextmanager
def scope_access(scope: str, store: Any = None) -> Iterator[Access]:
    """Install the access of a request in ``scope`` (read it and its ancestors, write it)
    for the block; a bad scope name is a one-line InvalidInputError before anything runs.
    An access the caller installed already for this scope (a service around a graph run),
    or whole-store access an admin operation chose explicitly, is kept."""
    check_scope(scope)
    current_access = current()
    if current_access is not None and (
            current_access.whole_store or current_access.write_scope == scope):
        yield current_access
        return
    store = store if store is not None else get_resources().store
    with use_access(store.access_for(scope)) as installed:
        yield installed


@contextmanager
def whole_store_access() -> Iterator[Access]:
    """Whole-store access, for the admin operations that span every scope (status over all
    scopes, removal, re-embedding, workers): chosen explicitly, never a default."""
    with use_access(WHOLE_STORE) as installed:
        yield installed


def scoped_node(scope_of: Callable[[dict[str, Any]], str | None]
                ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a graph node: it runs with the access of the scope ``scope_of(state)``
    names (default: the configured scope)."""
    def decorate(node: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(node)
        def run(state: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            scope = scope_of(state) or get_resources().settings.scope
            with scope_access(scope):
                return node(state, *args, **kwargs)
        return run
    return decorate


def in_scope(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a service function: it runs with the access of its ``scope`` argument (None
    or absent: the configured scope), on its ``store`` argument when it has one."""
    signature = inspect.signature(func)

    @functools.wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind_partial(*args, **kwargs).arguments
        scope = bound.get("scope") or get_resources().settings.scope
        with scope_access(scope, bound.get("store")):
            return func(*args, **kwargs)
    return run
