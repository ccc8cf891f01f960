"""Full-text statistics of each scope's chunks, so BM25 needs no per-query pass over them.

Revision ID: 0008
Revises: 0007

``chunk_term_stats`` holds, per scope, how many chunks contain each lexeme (document
frequency); ``chunk_scope_stats`` the scope's chunk count and mean distinct-lexeme count, and
the value of the chunks table's insert+delete counter when they were computed (``version``).
Both are a cache that storage.fulltext rebuilds for a scope when it is missing, or when chunks
changed and it is older than a minute; nothing else writes them, and a scope without rows is
ranked with the exact per-query statistics instead.
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""CREATE TABLE chunk_term_stats (
        scope text NOT NULL, lexeme text NOT NULL, df integer NOT NULL,
        PRIMARY KEY (scope, lexeme))""")
    op.execute("""CREATE TABLE chunk_scope_stats (
        scope text PRIMARY KEY, chunks integer NOT NULL, avg_length double precision NOT NULL,
        version bigint NOT NULL, built_at timestamptz NOT NULL DEFAULT now())""")


def downgrade() -> None:
    op.execute("DROP TABLE chunk_scope_stats")
    op.execute("DROP TABLE chunk_term_stats")
