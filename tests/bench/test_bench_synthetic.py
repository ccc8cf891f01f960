"""The retrieval benchmark stays runnable: small synthetic graph, load, one short run.

No timing assertions: only that generation is seeded, the load goes through the bulk path,
every query kind exists and the report carries the expected keys.
"""

from __future__ import annotations

import json

from sqlalchemy import text

from bench import retrieval_latency as rl
from bench import synthetic


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
    vecs = synthetic.entity_vectors(a, 0, 50, synthetic.cluster_centres(a))
    assert vecs.shape == (50, synthetic.DIM)
    assert abs(float((vecs**2).sum(axis=1).mean()) - 1.0) < 1e-4


def test_load_and_short_benchmark_run(store, tmp_path) -> None:
    graph = synthetic.generate_graph(300, 900, seed=3)
    load = synthetic.load_graph(store, graph, batch_size=100)
    assert load["total_s"] > 0 and "index_relations_embedding_hnsw_s" in load
    counts = store.counts(synthetic.SCOPE)
    assert counts["entities"] == 300 and counts["relations"] == 900
    with store.connect() as conn:
        indexes = set(conn.execute(text(
            "SELECT indexname FROM pg_indexes WHERE tablename IN "
            "('entities', 'relations', 'entity_words')")).scalars())
        unprovenanced = conn.execute(text(
            "SELECT count(*) FROM entities e WHERE NOT EXISTS "
            "(SELECT 1 FROM entity_provenance p WHERE p.entity_id = e.id)")).scalar()
    assert set(synthetic.LOAD_INDEXES) <= indexes
    assert unprovenanced == 0

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
    assert report["literal"]["queries"] == 6
    assert report["literal"]["errors"] == 0, report["literal"]["error_examples"]
    plans = explain.read_text()
    assert "Execution Time" in plans and "entity_fuzzy" in plans
    assert "lit_entity_trigram" in plans
    rep = {**report, "label": "test", "params": {"entities": 300, "relations": 900},
           "load": load, "machine": rl.machine(), "database": rl.database_facts(store)}
    md = rl.markdown(rep)
    assert "| retrieve_knowledge" in md and "literal seed recipe" in md
    json.dumps(rep, default=str)  # serialisable
