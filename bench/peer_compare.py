"""Ours vs LightRAG on the same synthetic graph and queries, in one session (our venv).

Usage::

    python -m bench.peer_compare --entities 100000 --relations 300000 --queries 240 \\
        --peer-python /tmp/peer-venv/bin/python --work /tmp/krag-peer \\
        [--data-dir /tmp/krag-bench] [--recipes ppr split] [--out FILE.json]

Steps: export the graph and queries (:mod:`bench.export_synthetic`, reused when present),
run ours over the queries, run :mod:`bench.peer_lightrag` with the peer's python, run ours
again, and print the comparison. Ours and theirs never run at the same time (the embedded
PostgreSQL is stopped while the peer runs).

Ours is what ``python -m bench.retrieval_latency`` measures: the database
``krag_bench_<size>`` of ``--data-dir`` (reused when loaded with the same parameters, loaded
otherwise), its tables prewarmed, then, for each recipe of ``--recipes`` (default: the query
graph's), a query process spawned for the purpose (so its memory is a query process's, not
this driver's, which holds the generated graph) doing the ``retrieve_knowledge`` node's work
for every query after a warm-up.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench import export_synthetic, synthetic
from bench import retrieval_latency as rl
from graph_flows.query import retrieval

HERE = Path(__file__).resolve().parent
KEPT = ("queries", "config", "embedder", "embedding_ms", "rss_before_queries",
        "rss_after_queries", "loadavg_start", "loadavg_after_ours", "loadavg_end",
        "ours_wall_s", "ours_cpu", "ours", "query_process")


def run_ours(args: argparse.Namespace, graph: Any, queries: Sequence[Any], log: Any
             ) -> list[dict[str, Any]]:
    """One report per recipe (and pass), each from its own spawned query process."""
    label = rl.size_label(args.entities)
    dbname = f"krag_bench_{label}"
    params = rl.load_params(args.entities, args.relations, args.seed, args.batch_size)
    warmup = synthetic.generate_queries(graph, args.warmup, seed=args.seed + 5000)
    out = []
    with rl.bench_server(args.data_dir, None) as url, rl.use_access(rl.WHOLE_STORE):
        store, load = rl.prepare_database(url, dbname, params, True, graph, log)
        warmed = rl.prewarm(store)
        log(f"prewarm: {warmed.get('seconds', warmed.get('skipped'))}")
        spawn = multiprocessing.get_context("spawn")
        for _ in range(args.ours_passes):
            for recipe in args.recipes:
                options = {"literal_queries": 0, "explain_path": None, "recipe": recipe,
                           "max_hops": None, "rls_passes": 0}
                with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
                    rep = pool.submit(rl.query_process, rl.with_database(url, dbname),
                                      queries, warmup, False, options).result()
                kept = {k: rep[k] for k in KEPT if k in rep}
                kept["ms"] = [r["knowledge_ms"] for r in rep["records"]]
                kept.update(recipe=recipe or rep["config"]["recipe"], load=load,
                            prewarm=warmed, database=rl.database_facts(store))
                out.append(kept)
        store.close()
    return out


def export_path(args: argparse.Namespace, graph: Any, queries: Sequence[Any], log: Any
                ) -> Path:
    """The export of ``graph`` and ``queries`` (written unless one of this format exists)."""
    export = args.work / f"synthetic_{rl.size_label(args.entities)}"
    jpath = export.with_suffix(".json")
    if jpath.exists() and export.with_suffix(".npz").exists():
        head = json.loads(jpath.read_text())
        if head.get("format") == export_synthetic.FORMAT and head.get("seed") == args.seed \
                and len(head["queries"]) == len(queries):
            log(f"reusing the export {export}")
            return export
    from graph_flows.shared.embeddings import MiniLMEmbeddings

    t = time.perf_counter()
    export_synthetic.write(export, *export_synthetic.export(graph, queries, MiniLMEmbeddings(),
                                                            batch_size=args.batch_size))
    log(f"exported {export} in {time.perf_counter() - t:.1f} s")
    return export


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peer_compare",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--relations", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/krag-bench"))
    ap.add_argument("--peer-python", default="/tmp/peer-venv/bin/python")
    ap.add_argument("--work", type=Path, default=Path("/tmp/krag-peer"))
    ap.add_argument("--out", type=Path, default=None,
                    help="result JSON (default <work>/compare_<size>.json)")
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--recipes", nargs="+", default=[None], choices=retrieval.RECIPES,
                    help="our recipes, each in its own query process (default: the query "
                         "graph's); ratios are against the first")
    ap.add_argument("--ours-passes", type=int, default=1, help="passes before and after")
    args = ap.parse_args(argv)
    if args.entities <= 0 or args.relations < 0 or args.queries <= 0 or args.ours_passes <= 0:
        ap.error("--entities, --queries and --ours-passes must be positive, --relations >= 0")

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    label = rl.size_label(args.entities)
    args.work.mkdir(parents=True, exist_ok=True)
    graph = synthetic.generate_graph(args.entities, args.relations, args.seed)
    queries = synthetic.generate_queries(graph, args.queries)
    export = export_path(args, graph, queries, log)
    result: dict[str, Any] = {
        "params": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "command": "python -m bench.peer_compare " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "machine": rl.machine(), "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
    result["ours_before"] = run_ours(args, graph, queries, log)
    peer_out = args.work / f"lightrag_{label}.json"
    cmd = [args.peer_python, str(HERE / "peer_lightrag.py"), "--export", str(export),
           "--work-dir", str(args.work / f"lightrag_{label}"), "--out", str(peer_out),
           "--top-k", str(args.top_k), "--warmup", str(args.warmup)]
    log("peer: " + " ".join(cmd))
    t = time.perf_counter()
    with (args.work / f"lightrag_{label}.stdout").open("w") as peer_log:
        subprocess.run(cmd, check=True, stdout=peer_log)
    result["peer_wall_s"] = round(time.perf_counter() - t, 1)
    result["ours_after"] = run_ours(args, graph, queries, log)
    result["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["finished"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    theirs = json.loads(peer_out.read_text())
    result["theirs"] = {k: v for k, v in theirs.items() if k != "modes"} | {
        "modes": {m: {k: v for k, v in d.items() if k != "records"}
                  for m, d in theirs["modes"].items()}}
    summary = summarize(result, theirs)
    result["summary"] = summary
    out = args.out or args.work / f"compare_{label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    print(markdown(summary))
    log(f"wrote {out}")
    return 0


def summarize(result: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any]:
    """Ours per recipe (both sides' passes pooled), theirs per mode, and the ratios."""
    reps = result["ours_before"] + result["ours_after"]
    recipes = list(dict.fromkeys(rep["recipe"] for rep in reps))
    ours: dict[str, Any] = {}
    for recipe in recipes:
        mine = [rep for rep in reps if rep["recipe"] == recipe]
        first = mine[0]["ours"]
        ours[recipe] = {
            "ms": rl.pct([ms for rep in mine for ms in rep["ms"]]),
            "passes_ms": [rep["ours"]["retrieve_knowledge_ms"] for rep in mine],
            "with_embedding_passes_ms": [rep["ours"]["retrieve_knowledge_with_embedding_ms"]
                                         for rep in mine],
            "build_context_passes_ms": [rep["ours"]["build_context_ms"] for rep in mine],
            "ran": first["recipe"]["ran"],
            "hit_rate": {k: v["hit_rate"] for k, v in first["per_kind_ms"].items()},
            "mean_entities": {k: v["mean_entities"] for k, v in first["per_kind_ms"].items()},
            "mean_facts": {k: v["mean_facts"] for k, v in first["per_kind_ms"].items()},
            "fallback_by_kind": {k: v["fallback"] for k, v in first["per_kind_ms"].items()},
            "rss": [{"before_queries": rep["rss_before_queries"],
                     "after_queries": rep["rss_after_queries"]} for rep in mine],
            "loadavg": [rep.get("loadavg_start") for rep in mine],
            "cpu_ms_per_query": [rep.get("ours_cpu", {}).get("per_query_ms") for rep in mine]}
        cpu = [c for c in ours[recipe]["cpu_ms_per_query"] if c is not None]
        ours[recipe]["cpu_ms_per_query_mean"] = round(sum(cpu) / len(cpu), 2) if cpu else None
    out: dict[str, Any] = {
        "ours": ours, "theirs": {}, "peer_versions": theirs["versions"],
        "peer_python": theirs.get("python"), "peer_settings": theirs["settings"],
        "peer_kg": theirs["kg"], "peer_stored": theirs.get("stored"),
        "peer_insert_s": theirs["insert_s"], "peer_insert_cpu_s": theirs.get("insert_cpu_s"),
        "peer_prepare_s": theirs.get("prepare_s"),
        "peer_rss": {"start": theirs["rss_start"], "after_insert": theirs["rss_after_insert"],
                     "after_release": theirs.get("rss_after_release"),
                     "end": theirs["rss_end"]},
        "peer_llm_calls": theirs["llm_calls"], "peer_embed_unknown": theirs["embed_unknown"],
        "peer_loadavg": [theirs["loadavg_start"], theirs["loadavg_end"]],
        "ours_load": reps[0]["load"], "ours_database": reps[0]["database"],
    }
    for mode, m in theirs["modes"].items():
        t = m["ms"]
        out["theirs"][mode] = {
            "ms": t, "hit_rate": m["hit_rate"], "rss_after": m.get("rss_after"),
            "mean_entities": m["mean_entities"], "mean_relations": m["mean_relations"],
            "empty": m.get("empty"), "cpu_s_per_query": m.get("cpu_s_per_query"),
            "theirs_slower": {r: {p: round(t[p] / ours[r]["ms"][p], 2)
                                  for p in ("p50", "p95", "p99")} for r in recipes},
            "theirs_cpu_over_ours": {
                r: round(1000 * m["cpu_s_per_query"] / ours[r]["cpu_ms_per_query_mean"], 2)
                for r in recipes if m.get("cpu_s_per_query") and ours[r]["cpu_ms_per_query_mean"]}}
    return out


def markdown(s: dict[str, Any]) -> str:
    recipes = list(s["ours"])
    lines = ["| system / mode | n | p50 ms | p95 ms | p99 ms | CPU ms per query | "
             + " | ".join(f"theirs slower than {r} (p50 / p95 / CPU)" for r in recipes) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(recipes)]
    for r, o in s["ours"].items():
        m = o["ms"]
        lines.append(f"| krag retrieve_knowledge ({r}) | {m['n']} | {m['p50']} | {m['p95']} "
                     f"| {m['p99']} | {o['cpu_ms_per_query_mean']} | "
                     + " | ".join("–" for _ in recipes) + " |")
    for mode, t in s["theirs"].items():
        m = t["ms"]
        cpu = t.get("cpu_s_per_query")
        lines.append(f"| LightRAG {mode} | {m['n']} | {m['p50']} | {m['p95']} | {m['p99']} | "
                     f"{round(1000 * cpu, 2) if cpu else '?'} | "
                     + " | ".join(f"{t['theirs_slower'][r]['p50']}x / "
                                  f"{t['theirs_slower'][r]['p95']}x / "
                                  f"{t['theirs_cpu_over_ours'].get(r, '?')}x"
                                  for r in recipes) + " |")
    kinds = [k for k, v in s["ours"][recipes[0]]["hit_rate"].items() if v is not None]
    lines += ["", "| target found | " + " | ".join(kinds) + " |",
              "|---|" + "---|" * len(kinds)]
    for r, o in s["ours"].items():
        lines.append(f"| krag ({r}) | "
                     + " | ".join(f"{o['hit_rate'][k]:.0%}" for k in kinds) + " |")
    for mode, t in s["theirs"].items():
        lines.append(f"| LightRAG {mode} | "
                     + " | ".join(f"{t['hit_rate'][k]:.0%}" for k in kinds) + " |")
    lines += ["", "| memory (MB) | RSS | peak RSS (VmHWM) |", "|---|---|---|"]
    for r, o in s["ours"].items():
        for i, x in enumerate(o["rss"]):
            a = x["after_queries"]
            lines.append(f"| krag query process ({r}, pass {i + 1}) | {a.get('rss_mb', '?')} "
                         f"| {a['maxrss_mb']} |")
    p = s["peer_rss"]
    lines.append(f"| LightRAG process (after insert / export released / end) | "
                 f"{p['after_insert'].get('rss_mb', '?')} / "
                 f"{(p.get('after_release') or {}).get('rss_mb', '?')} / "
                 f"{p['end'].get('rss_mb', '?')} "
                 f"| {p['end']['maxrss_mb']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
