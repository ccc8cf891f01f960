"""The relations' nearest-fact index over the vectors' sign bits instead of the vectors.

Revision ID: 0018
Revises: 0017

``storage.search.fact_vector`` (the question's nearest facts, on every retrieval) read the
HNSW index over the full relation vectors: 4 bytes a dimension, 5.9 GB at 3,000,000 facts,
and a search with ``ef_search`` 100 touches ~1,900 of its pages at random; on a cold page
cache that was ~1,570 reads and ~400 ms a question (HISTORY: million_cold.md). This index
holds each vector's sign bits (``binary_quantize``: 1 bit a dimension, Hamming distance),
so an element is ~1/32 of the bytes and the whole index stays small enough to be cached;
the search asks it for 10x the facts wanted and re-ranks those by exact cosine on the
stored vectors (pgvector's documented pattern for binary quantisation). The full-vector
index is then read by no statement, so it goes (an insert no longer updates it).
"""

from alembic import context, op
from sqlalchemy import text

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _dimension() -> int:
    """The dimension of ``relations.embedding`` (pgvector keeps it as the type modifier)."""
    typmod = op.get_bind().execute(text(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'relations'::regclass "
        "AND attname = 'embedding'")).scalar()
    if typmod and typmod > 0:
        return int(typmod)
    return int(context.config.attributes["embedding_dim"])


def upgrade() -> None:
    # IF NOT EXISTS: a bulk loader (bench/synthetic.py) may have built it already
    op.execute("CREATE INDEX IF NOT EXISTS relations_embedding_bq_hnsw ON relations "
               f"USING hnsw ((binary_quantize(embedding)::bit({_dimension()})) bit_hamming_ops)")
    op.execute("DROP INDEX IF EXISTS relations_embedding_hnsw")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS relations_embedding_hnsw ON relations "
               "USING hnsw (embedding vector_cosine_ops)")
    op.execute("DROP INDEX IF EXISTS relations_embedding_bq_hnsw")
