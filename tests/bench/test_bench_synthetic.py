"""The retrieval benchmark stays runnable: small synthetic graph, load, one short run.

No timing assertions: only that generation is seeded, the chunks agree with the facts and
entities they are the provenance of, the load goes through the bulk path (chunks embedded,
indexes rebuilt, full-text statistics built), every query kind exists with a natural question,
and the report carries the expected keys with the ``ppr`` recipe actually run.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from bench import memory, synthetic
from bench import retrieval_latency as rl
from storage import evidence


def test_generation_is_seeded_and_varied() -> None:
    a = synthetic.generate_graph(300, 900, seed=7)
    b = synthetic.generate_graph(300, 900, seed=7)
    assert [e.name for e in a.entities] == [e.name for e in b.entities]
    assert [r.fact for r in a.relations] == [r.fact for r in b.relations]
    assert len({(e.name.casefold(), e.type) for e in a.entities}) == 300
    assert len({(r.subject, r.predicate, r.object) for r in a.relations}) == 900
    assert all(r.subject != r.object for r in a.relations)
    assert {e.type for e in a.entities} >= {"person", "organization", "technology", "concept"}
    assert sum(e.alias_of is not None for e in a.entities) > 0
    assert sum("data" in e.summary for e in a.entities) > 100  # shared vocabulary
    queries = synthetic.generate_queries(a, 60)
    assert queries == synthetic.generate_queries(b, 60)
    kinds = {q.kind for q in queries}
    assert kinds == set(synthetic.QUERY_KINDS)
    names = {e.name for e in a.entities}
    assert any(q.text in names for q in queries if q.kind == "exact")
    assert all(q.text not in names for q in queries if q.kind == "typo")
    assert all(q.question.endswith(("?", ".")) for q in queries)
    assert all(q.targets[0] in q.question for q in queries if q.kind in ("exact", "multiword"))
    assert pickle.loads(pickle.dumps(queries)) == queries  # sent to the query process
    vecs = synthetic.entity_vectors(a, 0, 50, synthetic.cluster_centres(a))
    assert vecs.shape == (50, synthetic.DIM)
    assert abs(float((vecs**2).sum(axis=1).mean()) - 1.0) < 1e-4


def test_chunks_are_the_provenance_of_what_they_say() -> None:
    graph = synthetic.generate_graph(300, 900, seed=7)
    layout = synthetic.chunk_layout(graph)
    again = synthetic.chunk_layout(graph)  # seeded
    assert again.chunk_ids == layout.chunk_ids and again.entity_chunks == layout.entity_chunks
    assert again.relation_chunk.tolist() == layout.relation_chunk.tolist()
    texts = [t for _, part in layout.documents for t in part]
    assert len(texts) == len(layout.chunk_ids) == 100  # one per 3 entities
    assert len(layout.documents) == 2 and len(set(layout.chunk_ids)) == 100
    assert all(1 <= sum(r.fact in t for r in graph.relations) <= 20 for t in texts)
    for i, r in enumerate(graph.relations):
        assert r.fact in texts[layout.relation_chunk[i]]
    for e, chunks in zip(graph.entities, layout.entity_chunks, strict=True):
        assert chunks and all(e.name in texts[c] for c in chunks)
    mentioned = [{c for i, r in enumerate(graph.relations) if e in (r.subject, r.object)
                  for c in [int(layout.relation_chunk[i])]} for e in range(300)]
    assert all(set(layout.entity_chunks[e]) == m for e, m in enumerate(mentioned) if m)
    counts = sorted(len(c) for c in layout.entity_chunks)
    assert counts[-1] >= 3 * counts[len(counts) // 2]  # hubs are in many chunks


def test_load_and_short_benchmark_run(store, tmp_path) -> None:
    graph = synthetic.generate_graph(300, 900, seed=3)
    load = synthetic.load_graph(store, graph, batch_size=100)
    assert load["total_s"] > 0 and "index_relations_embedding_bq_hnsw_s" in load
    assert "index_chunks_embedding_hnsw_s" in load and load["chunks"]["chunks"] == 100
    counts = store.counts(synthetic.SCOPE)
    assert counts["entities"] == 300 and counts["relations"] == 900
    with store.connect() as conn:
        indexes = set(conn.execute(text(
            "SELECT indexname FROM pg_indexes WHERE tablename IN "
            "('entities', 'relations', 'entity_words', 'chunks')")).scalars())
        unprovenanced = conn.execute(text(
            "SELECT count(*) FROM entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM entity_provenance p WHERE p.entity_id = e.id)")).scalar()
        provenance = conn.execute(text("SELECT count(*) FROM entity_provenance")).scalar()
        misplaced = conn.execute(text(
            "SELECT count(*) FROM relations r JOIN relation_provenance p ON p.relation_id = r.id "
            "JOIN chunks c ON c.id = p.chunk_id WHERE strpos(c.text, r.fact) = 0")).scalar()
        coverage = evidence.embedding_coverage(conn, [synthetic.SCOPE])
        stats = conn.execute(text(
            "SELECT chunks FROM chunk_scope_stats WHERE scope = :s"),
            {"s": synthetic.SCOPE}).scalar()
    assert set(synthetic.LOAD_INDEXES) <= indexes
    assert unprovenanced == 0 and misplaced == 0
    assert provenance == load["chunks"]["entity_provenance"]
    assert coverage == (100, 100) and stats == 100

    queries = synthetic.generate_queries(graph, 24)
    explain = tmp_path / "explain.txt"
    report = rl.benchmark(store, synthetic.SCOPE, queries,
                          embedder=rl.HashEmbedder(), literal_queries=6,
                          warmup=queries[:2], explain_path=explain)
    for key in ("ours", "literal", "embedding_ms", "rss_after_queries", "records", "slowest"):
        assert key in report
    ours = report["ours"]
    for key in ("retrieve_knowledge_ms", "retrieve_ms", "build_context_ms", "per_method_ms",
                "per_kind_ms", "fallback", "retrieve_knowledge_with_embedding_ms"):
        assert key in ours
    assert ours["retrieve_knowledge_ms"]["n"] == 24
    assert set(ours["per_kind_ms"]) == set(synthetic.QUERY_KINDS)
    assert {"entity_like", "entity_trigram", "fact_trigram"} <= set(ours["per_method_ms"])
    assert ours["errors"] == 0, ours["error_examples"]
    # the default recipe ran, on every query, with its passages
    assert report["config"]["recipe"] == "ppr"
    assert ours["recipe"]["ran"] == {"ppr": 24} and ours["recipe"]["other_than_requested"] == 0
    assert {"chunk_vector", "chunk_fulltext", "neighbourhood"} <= set(ours["per_method_ms"])
    assert {"search", "neighbourhood", "pagerank", "rows"} <= set(ours["ppr_steps_ms"])
    assert ours["ppr_steps_ms"]["pagerank"]["n"] == 24
    assert ours["mean_passages"] > 0 and ours["embedded"] == 24
    assert ours["per_method_ms"]["chunk_fulltext"]["mean_results"] > 0
    assert report["literal"]["queries"] == 6
    assert report["literal"]["errors"] == 0, report["literal"]["error_examples"]
    plans = explain.read_text()
    assert "Execution Time" in plans and "entity_fuzzy" in plans
    assert "lit_entity_trigram" in plans
    assert "--- chunk_fulltext" in plans and "--- neighbourhood" in plans
    assert "setup: SET LOCAL hnsw.ef_search" in plans
    rep = {**report, "label": "test", "params": {"entities": 300, "relations": 900},
           "load": load, "machine": rl.machine(), "database": rl.database_facts(store)}
    md = rl.markdown(rep)
    assert "| retrieve_knowledge" in md and "literal seed recipe" in md
    assert "| pagerank |" in md and "other than requested: 0" in md
    json.dumps(rep, default=str)  # serialisable


def test_query_process_measures_itself(store, db_url: str) -> None:
    graph = synthetic.generate_graph(120, 360, seed=5)
    synthetic.load_graph(store, graph, batch_size=100)
    queries = synthetic.generate_queries(graph, 6)
    rep = rl.query_process(db_url, queries,
                           queries[:1], True, {"literal_queries": 0, "recipe": "ppr"})
    assert rep["query_process"]["spawned"] and rep["rss_after_queries"]["maxrss_mb"] > 0
    assert rep["ours"]["recipe"]["ran"] == {"ppr": 6}
    assert "literal" not in rep


def test_a_spawned_process_reports_its_own_peak_not_its_parents() -> None:
    held = bytearray(400 * 2**20)  # pages written, so resident in this process
    held[::4096] = b"\x01" * len(held[::4096])
    # a new interpreter forked and exec'd from this one (as a spawned worker is), running
    # bench.memory's own function; getrusage's ru_maxrss survives exec, so it said >= 400
    # there (inherited). Not a multiprocessing "spawn" pool: its child re-runs the parent's
    # __main__, which an earlier test of the same xdist worker (Streamlit's AppTest) can
    # leave pointing at a script that fails outside its runner.
    root = Path(memory.__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", "from bench import memory; print(memory.peak_rss_mb())"],
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, capture_output=True,
        text=True, check=True, timeout=120)
    child = float(out.stdout)
    assert memory.peak_rss_mb() >= 400
    assert child < 200, child  # getrusage's ru_maxrss said >= 400 here (inherited)
