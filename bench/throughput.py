"""Serving throughput: questions/s, p50/p95 and CPU per question of N concurrent clients.

Usage::

    KRAG_DATA_DIR=/tmp/bench-main/krag python -m bench.throughput \\
        --checkout before=/tmp/tput-before --checkout after=. --scope <Q1's scope> \\
        --questions ../shared/benchdata/multihop/questions.jsonl --graph 2884 \\
        --transports mcp,langgraph --clients 1,4,16,64 --rounds 1,default \\
        --seconds 20 --out docs/bench/throughput.json

Each ``--checkout NAME=DIR`` is a tree of krag's code (``before``: the old commit unpacked
with ``git archive``; ``after``: this one). For each transport one server per checkout is
started with ``cwd`` and ``PYTHONPATH`` = that tree, no LLM (``KRAG_CHAT_MODEL=none``), on
the data dir's embedded PostgreSQL (read only: the graph is queried, never written):

- ``mcp``: ``krag mcp --transport http`` (streamable HTTP, the product's MCP server); each
  client is one session of the official MCP client (``mcp.Client``) calling ``kag_query``;
- ``langgraph``: ``langgraph dev`` on the repository's ``langgraph.json``; each client
  POSTs ``/runs/wait`` of the ``query`` graph (the whole graph: the no-LLM answer too).

Every (rounds, clients) cell runs the checkouts one after the other, their order swapped
from cell to cell (old and new alternated under the same load), each for ``--seconds``
after one warm-up question per client. Clients ask the questions in turn, each from its own
offset. ``rounds``: ``1`` (``max_rounds`` = 1) or ``default`` (the configured loop).

CPU per question: the server process tree's user+system time (psutil), and PostgreSQL's:
the backends whose ``application_name`` is the server's (``PGAPPNAME`` set per server; their
``/proc`` CPU time sampled every 0.25 s, so a backend that ends mid-run keeps its last
sample), each divided by the questions answered. ``load``: the mean 1-minute load average
during the cell. ``errors``: failed calls (tool errors, HTTP errors, exceptions), the first
one's reason in ``first_error``.

``--synthetic 100k`` (or ``10k``) serves the seeded synthetic graph instead of the data dir's
own store: :func:`bench.synthetic_serving.prepare_size` loads it into database
``krag_bench_100k`` of ``KRAG_DATA_DIR``'s embedded server once (a later run finds it loaded),
writes its questions, reads its tables into the page cache, and the servers get
``KRAG_DATABASE_URL`` / ``KRAG_DATABASE_OWNER_URL`` of that database; the scope is ``bench``,
the questions its 240 natural questions (``--limit`` of them), ``graph`` the size label.

Appends one row per cell and checkout to ``--out`` (a JSON list; rows of the same graph,
transport, rounds, clients and code are replaced).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg

ROOT = Path(__file__).resolve().parents[1]
Ask = Callable[[str], Awaitable[bool]]


@dataclass
class Server:
    """One running server of one checkout."""

    code: str
    tree: Path
    transport: str
    port: int
    proc: subprocess.Popen[bytes]
    app_name: str
    commit: str
    log: Path

    @property
    def url(self) -> str:
        base = f"http://127.0.0.1:{self.port}"
        return base + "/mcp" if self.transport == "mcp" else base


@dataclass
class CpuSampler:
    """CPU seconds of a process tree and of the PostgreSQL backends of one application."""

    pid: int
    app_name: str
    admin_url: str
    backends: dict[int, float] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def process_cpu(self) -> float:
        root = psutil.Process(self.pid)
        total = 0.0
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                continue
        return total

    def _pids(self, conn: Any) -> list[int]:
        rows = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                            (self.app_name,)).fetchall()
        return [int(r[0]) for r in rows]

    def sample(self, conn: Any) -> None:
        for pid in self._pids(conn):
            try:
                t = psutil.Process(pid).cpu_times()
            except psutil.Error:
                continue
            self.backends[pid] = t.user + t.system

    def run(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            while not self.stop.wait(0.25):
                self.sample(conn)
            self.sample(conn)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tree_commit(tree: Path) -> str:
    """The commit of a checkout (``.commit`` of an unpacked archive, else git)."""
    marker = tree / ".commit"
    if marker.exists():
        return marker.read_text().strip()[:7]
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short=7", "HEAD"],
                          capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "-uno"],
                           capture_output=True, text=True).stdout.strip()
    return (done.stdout.strip() or "unknown") + ("-dirty" if dirty else "")


def start_server(code: str, tree: Path, transport: str, scope: str, logs: Path,
                 extra_env: dict[str, str] | None = None) -> Server:
    """Start the server of ``transport`` from ``tree`` (``extra_env`` added to its
    environment) and wait until it answers."""
    port = free_port()
    app_name = f"tput-{transport}-{code}-{uuid.uuid4().hex[:6]}"
    env = dict(os.environ, PYTHONPATH=str(tree), KRAG_CHAT_MODEL="none", KRAG_SCOPE=scope,
               PGAPPNAME=app_name, LANGGRAPH_CLI_NO_ANALYTICS="1", PYTHONUNBUFFERED="1",
               **(extra_env or {}))
    bin_dir = Path(sys.executable).parent
    if transport == "mcp":
        cmd = [sys.executable, "-m", "ui.cli.app", "mcp", "--transport", "http",
               "--port", str(port), "--scope", scope]
    else:
        cmd = [str(bin_dir / "langgraph"), "dev", "--port", str(port), "--no-browser",
               "--no-reload", "--config", str(tree / "langgraph.json")]
    log = logs / f"{app_name}.log"
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=log.open("wb"),
                            stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(code, tree, transport, port, proc, app_name, tree_commit(tree), log)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{transport} server of {code} exited: {log.read_text()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return server
        except OSError:
            time.sleep(0.5)
    stop_server(server)
    raise RuntimeError(f"{transport} server of {code} did not start: {log.read_text()[-2000:]}")


def stop_server(server: Server) -> None:
    """SIGTERM to the server's process group (a normal exit releases the embedded server)."""
    try:
        os.killpg(server.proc.pid, signal.SIGTERM)
        server.proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(server.proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def mcp_client(stack: AsyncExitStack, url: str, rounds: str) -> Ask:
    """One MCP session; ``ask`` calls kag_query and says whether it succeeded."""
    from mcp import Client

    client = await stack.enter_async_context(Client(url, read_timeout_seconds=300))

    async def ask(question: str) -> bool:
        args: dict[str, Any] = {"query": question}
        if rounds != "default":
            args["max_rounds"] = int(rounds)
        result = await client.call_tool("kag_query", args)
        return not result.is_error and bool(result.structured_content)

    return ask


async def langgraph_client(stack: AsyncExitStack, url: str, rounds: str) -> Ask:
    """An HTTP client of ``langgraph dev``; ``ask`` runs the query graph to its end."""
    import httpx

    # idle connections dropped after 4 s, before uvicorn's 5 s keep-alive timeout closes
    # them from the server's side: a request sent on a connection as the server closed it
    # failed with an empty ``ReadError`` and never reached the server (2026-11-29: 648 runs
    # started for 648 answered questions and warm-ups, the one failed call not among them)
    http = await stack.enter_async_context(httpx.AsyncClient(
        base_url=url, timeout=300, limits=httpx.Limits(keepalive_expiry=4.0)))

    async def ask(question: str) -> bool:
        body: dict[str, Any] = {"assistant_id": "query", "input": {"query": question}}
        if rounds != "default":
            body["context"] = {"max_rounds": int(rounds)}
        res = await http.post("/runs/wait", json=body)
        if res.status_code != 200:
            return False
        out = res.json()
        return isinstance(out, dict) and "error" not in out and "answer" in out

    return ask


async def drive(server: Server, questions: list[str], clients: int, rounds: str,
                seconds: float, mark: Callable[[], None],
                failures: list[str] | None = None) -> tuple[list[float], int, float]:
    """Run ``clients`` clients for ``seconds`` after one warm-up question each, calling
    ``mark`` between the two: (latencies ms, errors, wall seconds); ``failures`` gets each
    failed call's reason."""
    make = mcp_client if server.transport == "mcp" else langgraph_client
    latencies: list[float] = []
    errors = [0]
    async with AsyncExitStack() as stack:
        asks = [await make(stack, server.url, rounds) for _ in range(clients)]
        await asyncio.gather(*(a(questions[i % len(questions)]) for i, a in enumerate(asks)))
        mark()
        start = time.perf_counter()
        deadline = start + seconds

        async def loop(n: int, ask: Ask) -> None:
            i = n * 7 + 1
            while time.perf_counter() < deadline:
                q = questions[i % len(questions)]
                i += 1
                t0 = time.perf_counter()
                try:
                    ok = await ask(q)
                    why = "" if ok else "tool error or HTTP error"
                except Exception as exc:  # noqa: BLE001 - counted as an error, the run goes on
                    ok, why = False, f"{type(exc).__name__}: {exc}"[:300]
                if ok:
                    latencies.append((time.perf_counter() - t0) * 1000)
                else:
                    errors[0] += 1
                    if failures is not None:
                        failures.append(why)

        await asyncio.gather(*(loop(n, a) for n, a in enumerate(asks)))
        wall = time.perf_counter() - start
    return latencies, errors[0], wall


def pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 1)


