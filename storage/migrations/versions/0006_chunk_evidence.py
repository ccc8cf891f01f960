"""Chunks as retrievable evidence: full-text search and an embedding per chunk.

Revision ID: 0006
Revises: 0005

``tsv`` is generated from the chunk text (``to_tsvector('english', text)``, GIN-indexed), so
writers need no change for full-text search. ``embedding`` has the dimension of the other
vector columns (read from ``entities.embedding``, so a store re-embedded to another model
gets a matching column; the configured dimension only for a store without that column) and
an HNSW cosine index like theirs (storage.vectors drops and rebuilds it for bulk loads).
Chunks already disappear with their document (``ON DELETE CASCADE``), and so do both columns.
Existing chunks get their vectors from ``krag reembed`` (storage.evidence counts the missing).
"""

from alembic import context, op
from sqlalchemy import text

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _dimension() -> int:
    """The dimension of ``entities.embedding`` (pgvector keeps it as the type modifier)."""
    typmod = op.get_bind().execute(text(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'entities'::regclass "
        "AND attname = 'embedding'")).scalar()
    if typmod and typmod > 0:
        return int(typmod)
    return int(context.config.attributes["embedding_dim"])


def upgrade() -> None:
    dim = _dimension()
    op.execute("ALTER TABLE chunks ADD COLUMN tsv tsvector "
               "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED")
    op.execute("CREATE INDEX chunks_tsv_gin ON chunks USING gin (tsv)")
    op.execute(f"ALTER TABLE chunks ADD COLUMN embedding vector({dim})")
    op.execute("CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw "
               "(embedding vector_cosine_ops)")
