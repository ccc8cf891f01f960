"""The two database roles: the owner (owns the tables, runs migrations) and the
application's role (neither owns the tables nor bypasses row-level security).

- :func:`prepare_embedded`: on the embedded server (we are its superuser) create both
  roles, the extensions, the schema grants, hand existing tables to the owner (stores
  created before migration 0014 were the superuser's) and mark the operators the searches
  filter with ``LEAKPROOF`` (see :data:`LEAKPROOF`); returns the app's and owner's URLs.
- :func:`grant_app`: run by the owner at every start: the app role's privileges on every
  table and sequence (also those added by later migrations), only SELECT on the schema version.
- :func:`bypass_reason`: why a connection would not be subject to the policies (``krag
  doctor``), or None.
"""

from __future__ import annotations

import contextlib
import logging

from sqlalchemy import Connection, Engine, make_url, text

log = logging.getLogger("krag.storage")

OWNER_ROLE = "krag_owner"
APP_ROLE = "krag_app"
VERSION_TABLE = "krag_schema_version"

# Operators whose functions must be LEAKPROOF for an index to serve them under row-level
# security: the planner otherwise evaluates them only after the policy's filter, so a trigram,
# ILIKE, array-overlap or full-text search scans the whole scope instead of its GIN index
# (measured, a trigram search in one of 50 scopes of 200k rows: 3 -> 29 ms). None of them
# raises errors that depend on the row's value, the property LEAKPROOF promises. Only a
# superuser may mark them.
LEAKPROOF = (
    "similarity_op(text, text)", "word_similarity_op(text, text)",
    "word_similarity_commutator_op(text, text)", "texticlike(text, text)",
    "textlike(text, text)", "arrayoverlap(anyarray, anyarray)",
    "arraycontains(anyarray, anyarray)", "ts_match_vq(tsvector, tsquery)",
)


def role_url(url: str, role: str) -> str:
    """``url`` connecting as ``role`` (no password: the embedded server trusts its socket)."""
    return make_url(url).set(username=role, password=None).render_as_string(
        hide_password=False)


def _create_role(conn: object, role: str) -> None:
    import psycopg

    exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
    if exists:
        conn.execute(f"ALTER ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE")
        return
    # another process (another database's advisory lock) may create it a moment before
    with contextlib.suppress(psycopg.errors.DuplicateObject, psycopg.errors.UniqueViolation):
        conn.execute(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE")


def prepare_embedded(superuser_url: str) -> tuple[str, str]:
    """Roles, extensions, grants and ownership on the embedded server's database of
    ``superuser_url``; returns ``(app_url, owner_url)``. Idempotent, cheap at every start."""
    import psycopg

    with psycopg.connect(superuser_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(1801582183)")  # concurrent starters
        try:
            for role in (OWNER_ROLE, APP_ROLE):
                _create_role(conn, role)
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {OWNER_ROLE}")
            conn.execute(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}")
            _hand_over(conn)
            for fn in LEAKPROOF:
                conn.execute(f"ALTER FUNCTION {fn} LEAKPROOF")
        finally:
            conn.execute("SELECT pg_advisory_unlock(1801582183)")
    return role_url(superuser_url, APP_ROLE), role_url(superuser_url, OWNER_ROLE)


def _hand_over(conn: object) -> None:
    """Tables, sequences and functions of schema public not owned by the owner role (a
    store created before 0014, by the superuser) become the owner's."""
    rows = conn.execute("""
        SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END, c.relname
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S')
          AND pg_get_userbyid(c.relowner) <> %s
          AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'e')
        """, (OWNER_ROLE,)).fetchall()
    for kind, name in rows:
        conn.execute(f'ALTER {kind} "{name}" OWNER TO {OWNER_ROLE}')
    if rows:
        log.info("embedded PostgreSQL: %d tables handed to role %s", len(rows), OWNER_ROLE)


def grant_app(conn: Connection, app_role: str) -> None:
    """The app role's privileges, granted by the owner: data statements on every table and
    sequence of schema public (and on those created later by the owner), only SELECT on the
    schema version table. No TRUNCATE (it would skip the policies), no DDL."""
    role = '"' + app_role.replace('"', '""') + '"'
    missing = conn.execute(text(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> :v "
        "AND NOT (has_table_privilege(:r, c.oid, 'SELECT') "
        "AND has_table_privilege(:r, c.oid, 'INSERT') "
        "AND has_table_privilege(:r, c.oid, 'UPDATE') "
        "AND has_table_privilege(:r, c.oid, 'DELETE'))"),
        {"v": VERSION_TABLE, "r": app_role}).scalar()
    if not missing:
        return
    conn.execute(text("SELECT pg_advisory_xact_lock(1801582184)"))  # concurrent starters
    for sql in (
        f"GRANT USAGE ON SCHEMA public TO {role}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {role}",
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {role}",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {VERSION_TABLE} FROM {role}",
    ):
        conn.execute(text(sql))


def current_role(engine: Engine) -> str:
    """The role ``engine`` connects as."""
    with engine.connect() as conn:
        return str(conn.execute(text("SELECT current_user")).scalar())


def bypass_reason(engine: Engine) -> str | None:
    """Why the policies do not bind ``engine``'s connections (superuser, BYPASSRLS, owner of
    a scoped table without FORCE), or None when they do."""
    with engine.connect() as conn:
        r = conn.execute(text(
            "SELECT current_user AS who, rolsuper, rolbypassrls FROM pg_roles "
            "WHERE rolname = current_user")).one()
        unforced = list(conn.execute(text(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relrowsecurity "
            "AND NOT c.relforcerowsecurity AND pg_has_role(c.relowner, 'USAGE') "
            "ORDER BY 1")).scalars())
        owned = conn.execute(text(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relrowsecurity "
            "AND pg_has_role(c.relowner, 'USAGE')")).scalar()
    if r.rolsuper:
        return f"role {r.who} is a superuser"
    if r.rolbypassrls:
        return f"role {r.who} has BYPASSRLS"
    if unforced:
        return f"role {r.who} owns {', '.join(unforced)} without FORCE ROW LEVEL SECURITY"
    if owned:
        return (f"role {r.who} owns the tables (the policies bind it, FORCE, but it could "
                "drop them)")
    return None
