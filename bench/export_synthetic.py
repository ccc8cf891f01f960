"""Export the synthetic benchmark graph and queries for a peer system (run with our venv).

Usage::

    python -m bench.export_synthetic --entities 10000 --relations 30000 --queries 240 \\
        --out /tmp/krag-peer/synthetic_10k [--text-vectors] [--hash-embedder]

Writes ``<out>.json`` (entities, relations, chunks, queries with the heuristic analysis terms
our ``retrieve_knowledge`` node derives) and ``<out>.npz`` (float32 vectors):

- ``entity``/``relation``: exactly the vectors :func:`bench.synthetic.load_graph` stores
  (cluster centre + noise; not text embeddings);
- ``query``: the MiniLM vector of each query text (what our retrieval gets for its vector
  fallback; ``--hash-embedder`` gives seeded random vectors instead, for tests);
- with ``--text-vectors``: ``entity_text`` (MiniLM of ``"name\\nsummary"``) and
  ``relation_text`` (MiniLM of the fact sentence), for a quality run where vector
  similarity means something.

Provenance is reproduced exactly as ``load_graph`` draws it (same seeded generators, same
order): the 1,000 chunks of the 20 synthetic documents, 1-2 chunks per entity, one per fact.
The peer script (:mod:`bench.peer_lightrag`, run in the peer's own venv) only reads these
files; it imports nothing from krag.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import synthetic
from bench.retrieval_latency import HashEmbedder, analysis_terms
from storage.documents import chunk_ids_for

FORMAT = 1


def chunk_texts(graph: synthetic.SyntheticGraph, scope: str = synthetic.SCOPE,
                n_docs: int = 20, per_doc: int = 50) -> list[dict[str, str]]:
    """The provenance chunks ``synthetic._chunks`` writes: id, document uri, content."""
    out: list[dict[str, str]] = []
    for doc, texts in synthetic.provenance_documents(graph, scope, n_docs, per_doc):
        out.extend({"id": cid, "uri": doc.uri, "content": t}
                   for (cid, _), t in zip(chunk_ids_for(doc.id, texts), texts, strict=True))
    return out


def provenance(graph: synthetic.SyntheticGraph, chunk_ids: Sequence[str]
               ) -> tuple[list[list[str]], list[str]]:
    """Chunk ids per entity and per fact, drawn exactly as ``load_graph`` draws them."""
    rng = random.Random(graph.seed + 11)
    ent: list[list[str]] = []
    for _ in graph.entities:
        ent.append(list(rng.sample(chunk_ids, 2 if rng.random() < 0.3 else 1)))
        rng.random()  # the confidence
    rel: list[str] = []
    for _ in graph.relations:
        rng.random()  # the confidence
        rel.append(rng.choice(chunk_ids))
    return ent, rel


def stored_vectors(graph: synthetic.SyntheticGraph, batch_size: int = 10_000
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Entity and relation vectors exactly as ``load_graph`` computes them (per batch)."""
    centres = synthetic.cluster_centres(graph)
    ent = np.zeros((len(graph.entities), synthetic.DIM), dtype=np.float32)
    for start in range(0, len(graph.entities), batch_size):
        stop = min(len(graph.entities), start + batch_size)
        ent[start:stop] = synthetic.entity_vectors(graph, start, stop, centres)
    rel = np.zeros((len(graph.relations), synthetic.DIM), dtype=np.float32)
    for start in range(0, len(graph.relations), batch_size):
        stop = min(len(graph.relations), start + batch_size)
        rel[start:stop] = synthetic.relation_vectors(graph, start, stop, ent)
    return ent, rel


def export(graph: synthetic.SyntheticGraph, queries: Sequence[synthetic.BenchQuery],
           embedder: Any, *, text_vectors: bool = False, batch_size: int = 10_000
           ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The JSON document and the arrays of the export."""
    chunks = chunk_texts(graph)
    ent_prov, rel_chunk = provenance(graph, [c["id"] for c in chunks])
    ent_vec, rel_vec = stored_vectors(graph, batch_size)
    rows = []
    for q in queries:
        terms, predicates = analysis_terms(q.text)
        rows.append({"kind": q.kind, "text": q.text, "variant": q.variant,
                     "targets": list(q.targets), "terms": terms, "predicates": predicates})
    arrays = {"entity": ent_vec, "relation": rel_vec,
              "query": np.asarray([embedder.embed_query(q.text) for q in queries],
                                  dtype=np.float32).reshape(len(queries), synthetic.DIM)}
    if text_vectors:
        arrays["entity_text"] = np.asarray(embedder.embed_documents(
            [f"{e.name}\n{e.summary}" for e in graph.entities]), dtype=np.float32)
        arrays["relation_text"] = np.asarray(embedder.embed_documents(
            [r.fact for r in graph.relations]), dtype=np.float32)
    doc = {
        "format": FORMAT, "seed": graph.seed, "dim": synthetic.DIM,
        "embedder": getattr(embedder, "model_name", type(embedder).__name__),
        "stats": graph.stats,
        "entities": [{"name": e.name, "type": e.type, "summary": e.summary,
                      "chunks": ent_prov[i]} for i, e in enumerate(graph.entities)],
        "relations": [{"subject": r.subject, "object": r.object, "predicate": r.predicate,
                       "fact": r.fact, "chunk": rel_chunk[i]}
                      for i, r in enumerate(graph.relations)],
        "chunks": chunks,
        "queries": rows,
        "arrays": sorted(arrays),
    }
    return doc, arrays


def write(out: Path, doc: dict[str, Any], arrays: dict[str, np.ndarray]) -> tuple[Path, Path]:
    out.parent.mkdir(parents=True, exist_ok=True)
    jpath, npath = out.with_suffix(".json"), out.with_suffix(".npz")
    jpath.write_text(json.dumps(doc))
    np.savez(npath, **arrays)
    return jpath, npath


class _HashDocs(HashEmbedder):
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.export_synthetic",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=10_000)
    ap.add_argument("--relations", type=int, default=30_000)
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", type=Path, required=True, help="path without suffix")
    ap.add_argument("--text-vectors", action="store_true",
                    help="also MiniLM vectors of entity and fact texts")
    ap.add_argument("--hash-embedder", action="store_true")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    graph = synthetic.generate_graph(args.entities, args.relations, args.seed)
    queries = synthetic.generate_queries(graph, args.queries)
    if args.hash_embedder:
        embedder: Any = _HashDocs()
    else:
        from graph_flows.shared.embeddings import MiniLMEmbeddings

        embedder = MiniLMEmbeddings()
    doc, arrays = export(graph, queries, embedder, text_vectors=args.text_vectors)
    paths = write(args.out, doc, arrays)
    print(f"wrote {paths[0]} and {paths[1]} in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
