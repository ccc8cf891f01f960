"""Ours vs LightRAG on the same synthetic graph and queries, in one session (our venv).

Usage::

    python -m bench.peer_compare --entities 10000 --relations 30000 --queries 240 \\
        --peer-python /tmp/peer-venv/bin/python --work /tmp/krag-peer [--data-dir /tmp/krag-bench]

Steps: export the graph and queries (:mod:`bench.export_synthetic`), run ours over the
queries (``bench.retrieval_latency.benchmark``: the ``retrieve_knowledge`` node's work on the
database ``krag_bench_<size>`` of ``--data-dir``, reused when loaded with the same
parameters), run :mod:`bench.peer_lightrag` with the peer's python, run ours again, and
print the comparison. Ours and theirs never run at the same time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import export_synthetic, synthetic
from bench import retrieval_latency as rl

HERE = Path(__file__).resolve().parent


def run_ours(args: argparse.Namespace, graph: Any, queries: Sequence[Any], log: Any
             ) -> list[dict[str, Any]]:
    from graph_flows.shared.embeddings import MiniLMEmbeddings
    from storage import start_embedded, stop_embedded

    label = rl.size_label(args.entities)
    params = {"entities": args.entities, "relations": args.relations, "seed": args.seed,
              "batch_size": 10_000, "generator": 1}
    warmup = synthetic.generate_queries(graph, 30, seed=args.seed + 5000)
    server_url = start_embedded(args.data_dir)
    try:
        store, load = rl.prepare_database(server_url, f"krag_bench_{label}", params, True,
                                          graph, log)
        embedder = MiniLMEmbeddings()
        out = []
        for _ in range(args.ours_passes):
            rep = rl.benchmark(store.search_engine(60_000), synthetic.SCOPE, queries,
                               embedder=embedder, literal_queries=0, warmup=warmup, log=log)
            rep["load"] = load
            out.append(rep)
        store.close()
    finally:
        stop_embedded(args.data_dir)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peer_compare",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--relations", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/krag-bench"))
    ap.add_argument("--peer-python", default="/tmp/peer-venv/bin/python")
    ap.add_argument("--work", type=Path, default=Path("/tmp/krag-peer"))
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--ours-passes", type=int, default=1, help="passes before and after")
    args = ap.parse_args(argv)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    label = rl.size_label(args.entities)
    graph = synthetic.generate_graph(args.entities, args.relations, args.seed)
    queries = synthetic.generate_queries(graph, args.queries)
    export = args.work / f"synthetic_{label}"
    if not export.with_suffix(".npz").exists():
        from graph_flows.shared.embeddings import MiniLMEmbeddings

        export_synthetic.write(export, *export_synthetic.export(graph, queries,
                                                                MiniLMEmbeddings()))
    result: dict[str, Any] = {"params": vars(args) | {"data_dir": str(args.data_dir),
                                                      "work": str(args.work)},
                              "loadavg_start": os.getloadavg()}
    result["ours_before"] = run_ours(args, graph, queries, log)
    peer_out = args.work / f"lightrag_{label}.json"
    cmd = [args.peer_python, str(HERE / "peer_lightrag.py"), "--export", str(export),
           "--work-dir", str(args.work / f"lightrag_{label}"), "--out", str(peer_out),
           "--top-k", str(args.top_k)]
    log("peer: " + " ".join(cmd))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    result["ours_after"] = run_ours(args, graph, queries, log)
    result["loadavg_end"] = os.getloadavg()
    theirs = json.loads(peer_out.read_text())
    summary = summarize(result, theirs)
    result["summary"] = summary
    (args.work / f"compare_{label}.json").write_text(json.dumps(result, indent=1, default=str))
    print(markdown(summary))
    return 0


def summarize(result: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    reps = result["ours_before"] + result["ours_after"]
    ours_all = [r["knowledge_ms"] for rep in reps for r in rep["records"]]
    ours = rl.pct(ours_all)
    out: dict[str, Any] = {
        "ours": ours,
        "ours_passes": [rep["ours"]["retrieve_knowledge_ms"] for rep in reps],
        "ours_hit_rate": {k: v["hit_rate"] for k, v in reps[0]["ours"]["per_kind_ms"].items()},
        "ours_rss": [rep["rss_after_queries"] for rep in reps],
        "ours_fallback_by_kind": {k: v["fallback"]
                                  for k, v in reps[0]["ours"]["per_kind_ms"].items()},
        "theirs": {}, "peer_versions": theirs["versions"], "peer_settings": theirs["settings"],
        "peer_kg": theirs["kg"], "peer_insert_s": theirs["insert_s"],
        "peer_rss": {"start": theirs["rss_start"], "after_insert": theirs["rss_after_insert"],
                     "end": theirs["rss_end"]},
        "peer_llm_calls": theirs["llm_calls"], "peer_loadavg": [theirs["loadavg_start"],
                                                               theirs["loadavg_end"]],
    }
    for mode, m in theirs["modes"].items():
        t = m["ms"]
        out["theirs"][mode] = {
            "ms": t, "hit_rate": m["hit_rate"],
            "ratio_p50": round(ours["p50"] / t["p50"], 3),
            "ratio_p95": round(ours["p95"] / t["p95"], 3),
            "ratio_p99": round(ours["p99"] / t["p99"], 3),
            "mean_entities": m["mean_entities"], "mean_relations": m["mean_relations"]}
    return out


def markdown(s: dict[str, Any]) -> str:
    o = s["ours"]
    lines = ["| system / mode | n | p50 ms | p95 ms | p99 ms | ours/theirs p50 | p95 | p99 |",
             "|---|---|---|---|---|---|---|---|",
             f"| krag retrieve_knowledge | {o['n']} | {o['p50']} | {o['p95']} | {o['p99']} "
             "| – | – | – |"]
    for mode, t in s["theirs"].items():
        m = t["ms"]
        lines.append(f"| LightRAG {mode} | {m['n']} | {m['p50']} | {m['p95']} | {m['p99']} | "
                     f"{t['ratio_p50']} | {t['ratio_p95']} | {t['ratio_p99']} |")
    kinds = [k for k, v in s["ours_hit_rate"].items() if v is not None]
    lines += ["", "| target found | " + " | ".join(kinds) + " |",
              "|---|" + "---|" * len(kinds),
              "| krag | " + " | ".join(f"{s['ours_hit_rate'][k]:.0%}" for k in kinds) + " |"]
    for mode, t in s["theirs"].items():
        lines.append(f"| LightRAG {mode} | "
                     + " | ".join(f"{t['hit_rate'][k]:.0%}" for k in kinds) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
