"""Chunks as evidence (migration 0006, storage.evidence) on a small stored corpus."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from graph_flows.services import scopes as scope_service
from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import (
    DocumentIn,
    EntityIn,
    KnowledgeStore,
    RelationIn,
    evidence,
    fulltext,
    ids,
    synonyms,
)
from tests.evidence_corpus import DOCS, P1, P2, QUESTION, write_corpus

_EMBEDDER = MiniLMEmbeddings()


@pytest.fixture
def corpus(store: KnowledgeStore) -> dict[str, str]:
    return write_corpus(store, _EMBEDDER)


def test_migration_adds_generated_tsv_and_indexed_embedding(store: KnowledgeStore,
                                                            corpus: dict[str, str]) -> None:
    with store.connect() as conn:
        tsv = conn.execute(text("SELECT tsv::text FROM chunks WHERE id = :i"),
                           {"i": corpus[P1]}).scalar()
        dim = conn.execute(text(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
            "AND attname = 'embedding'")).scalar()
        indexes = set(conn.execute(text(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")).scalars())
    assert "'velmor'" in tsv and "'found'" in tsv  # stemmed, stop words dropped
    assert dim == store.embedding_dim
    assert {"chunks_tsv_gin", "chunks_embedding_hnsw"} <= indexes


def test_fill_chunk_embeddings_and_coverage(store: KnowledgeStore,
                                            corpus: dict[str, str]) -> None:
    with store.connect() as conn:
        assert evidence.embedding_coverage(conn, "default") == (len(DOCS), 0)
        assert not evidence.has_chunk_embeddings(conn, ["default"])
    calls: list[int] = []

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return _EMBEDDER.embed_documents(texts)

    with store.transaction() as conn:
        assert evidence.fill_chunk_embeddings(conn, embed, chunk_ids=[corpus[P1]]) == 1
        assert evidence.fill_chunk_embeddings(conn, embed, batch=2, limit=3) == 3
        assert evidence.fill_chunk_embeddings(conn, embed, batch=2) == len(DOCS) - 4
        assert evidence.fill_chunk_embeddings(conn, embed) == 0
    assert calls[0] == 1 and max(calls) <= 2
    with store.connect() as conn:
        assert evidence.embedding_coverage(conn) == (len(DOCS), len(DOCS))
        assert evidence.has_chunk_embeddings(conn, ["other", "default"])
        assert not evidence.has_chunk_embeddings(conn, ["other"])


def test_fill_chunk_evidence_writes_what_is_missing_in_one_version(
        store: KnowledgeStore, corpus: dict[str, str]) -> None:
    """Vector and spans of a chunk in one UPDATE; a chunk with both is left alone, and one
    with a vector keeps it (the given vector only fills a missing one)."""
    first, second = corpus[P1], corpus[P2]
    with store.connect() as conn:
        body = dict(conn.execute(text("SELECT id, text FROM chunks WHERE id = ANY(:i)"),
                                 {"i": [first, second]}).all())
    given = {i: _EMBEDDER.embed_query(body[i]) for i in (first, second)}
    scanned: list[str] = []

    def scan(chunk_text: str) -> list[int]:
        scanned.append(chunk_text)
        return [0, 3]

    with store.transaction() as conn:
        assert evidence.fill_chunk_embeddings(conn, _EMBEDDER.embed_documents,
                                              chunk_ids=[second]) == 1
        kept = conn.execute(text("SELECT embedding::text FROM chunks WHERE id = :i"),
                            {"i": second}).scalar()
        updates = conn.execute(text(
            "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'chunks'")).scalar()
        assert evidence.fill_chunk_evidence(conn, given, scan) == (1, 2)
        assert conn.execute(text(
            "SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relname = 'chunks'")
            ).scalar() - updates == 2  # one row version per chunk
        assert evidence.fill_chunk_evidence(conn, given, scan) == (0, 0)
        rows = {r.id: r for r in conn.execute(text(
            "SELECT id, embedding::text AS v, injection_spans FROM chunks WHERE id = ANY(:i)"),
            {"i": [first, second]})}
    assert len(scanned) == 2
    assert rows[second].v == kept  # not replaced
    assert rows[first].v is not None and rows[first].injection_spans == [0, 3]
    assert rows[second].injection_spans == [0, 3]
    with store.connect() as conn:
        assert evidence.fill_chunk_evidence(conn, {}, scan) == (0, 0)


def test_chunk_search_by_vector_and_full_text_is_scoped(store: KnowledgeStore,
                                                        corpus: dict[str, str]) -> None:
    write_corpus(store, _EMBEDDER, scope="other")
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, _EMBEDDER.embed_documents)
    with store.connect() as conn:
        dense = evidence.chunk_vector(conn, ["default"], _EMBEDDER.embed_query(QUESTION), 3,
                                      ef_search=50)
        words = evidence.chunk_fulltext(conn, "default", "Velmor prize founded", 10)
        nothing = evidence.chunk_fulltext(conn, "default", "the of and", 10)
        other = evidence.chunk_fulltext(conn, ["other"], "Velmor", 10)
    assert len(dense) == 3 and dense[0].id == corpus[P1] and dense[0].method == "vector"
    assert set(corpus.values()) >= {h.id for h in dense}
    assert words[0].id == corpus[P1]  # the only chunk with all three words
    assert {h.id for h in words} <= set(corpus.values()) and len(words) >= 2  # OR-ed terms
    assert words[0].score > words[-1].score > 0
    assert nothing == [] and len(other) == 1 and other[0].id not in corpus.values()


def test_neighbourhood_is_bounded_and_follows_entities(store: KnowledgeStore,
                                                       corpus: dict[str, str]) -> None:
    kael = ids.entity_id("Orsina Kael", "person", "default")
    with store.connect() as conn:
        hood = evidence.neighbourhood(conn, ["default"], [kael], [])
        capped = evidence.neighbourhood(conn, ["default"], [kael], [], per_entity=1)
        from_chunk = evidence.neighbourhood(conn, ["default"], [], [corpus[P2]])
        empty = evidence.neighbourhood(conn, ["default"], [], [])
        rows = evidence.chunk_rows(conn, [corpus[P2], "chk_unknown", corpus[P1]])
    assert {c for _, c in hood.mentions} == {corpus[P1], corpus[P2]}  # Kael and neighbours
    assert len(hood.relations) == 2 and all(kael in pair for pair in hood.relations)
    assert len([c for e, c in capped.mentions if e == kael]) == 1
    assert (kael, corpus[P2]) in from_chunk.mentions and corpus[P1] in {
        c for _, c in from_chunk.mentions}  # P2's entity Kael leads to P1
    assert hood.chunk_counts[kael] == 2 and capped.chunk_counts[kael] == 2  # all, not kept
    assert hood.degrees[kael] == 2 + 2  # two passages, two relations kept
    assert capped.degrees[kael] == 2 + 1  # the cut mention still counts; one relation kept
    assert empty.nodes == [] and empty.mentions == [] and empty.degrees == {}
    assert [r["uri"] for r in rows] == [P2, P1]
    assert rows[0]["text"].startswith("Kael grew up") and rows[0]["source"] == "evidence"


def test_neighbourhood_lines_up_entities_with_their_own_chunks(
        store: KnowledgeStore, corpus: dict[str, str]) -> None:
    """The statement sends each entity's chunks as one run of ids after its count; an
    entity in no chunk (reached by a relation) must not shift the others' chunks."""
    kael = ids.entity_id("Orsina Kael", "person", "default")
    vec = _EMBEDDER.embed_documents(["Loose End"])[0]
    store.write_graph([EntityIn("Loose End", "concept", "default", "", 0.9, vec, ())],
                      [RelationIn(kael, "knows", ids.entity_id("Loose End", "concept",
                                                               "default"),
                                  "Kael knows Loose End.", "default", 0.99, vec)])
    loose = ids.entity_id("Loose End", "concept", "default")
    with store.connect() as conn:
        hood = evidence.neighbourhood(conn, ["default"], [kael], [corpus[P2]])
        stored = {(r.entity_id, r.chunk_id) for r in conn.execute(text(
            "SELECT entity_id, chunk_id FROM entity_provenance"))}
    assert (kael, loose) in hood.relations and loose not in hood.chunk_counts
    assert hood.mentions and set(hood.mentions) <= stored  # each chunk with its own entity
    assert {e for e, _ in hood.mentions} == {e for e, _ in stored
                                               if e in hood.index and e != loose}
    assert hood.degrees[loose] == 1 and hood.count(kael) == 2


