"""Bearer tokens for MCP over HTTP, each bound to one scope.

Revision ID: 0013
Revises: 0012

``krag token create`` stores a token's SHA-256 hash, never the token; the MCP server looks a
presented token up by its hash. A token is read-only or not, may expire, and is revoked by
setting ``revoked_at`` (the row stays, so ``krag token list`` shows it). This table is read
to authenticate before any scope is known: it is not scoped data.
"""

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE TABLE IF NOT EXISTS api_tokens (
            name text PRIMARY KEY,
            scope text NOT NULL,
            token_hash text NOT NULL UNIQUE,
            read_only boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now(),
            expires_at timestamptz,
            revoked_at timestamptz,
            last_used_at timestamptz,
            CHECK (length(name) BETWEEN 1 AND 64),
            CHECK (length(token_hash) = 64))""")


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS api_tokens")
