"""Load (issue 7, item 4): concurrent query clients on one store with bounded pools while an
ingest runs into the same database: 0 errors, p50/p95 reported, no connection leak.

CI size: ``KRAG_LOAD_CLIENTS`` (default 10) clients for ``KRAG_LOAD_SECONDS`` (default 15).
The recorded 50-client / 60 s run (``python -m bench.load_queries --clients 50 --seconds 60``)
is in docs/RELIABILITY.md.
"""

from __future__ import annotations

import json
import os

import pytest

from bench.load_queries import run_load


@pytest.mark.slow
def test_concurrent_queries_during_ingest_no_errors_no_leak(db_url: str) -> None:
    clients = int(os.environ.get("KRAG_LOAD_CLIENTS", "10"))
    seconds = float(os.environ.get("KRAG_LOAD_SECONDS", "15"))
    report = run_load(db_url, clients=clients, seconds=seconds, pool_size=10)
    print(json.dumps(report, indent=2))  # shown with -s: p50/p95, connections
    assert report["errors"] == 0, report["error_samples"]
    assert not report["ingest_errors"] and report["ingest_rounds"] >= 1
    assert report["queries"] >= clients
    assert 0 < report["p50_ms"] <= report["p95_ms"]
    conns = report["connections"]
    assert conns["peak"] <= conns["bound"], conns  # bounded pools: main + search + ingest
    assert conns["after_close"] == conns["baseline"], conns  # back to baseline: no leak
