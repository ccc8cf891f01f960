"""Covering indexes for a seed entity's most confident relations.

Revision ID: 0009
Revises: 0008

The ``ppr`` recipe's neighbourhood (storage.evidence) takes each seed entity's most
confident valid relations, per side (as subject, as object). With ``(end, confidence DESC,
id)`` and the columns the filters read included, that is an index-only scan that stops after
the rows it needs, where the plain end indexes read every relation of a hub from the heap
and sorted them (MuSiQue, no-LLM graph: 4.2 / 7.6 / 20 ms -> 2.3 / 3.2 / 4.3 ms p50 / p90 /
max for the seeds' relations, the same rows).
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS relations_subject_top_idx ON relations "
               "(subject_id, confidence DESC, id) "
               "INCLUDE (object_id, scope, valid_at, invalid_at)")
    op.execute("CREATE INDEX IF NOT EXISTS relations_object_top_idx ON relations "
               "(object_id, confidence DESC, id) "
               "INCLUDE (subject_id, scope, valid_at, invalid_at)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS relations_object_top_idx")
    op.execute("DROP INDEX IF EXISTS relations_subject_top_idx")
