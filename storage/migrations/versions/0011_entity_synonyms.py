"""Synonym edges stored: entity pairs whose name vectors are nearly the same.

Revision ID: 0011
Revises: 0010

The ``ppr`` recipe joins each seed entity to the entities whose name vectors are nearest
(HippoRAG 2's synonymy edges). Looked up at query time these were up to ten HNSW scans per
question, about 5 ms of Postgres CPU on the 100k-entity graph (docs/bench/HISTORY.md, issue
14, sixth session). ``entity_synonyms`` holds them, filled after each ingest batch and by
``krag reembed`` (storage.synonyms); ``entity_synonyms_computed`` lists the entities whose
are computed. An entity not listed (every entity of a store upgraded to this revision, a
batch still being written) is looked up as before, so nothing is lost before they are
filled.
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE IF NOT EXISTS entity_synonyms (
            entity_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            synonym_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            similarity double precision NOT NULL,
            PRIMARY KEY (entity_id, synonym_id),
            CHECK (entity_id <> synonym_id))""")
    op.execute("CREATE INDEX IF NOT EXISTS entity_synonyms_synonym_idx "
               "ON entity_synonyms (synonym_id)")
    # which entities' synonyms are computed: a table of its own, since marking the entity
    # rows would write a new version of each (and of each of its index entries, the HNSW
    # graph's included) right after the ingest wrote it
    op.execute("""
        CREATE TABLE IF NOT EXISTS entity_synonyms_computed (
            entity_id text PRIMARY KEY REFERENCES entities(id) ON DELETE CASCADE,
            computed_at timestamptz NOT NULL DEFAULT now())""")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS entity_synonyms_computed")
    op.execute("DROP TABLE IF EXISTS entity_synonyms")
