"""Load: N concurrent query clients against one Postgres while an ingest runs.

Usage::

    python -m bench.load_queries --clients 50 --seconds 60 [--pool-size 10] \\
        [--database-url URL | --data-dir DIR]

Without ``--database-url`` it starts the embedded PostgreSQL in its own data dir (default
``/tmp/krag-load``) and uses a fresh database ``krag_load``. Every client is a thread calling
``query_flow.invoke`` in no-LLM mode (real MiniLM query embeddings for the vector fallback)
on one :class:`~storage.KnowledgeStore` (bounded pools: ``pool_size`` + the same overflow,
for the main engine and for the search engine). Meanwhile a thread ingests the sample corpus
(no-LLM mode) again and again under new source names, so writes, claims and upserts run
against the same database the whole time. A sampler counts the server's connections to the
database (``pg_stat_activity``) every 0.2 s.

Reports errors (exceptions: must be 0), degraded answers (``errors`` in the output, e.g. a
search method cut by the request budget), latency p50/p95/p99/max, throughput, ingest
rounds, and connections: baseline before the store opens, peak during the run, the bound
(4 x pool_size: main + search pools with overflow; the ingest shares the main pool), and the
count after ``store.close()`` (must equal the baseline: no leak).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import json
import statistics
import threading
import time
import traceback
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings

SAMPLE = Path(__file__).resolve().parents[1] / "graph_flows" / "sample_corpus"
QUERIES = [
    "What is PostgreSQL?", "Who created Ingres?", "How does pgvector work?",
    "What is trigram similarity search?", "How do knowledge graphs help RAG?",
    "What is MVCC?", "Who is Michael Stonebraker?", "What is full-text search?",
    "How is PostgreSQL related to Postgres95?", "What does HNSW do?",
    "Tell me about vector search", "What is graph RAG?", "relational model Codd",
    "What uses tsvector?", "zqxj unknown thing",
]


def connection_count(admin_url: str, dbname: str) -> int:
    """Server backends connected to ``dbname`` (this probe's own connection excluded)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
            "AND pid <> pg_backend_pid()", (dbname,)).fetchone()
    return int(row[0]) if row else 0


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return round(ordered[k], 1)


def run_load(db_url: str, *, clients: int, seconds: float, pool_size: int = 10,
             ingest: bool = True) -> dict[str, Any]:
    """Run the load and return the report (see the module docstring)."""
    from graph_flows import query_flow
    from graph_flows.indexing.context import IndexingContext
    from graph_flows.services import ingest as runner
    from graph_flows.shared.embeddings import MiniLMEmbeddings
    from storage import KnowledgeStore

    dbname = urlsplit(db_url).path.lstrip("/")
    baseline = connection_count(db_url, dbname)
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384,
                                pool_size=pool_size)
    settings = Settings(_env_file=None, chat_model="none", pool_size=pool_size)
    res = Resources(settings, store, MiniLMEmbeddings(), chat_override=NO_LLM)
    latencies: list[float] = []
    errors: list[str] = []
    degraded: dict[str, int] = {}
    peak = [0]
    ingest_rounds = [0]
    ingest_errors: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    try:
        with use_resources(res):
            runner.run_indexing({"paths": [str(SAMPLE)], "source": "seed"},
                                IndexingContext(batch_size=8))
            query_flow.invoke({"query": QUERIES[0]})  # warm up (model, plans)

            def client(n: int) -> None:
                i = n
                while not stop.is_set():
                    q = QUERIES[i % len(QUERIES)]
                    i += 1
                    t0 = time.perf_counter()
                    try:
                        out = query_flow.invoke({"query": q})
                    except Exception as exc:  # noqa: BLE001 - counted, the run goes on
                        with lock:
                            errors.append(f"{type(exc).__name__}: {exc}"[:300])
                            if len(errors) == 1:
                                errors.append(traceback.format_exc()[-1500:])
                        continue
                    ms = (time.perf_counter() - t0) * 1000
                    with lock:
                        latencies.append(ms)
                        for e in out.get("errors") or []:
                            key = e.split(":")[0][:80]
                            degraded[key] = degraded.get(key, 0) + 1

            def ingester() -> None:
                while not stop.is_set():
                    try:
                        runner.run_indexing(
                            {"paths": [str(SAMPLE)], "source": f"load-{ingest_rounds[0]}"},
                            IndexingContext(batch_size=8))
                        ingest_rounds[0] += 1
                    except Exception as exc:  # noqa: BLE001 - counted
                        ingest_errors.append(f"{type(exc).__name__}: {exc}"[:300])
                        time.sleep(0.5)

            def sampler() -> None:
                while not stop.wait(0.2):
                    with contextlib.suppress(psycopg.Error):
                        peak[0] = max(peak[0], connection_count(db_url, dbname))

            # Each thread runs in a copy of this context: it sees the installed resources.
            threads = [threading.Thread(target=contextvars.copy_context().run,
                                        args=(client, n), name=f"client-{n}")
                       for n in range(clients)]
            threads.append(threading.Thread(target=sampler, name="sampler"))
            if ingest:
                threads.append(threading.Thread(target=contextvars.copy_context().run,
                                                args=(ingester,), name="ingester"))
            t_start = time.perf_counter()
            for t in threads:
                t.start()
            time.sleep(seconds)
            stop.set()
            for t in threads:
                t.join(timeout=120)
            elapsed = time.perf_counter() - t_start
    finally:
        stop.set()
        store.close()
    after = baseline + 1
    for _ in range(50):  # backends exit asynchronously after the client disconnects
        after = connection_count(db_url, dbname)
        if after <= baseline:
            break
        time.sleep(0.1)
    return {
        "clients": clients, "seconds": seconds, "pool_size": pool_size,
        "queries": len(latencies), "errors": len([e for e in errors if "Traceback" not in e]),
        "error_samples": errors[:4], "degraded": degraded,
        "qps": round(len(latencies) / elapsed, 1) if latencies else 0.0,
        "p50_ms": _percentile(latencies, 0.50), "p95_ms": _percentile(latencies, 0.95),
        "p99_ms": _percentile(latencies, 0.99),
        "max_ms": round(max(latencies), 1) if latencies else 0.0,
        "mean_ms": round(statistics.fmean(latencies), 1) if latencies else 0.0,
        "ingest_rounds": ingest_rounds[0], "ingest_errors": ingest_errors,
        "connections": {"baseline": baseline, "peak": peak[0], "bound": 4 * pool_size,
                        "after_close": after},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--pool-size", type=int, default=10)
    parser.add_argument("--database-url")
    parser.add_argument("--data-dir", default="/tmp/krag-load")
    args = parser.parse_args(argv)
    url = args.database_url
    if not url:
        from storage import start_embedded

        server = start_embedded(Path(args.data_dir))
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS krag_load WITH (FORCE)")
            conn.execute("CREATE DATABASE krag_load")
        url = urlunsplit(urlsplit(server)._replace(path="/krag_load"))
    report = run_load(url, clients=args.clients, seconds=args.seconds,
                      pool_size=args.pool_size)
    report["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
