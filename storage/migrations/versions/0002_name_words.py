"""Name words for fast typo-tolerant entity search.

Revision ID: 0002
Revises: 0001

Fuzzy matching a query against 100k names with ``name % q`` at threshold 0.1 makes nearly
every row a candidate. Instead each query word is matched by trigram similarity against the
(much smaller) set of distinct words used in entity names, and entities are then found through
a GIN index on their name's word array. See docs/bench/HISTORY.md, "First version: where it
lost, and the fix".
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""ALTER TABLE entities ADD COLUMN name_words text[]
        GENERATED ALWAYS AS (regexp_split_to_array(normalized_name, '\\s+')) STORED""")
    op.execute("CREATE INDEX entities_name_words_gin ON entities USING gin (name_words)")
    op.execute("CREATE TABLE entity_words (word text PRIMARY KEY)")
    op.execute("CREATE INDEX entity_words_trgm ON entity_words USING gin (word gin_trgm_ops)")
    op.execute("""INSERT INTO entity_words (word)
        SELECT DISTINCT unnest(name_words) FROM entities ON CONFLICT DO NOTHING""")
