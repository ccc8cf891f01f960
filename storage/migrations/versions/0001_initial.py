"""Initial knowledge-graph schema: documents, chunks, status, entities, relations, provenance.

Revision ID: 0001
Revises:
"""

from alembic import context, op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_TIMESTAMPS = """
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()"""


def upgrade() -> None:
    dim = int(context.config.attributes["embedding_dim"])
    statements = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE TABLE krag_meta (key text PRIMARY KEY, value text NOT NULL)",
        f"""CREATE TABLE documents (
            id text PRIMARY KEY,
            scope text NOT NULL,
            source text NOT NULL,
            uri text NOT NULL,
            title text,
            content_hash text NOT NULL,
            metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,{_TIMESTAMPS},
            UNIQUE (scope, source, uri))""",
        f"""CREATE TABLE chunks (
            id text PRIMARY KEY,
            document_id text NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal integer NOT NULL,
            text text NOT NULL,
            content_hash text NOT NULL,{_TIMESTAMPS})""",
        "CREATE INDEX chunks_document_idx ON chunks (document_id)",
        f"""CREATE TABLE extraction_status (
            chunk_id text PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
            status text NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'extracting', 'completed', 'failed')),
            attempts integer NOT NULL DEFAULT 0,
            entity_count integer NOT NULL DEFAULT 0,
            relation_count integer NOT NULL DEFAULT 0,
            dropped jsonb NOT NULL DEFAULT '{{}}'::jsonb,
            llm_calls integer NOT NULL DEFAULT 0,
            input_tokens integer NOT NULL DEFAULT 0,
            output_tokens integer NOT NULL DEFAULT 0,
            error text,
            worker text,
            claimed_at timestamptz,{_TIMESTAMPS})""",
        "CREATE INDEX extraction_status_status_idx ON extraction_status (status)",
        f"""CREATE TABLE entities (
            id text PRIMARY KEY,
            scope text NOT NULL,
            name text NOT NULL,
            normalized_name text NOT NULL,
            type text NOT NULL,
            summary text NOT NULL DEFAULT '',
            confidence real NOT NULL DEFAULT 1.0,
            embedding vector({dim}),{_TIMESTAMPS})""",
        "CREATE INDEX entities_scope_name_idx ON entities (scope, normalized_name)",
        "CREATE INDEX entities_name_trgm ON entities USING gin (name gin_trgm_ops)",
        "CREATE INDEX entities_summary_trgm ON entities USING gin (summary gin_trgm_ops)",
        "CREATE INDEX entities_embedding_hnsw ON entities USING hnsw "
        "(embedding vector_cosine_ops)",
        """CREATE TABLE entity_provenance (
            entity_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            chunk_id text NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            PRIMARY KEY (entity_id, chunk_id))""",
        "CREATE INDEX entity_provenance_chunk_idx ON entity_provenance (chunk_id)",
        f"""CREATE TABLE relations (
            id text PRIMARY KEY,
            scope text NOT NULL,
            subject_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            object_id text NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
            predicate text NOT NULL,
            fact text NOT NULL,
            confidence real NOT NULL DEFAULT 1.0,
            embedding vector({dim}),
            valid_at timestamptz,
            invalid_at timestamptz,{_TIMESTAMPS})""",
        "CREATE INDEX relations_subject_idx ON relations (subject_id)",
        "CREATE INDEX relations_object_idx ON relations (object_id)",
        "CREATE INDEX relations_scope_idx ON relations (scope)",
        "CREATE INDEX relations_fact_trgm ON relations USING gin (fact gin_trgm_ops)",
        "CREATE INDEX relations_predicate_trgm ON relations USING gin (predicate gin_trgm_ops)",
        "CREATE INDEX relations_embedding_hnsw ON relations USING hnsw "
        "(embedding vector_cosine_ops)",
        """CREATE TABLE relation_provenance (
            relation_id text NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
            chunk_id text NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
            PRIMARY KEY (relation_id, chunk_id))""",
        "CREATE INDEX relation_provenance_chunk_idx ON relation_provenance (chunk_id)",
    ]
    for sql in statements:
        op.execute(sql)
