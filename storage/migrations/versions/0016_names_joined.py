"""Documents remember which version had its short forms joined into full names.

Revision ID: 0016
Revises: 0015

Once every chunk of a document is extracted, the indexing graph joins the document's short
forms ("Robeson") into the full names it introduced ("Paul Robeson") on the stored rows
(storage.merge). ``names_joined`` holds the ``content_hash`` of the version joined last, so
an ingest that stopped between its writes and the join finds the documents still to join
(``names_joined IS DISTINCT FROM content_hash``); a changed document is joined again.

``entities_aliases_gin`` finds the entities holding a name among their aliases: the query
graph links an entity other documents still call by a short name ("Robeson") to the
entities that name was joined into (storage.evidence), the bridge between documents the
join would otherwise remove.
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE documents ADD COLUMN IF NOT EXISTS names_joined text")
    op.execute("CREATE INDEX IF NOT EXISTS entities_aliases_gin ON entities USING gin (aliases)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS entities_aliases_gin")
    op.execute("ALTER TABLE documents DROP COLUMN IF EXISTS names_joined")
