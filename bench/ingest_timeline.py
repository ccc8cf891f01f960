"""Full-corpus no-LLM ingest timeline: each graph step's seconds, the process's and
PostgreSQL's CPU after each batch, then the ingest service's end phases timed one by one.

    KRAG_DATA_DIR=/tmp/x/krag KRAG_CHAT_MODEL=none .venv/bin/python bench/ingest_timeline.py \\
        CORPUS [LIMIT] > timeline.json

Runs the indexing graph itself in one process (as ``bench/ingest_profile.py``, no worker
processes) into a fresh scope, so it profiles the batch loop; one JSON object with the
totals and a row per graph step (``node``, ``s``, ``t``; for ``write`` rows also
``done``, ``cpu`` and ``pg``: chunks, process and PostgreSQL CPU seconds so far).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import uuid
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest_profile import read_records, server_cpu_s  # noqa: E402
from graph_flows.indexing.context import IndexingContext  # noqa: E402
from graph_flows.indexing.resources import RECURSION_LIMIT  # noqa: E402
from graph_flows.services import ingest as service  # noqa: E402
from graph_flows.shared.resources import NO_LLM, build_resources, use_resources  # noqa: E402
from graph_flows.shared.scoped import scope_access  # noqa: E402


def main() -> None:
    from graph_flows.indexing.graph import graph

    records = read_records(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None)
    res = replace(build_resources(), chat_override=NO_LLM)
    scope = f"prof-{uuid.uuid4().hex[:8]}"
    rows = []
    with use_resources(res):
        res.embeddings.embed_documents(["warm up"])  # model load is not ingestion
        data_dir = res.settings.data_dir
        cpu0, pg0 = time.process_time(), server_cpu_s(data_dir)
        t0 = last = time.perf_counter()
        done = 0
        for update in graph.stream({"records": records, "scope": scope, "source": "profile"},
                                   context=IndexingContext(), stream_mode="updates",
                                   config={"recursion_limit": RECURSION_LIMIT}):
            now = time.perf_counter()
            for name, value in update.items():
                row = {"node": name, "s": round(now - last, 3), "t": round(now - t0, 2)}
                if name in ("write", "store_in_order") and value:
                    done += value["chunks"]["completed"]
                    row.update(done=done, cpu=round(time.process_time() - cpu0, 2),
                               pg=round(server_cpu_s(data_dir) - pg0, 2))
                rows.append(row)
            last = now
        loop_s = time.perf_counter() - t0
        end = {}
        with scope_access(scope, res.store):
            for phase in ("create_vector_indexes", "refresh_term_stats", "fill_synonyms",
                          "fill_injection_spans"):
                started = time.perf_counter()
                if phase == "create_vector_indexes":
                    res.store.create_vector_indexes()
                else:
                    getattr(service, phase)(res.store, scope)
                end[phase] = round(time.perf_counter() - started, 2)
            counts = res.store.counts(scope)
        total = time.perf_counter() - t0
        print(json.dumps({
            "loop_s": round(loop_s, 2), "total_s": round(total, 2), "chunks": done,
            "chunks_per_s": round(done / total, 2) if total else 0.0, "end": end,
            "cpu_process": round(time.process_time() - cpu0, 2),
            "cpu_pg": round(server_cpu_s(data_dir) - pg0, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "counts": counts, "load": [round(x, 2) for x in os.getloadavg()], "rows": rows}))


if __name__ == "__main__":
    main()
