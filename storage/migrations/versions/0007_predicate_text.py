"""The predicate as stated: the words of the source or caller next to the relation type.

Revision ID: 0007
Revises: 0006

``predicate`` stays the normalised relation type (``uses``, ``part_of`` ... ``relates_to``),
the label searches and the walk filter on. ``predicate_text`` keeps what the text, the model
or the MCP caller said ("acquired", "was founded by"); NULL when nothing more was said than
the type (rows written before this revision, pattern facts, ``relates_to`` pairs). The id of
a ``relates_to`` fact includes its text (storage.ids.relation_id), so two statements between
the same entities stay two facts; ids of other facts and of facts without a text are
unchanged.
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE relations ADD COLUMN predicate_text text")


def downgrade() -> None:
    op.execute("ALTER TABLE relations DROP COLUMN predicate_text")
