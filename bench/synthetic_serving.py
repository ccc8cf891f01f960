"""The seeded synthetic graph as a served store: loaded once into a data dir, with its questions.

Usage::

    python -m bench.synthetic_serving --size 100k --data-dir /tmp/s5-big-100k/krag \\
        [--queries 240] [--seed 42] [--no-defer-index] [--load-workers 2]

Loads the graph of :mod:`bench.synthetic` (``--size``: 10k = 10,000 entities / 30,000
relations, 100k = 100,000 / 300,000, 1m = 1,000,000 / 3,000,000) into database
``krag_bench_<size>`` of the data dir's embedded PostgreSQL, in scope ``bench``, with the
loader of ``bench.retrieval_latency`` (:func:`bench.retrieval_latency.prepare_database`: the
same database, tags and resumption, so a graph that L2 loaded is reused and the other way
round), and writes the natural questions of its queries (``BenchQuery.question``, the L2
queries of the same seed) to ``<data dir>/synthetic_<size>_seed<seed>_questions.jsonl``. A
second run with the same arguments finds both and loads nothing.

Prints the scope, the questions file and the environment a krag server needs to serve the
graph (``KRAG_DATABASE_URL`` / ``KRAG_DATABASE_OWNER_URL``: the application's and the owner's
roles on that database; ``KRAG_EMBEDDING_MODEL``: the graph's). ``bench.throughput
--synthetic 100k`` calls :func:`prepare` itself and starts its servers with that
environment.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bench import retrieval_latency as rl
from bench import synthetic
from storage.access import WHOLE_STORE, use_access
from storage.roles import prepare_embedded

SIZES = {"10k": (10_000, 30_000), "100k": (100_000, 300_000), "1m": (1_000_000, 3_000_000)}


@dataclass(frozen=True)
class ServedGraph:
    """A loaded synthetic graph: where it is, its scope and its questions."""

    label: str
    database: str
    scope: str
    questions_file: Path
    questions: list[str]
    env: dict[str, str]
    loaded: bool  # loaded by this call (False: found loaded)
    prewarm: dict[str, Any]


def questions_file(data_dir: Path, label: str, seed: int) -> Path:
    return Path(data_dir) / f"synthetic_{label}_seed{seed}_questions.jsonl"


def _stored_params(server_url: str, dbname: str) -> dict[str, Any] | None:
    """The ``bench_params`` a finished load tagged ``dbname`` with, or None."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                         (dbname,)).fetchone() is None:
            return None
    with psycopg.connect(rl.with_database(server_url, dbname), autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('krag_meta')").fetchone()[0] is None:
            return None
        row = conn.execute("SELECT value FROM krag_meta WHERE key = 'bench_params'").fetchone()
    return json.loads(row[0])["params"] if row else None


def _read_questions(path: Path, n: int) -> list[str] | None:
    if not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return [r["question"] for r in rows] if len(rows) == n else None


def _write_questions(path: Path, queries: list[synthetic.BenchQuery]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps({"question": q.question, "text": q.text, "kind": q.kind,
                                       "targets": list(q.targets)}) + "\n" for q in queries),
                   "utf-8")
    tmp.replace(path)


def serving_env(server_url: str, dbname: str) -> dict[str, str]:
    """What a krag process needs to serve ``dbname`` of the embedded server at ``server_url``
    as it serves its own store: the application's and the owner's roles on it."""
    app_url, owner_url = prepare_embedded(rl.with_database(server_url, dbname))
    return {"KRAG_DATABASE_URL": app_url, "KRAG_DATABASE_OWNER_URL": owner_url,
            "KRAG_EMBEDDING_MODEL": rl.EMBED_MODEL}


def prepare(server_url: str, data_dir: Path, entities: int, relations: int, *,
            queries: int = 240, seed: int = 42, defer_index: bool = True, workers: int = 2,
            prewarm: bool = True, log: Any = rl.log) -> ServedGraph:
    """Load the graph into ``krag_bench_<size>`` of ``server_url`` unless a finished load of
    the same parameters is there, and write its questions beside the data dir unless they
    are there; then (``prewarm``) read its tables and indexes into the page cache."""
    label = rl.size_label(entities)
    dbname = f"krag_bench_{label}"
    params = rl.load_params(entities, relations, seed)
    path = questions_file(data_dir, label, seed)
    asked = _read_questions(path, queries)
    loaded = False
    with use_access(WHOLE_STORE):
        if _stored_params(server_url, dbname) == params and asked is not None:
            log(f"{dbname} is loaded and {path.name} written: nothing to load")
            store = rl.open_store(rl.with_database(server_url, dbname))
        else:
            graph = synthetic.generate_graph(entities, relations, seed)
            log(f"generated graph in {graph.stats['generate_s']} s")
            store, load = rl.prepare_database(
                server_url, dbname, params, True, graph, log, defer_index=defer_index,
                workers=workers)
            loaded = not load["reused"]
            log(f"load: {load}")
            qs = synthetic.generate_queries(graph, queries)
            _write_questions(path, qs)
            asked = [q.question for q in qs]
        try:
            warmed = rl.prewarm(store) if prewarm else {"skipped": "prewarm=False"}
            with store.connect() as conn:  # the scope the product serves holds the graph
                n = conn.execute(text("SELECT count(*) FROM entities WHERE scope = :s"),
                                 {"s": synthetic.SCOPE}).scalar()
        finally:
            store.close()
    if n != entities:
        raise RuntimeError(f"{dbname} holds {n} entities in scope {synthetic.SCOPE!r}, "
                           f"not {entities}: drop the database and load again")
    return ServedGraph(label, dbname, synthetic.SCOPE, path, asked,
                       serving_env(server_url, dbname), loaded, warmed)


def prepare_size(data_dir: Path, size: str, **kwargs: Any) -> ServedGraph:
    """:func:`prepare` on the embedded server of ``data_dir`` (started or joined)."""
    from storage import start_embedded

    entities, relations = SIZES[size]
    return prepare(start_embedded(data_dir), data_dir, entities, relations, **kwargs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.synthetic_serving",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", choices=sorted(SIZES), default="100k")
    ap.add_argument("--data-dir", type=Path, required=True,
                    help="the embedded PostgreSQL's data dir (KRAG_DATA_DIR of the servers)")
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--no-defer-index", action="store_true",
                    help="keep the indexes during the load (slower; see retrieval_latency)")
    ap.add_argument("--load-workers", type=int, default=2)
    args = ap.parse_args(argv)
    if not 1 <= args.queries <= 100_000:
        print("error: --queries must be 1..100000", file=sys.stderr)
        return 2
    from storage import stop_embedded

    try:
        served = prepare_size(args.data_dir, args.size, queries=args.queries, seed=args.seed,
                              defer_index=not args.no_defer_index, workers=args.load_workers)
    except rl.LoaderBusy as busy:
        print(f"error: {busy}", file=sys.stderr)
        return 2
    finally:
        stop_embedded(args.data_dir)  # this process's handle; the server stops when unused
    print(json.dumps({"database": served.database, "scope": served.scope,
                      "questions_file": str(served.questions_file),
                      "questions": len(served.questions), "loaded_now": served.loaded,
                      "env": served.env}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
