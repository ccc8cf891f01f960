"""Export the synthetic benchmark graph and queries for a peer system (run with our venv).

Usage::

    python -m bench.export_synthetic --entities 10000 --relations 30000 --queries 240 \\
        --out /tmp/krag-peer/synthetic_10k [--text-vectors] [--hash-embedder]

Writes ``<out>.json`` (entities, relations, chunks, queries with the heuristic analysis terms
our ``retrieve_knowledge`` node derives) and ``<out>.npz`` (float32 vectors):

- ``entity``/``relation``/``chunk``: exactly the vectors :func:`bench.synthetic.load_graph`
  stores (cluster centre + noise, chunks the mean direction of their facts; not text
  embeddings);
- ``query``: the MiniLM vector of each query text (what our retrieval gets for its vector
  fallback; ``--hash-embedder`` gives seeded random vectors instead, for tests);
- with ``--text-vectors``: ``entity_text`` (MiniLM of ``"name\\nsummary"``) and
  ``relation_text`` (MiniLM of the fact sentence), for a quality run where vector
  similarity means something.

Chunks and provenance are exactly what ``load_graph`` writes
(:func:`bench.synthetic.chunk_layout`, generator 2): about one chunk per three entities, in
documents of 50; a fact's chunk is the one whose text holds its sentence, an entity's are the
chunks whose facts name it (a hub is in many).
The peer script (:mod:`bench.peer_lightrag`, run in the peer's own venv) only reads these
files; it imports nothing from krag.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import synthetic
from bench.retrieval_latency import HashEmbedder, analysis_terms
from storage.documents import chunk_ids_for

FORMAT = 2  # 2: the chunks of synthetic.chunk_layout (generator 2), with vectors


def layout_export(graph: synthetic.SyntheticGraph, ent_vec: np.ndarray, rel_vec: np.ndarray,
                  batch_size: int = 10_000, scope: str = synthetic.SCOPE
                  ) -> tuple[list[dict[str, str]], list[list[str]], list[str], np.ndarray]:
    """The chunks ``load_graph`` writes (:func:`bench.synthetic.chunk_layout`): id, document
    uri and content of each; the chunk ids of each entity and of each fact; and each chunk's
    stored vector, computed as ``load_graph`` computes it (the summed vectors of its facts and
    appended summaries, per batch, in the same order)."""
    layout = synthetic.chunk_layout(graph, scope)
    chunks: list[dict[str, str]] = []
    for doc, texts in layout.documents:
        chunks.extend({"id": cid, "uri": doc.uri, "content": t}
                      for (cid, _), t in zip(chunk_ids_for(doc.id, texts), texts, strict=True))
    ids = layout.chunk_ids
    ent = [[ids[c] for c in cs] for cs in layout.entity_chunks]
    rel = [ids[c] for c in layout.relation_chunk.tolist()]
    sums = np.zeros((len(ids), synthetic.DIM), dtype=np.float32)
    for e, c in layout.summary_chunk.items():
        sums[c] += ent_vec[e]
    for start in range(0, len(graph.relations), batch_size):
        stop = min(len(graph.relations), start + batch_size)
        np.add.at(sums, layout.relation_chunk[start:stop], rel_vec[start:stop])
    vec = np.zeros((len(ids), synthetic.DIM), dtype=np.float32)
    for start in range(0, len(ids), batch_size):
        stop = min(len(ids), start + batch_size)
        vec[start:stop] = synthetic.chunk_vectors(graph, sums, start, stop)
    return chunks, ent, rel, vec


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
    ent_vec, rel_vec = stored_vectors(graph, batch_size)
    chunks, ent_prov, rel_chunk, chunk_vec = layout_export(graph, ent_vec, rel_vec, batch_size)
    rows = []
    for q in queries:
        terms, predicates = analysis_terms(q.text)
        rows.append({"kind": q.kind, "text": q.text, "variant": q.variant,
                     "targets": list(q.targets), "terms": terms, "predicates": predicates})
    arrays = {"entity": ent_vec, "relation": rel_vec, "chunk": chunk_vec,
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
