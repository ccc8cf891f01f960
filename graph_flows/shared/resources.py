"""The resources the graphs use: settings, store, embedder, chat models.

Nodes never build vendor classes or connections themselves; they ask :func:`get_resources`.
A request installs its own with :func:`use_resources` (a store on a test database, a
scripted chat model, the UI session's store). The installed resources live in a
:class:`~contextvars.ContextVar`, so they belong to the request's context: concurrent
requests in other threads never see them (LangGraph copies the context into the threads
that run nodes; code that starts its own threads must pass the context on with
``contextvars.copy_context().run``). Without an installed request the process default,
built lazily from the environment on first use (nothing happens at import, so
``langgraph dev`` can import the graphs), is used.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from graph_flows.shared.settings import Settings, load_settings
from storage.access import installed

if TYPE_CHECKING:
    from graph_flows.shared.providers import ChatResolution

NO_LLM = "none"


@dataclass
class Resources:
    """What nodes need. ``chat_override``: a fixed chat model for every role (tests), or
    the string ``"none"`` to force no-LLM mode. Chat models resolved for this request are
    cached here (never ``None``: an unreachable model is re-probed after a short expiry)."""

    settings: Settings
    store: Any
    embeddings: Any
    chat_override: Any = None
    _chat_cache: dict[tuple[str, float | None, bool], Any] = field(default_factory=dict)
    _cached_for: Settings | None = None  # settings the cached models were built with

    def chat_resolution(
        self, spec: str | None = None, *, temperature: float | None = None,
        streaming: bool = True, timeout_s: float | None = None, quiet: bool = False,
    ) -> ChatResolution:
        """The chat model for ``spec`` (default: the configured chat model), or no-LLM mode
        with its notice. ``timeout_s`` (a request's remaining budget) builds a model whose
        client gives up after that long; such models are not cached."""
        from graph_flows.shared.providers import ChatResolution, resolve_chat_model

        spec = (spec or self.settings.chat_model).strip()
        if self.chat_override is not None:
            if self.chat_override == NO_LLM:
                return ChatResolution(None, spec, False, "Running in no-LLM mode.")
            return ChatResolution(self.chat_override, spec, True, None)
        key = (spec, temperature, streaming)
        if self._cached_for is not self.settings:  # settings replaced: build anew
            self._chat_cache, self._cached_for = {}, self.settings
        if timeout_s is None and key in self._chat_cache:
            return ChatResolution(self._chat_cache[key], spec, True, None)
        resolution = resolve_chat_model(self.settings, spec, temperature=temperature,
                                        streaming=streaming, timeout_s=timeout_s, quiet=quiet)
        if timeout_s is None and resolution.model is not None:
            self._chat_cache[key] = resolution.model
        return resolution

    def chat_model(
        self, spec: str | None = None, *, temperature: float | None = None,
        streaming: bool = True, timeout_s: float | None = None,
    ) -> Any:
        """A chat model for ``spec`` (default: the configured chat model) or None (no-LLM)."""
        return self.chat_resolution(spec, temperature=temperature, streaming=streaming,
                                    timeout_s=timeout_s).model


_lock = threading.Lock()
_default: Resources | None = None
_builder: int | None = None  # the thread building the default, holding _lock meanwhile
_current: ContextVar[Resources | None] = ContextVar("krag_resources", default=None)


def build_resources(settings: Settings | None = None) -> Resources:
    """Open the configured store and embedder."""
    from graph_flows.shared.providers import make_embeddings
    from graph_flows.shared.store import open_store

    settings = settings or load_settings()
    return Resources(settings=settings, store=open_store(settings),
                     embeddings=make_embeddings(settings))


def get_resources() -> Resources:
    """The resources installed for this request, or the process default (environment)."""
    global _default, _builder
    current = _current.get()
    if current is not None:
        return current
    with _lock:
        if _default is None:
            from graph_flows.shared.heap import freeze_loaded

            _builder = threading.get_ident()
            try:
                _default = build_resources()
                freeze_loaded()  # a serving process (LangGraph server, MCP): loading is done
            finally:
                _builder = None
        return _default


def building_here() -> bool:
    """Whether this thread is building the process default (and holds the lock
    :func:`close_default` waits for): a signal handler that interrupted the build must not
    wait for it."""
    return _builder == threading.get_ident()


def close_default() -> None:
    """Close the process default (if it was built) and release the embedded PostgreSQL
    handle it holds, so the server stops when no other process uses it. For a server's
    shutdown hook: a process killed by a signal never runs its atexit handlers."""
    global _default
    from storage import stop_embedded

    with _lock:
        default, _default = _default, None
    if default is None:
        return
    default.store.close()
    if not default.settings.database_url:
        stop_embedded(default.settings.data_dir)


@contextmanager
def use_resources(resources: Resources) -> Iterator[Resources]:
    """Install ``resources`` for the graph runs of this context (this request) until the
    block ends; other threads and requests keep theirs."""
    with installed(_current, resources):
        yield resources
