"""How many entity names use each word, so fuzzy search can skip very common words.

Revision ID: 0003
Revises: 0002

A typo that lands near a word used by thousands of names ("data", "system") would pull all
those entities in as candidates; the count lets the fuzzy step leave such words to the LIKE
step. Counts grow on insert and are not decremented on removal (an upper bound is enough).
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE entity_words ADD COLUMN n integer NOT NULL DEFAULT 0")
    op.execute("""UPDATE entity_words w SET n = c.n
        FROM (SELECT unnest(name_words) AS word, count(*) AS n FROM entities GROUP BY 1) c
        WHERE c.word = w.word""")
