"""Hierarchical scopes: each scope may have a parent (platform > realm > team > project).

Revision ID: 0004
Revises: 0003

A query sees its own scope and its ancestors'; writes go only to its own scope. A scope with
no row here is a root with no parent (every existing scope keeps working unchanged).
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""CREATE TABLE scopes (
        name text PRIMARY KEY,
        parent text REFERENCES scopes(name) ON DELETE RESTRICT,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (parent IS NULL OR parent <> name))""")
    op.execute("CREATE INDEX scopes_parent_idx ON scopes (parent)")