def test_neighbourhood_skips_invalid_facts(store: KnowledgeStore,
                                           corpus: dict[str, str]) -> None:
    kael = ids.entity_id("Orsina Kael", "person", "default")
    with store.transaction() as conn:
        conn.execute(text("UPDATE relations SET invalid_at = :t"),
                     {"t": datetime(2000, 1, 1, tzinfo=UTC)})
    with store.connect() as conn:
        now = evidence.neighbourhood(conn, ["default"], [kael], [])
        then = evidence.neighbourhood(conn, ["default"], [kael], [],
                                      as_of=datetime(1990, 1, 1, tzinfo=UTC))
    assert now.relations == [] and len(then.relations) == 2


def test_chunks_and_their_vectors_go_with_the_document(store: KnowledgeStore,
                                                       corpus: dict[str, str]) -> None:
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, _EMBEDDER.embed_documents)
    store.remove_source("default", "evidence")
    with store.connect() as conn:
        assert evidence.embedding_coverage(conn) == (0, 0)


def test_cached_full_text_statistics_rank_like_the_exact_ones(store: KnowledgeStore,
                                                              corpus: dict[str, str]) -> None:
    question = "Velmor prize founded poetry childhood"
    with store.connect() as conn:
        exact = evidence.chunk_fulltext(conn, "default", question, 10)
        assert fulltext.ensure_term_stats(conn, ["default", "other"]) == ["default", "other"]
        assert fulltext.ensure_term_stats(conn, ["default"]) == []  # fresh: nothing to do
        cached = evidence.chunk_fulltext(conn, "default", question, 10)
        stats = dict(conn.execute(text(
            "SELECT lexeme, df FROM chunk_term_stats WHERE scope = 'default'")).all())
        n = conn.execute(text(
            "SELECT chunks FROM chunk_scope_stats WHERE scope = 'default'")).scalar()
    assert n == len(DOCS) and stats["prize"] == 3 and stats["velmor"] == 1
    assert [h.id for h in cached] == [h.id for h in exact]
    assert [h.score for h in cached] == pytest.approx([h.score for h in exact])


