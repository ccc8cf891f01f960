"""LLM-bound ingest: the look-ahead, `--workers`, and several `krag ingest` processes on one
database (issue 26, deliverables 3 and 4; results in HISTORY: ingest_workers.md).

The extraction model is the real ``ChatOpenAI`` client against the wire-protocol stub
(``graph_flows/testing/llm_server.py``, in a process of its own) answering every chat
request after a
fixed latency with the chunk's relation sentences as extraction JSON; everything else is the
real pipeline on the generated corpus of ``bench/indexing_throughput.py``.

Modes (each prints one JSON line per measurement; ``--out`` also writes them to a file):

- ``lookahead``: one process, ``--concurrency`` calls in flight, the look-ahead off and on
  alternately on fresh databases of one embedded server (same load), per embedder (``hash``:
  a deterministic hash embedder, isolates extraction; ``minilm``: the real offline model).
  With ``--profile``, one more run per setting records where the wall time goes (LangChain
  chain callbacks: wall time inside each graph node).
- ``processes``: the same corpus and database loaded by 1 and then by N separate
  ``krag ingest`` OS processes (``python -m ui.cli.app ingest``; they join the embedded
  server through KRAG_DATABASE_URL, as processes on other machines would), wall clock from
  the launch to the last exit. Checks that the N-process graph has exactly the one-process
  graph's entity, relation and chunk ids, and that every chunk recorded one LLM call.
- ``workers``: one ``krag ingest --workers W --concurrency C`` process (W spawned worker
  processes sharing the chunks).

Usage: ``.venv/bin/python -m bench.ingest_workers lookahead --latency 1.0 --chunks 192``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables.config import var_child_runnable_config

from bench.indexing_throughput import (
    Databases,
    StubServer,
    embedder,
    stub_reply,
    timed_run,
    vocabulary,
    write_corpus,
)
from graph_flows.indexing.context import IndexingContext
from graph_flows.shared.providers import make_chat_model
from graph_flows.shared.scoped import whole_store_access
from graph_flows.shared.settings import Settings
from graph_flows.testing.fakes import ContentLLMServer
from storage import KnowledgeStore

ROOT = Path(__file__).resolve().parents[1]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_s() -> float:
    """User + system CPU seconds of this process and its waited-for children (the `krag
    ingest` processes it ran)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def server_cpu_s(dbs: Databases) -> float:
    """User + system CPU seconds of the benchmark's embedded PostgreSQL: the postmaster,
    its live backends and those that exited (0.0 on an external server)."""
    import psutil

    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if (proc.info.get("name") or "").startswith("postgres") and str(dbs.tmp) in cmd \
                and " -D " in f" {cmd}":
            try:
                t = proc.cpu_times()
                total = t.user + t.system + t.children_user + t.children_system
                for child in proc.children(recursive=True):
                    c = child.cpu_times()
                    total += c.user + c.system
                return total
            except psutil.Error:
                return 0.0
    return 0.0


class NodeTimer(BaseCallbackHandler):
    """Seconds spent inside each node of the indexing graph (LangChain chain callbacks)."""

    def __init__(self) -> None:
        from graph_flows.indexing.graph import graph

        self.names = set(graph.get_graph().nodes) - {"__start__", "__end__"}
        self.spent: Counter[str] = Counter()
        self._open: dict[Any, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                       name: str | None = None, **kw: Any) -> None:
        if name in self.names:
            with self._lock:
                self._open[run_id] = (name, time.monotonic())

    def on_chain_end(self, outputs: Any, *, run_id: Any, **kw: Any) -> None:
        with self._lock:
            if run_id in self._open:
                name, start = self._open.pop(run_id)
                self.spent[name] += time.monotonic() - start

    on_chain_error = on_chain_end  # type: ignore[assignment]

    def seconds(self) -> dict[str, float]:
        return {k: round(v, 2) for k, v in self.spent.most_common()}


