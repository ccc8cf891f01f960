"""Secondary indexes and foreign keys dropped for a bulk load and built once after it.

A bulk load (the synthetic benchmark graph) writes millions of rows; every secondary index
(B-tree, GIN, HNSW) kept during it is updated row by row at random places, which at a
million entities no longer fits in memory. Dropped before and built after, each index is
one sort (or one HNSW build) with a large ``maintenance_work_mem`` and the parallel
maintenance workers. Primary keys and unique indexes stay: the upserts' ``ON CONFLICT``
needs them. Foreign keys are checked row by row too (a lookup and a row lock on the
referenced row for every provenance link); added back after the load, each is checked
once for all rows (one join): a load that broke one fails there, as pg_restore's would.

The definitions are kept in ``krag_meta`` (key :data:`META_KEY`) before the first is
dropped, so a load killed in between still knows what to build: :func:`build` creates the
missing ones and forgets the saved list. Run as the tables' owner (DDL).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from sqlalchemy import Connection, text

META_KEY = "deferred_indexes"

_SECONDARY = """
SELECT i.relname AS name, pg_get_indexdef(i.oid) AS ddl
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
WHERE t.relname = ANY(:tables) AND t.relnamespace = to_regnamespace(current_schema())
  AND NOT x.indisunique AND NOT x.indisprimary
ORDER BY i.relname
"""


_FOREIGN_KEYS = """
SELECT c.conname AS name,
       format('ALTER TABLE %I ADD CONSTRAINT %I %s', t.relname, c.conname,
              pg_get_constraintdef(c.oid)) AS ddl,
       t.relname AS table_name
FROM pg_constraint c
JOIN pg_class t ON t.oid = c.conrelid
WHERE c.contype = 'f' AND t.relname = ANY(:tables)
  AND t.relnamespace = to_regnamespace(current_schema())
ORDER BY c.conname
"""


def saved(conn: Connection) -> dict[str, str]:
    """The definitions saved by :func:`drop` and not built yet (name -> CREATE INDEX)."""
    raw = conn.execute(text("SELECT value FROM krag_meta WHERE key = :k"),
                       {"k": META_KEY}).scalar()
    return json.loads(raw) if raw else {}


def drop(conn: Connection, tables: Sequence[str], also: dict[str, str] | None = None
         ) -> dict[str, str]:
    """Save, then drop, the secondary indexes and foreign keys of ``tables`` (and ``also``:
    more indexes, name -> definition, dropped when they exist); returns every definition
    saved (a foreign key's as its ``ALTER TABLE ... ADD CONSTRAINT``). When definitions are
    already saved, an interrupted load dropped them: nothing more is dropped (what its
    build had made again stays built)."""
    already = saved(conn)
    if already:
        return already
    found = dict(conn.execute(text(_SECONDARY), {"tables": list(tables)}).all())
    keys = {r.name: r.ddl for r in conn.execute(text(_FOREIGN_KEYS), {"tables": list(tables)})}
    tables_of = {r.name: r.table_name
                 for r in conn.execute(text(_FOREIGN_KEYS), {"tables": list(tables)})}
    existing = set(conn.execute(text(
        "SELECT relname FROM pg_class WHERE relkind = 'i' AND relname = ANY(:n) "
        "AND relnamespace = to_regnamespace(current_schema())"),
        {"n": list(also or {})}).scalars())
    defs = {**{k: v for k, v in (also or {}).items() if k in existing}, **found,
            **keys}
    conn.execute(text(
        "INSERT INTO krag_meta (key, value) VALUES (:k, :v) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
        {"k": META_KEY, "v": json.dumps(defs)})
    for name, table in tables_of.items():
        conn.execute(text(f'ALTER TABLE "{table}" DROP CONSTRAINT IF EXISTS "{name}"'))
    for name, ddl in defs.items():
        if not ddl.startswith("ALTER TABLE"):
            conn.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
    return defs


def _order(name: str, ddl: str) -> int:
    """B-trees first (sorts), then the foreign keys, GIN, HNSW (the longest)."""
    low = ddl.lower()
    if low.startswith("alter table"):
        return 1
    return 3 if "using hnsw" in low else 2 if "using gin" in low else 0


def _exists(conn: Connection, name: str, ddl: str) -> bool:
    if ddl.startswith("ALTER TABLE"):
        return bool(conn.execute(text(
            "SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = :n AND connamespace "
            "= to_regnamespace(current_schema()))"), {"n": name}).scalar())
    return conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar() is not None


def build(conn: Connection, *, maintenance_work_mem: str = "1GB", workers: int = 2,
          log: Callable[[str], None] | None = None) -> dict[str, float]:
    """Create each saved index (add each foreign key) that does not exist
    (``maintenance_work_mem`` and ``workers`` parallel maintenance workers for the builds),
    then forget the list; seconds per index or key. ``conn`` must be in autocommit mode
    (each build commits)."""
    say = log or (lambda _: None)
    defs = saved(conn)
    out: dict[str, float] = {}
    conn.execute(text("SELECT set_config('maintenance_work_mem', :m, false), "
                      "set_config('max_parallel_maintenance_workers', :w, false), "
                      "set_config('statement_timeout', '0', false)"),
                 {"m": maintenance_work_mem, "w": str(workers)})
    for name, ddl in sorted(defs.items(), key=lambda kv: (_order(*kv), kv[0])):
        start = time.perf_counter()
        if _exists(conn, name, ddl):
            continue
        conn.exec_driver_sql(ddl)
        out[name] = round(time.perf_counter() - start, 2)
        say(f"index {name}: {out[name]:.1f} s")
    conn.execute(text("DELETE FROM krag_meta WHERE key = :k"), {"k": META_KEY})
    conn.execute(text("RESET maintenance_work_mem"))
    conn.execute(text("RESET max_parallel_maintenance_workers"))
    return out