def test_full_text_candidates_leave_out_a_word_in_more_chunks_than_the_pool(
        store: KnowledgeStore, corpus: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    with store.connect() as conn:
        fulltext.ensure_term_stats(conn, ["default"])
        before = evidence.chunk_fulltext(conn, "default", "prize", 10)
        monkeypatch.setattr(evidence, "FULLTEXT_POOL", 2)  # "prize" is in 3 chunks
        common = evidence.chunk_fulltext(conn, "default", "prize", 10)
        both = evidence.chunk_fulltext(conn, "default", "Velmor prize", 10)
    assert len(before) == 3
    assert common == []  # its chunks would be an arbitrary cut of the pool: none
    assert [h.id for h in both] == [corpus[P1]]  # the Velmor chunk, scored on both words


def test_full_text_statistics_follow_new_chunks(store: KnowledgeStore,
                                                corpus: dict[str, str]) -> None:
    with store.connect() as conn:
        fulltext.ensure_term_stats(conn, ["default"])
    doc = DocumentIn("default", "evidence", "more.md", ids.content_hash("more"), title="m")
    store.sync_document(doc, ["Another Velmor story about a prize."])
    with store.connect() as conn:
        # chunks changed, but the statistics are younger than the age limit: kept
        assert fulltext.ensure_term_stats(conn, ["default"]) == []
        hits = evidence.chunk_fulltext(conn, "default", "Velmor", 10)
        assert len(hits) == 2  # the new chunk is found (the GIN index is current)
        assert _stale_within(conn, 15.0)  # the chunks counter lags by up to seconds
        assert fulltext.ensure_term_stats(conn, ["default"], max_age_s=0) == ["default"]
        df = conn.execute(text("SELECT df FROM chunk_term_stats WHERE scope = 'default' "
                               "AND lexeme = 'velmor'")).scalar()
    assert df == 2


def _stale_within(conn, seconds: float) -> bool:
    """Whether the statistics of scope "default" turn stale (age limit 0) within
    ``seconds``: the insert counter they compare with is flushed by the writing backend
    when it is idle, at most once a second."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if fulltext.stale_term_stats(conn, ["default"], max_age_s=0) == ["default"]:
            return True
        conn.rollback()
        time.sleep(0.25)
    return False


def test_neighbourhood_synonym_edges_join_nearly_identical_names(
        store: KnowledgeStore, corpus: dict[str, str]) -> None:
    """A seed's synonym edges go to entities whose name vectors are nearly its own (cosine
    at least ``synonym_min``), in scope; those entities bring their passages."""
    from storage import EntityIn

    kael = ids.entity_id("Orsina Kael", "person", "default")
    with store.connect() as conn:
        vec = conn.execute(text("SELECT embedding::text FROM entities WHERE id = :i"),
                           {"i": kael}).scalar()
    same = [float(x) for x in vec.strip("[]").split(",")]
    near = [x + (0.02 if i % 2 else -0.02) for i, x in enumerate(same)]  # cosine about .93
    store.write_graph([EntityIn("O. Kael", "person", "default", "", 0.9, near,
                                (corpus[P2],)),
                       EntityIn("Kael Orsina", "person", "other", "", 0.9, same, ())], [])
    alias = ids.entity_id("O. Kael", "person", "default")
    other = ids.entity_id("Kael Orsina", "person", "other")
    for stored in (False, True):  # looked up by the query, then the stored pairs
        if stored:
            store.drop_vector_indexes()  # no index: left for when it is back
            with store.transaction() as conn:
                assert synonyms.fill(conn) == 0 and synonyms.pending(conn) > 0
            store.create_vector_indexes()
            with store.transaction() as conn:
                assert synonyms.fill(conn) > 0 and synonyms.pending(conn) == 0
        with store.connect() as conn:
            plain = evidence.neighbourhood(conn, ["default"], [kael], [])
            joined = evidence.neighbourhood(conn, ["default"], [kael], [], synonyms=3)
            strict = evidence.neighbourhood(conn, ["default"], [kael], [], synonyms=3,
                                            synonym_min=0.99)
        assert plain.synonyms == [] and strict.synonyms == []
        assert joined.synonyms == [(kael, alias)]  # the other scope's copy is not reached
        assert (alias, corpus[P2]) in joined.mentions
        assert joined.degrees[kael] == plain.degrees[kael] + 1
    # "other" becomes a child of "default": its copy (the same vector) now sees Kael, and
    # the pair found from the child's side serves queries in the child's chain only
    scope_service.set_parent(store, "other", "default")
    with store.connect() as conn:
        assert synonyms.pending(conn) == 0
        child = evidence.neighbourhood(conn, ["other", "default"], [kael], [], synonyms=3)
        parent = evidence.neighbourhood(conn, ["default"], [kael], [], synonyms=3)
    assert sorted(child.synonyms) == sorted([(kael, alias), (kael, other)])
    assert parent.synonyms == [(kael, alias)]
    with store.transaction() as conn:  # gone with the entity (cascade)
        conn.execute(text("DELETE FROM entities WHERE id = :i"), {"i": other})
    with store.connect() as conn:
        child = evidence.neighbourhood(conn, ["other", "default"], [kael], [], synonyms=3)
        left = conn.execute(text("SELECT count(*) FROM entity_synonyms WHERE :i IN "
                                 "(entity_id, synonym_id)"), {"i": other}).scalar()
    assert child.synonyms == [(kael, alias)] and left == 0


def test_neighbourhood_halves_merge_into_the_whole(store: KnowledgeStore,
                                                   corpus: dict[str, str]) -> None:
    """The seeds' side and the seed chunks' side, fetched apart and merged, are the
    neighbourhood of one statement (the ppr recipe fetches them concurrently)."""
    kael = ids.entity_id("Orsina Kael", "person", "default")
    with store.connect() as conn:
        whole = evidence.neighbourhood(conn, ["default"], [kael], [corpus[P2]])
        seeds = evidence.neighbourhood(conn, ["default"], [kael], [])
        chunks = evidence.neighbourhood(conn, ["default"], [], [corpus[P2]])
    merged = evidence.merge_neighbourhoods([seeds, chunks])
    assert set(merged.mentions) == set(whole.mentions) and len(set(whole.mentions)) > 2
    assert sorted(merged.relations) == sorted(whole.relations)
    assert merged.chunk_counts == whole.chunk_counts and merged.degrees == whole.degrees
    assert len(evidence.merge_neighbourhoods([seeds, chunks], max_edges=1).mentions) == 1


def test_fact_vector_widens_its_hnsw_search_when_asked(store: KnowledgeStore,
                                                       corpus: dict[str, str]) -> None:
    """ppr links the question to facts with the passages' candidate list (ef_search 100);
    the setting lasts for the statement's transaction only, and is never below the
    candidates asked from the sign-bit index (FACT_OVERSAMPLE per fact)."""
    from storage import search

    vector = _EMBEDDER.embed_query(QUESTION)
    with store.connect() as conn:
        default_ef = conn.exec_driver_sql("SHOW hnsw.ef_search").scalar()
    with store.connect() as conn:
        plain = search.fact_vector(conn, ["default"], vector, 3)
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == \
            str(3 * search.FACT_OVERSAMPLE)
    with store.connect() as conn:
        wide = search.fact_vector(conn, ["default"], vector, 3, ef_search=100)
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == "100"
    with store.connect() as conn:
        small = search.fact_vector(conn, ["default"], vector, 3, ef_search=1)
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == \
            str(3 * search.FACT_OVERSAMPLE)
    with store.connect() as conn:
        assert conn.exec_driver_sql("SHOW hnsw.ef_search").scalar() == default_ef == "40"
    assert [h.fact.id for h in wide] == [h.fact.id for h in plain]
    assert len(small) == 3 and wide[0].similarity >= wide[-1].similarity
