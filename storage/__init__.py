"""Storage of the knowledge graph in PostgreSQL (pgvector + pg_trgm).

The public surface is small on purpose:

- :class:`KnowledgeStore` (``storage.repository``): open/migrate, documents and chunks,
  the extraction work queue, graph upserts, removal, reads, counts, server info.
- records in ``storage.models``; deterministic ids in ``storage.ids``;
- typed errors in ``storage.errors``;
- :func:`start_embedded` (``storage.embedded``) for the embedded cluster.
"""

from storage.embedded import start_embedded, stop_embedded
from storage.errors import (
    DatabaseUnavailableError,
    EmbeddedPostgresError,
    EmbeddingDimensionMismatchError,
    ExtensionMissingError,
    InvalidInputError,
    NotFoundError,
    StorageError,
)
from storage.models import (
    ChunkOutcome,
    ChunkWork,
    DocumentIn,
    DocumentSync,
    Entity,
    EntityIn,
    Fact,
    RelationIn,
    RemovalReport,
)
from storage.repository import KnowledgeStore, ServerInfo

__all__ = [
    "ChunkOutcome", "ChunkWork", "DatabaseUnavailableError", "DocumentIn", "DocumentSync",
    "EmbeddedPostgresError", "EmbeddingDimensionMismatchError", "Entity", "EntityIn",
    "ExtensionMissingError", "Fact", "InvalidInputError", "KnowledgeStore", "NotFoundError",
    "RelationIn", "RemovalReport", "ServerInfo", "StorageError", "start_embedded",
    "stop_embedded",
]
