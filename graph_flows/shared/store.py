"""Open the KnowledgeStore the settings describe (embedded Postgres when no URL is set)."""

from __future__ import annotations

from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, start_embedded


def database_url(settings: Settings) -> str:
    """The configured URL, or the embedded cluster's (started on demand) under data_dir."""
    if settings.database_url:
        return settings.database_url
    return start_embedded(settings.data_dir)


def open_store(settings: Settings, *, check_embedding: bool = True) -> KnowledgeStore:
    """Connect, migrate and check the embedding model of the configured store."""
    from graph_flows.shared.providers import embedding_dimension

    return KnowledgeStore.open(
        database_url(settings),
        embedding_model=settings.embedding_model,
        embedding_dim=embedding_dimension(settings),
        pool_size=settings.pool_size,
        check_embedding=check_embedding,
    )