# -- one process, look-ahead off / on -------------------------------------------------------
def lookahead(args: argparse.Namespace, dbs: Databases, work: Path) -> list[dict[str, Any]]:
    corpus = work / "corpus"
    write_corpus(corpus, args.chunks)
    rows = []
    with StubServer(args.latency, args.chunks) as url:
        settings = Settings(_env_file=None, openai_base_url=url, openai_api_key="bench",
                            chat_model="openai:stub")
        chat = make_chat_model("openai:stub", settings, temperature=0.0, streaming=False)
        for emb_name in args.embedders.split(","):
            emb = embedder(emb_name)
            for rep in range(args.repeat):
                order = (False, True) if rep % 2 == 0 else (True, False)
                for ahead in order:
                    rows.append(_one(dbs, chat, emb, emb_name, corpus, settings, ahead, args))
            if args.profile:
                for ahead in (False, True):
                    rows.append(_one(dbs, chat, emb, emb_name, corpus, settings, ahead, args,
                                     profile=True))
    return rows


def _one(dbs: Databases, chat: Any, emb: Any, emb_name: str, corpus: Path, settings: Settings,
         ahead: bool, args: argparse.Namespace, profile: bool = False) -> dict[str, Any]:
    store = dbs.fresh()
    ctx = IndexingContext(concurrency=args.concurrency, batch_size=args.batch_size,
                          look_ahead=ahead)
    before, cpu0, pg0 = load(), cpu_s(), server_cpu_s(dbs)
    try:
        if profile:
            timer = NodeTimer()
            token = var_child_runnable_config.set({"callbacks": [timer]})
            try:
                out, secs = timed_run(store, chat, emb, corpus, ctx, settings, args.defer_index)
            finally:
                var_child_runnable_config.reset(token)
            nodes = timer.seconds()
        else:
            out, secs = timed_run(store, chat, emb, corpus, ctx, settings, args.defer_index)
            nodes = None
    finally:
        store.close()
    done = out["chunks"]["completed"]
    ideal = args.concurrency / args.latency
    row = {"mode": "lookahead", "latency_s": args.latency, "concurrency": args.concurrency,
           "batch_size": args.batch_size, "embedder": emb_name, "look_ahead": ahead,
           "defer_index": args.defer_index, "chunks": done, "seconds": round(secs, 2),
           "chunks_per_s": round(done / secs, 2), "ideal_per_s": ideal,
           "pct_of_ideal": round(100 * done / secs / ideal, 1),
           "llm_calls_per_chunk": round(out["llm"]["calls"] / max(done, 1), 3),
           "cpu_s": round(cpu_s() - cpu0, 1), "server_cpu_s": round(server_cpu_s(dbs) - pg0, 1),
           "load_before": before, "load_after": load()}
    row["cpu_ms_per_chunk"] = round(1000 * (row["cpu_s"] + row["server_cpu_s"]) / max(done, 1))
    if nodes is not None:
        row["profile_node_seconds"] = nodes
    print(json.dumps(row), flush=True)
    return row


# -- separate `krag ingest` processes -------------------------------------------------------
def _serve_chat_latency(latency: float, queue: Any, stop: Any) -> None:
    """Child process: the stub whose chat replies (only) wait ``latency``; it also serves
    ``openai:fake-embed`` embeddings at once (a hash embedder for the CLI processes)."""
    import random

    server = ContentLLMServer(reply=stub_reply(vocabulary(random.Random(7))), dim=384)
    server.fault = lambda req: latency if req.path == "/v1/chat/completions" else None
    with server:
        queue.put(server.openai_url)
        stop.wait()


class ChatLatencyServer(StubServer):
    """:class:`StubServer` with the latency on chat requests only."""

    def cpu_s(self) -> float:
        """User + system CPU seconds of the stub's process so far."""
        import psutil

        t = psutil.Process(self._proc.pid).cpu_times()
        return t.user + t.system

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._queue, self._stop = ctx.Queue(), ctx.Event()
        self._proc = ctx.Process(target=_serve_chat_latency,
                                 args=(latency, self._queue, self._stop), daemon=True)