def measure(server: Server, admin_url: str, questions: list[str], clients: int, rounds: str,
            seconds: float, graph: str) -> dict[str, Any]:
    """One row: the server under ``clients`` clients for ``seconds``."""
    sampler = CpuSampler(server.proc.pid, server.app_name, admin_url)
    loads: list[float] = []
    watcher = threading.Thread(target=sampler.run, daemon=True)
    watcher.start()
    start: dict[str, Any] = {}

    def mark() -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            sampler.sample(conn)
        start.update(process=sampler.process_cpu(), backends=dict(sampler.backends))

    def load_sampler() -> None:
        while not sampler.stop.wait(1.0):
            loads.append(os.getloadavg()[0])

    threading.Thread(target=load_sampler, daemon=True).start()
    failures: list[str] = []
    latencies, errors, wall = asyncio.run(
        drive(server, questions, clients, rounds, seconds, mark, failures))
    proc1 = sampler.process_cpu()
    sampler.stop.set()
    watcher.join()
    # a backend that started during the run counts from 0; the warm-up is excluded
    base = start["backends"]
    pg = sum(v - base.get(pid, 0.0) for pid, v in sampler.backends.items())
    n = max(1, len(latencies))
    return {
        "transport": server.transport, "graph": graph, "clients": clients,
        "code": server.code, "rounds": rounds,
        "questions_per_s": round(len(latencies) / wall, 2),
        "p50_ms": pct(latencies, 0.5), "p95_ms": pct(latencies, 0.95),
        "cpu_ms_per_question": {"process": round((proc1 - start["process"]) * 1000 / n, 1),
                                "postgres": round(pg * 1000 / n, 1)},
        "errors": errors, "first_error": failures[0] if failures else "",
        "questions": len(latencies), "seconds": round(wall, 1),
        "commit": server.commit,
        "load": round(sum(loads) / len(loads), 2) if loads else round(os.getloadavg()[0], 2),
    }


