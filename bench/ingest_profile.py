"""Ingestion profile: where the seconds of a no-LLM ingest go, node by node.

Ingests a JSON-lines passage corpus (``{"id", "title", "text"}`` per line, the shape of
``benchdata/multihop/corpus.jsonl``; one document per passage, text = title + " " + text,
as ``krag eval multihop`` does) into a fresh scope through the indexing graph in no-LLM mode
with the configured embedder (offline MiniLM by default), then prints chunks/s, the seconds
spent in each node, the Python process's peak RSS and its RSS along the run (memory flat?).

    KRAG_DATA_DIR=/tmp/evalH .venv/bin/python -m bench.ingest_profile CORPUS \
        [--limit N] [--batch-size 32] [--defer-index] [--profile out.prof] [--json]

``--profile`` writes a cProfile file (read it with ``python -m pstats``) and prints the top
functions by cumulative and by own time. Use a fresh ``KRAG_DATA_DIR`` (or at least a fresh
scope, which this script always picks) per measurement, so documents are not "unchanged".
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graph_flows.indexing.context import IndexingContext  # noqa: E402
from graph_flows.indexing.resources import RECURSION_LIMIT  # noqa: E402
from graph_flows.shared.resources import NO_LLM, build_resources, use_resources  # noqa: E402


def read_records(path: Path, limit: int | None) -> list[dict[str, str]]:
    """Records ``{"uri", "title", "text"}`` of the first ``limit`` passages of the corpus."""
    records = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            title = row.get("title") or ""
            body = f"{title} {row['text']}" if title else row["text"]
            records.append({"uri": row["id"], "title": title, "text": body})
            if limit and len(records) >= limit:
                break
    return records


class RssSampler:
    """Samples this process's RSS every ``interval`` seconds in a daemon thread."""

    def __init__(self, interval: float = 0.5) -> None:
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._proc = psutil.Process()

    def _run(self) -> None:
        start = time.perf_counter()
        while not self._stop.wait(self.interval):
            self.samples.append((time.perf_counter() - start, self._proc.memory_info().rss))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def quartiles_mb(self) -> list[float]:
        """RSS (MB) at 25, 50, 75 and 100 % of the run."""
        if not self.samples:
            return []
        n = len(self.samples)
        return [round(self.samples[min(n - 1, n * q // 4)][1] / 2**20, 1) for q in (1, 2, 3, 4)]


def server_cpu_s(data_dir: Path) -> float:
    """CPU seconds (user + system) used so far by the embedded PostgreSQL of ``data_dir``:
    its postmaster, the backends it reaped and those alive (0.0 when none is found)."""
    pgdata = str(data_dir.expanduser().resolve() / "pg")
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and pgdata in cmd:
            try:
                t = proc.cpu_times()
                total = t.user + t.system + t.children_user + t.children_system
                return total + sum(c.cpu_times().user + c.cpu_times().system
                                   for c in proc.children())
            except psutil.Error:
                return 0.0
    return 0.0


def run(records: list[dict[str, str]], context: IndexingContext, *,
        defer_index: bool) -> dict[str, Any]:
    """Stream the indexing graph over ``records``; node seconds, output and timings."""
    from graph_flows.indexing.graph import graph

    res = replace(build_resources(), chat_override=NO_LLM)
    scope = f"prof-{uuid.uuid4().hex[:8]}"
    node_s: dict[str, float] = defaultdict(float)
    node_n: dict[str, int] = defaultdict(int)
    totals = {"completed": 0}
    with use_resources(res):
        res.embeddings.embed_documents(["warm up"])  # model load is not ingestion
        if defer_index:
            res.store.drop_vector_indexes()
        data_dir = res.settings.data_dir
        cpu0, pg0 = time.process_time(), server_cpu_s(data_dir)
        started = last = time.perf_counter()
        for update in graph.stream({"records": records, "scope": scope, "source": "profile"},
                                   context=context, stream_mode="updates",
                                   config={"recursion_limit": RECURSION_LIMIT}):
            now = time.perf_counter()
            for name, value in update.items():
                node_s[name] += now - last
                node_n[name] += 1
                if name in ("write", "store_and_extract_next") and value:
                    totals["completed"] += value["chunks"]["completed"]
            last = now
        index_s = 0.0
        if defer_index:
            t0 = time.perf_counter()
            res.store.create_vector_indexes()
            index_s = time.perf_counter() - t0
        seconds = time.perf_counter() - started
        cpu = {"process": round(time.process_time() - cpu0, 2),
               "postgres": round(server_cpu_s(data_dir) - pg0, 2)}
        counts = res.store.counts(scope)
    return {"scope": scope, "seconds": round(seconds, 2), "chunks": totals["completed"],
            "chunks_per_s": round(totals["completed"] / seconds, 2) if seconds else 0.0,
            "node_seconds": {k: round(v, 2) for k, v in node_s.items()},
            "node_calls": dict(node_n), "index_rebuild_s": round(index_s, 2), "counts": counts,
            "cpu_s": cpu,
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="first N passages only")
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--defer-index", action="store_true",
                        help="drop the HNSW indexes during the load, rebuild at the end")
    parser.add_argument("--profile", type=Path, default=None, help="write a cProfile file")
    parser.add_argument("--no-short-forms", action="store_true",
                        help="leave documents' short forms apart (IndexingContext.short_forms)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    records = read_records(args.corpus, args.limit)
    context = IndexingContext(short_forms=not args.no_short_forms)
    if args.batch_size:
        context = replace(context, batch_size=args.batch_size)
    profiler = cProfile.Profile() if args.profile else None
    with RssSampler() as rss:
        if profiler:
            profiler.enable()
        out = run(records, context, defer_index=args.defer_index)
        if profiler:
            profiler.disable()
    out["passages"] = len(records)
    out["batch_size"] = context.batch_size
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["rss_quartiles_mb"] = rss.quartiles_mb()
    if profiler:
        profiler.dump_stats(str(args.profile))
    if args.json:
        print(json.dumps(out))
        return
    for key, value in out.items():
        print(f"{key:>18}: {value}")
    if profiler:
        stats = pstats.Stats(str(args.profile)).strip_dirs()
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
