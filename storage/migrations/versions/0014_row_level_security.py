"""PostgreSQL enforces the scopes: row-level security on every table of scoped rows.

Revision ID: 0014
Revises: 0013

Every table holding a scope's rows gets a ``scope`` column (the six that had none take their
parent's: filled by this migration and, on insert, by a trigger reading the parent row) and
four policies reading the transaction-local settings :mod:`storage.access` sets at the start
of each transaction:

- SELECT: ``krag.all_scopes`` is ``on``, or ``scope`` is one of ``krag.read_scopes``;
- INSERT / UPDATE / DELETE: ``krag.all_scopes`` is ``on``, or ``scope`` is
  ``krag.write_scope`` (the BM25 statistics caches, rebuilt by whichever query finds them
  stale: any readable scope).

Each setting is read by a scalar subquery (an InitPlan: once per statement, not per row).
``FORCE ROW LEVEL SECURITY`` subjects the tables' owner to the policies too; only a
superuser or a ``BYPASSRLS`` role skips them. Nothing set: no row is visible or writable.
Global tables (``krag_meta``, ``scopes``, ``entity_words``) have no policies (docs/STORAGE.md
says what they reveal). Privileges for the application's role are granted at every start
(:mod:`storage.roles`), so tables added by later migrations are covered.
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# tables that had a scope column
SCOPED = ("documents", "entities", "relations", "chunk_term_stats", "chunk_scope_stats")
# table -> (parent table, foreign key column): their scope is their parent's
DERIVED = {
    "chunks": ("documents", "document_id"),
    "extraction_status": ("chunks", "chunk_id"),
    "entity_provenance": ("entities", "entity_id"),
    "relation_provenance": ("relations", "relation_id"),
    "entity_synonyms": ("entities", "entity_id"),
    "entity_synonyms_computed": ("entities", "entity_id"),
}
TABLES = SCOPED + tuple(DERIVED)
# caches derived from the chunks (BM25 statistics): a query rebuilds a stale one for every
# scope it reads, ancestors included, so they are writable wherever they are readable
CACHES = ("chunk_term_stats", "chunk_scope_stats")

# The hot path reads the link tables by index only (a neighbourhood counts and lists every
# seed entity's chunks); a policy reads ``scope``, so their indexes carry it, or every link
# would be a heap fetch (100k graph: the PageRank neighbourhood +15 ms per question).
COVERING = (
    ("entity_provenance_entity_scope_idx",
     "entity_provenance (entity_id, chunk_id) INCLUDE (scope)"),
    ("entity_provenance_chunk_scope_idx",
     "entity_provenance (chunk_id, entity_id) INCLUDE (scope)"),
    ("relation_provenance_relation_scope_idx",
     "relation_provenance (relation_id, chunk_id) INCLUDE (scope)"),
    ("relation_provenance_chunk_scope_idx",
     "relation_provenance (chunk_id, relation_id) INCLUDE (scope)"),
    ("entity_synonyms_computed_scope_idx", "entity_synonyms_computed (entity_id) INCLUDE (scope)"),
)
REPLACED = ("entity_provenance_chunk_idx", "relation_provenance_chunk_idx")

_FUNCTIONS = """
CREATE OR REPLACE FUNCTION krag_all_scopes() RETURNS boolean LANGUAGE sql STABLE
    AS $$ SELECT coalesce(current_setting('krag.all_scopes', true), '') = 'on' $$;
CREATE OR REPLACE FUNCTION krag_read_scopes() RETURNS text[] LANGUAGE sql STABLE
    AS $$ SELECT coalesce(string_to_array(
              nullif(current_setting('krag.read_scopes', true), ''), ','), '{}') $$;
CREATE OR REPLACE FUNCTION krag_write_scope() RETURNS text LANGUAGE sql STABLE
    AS $$ SELECT nullif(current_setting('krag.write_scope', true), '') $$;
"""
READ = "(SELECT krag_all_scopes()) OR scope = ANY (CAST((SELECT krag_read_scopes()) AS text[]))"
WRITE = "(SELECT krag_all_scopes()) OR scope = (SELECT krag_write_scope())"


def _derive_scope(table: str, parent: str, fk: str) -> None:
    op.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS scope text")
    op.execute(f"UPDATE {table} t SET scope = p.scope FROM {parent} p "
               f"WHERE p.id = t.{fk} AND t.scope IS DISTINCT FROM p.scope")
    op.execute(f"ALTER TABLE {table} ALTER COLUMN scope SET NOT NULL")
    op.execute(f"""
        CREATE OR REPLACE FUNCTION krag_fill_scope_{table}() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.scope IS NULL THEN
                SELECT p.scope INTO NEW.scope FROM {parent} p WHERE p.id = NEW.{fk};
            END IF;
            RETURN NEW;
        END $$""")
    op.execute(f"DROP TRIGGER IF EXISTS krag_fill_scope ON {table}")
    op.execute(f"CREATE TRIGGER krag_fill_scope BEFORE INSERT ON {table} "
               f"FOR EACH ROW EXECUTE FUNCTION krag_fill_scope_{table}()")


def _policies(table: str) -> None:
    write = READ if table in CACHES else WRITE
    op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY krag_read ON {table} FOR SELECT USING ({READ})")
    op.execute(f"CREATE POLICY krag_insert ON {table} FOR INSERT WITH CHECK ({write})")
    op.execute(f"CREATE POLICY krag_update ON {table} FOR UPDATE USING ({write}) "
               f"WITH CHECK ({write})")
    op.execute(f"CREATE POLICY krag_delete ON {table} FOR DELETE USING ({write})")


def upgrade() -> None:
    op.execute(_FUNCTIONS)
    for table, (parent, fk) in DERIVED.items():  # parents first: chunks before statuses
        _derive_scope(table, parent, fk)
    for table in TABLES:
        _policies(table)
    for name, on in COVERING:
        op.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {on}")
    for name in REPLACED:  # the covering ones lead with the same column
        op.execute(f"DROP INDEX IF EXISTS {name}")


def downgrade() -> None:
    op.execute("CREATE INDEX IF NOT EXISTS entity_provenance_chunk_idx "
               "ON entity_provenance (chunk_id)")
    op.execute("CREATE INDEX IF NOT EXISTS relation_provenance_chunk_idx "
               "ON relation_provenance (chunk_id)")
    for name, _ in COVERING:
        op.execute(f"DROP INDEX IF EXISTS {name}")
    for table in TABLES:
        for name in ("krag_read", "krag_insert", "krag_update", "krag_delete"):
            op.execute(f"DROP POLICY IF EXISTS {name} ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    for table in DERIVED:
        op.execute(f"DROP TRIGGER IF EXISTS krag_fill_scope ON {table}")
        op.execute(f"DROP FUNCTION IF EXISTS krag_fill_scope_{table}()")
        op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS scope")
    for fn in ("krag_all_scopes", "krag_read_scopes", "krag_write_scope"):
        op.execute(f"DROP FUNCTION IF EXISTS {fn}()")
