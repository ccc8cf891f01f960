"""The nearest facts (storage.search.fact_vector) against a real PostgreSQL: candidates from
the HNSW index over the fact vectors' sign bits (migration 0018), re-ranked by exact cosine."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import text

from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids, search
from storage.bulk import vector_literal
from tests.pg_fixtures import TEST_DIM, open_app_store

FACTS = 400


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _facts(store: KnowledgeStore, vectors: np.ndarray, scope: str = "default") -> list[str]:
    """One fact per vector between two entities of one chunk; returns the facts' ids."""
    doc = DocumentIn(scope=scope, source="src", uri="facts.md",
                     content_hash=ids.content_hash("facts"))
    (chunk,) = store.sync_document(doc, ["facts"]).new_chunk_ids
    a = EntityIn("Ada", "person", scope, "", 0.9, None, (chunk,))
    b = EntityIn("Basel", "place", scope, "", 0.9, None, (chunk,))
    rels = [RelationIn(a.id, f"relates_{i}", b.id, f"Ada relates to Basel {i}.", scope, 0.8,
                       v.tolist(), chunk_ids=(chunk,)) for i, v in enumerate(vectors)]
    store.write_graph([a, b], rels)
    with store.connect(autocommit=True) as conn:
        conn.execute(text("ANALYZE relations"))
    return [r.id for r in rels]


@pytest.fixture
def facts(store: KnowledgeStore) -> tuple[KnowledgeStore, np.ndarray, list[str]]:
    vectors = _unit(np.random.default_rng(11).standard_normal((FACTS, TEST_DIM)))
    return store, vectors, _facts(store, vectors)


def test_the_relations_index_holds_the_vectors_sign_bits(store: KnowledgeStore) -> None:
    with store.connect() as conn:
        defs = dict(conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'relations'")).all())
    assert "relations_embedding_hnsw" not in defs  # the full-vector index is gone
    bq = defs["relations_embedding_bq_hnsw"]
    assert f"binary_quantize(embedding))::bit({TEST_DIM})" in bq and "bit_hamming_ops" in bq


def test_nearest_facts_come_from_the_bit_index_in_exact_cosine_order(facts) -> None:
    store, vectors, fact_ids = facts
    rng = np.random.default_rng(3)
    near = [17, 230, 391]  # three facts close to the question, at rising distances
    question = _unit(vectors[near[0]] + 0.02 * rng.standard_normal(TEST_DIM))
    vectors[near[1]] = _unit(question + 0.05 * rng.standard_normal(TEST_DIM))
    vectors[near[2]] = _unit(question + 0.08 * rng.standard_normal(TEST_DIM))
    with store.connect() as conn:
        for i in near[1:]:
            conn.execute(text("UPDATE relations SET embedding = CAST(:v AS vector) WHERE id = :id"),
                         {"v": vector_literal(vectors[i].tolist()), "id": fact_ids[i]})
        conn.commit()
        hits = search.fact_vector(conn, ["default"], question.tolist(), 5, ef_search=100)
        conn.rollback()
        conn.exec_driver_sql("SET LOCAL enable_seqscan = off")  # 400 rows: force the index
        plan = "\n".join(conn.execute(text("EXPLAIN " + search._BY_VECTOR.format(
            columns="r.id", valid="true", bits=TEST_DIM)), {
                "s": ["default"], "v": vector_literal(question.tolist()), "n": 5,
                "pool": 25}).scalars())
    assert "relations_embedding_bq_hnsw" in plan, plan
    cosine = vectors @ question
    exact = [fact_ids[i] for i in np.argsort(-cosine)[:5]]
    assert [h.fact.id for h in hits][:3] == [fact_ids[i] for i in near]
    assert [h.fact.id for h in hits] == exact  # the re-rank is by exact cosine
    by_id = dict(zip(fact_ids, cosine, strict=True))
    for h in hits:
        assert h.similarity == pytest.approx(by_id[h.fact.id], abs=1e-5)
        assert h.method == "vector"


def test_the_candidates_are_oversampled_from_the_facts_asked(facts) -> None:
    store, _, _ = facts
    question = _unit(np.random.default_rng(5).standard_normal(TEST_DIM)).tolist()
    with store.connect() as conn:
        assert len(search.fact_vector(conn, ["default"], question, 7, ef_search=1)) == 7
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == \
            str(7 * search.FACT_OVERSAMPLE)
    with store.connect() as conn:
        search.fact_vector(conn, ["default"], question, 3, ef_search=400)
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == "400"
    with store.connect() as conn:
        assert search.fact_vector(conn, ["default"], question, 0) == []
        assert search.fact_vector(conn, ["elsewhere"], question, 3) == []


def test_reembedding_to_another_dimension_rebuilds_the_bit_index(db_url: str) -> None:
    store = KnowledgeStore.open(db_url, embedding_model="x", embedding_dim=768,
                                check_embedding=False)
    store.reset_embeddings("other:model", 768)
    store.close()
    store = open_app_store(db_url, embedding_model="other:model", embedding_dim=768)
    try:
        vectors = _unit(np.random.default_rng(2).standard_normal((20, 768)))
        fact_ids = _facts(store, vectors)
        with store.connect() as conn:
            bq = conn.execute(text("SELECT indexdef FROM pg_indexes "
                                   "WHERE indexname = 'relations_embedding_bq_hnsw'")).scalar()
            hits = search.fact_vector(conn, ["default"], vectors[4].tolist(), 3)
        assert "::bit(768)" in bq
        assert hits[0].fact.id == fact_ids[4] and hits[0].similarity == pytest.approx(1.0)
    finally:
        store.close()


def test_vector_indexes_dropped_for_a_load_come_back_with_the_bit_index(
        store: KnowledgeStore) -> None:
    def names() -> set[str]:
        with store.connect() as conn:
            return set(conn.execute(text(
                "SELECT indexname FROM pg_indexes WHERE indexname LIKE '%embedding%'")).scalars())

    before = names()
    assert {"relations_embedding_bq_hnsw", "entities_embedding_hnsw",
            "chunks_embedding_hnsw"} <= before
    store.drop_vector_indexes()
    assert not names()
    store.create_vector_indexes()
    assert names() == before
