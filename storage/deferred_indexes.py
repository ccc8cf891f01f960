"""Secondary indexes dropped for a bulk load and built once after it.

A bulk load (the synthetic benchmark graph) writes millions of rows; every secondary index
(B-tree, GIN, HNSW) kept during it is updated row by row at random places, which at a
million entities no longer fits in memory. Dropped before and built after, each index is
one sort (or one HNSW build) with a large ``maintenance_work_mem`` and the parallel
maintenance workers. Primary keys and unique indexes stay: the upserts' ``ON CONFLICT``
and the foreign keys need them.

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


def saved(conn: Connection) -> dict[str, str]:
    """The definitions saved by :func:`drop` and not built yet (name -> CREATE INDEX)."""
    raw = conn.execute(text("SELECT value FROM krag_meta WHERE key = :k"),
                       {"k": META_KEY}).scalar()
    return json.loads(raw) if raw else {}


def drop(conn: Connection, tables: Sequence[str], also: dict[str, str] | None = None
         ) -> dict[str, str]:
    """Save, then drop, the secondary indexes of ``tables`` (and ``also``: more indexes,
    name -> definition, dropped when they exist); returns every definition saved."""
    found = dict(conn.execute(text(_SECONDARY), {"tables": list(tables)}).all())
    existing = set(conn.execute(text(
        "SELECT relname FROM pg_class WHERE relkind = 'i' AND relname = ANY(:n) "
        "AND relnamespace = to_regnamespace(current_schema())"),
        {"n": list(also or {})}).scalars())
    defs = {**saved(conn), **{k: v for k, v in (also or {}).items() if k in existing}, **found}
    conn.execute(text(
        "INSERT INTO krag_meta (key, value) VALUES (:k, :v) "
        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
        {"k": META_KEY, "v": json.dumps(defs)})
    for name in defs:
        conn.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
    return defs


def _order(name: str, ddl: str) -> int:
    """B-trees first (sorts), then GIN, then HNSW (the longest, one at a time)."""
    low = ddl.lower()
    return 2 if "using hnsw" in low else 1 if "using gin" in low else 0


def build(conn: Connection, *, maintenance_work_mem: str = "1GB", workers: int = 2,
          log: Callable[[str], None] | None = None) -> dict[str, float]:
    """Create each saved index that does not exist (``maintenance_work_mem`` and
    ``workers`` parallel maintenance workers for the builds), then forget the list;
    seconds per index. ``conn`` must be in autocommit mode (each build commits)."""
    say = log or (lambda _: None)
    defs = saved(conn)
    out: dict[str, float] = {}
    conn.execute(text("SELECT set_config('maintenance_work_mem', :m, false), "
                      "set_config('max_parallel_maintenance_workers', :w, false), "
                      "set_config('statement_timeout', '0', false)"),
                 {"m": maintenance_work_mem, "w": str(workers)})
    for name, ddl in sorted(defs.items(), key=lambda kv: (_order(*kv), kv[0])):
        start = time.perf_counter()
        conn.execute(text(ddl.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)))
        out[name] = round(time.perf_counter() - start, 2)
        say(f"index {name}: {out[name]:.1f} s")
    conn.execute(text("DELETE FROM krag_meta WHERE key = :k"), {"k": META_KEY})
    conn.execute(text("RESET maintenance_work_mem"))
    conn.execute(text("RESET max_parallel_maintenance_workers"))
    return out
