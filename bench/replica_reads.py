"""Read replicas: where the read load of N questions lands, primary vs one streaming replica.

Usage::

    python -m bench.replica_reads [--questions 100] [--corpus graph_flows/sample_corpus]
        [--question-file questions.jsonl] [--json out.json] [--keep DIR]

On this machine, from the embedded server's own binaries: a primary (an embedded cluster in
a temp dir, database ``kragbench``) with ``--corpus`` ingested by ``krag ingest`` (no LLM),
and one streaming replica of it (``pg_basebackup -R`` into a second data directory, its own
port; :mod:`graph_flows.testing.replica`). Then N questions through ``kag_query`` (the MCP
tool's use case, no LLM, one read session), twice after a warm-up of three (not counted):
without a replica, then with it as ``KRAG_DATABASE_READ_URL``. Around each pass it reads
``pg_stat_database`` of ``kragbench`` on both servers (transactions, rows returned and
fetched, buffer hits and reads); the store is closed first, so every backend has flushed
its counters. Questions: ``question`` of each line of ``--question-file`` (the MuSiQue
``questions.jsonl`` of the benchdata), else a few about the sample corpus, cycled to N.
Everything is removed after (``--keep DIR`` keeps the two data directories there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "kragbench"
SCOPE = "bench"
SAMPLE_QUESTIONS = [
    "Which query language was based on Codd's relational calculus?",
    "What did Edgar Codd propose?",
    "Which extension adds vector search to PostgreSQL?",
    "How does a knowledge graph help retrieval?",
    "What is full-text search in PostgreSQL?",
    "Which systems descend from Ingres?",
]
COUNTERS = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "blks_hit",
            "blks_read")


def counters(url: str) -> dict[str, int]:
    """``pg_stat_database`` of the URL's database, read fresh."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(f"SELECT {', '.join(COUNTERS)} FROM pg_stat_database "
                           "WHERE datname = current_database()").fetchone()
    return dict(zip(COUNTERS, (int(v) for v in row or ()), strict=True))


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in COUNTERS}


def ingest(corpus: Path, app: str, owner: str, data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATABASE_URL=app, KRAG_DATABASE_OWNER_URL=owner, KRAG_CHAT_MODEL="none",
               KRAG_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "ui.cli.app", "ingest", str(corpus), "--scope",
                    SCOPE, "--source", "bench"], env=env, check=True, cwd=data_dir,
                   stdout=subprocess.DEVNULL)


def questions(path: Path | None, n: int) -> list[str]:
    pool = SAMPLE_QUESTIONS
    if path is not None:
        with path.open(encoding="utf-8") as f:
            pool = [json.loads(line)["question"] for line in f if line.strip()]
    return [pool[i % len(pool)] for i in range(n)]


def ask_all(app: str, owner: str, read_urls: list[str], asked: list[str]) -> dict[str, Any]:
    """The questions through kag_query on a store reading from ``read_urls``."""
    from graph_flows.services.memory import KnowledgeTools
    from graph_flows.shared.embeddings import MiniLMEmbeddings
    from graph_flows.shared.reads import ReadSession, read_only, use_session
    from graph_flows.shared.resources import NO_LLM, Resources, use_resources
    from graph_flows.shared.settings import Settings
    from storage import KnowledgeStore

    store = KnowledgeStore.open(app, owner_url=owner, embedding_model="local:minilm",
                                embedding_dim=384, read_urls=read_urls, pool_size=4)
    res = Resources(settings=Settings(_env_file=None, chat_model="none"), store=store,
                    embeddings=MiniLMEmbeddings(), chat_override=NO_LLM)
    served: set[str] = set()
    found = 0
    try:
        with use_resources(res), use_session(ReadSession()):
            start = time.perf_counter()
            for q in asked:
                with read_only():
                    served.add(store.read_replica() or "primary")
                    found += bool(KnowledgeTools(SCOPE).kag_query(q)["relations"])
            seconds = time.perf_counter() - start
    finally:
        store.close()  # the backends exit: their counters are flushed
    time.sleep(1.5)
    return {"seconds": round(seconds, 2), "served_by": sorted(served),
            "with_facts": found}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from graph_flows.testing.replica import make_replica
    from storage import start_embedded, stop_embedded
    from storage.roles import APP_ROLE, prepare_embedded, role_url

    base = Path(args.keep or tempfile.mkdtemp(prefix="krag-replica-bench-"))
    try:
        server = start_embedded(base / "primary")
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        primary = server.replace("/postgres?", f"/{DATABASE}?", 1)
        app, owner = prepare_embedded(primary)
        (base / "data").mkdir(exist_ok=True)
        ingest(Path(args.corpus), app, owner, base / "data")
        replica = make_replica(primary, base / "replica" / "pg")
        try:
            replica.wait_replayed()
            asked = questions(args.question_file, args.questions)
            replica_db = replica.url(DATABASE)
            out: dict[str, Any] = {"questions": len(asked), "corpus": str(args.corpus),
                                   "commit": _commit(), "load": os.getloadavg()[0]}
            ask_all(app, owner, [], asked[:3])  # warm-up: models loaded, caches filled
            for name, urls in (("primary_only", []),
                               ("with_replica", [role_url(replica_db, APP_ROLE)])):
                before = counters(primary), counters(replica_db)
                run_info = ask_all(app, owner, urls, asked)
                after = counters(primary), counters(replica_db)
                out[name] = run_info | {"primary": delta(after[0], before[0]),
                                        "replica": delta(after[1], before[1])}
            return out
        finally:
            replica.remove()
    finally:
        stop_embedded(base / "primary")
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--corpus", default=str(ROOT / "graph_flows" / "sample_corpus"))
    parser.add_argument("--question-file", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", default=None, help="keep the data directories here")
    args = parser.parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
