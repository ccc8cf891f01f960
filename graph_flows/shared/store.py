"""Open the KnowledgeStore the settings describe (embedded Postgres when no URL is set)."""

from __future__ import annotations

from graph_flows.shared.settings import Settings
from storage import KnowledgeStore, start_embedded
from storage.replicas import split_urls
from storage.roles import prepare_embedded


def database_url(settings: Settings) -> str:
    """The configured URL, or the embedded cluster's superuser URL (started on demand)."""
    if settings.database_url:
        return settings.database_url
    return start_embedded(settings.data_dir)


def store_urls(settings: Settings) -> tuple[str, str]:
    """(application URL, owner URL): the configured ones (owner default: the application's),
    or the embedded cluster's two roles (:func:`storage.roles.prepare_embedded`)."""
    if settings.database_url:
        return settings.database_url, settings.database_owner_url or settings.database_url
    return prepare_embedded(start_embedded(settings.data_dir))


def open_store(settings: Settings, *, check_embedding: bool = True,
               probe_replicas: bool = True) -> KnowledgeStore:
    """Connect, migrate and check the embedding model of the configured store; with read
    replicas configured, probe each (``probe_replicas``): one warning line for each that
    cannot serve (down, lagging, not a replica of this primary), as at every state change."""
    from graph_flows.shared.providers import embedding_dimension

    app_url, owner_url = store_urls(settings)
    store = KnowledgeStore.open(
        app_url, owner_url=owner_url,
        embedding_model=settings.embedding_model,
        embedding_dim=embedding_dimension(settings),
        pool_size=settings.pool_size,
        check_embedding=check_embedding,
        read_urls=split_urls(settings.database_read_url),
        replica_max_lag_s=settings.replica_max_lag_s,
    )
    if probe_replicas:
        store.replica_report()
    return store