def krag_env(db_url: str, llm_url: str, data_dir: Path, embedding: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KRAG_")}
    env.update(KRAG_DATABASE_URL=db_url, KRAG_CHAT_MODEL="openai:stub",
               KRAG_OPENAI_BASE_URL=llm_url, KRAG_OPENAI_API_KEY="bench",
               KRAG_EMBEDDING_MODEL=embedding, KRAG_EMBEDDING_DIM="384",
               KRAG_DATA_DIR=str(data_dir), PYTHONPATH=str(ROOT))
    return env


def fresh_database(dbs: Databases) -> str:
    """The URL of a new empty database on the benchmark's server."""
    name = f"krag_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dbs.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return urlunsplit(urlsplit(dbs.url)._replace(path=f"/{name}"))


class WaitSampler:
    """Samples, every 0.25 s, what the database's active backends wait on (pg_stat_activity):
    how often a backend waited on a lock held by another (two writers on the same rows)."""

    def __init__(self, url: str) -> None:
        self.url, self.samples = url, Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self._stop.wait(0.25):
                rows = conn.execute(
                    "SELECT coalesce(wait_event_type, 'CPU') || ':' || coalesce(wait_event, '-')"
                    " FROM pg_stat_activity WHERE datname = current_database()"
                    " AND state = 'active' AND pid <> pg_backend_pid()").fetchall()
                self.samples["ticks"] += 1
                for (what,) in rows:
                    self.samples[what] += 1

    def __enter__(self) -> WaitSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_processes(n: int, cli_args: list[str], env: dict[str, str],
                  log_dir: Path) -> tuple[float, list[dict[str, Any]]]:
    """Start ``n`` `krag ingest` processes at once; (wall seconds, their --json reports)."""
    start = time.monotonic()
    procs = []
    for i in range(n):
        out = open(log_dir / f"p{n}-{i}.json", "w")  # noqa: SIM115 - closed below
        err = open(log_dir / f"p{n}-{i}.err", "w")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen([sys.executable, "-m", "ui.cli.app", "ingest",
                                        *cli_args, "--json"], env=env, cwd=log_dir,
                                       stdout=out, stderr=err), out, err, i))
    reports = []
    for proc, out, err, i in procs:
        code = proc.wait()
        out.close()
        err.close()
        if code != 0:
            raise SystemExit(f"krag ingest process {i} of {n} exited {code}: "
                             f"{(log_dir / f'p{n}-{i}.err').read_text()[-2000:]}")
        reports.append(json.loads((log_dir / f"p{n}-{i}.json").read_text()))
    return time.monotonic() - start, reports


def graph_ids(store: KnowledgeStore) -> dict[str, Any]:
    """What must be identical between loads: ids of entities, relations, chunks; and how
    often each chunk was extracted."""
    from sqlalchemy import text

    with whole_store_access(), store.connect() as conn:
        def col(sql: str) -> list[Any]:
            return [tuple(r) for r in conn.execute(text(sql)).all()]
        return {
            "entities": col("SELECT id FROM entities ORDER BY id"),
            "relations": col("SELECT id FROM relations ORDER BY id"),
            "chunks": col("SELECT chunk_id, status FROM extraction_status ORDER BY 1"),
            "entity_provenance": col("SELECT entity_id, chunk_id FROM entity_provenance "
                                     "ORDER BY 1, 2"),
            "llm_calls_per_chunk": col("SELECT llm_calls, count(*) FROM extraction_status "
                                       "GROUP BY 1 ORDER BY 1"),
            "attempts": col("SELECT attempts, count(*) FROM extraction_status "
                            "GROUP BY 1 ORDER BY 1"),
            "workers": col("SELECT count(DISTINCT worker) FROM extraction_status")[0][0],
        }


