"""The entity-name trigram index without a pending list (``fastupdate = off``).

Revision ID: 0017
Revises: 0016

Every ingest batch's resolution reads ``entities_name_trgm`` (the near-duplicate
candidates of each new name, storage.resolution.similar_entities) right after the batch
before it inserted its names. With GIN's fast update those inserts wait in the index's
pending list (up to ``gin_pending_list_limit``, 4 MB) and every search scans the whole list
besides the tree: on a full MuSiQue store the batch's candidate statement took 0.86-0.97 s
with the list as the ingest left it and 0.30-0.35 s after ``gin_clean_pending_list``
(HISTORY: ingest_17.md). Without it each name's trigrams go into the tree as it is
inserted; searches read the tree only. The other GIN indexes keep their pending list: no
statement of the ingest reads them.
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # flush what waits in the list first: with fastupdate off it would stay there
    op.execute("SELECT gin_clean_pending_list('entities_name_trgm'::regclass)")
    op.execute("ALTER INDEX entities_name_trgm SET (fastupdate = off)")


def downgrade() -> None:
    op.execute("ALTER INDEX entities_name_trgm RESET (fastupdate)")
