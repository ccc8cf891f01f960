"""Instruction-like spans of each chunk, found at ingest and withheld from every reader.

Revision ID: 0012
Revises: 0011

A chunk's passage text reaches answer models, ``--json``, MCP clients and the UI. The spans
of it that read as instructions aimed at a model (graph_flows.shared.untrusted) are stored
with the chunk as a flat ``[start1, end1, start2, end2, ...]`` list of character offsets:
``{}`` for a clean chunk, NULL for one not scanned yet (every chunk of a store upgraded to
this revision). The query scans a NULL chunk itself before showing it, so nothing is shown
unscanned; ``krag ingest`` (for its scope) and ``krag reembed`` (for the store) fill them.
"""

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE chunks ADD COLUMN IF NOT EXISTS injection_spans integer[]")
    op.execute("CREATE INDEX IF NOT EXISTS chunks_unscanned_idx ON chunks (id) "
               "WHERE injection_spans IS NULL")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS chunks_unscanned_idx")
    op.execute("ALTER TABLE chunks DROP COLUMN IF EXISTS injection_spans")