def admin_url() -> str:
    """The embedded cluster's superuser URL of KRAG_DATA_DIR (or KRAG_DATABASE_URL)."""
    if url := os.environ.get("KRAG_DATABASE_URL"):
        return url.replace("postgresql+psycopg://", "postgresql://")
    from storage import start_embedded

    return start_embedded(os.environ["KRAG_DATA_DIR"]).replace(
        "postgresql+psycopg://", "postgresql://")


def load_questions(path: Path, limit: int) -> list[str]:
    """The questions of a JSONL file (``question`` or ``query`` field), in file order."""
    out = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(row.get("question") or row.get("query"))
    return [q for q in out if q][:limit]


def save(rows: list[dict[str, Any]], out: Path) -> None:
    key = ("graph", "transport", "rounds", "clients", "code")
    old = json.loads(out.read_text()) if out.exists() else []
    fresh = {tuple(r.get(k) for k in key) for r in rows}
    kept = [r for r in old if tuple(r.get(k) for k in key) not in fresh]
    out.write_text(json.dumps(kept + rows, indent=1) + "\n")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkout", action="append", required=True,
                   help="NAME=DIR, a tree of krag's code (before=..., after=...)")
    p.add_argument("--scope", help="the graph's scope (required without --synthetic)")
    p.add_argument("--questions", type=Path,
                   help="JSONL of questions (required without --synthetic)")
    p.add_argument("--synthetic", choices=("10k", "100k"),
                   help="serve the synthetic graph of this size (bench.synthetic_serving)")
    p.add_argument("--limit", type=int, default=100, help="questions used (file order)")
    p.add_argument("--graph", default="2884", help="label of the graph in the rows")
    p.add_argument("--transports", default="mcp,langgraph")
    p.add_argument("--clients", default="1,4,16,64")
    p.add_argument("--rounds", default="1,default", help="1 and/or default")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "throughput.json")
    p.add_argument("--logs", type=Path, default=Path("/tmp/tput-logs"))
    args = p.parse_args(argv)
    if not args.synthetic and not (args.scope and args.questions):
        p.error("--scope and --questions are required without --synthetic")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    trees = [(n, Path(d).resolve()) for n, d in (c.split("=", 1) for c in args.checkout)]
    args.logs.mkdir(parents=True, exist_ok=True)
    url = admin_url()
    extra_env: dict[str, str] = {}
    if args.synthetic:
        from bench.synthetic_serving import prepare_size

        served = prepare_size(Path(os.environ["KRAG_DATA_DIR"]), args.synthetic)
        questions, extra_env = served.questions[:args.limit], served.env
        args.scope, args.graph = served.scope, args.synthetic
    else:
        questions = load_questions(args.questions, args.limit)
    levels = [int(c) for c in args.clients.split(",")]
    for transport in args.transports.split(","):
        servers = [start_server(n, d, transport, args.scope, args.logs, extra_env)
                   for n, d in trees]
        try:
            cell = 0
            for rounds in args.rounds.split(","):
                for clients in levels:
                    ranked = servers if cell % 2 == 0 else servers[::-1]
                    cell += 1
                    rows = []
                    for server in ranked:
                        row = measure(server, url, questions, clients, rounds,
                                      args.seconds, args.graph)
                        print(json.dumps(row), flush=True)
                        rows.append(row)
                    save(rows, args.out)
        finally:
            for server in servers:
                stop_server(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
