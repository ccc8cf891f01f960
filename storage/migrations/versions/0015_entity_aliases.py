"""Entity aliases: the other names a document used for an entity ("Codd", "ELAM").

Revision ID: 0015
Revises: 0014

Entity resolution (graph_flows.indexing.resolve, rules in graph_flows.indexing.aliases)
merges a document's short forms and spelling variants into the full name introduced first;
``aliases`` keeps those other names (each write appends the ones not stored yet; the
entity's own name never among them). ``alias_text`` is the same names joined by " | ",
generated, with a GIN trigram index so the query graph's name searches (``ILIKE``
substrings, trigram similarity) find an entity by any of its names. ``array_to_string`` is
only STABLE (it calls the element type's output function), so the generated column goes
through an IMMUTABLE wrapper for ``text[]``, whose output never changes.
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
        CREATE OR REPLACE FUNCTION krag_alias_text(names text[]) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURNS NULL ON NULL INPUT
        AS $$ SELECT array_to_string(names, ' | ') $$""")
    op.execute("ALTER TABLE entities ADD COLUMN IF NOT EXISTS aliases text[] NOT NULL "
               "DEFAULT '{}'")
    op.execute("ALTER TABLE entities ADD COLUMN IF NOT EXISTS alias_text text "
               "GENERATED ALWAYS AS (krag_alias_text(aliases)) STORED")
    op.execute("CREATE INDEX IF NOT EXISTS entities_alias_trgm ON entities "
               "USING gin (alias_text gin_trgm_ops)")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS entities_alias_trgm")
    op.execute("ALTER TABLE entities DROP COLUMN IF EXISTS alias_text")
    op.execute("ALTER TABLE entities DROP COLUMN IF EXISTS aliases")
    op.execute("DROP FUNCTION IF EXISTS krag_alias_text(text[])")
