"""Single-valued attributes and why a fact stopped being valid.

Revision ID: 0005
Revises: 0004

``attribute`` names the single-valued property a fact states for its subject ("ceo",
"headquarters"); two currently valid facts with the same scope, subject and attribute but
different objects contradict each other, and the older one is closed (storage.supersede).
``invalidated_by`` / ``invalid_reason`` keep the history: which fact superseded this one, or
the reason a caller gave when correcting it. Nothing is ever deleted for being out of date.
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE relations ADD COLUMN attribute text")
    op.execute("ALTER TABLE relations ADD COLUMN invalidated_by text")
    op.execute("ALTER TABLE relations ADD COLUMN invalid_reason text")
    op.execute("""CREATE INDEX relations_attribute_open_idx
        ON relations (scope, subject_id, attribute)
        WHERE attribute IS NOT NULL AND invalid_at IS NULL""")
    op.execute("CREATE INDEX relations_invalidated_by_idx ON relations (invalidated_by) "
               "WHERE invalidated_by IS NOT NULL")