def processes(args: argparse.Namespace, dbs: Databases, work: Path) -> list[dict[str, Any]]:
    corpus = work / "corpus"
    write_corpus(corpus, args.chunks)
    rows: list[dict[str, Any]] = []
    cli_args = [str(corpus), "--concurrency", str(args.concurrency), "--batch-size",
                str(args.batch_size), "--workers", str(args.workers)]
    if args.defer_index:
        cli_args.append("--defer-index")
    graphs = {}
    stub = ChatLatencyServer(args.latency)
    with stub as llm_url:
        for n in [int(x) for x in args.processes.split(",")]:
            db_url = fresh_database(dbs)
            store = KnowledgeStore.open(db_url, embedding_model=args.embedding,
                                        embedding_dim=384)
            env = krag_env(db_url, llm_url, work / f"data-{n}", args.embedding)
            log_dir = work / f"logs-{n}"
            log_dir.mkdir(parents=True, exist_ok=True)
            before, cpu0, pg0, stub0 = load(), cpu_s(), server_cpu_s(dbs), stub.cpu_s()
            with WaitSampler(db_url) as waits:
                secs, reports = run_processes(n, cli_args, env, log_dir)
            cpu, pg = cpu_s() - cpu0, server_cpu_s(dbs) - pg0
            ids = graph_ids(store)
            store.close()
            done = sum(r["chunks"]["completed"] for r in reports)
            graphs[n] = ids
            row = {"mode": "processes", "processes": n, "latency_s": args.latency,
                   "concurrency": args.concurrency, "workers_per_process": args.workers,
                   "batch_size": args.batch_size, "embedding": args.embedding,
                   "chunks": done, "chunks_per_process": [r["chunks"]["completed"]
                                                          for r in reports],
                   "seconds": round(secs, 2), "chunks_per_s": round(done / secs, 2),
                   "process_elapsed_s": [r.get("elapsed_s") for r in reports],
                   "ideal_per_s": n * args.workers * args.concurrency / args.latency,
                   "entities": len(ids["entities"]), "relations": len(ids["relations"]),
                   "llm_calls_per_chunk": ids["llm_calls_per_chunk"],
                   "attempts": ids["attempts"], "claiming_workers": ids["workers"],
                   "krag_cpu_s": round(cpu, 1), "server_cpu_s": round(pg, 1),
                   "stub_llm_cpu_s": round(stub.cpu_s() - stub0, 1),
                   "backend_waits_per_0_25s_sample": dict(waits.samples.most_common(8)),
                   "cpu_ms_per_chunk": round(1000 * (cpu + pg) / max(done, 1)),
                   "load_before": before, "load_after": load()}
            row["pct_of_ideal"] = round(100 * row["chunks_per_s"] / row["ideal_per_s"], 1)
            if n != min(graphs):
                base = graphs[min(graphs)]
                row["same_graph_as_1"] = {k: ids[k] == base[k] for k in
                                          ("entities", "relations", "chunks",
                                           "entity_provenance")}
                first = next(r for r in rows if r["processes"] == min(graphs))
                row["speedup_vs_1"] = round(row["chunks_per_s"] / first["chunks_per_s"], 2)
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("lookahead", "processes"))
    parser.add_argument("--chunks", type=int, default=192, help="generated corpus size")
    parser.add_argument("--latency", type=float, default=1.0, help="stub LLM latency (s)")
    parser.add_argument("--concurrency", type=int, default=8, help="LLM calls in flight")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--defer-index", action="store_true")
    parser.add_argument("--embedders", default="hash,minilm", help="lookahead: hash,minilm")
    parser.add_argument("--repeat", type=int, default=1, help="lookahead: off/on pairs")
    parser.add_argument("--profile", action="store_true", help="lookahead: node times")
    parser.add_argument("--processes", default="1,2", help="processes: counts to run")
    parser.add_argument("--workers", type=int, default=1, help="processes: --workers each")
    parser.add_argument("--embedding", default="local:minilm",
                        help="processes: local:minilm, or openai:fake-embed (served by the "
                             "stub at once: isolates the extraction like the hash embedder)")
    parser.add_argument("--out", type=Path, help="also write the JSON lines here")
    args = parser.parse_args()
    dbs = Databases()
    work = dbs.tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    head = {"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
            "load_avg": load(), "args": {k: str(v) for k, v in vars(args).items()}}
    print(json.dumps(head), flush=True)
    try:
        rows = (lookahead if args.mode == "lookahead" else processes)(args, dbs, work)
    finally:
        tail = {"load_avg_end": load()}
        print(json.dumps(tail), flush=True)
        dbs.close()
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in [head, *rows, tail]))


if __name__ == "__main__":
    main()
