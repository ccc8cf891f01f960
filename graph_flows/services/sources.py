"""Use cases on what is stored: status per source, the documents behind facts, removing a
source, re-embedding.

Plain data out, progress through callbacks: the front ends print tables and bars.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from graph_flows.shared import resources as runtime
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.scoped import in_scope, scope_access, whole_store_access
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, search
from storage.models import RemovalReport
from storage.stats import SourceStats

log = logging.getLogger(__name__)

SHOWN_FAILED_CHUNKS = 5


@dataclass
class StatusReport:
    """What `krag status` shows: embedding model, per-source rows, recent failed chunks."""

    embedding_model: str | None
    embedding_dim: int | None
    sources: list[SourceStats] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The JSON form of `krag status --json`."""
        return {"embedding_model": self.embedding_model, "embedding_dim": self.embedding_dim,
                "sources": [asdict(r) for r in self.sources]}


@read_only_request
def status(scope: str | None = None) -> StatusReport:
    """Per source of ``scope`` (all scopes when None): documents, chunks, graph, LLM usage."""
    store = runtime.get_resources().store
    # every scope (`krag status` without --scope): an admin's view of the whole store
    with whole_store_access() if scope is None else scope_access(scope, store):
        model, dim = store.embedding_info()
        return StatusReport(model, dim, store.source_stats(scope),
                            store.failed_chunks(scope, limit=SHOWN_FAILED_CHUNKS))


@read_only_request
@in_scope
def scope_counts(store: KnowledgeStore, scope: str) -> dict[str, int]:
    """Documents, chunks, entities and relations of ``scope`` itself."""
    return store.counts(scope)


@read_only_request
@in_scope
def fact_documents(store: KnowledgeStore, scope: str, fact_ids: list[str]
                   ) -> dict[str, list[dict[str, str]]]:
    """The documents each fact of ``scope`` (or its ancestors) was extracted from: fact id
    -> [{source, uri, title}]."""
    with store.connect() as conn:
        return search.fact_sources(conn, fact_ids)


def remove(source: str, scope: str | None = None) -> RemovalReport:
    """Delete a source of ``scope`` (default: the configured one) and what only it supported;
    an unknown source raises :class:`storage.NotFoundError`."""
    res = runtime.get_resources()
    scope = scope or res.settings.scope
    with scope_access(scope, res.store):  # a source of the scope itself (its write scope)
        return res.store.remove_source(scope, source)


@dataclass
class ReembedPlan:
    """The switch a re-embed makes: stored (model, dim) and configured (model, dim)."""

    stored: tuple[str | None, int | None]
    target: tuple[str, int]

    @property
    def switching(self) -> bool:
        return self.stored != self.target


@whole_store_access()  # every scope's vectors
def reembed(
    settings: Settings, *, batch_size: int = 64,
    on_plan: Callable[[ReembedPlan], Any] | None = None,
    on_progress: Callable[[int, int], Any] | None = None,
) -> dict[str, int]:
    """Re-embed every entity and relation with the configured embedding model (resetting
    the vector columns first when the model or dimension changes); rows done per table."""
    from graph_flows.indexing.embed import reembed_all
    from graph_flows.shared.providers import embedding_dimension, make_embeddings
    from graph_flows.shared.store import open_store

    store = open_store(settings, check_embedding=False)
    try:
        embeddings = make_embeddings(settings)
        dim = embedding_dimension(settings, embeddings)
        plan = ReembedPlan(store.embedding_info(), (settings.embedding_model, dim))
        if on_plan:
            on_plan(plan)
        if plan.switching:
            log.info("switching stored vectors from %s to %s", plan.stored, plan.target)
            store.reset_embeddings(settings.embedding_model, dim)  # whole store, as owner
        return reembed_all(store, embeddings, batch_size=batch_size, on_progress=on_progress)
    finally:
        store.close()
