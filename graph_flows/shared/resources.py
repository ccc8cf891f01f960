"""Process-wide resources the graphs use: settings, store, embedder, chat models.

Nodes never build vendor classes or connections themselves; they ask :func:`get_resources`.
Built lazily on first use (nothing happens at import, so ``langgraph dev`` can import the
graphs), cached per process. Tests and embedding applications install their own with
:func:`use_resources` (a store on a test database, a scripted chat model).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from graph_flows.shared.settings import Settings, load_settings

NO_LLM = "none"


@dataclass
class Resources:
    """What nodes need. ``chat_override``: a fixed chat model for every role (tests), or
    the string ``"none"`` to force no-LLM mode."""

    settings: Settings
    store: Any
    embeddings: Any
    chat_override: Any = None
    _chat_cache: dict[tuple[str, float | None], Any] = field(default_factory=dict)

    def chat_model(self, spec: str | None = None, *, temperature: float | None = None) -> Any:
        """A chat model for ``spec`` (default: the configured chat model) or None (no-LLM)."""
        if self.chat_override is not None:
            return None if self.chat_override == NO_LLM else self.chat_override
        from graph_flows.shared.providers import resolve_chat_model

        spec = spec or self.settings.chat_model
        key = (spec, temperature)
        if key not in self._chat_cache:
            self._chat_cache[key] = resolve_chat_model(
                self.settings, spec, temperature=temperature).model
        return self._chat_cache[key]


_lock = threading.Lock()
_default: Resources | None = None
_override: Resources | None = None


def build_resources(settings: Settings | None = None) -> Resources:
    """Open the configured store and embedder."""
    from graph_flows.shared.providers import make_embeddings
    from graph_flows.shared.store import open_store

    settings = settings or load_settings()
    return Resources(settings=settings, store=open_store(settings),
                     embeddings=make_embeddings(settings))


def get_resources() -> Resources:
    """The installed resources, or the process default built from the environment."""
    global _default
    if _override is not None:
        return _override
    with _lock:
        if _default is None:
            _default = build_resources()
        return _default


@contextmanager
def use_resources(resources: Resources) -> Iterator[Resources]:
    """Install ``resources`` for every graph run in this process until the block ends."""
    global _override
    previous, _override = _override, resources
    try:
        yield resources
    finally:
        _override = previous
