"""Storage against a real PostgreSQL: schema, upserts, ids, removal, escaping, indexes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import numpy as np
import pytest
from sqlalchemy import text

from storage import (
    ChunkOutcome,
    DocumentIn,
    EmbeddingDimensionMismatchError,
    EntityIn,
    KnowledgeStore,
    NotFoundError,
    RelationIn,
    ids,
    search,
)
from storage.access import WHOLE_STORE, use_access
from storage.bulk import vector_literal
from storage.documents import lock_document, sync_document
from storage.errors import DatabaseUnavailableError
from storage.migrate import head_revision
from storage.resolution import similar_entities
from storage.text_match import contains_pattern
from tests.pg_fixtures import TEST_DIM, TEST_MODEL, migrated_database, open_app_store


def vec(seed: str, dim: int = TEST_DIM) -> list[float]:
    rng = np.random.default_rng(int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16))
    v = rng.standard_normal(dim)
    return (v / np.linalg.norm(v)).tolist()


def doc(uri: str = "a.md", text_: str = "x", source: str = "src", scope: str = "default"):
    return DocumentIn(scope=scope, source=source, uri=uri, content_hash=ids.content_hash(text_))


def test_schema_creation_is_idempotent(empty_db_url: str) -> None:
    for _ in range(2):
        s = KnowledgeStore.open(empty_db_url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
        info = s.server_info()
        s.close()
    assert info.schema_revision == head_revision() >= "0007"
    assert set(info.extensions) == {"vector", "pg_trgm"}
    assert info.embedding_dim == TEST_DIM and info.embedding_model == TEST_MODEL
    assert info.version.startswith(("14", "15", "16", "17", "18"))


def test_other_embedding_dimension_is_refused_with_reembed_hint(db_url: str) -> None:
    with pytest.raises(EmbeddingDimensionMismatchError, match="krag reembed"):
        KnowledgeStore.open(db_url, embedding_model="ollama:nomic-embed-text", embedding_dim=768)
    s = KnowledgeStore.open(db_url, embedding_model="x", embedding_dim=768, check_embedding=False)
    s.reset_embeddings("ollama:nomic-embed-text", 768)
    s.close()
    s = KnowledgeStore.open(db_url, embedding_model="ollama:nomic-embed-text", embedding_dim=768)
    assert s.server_info().embedding_dim == 768
    s.close()


def test_unreachable_database_masks_password() -> None:
    url = "postgresql://krag:s3cret@127.0.0.1:1/krag"
    with pytest.raises(DatabaseUnavailableError) as err:
        KnowledgeStore.open(url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    assert "s3cret" not in str(err.value) and "krag:***@" in str(err.value)
    assert "\n" not in str(err.value)


def test_deterministic_ids() -> None:
    a = ids.entity_id("PostgreSQL", "technology", "default")
    assert a == ids.entity_id("  postgresql ", "technology", "default")
    assert a.startswith("ent_") and len(a) == 4 + 64
    assert a != ids.entity_id("PostgreSQL", "organization", "default")
    assert a != ids.entity_id("PostgreSQL", "technology", "other")
    r = ids.relation_id(a, "uses", "ent_b")
    assert r == ids.relation_id(a, "uses", "ent_b") != ids.relation_id("ent_b", "uses", a)


def _seed_chunk(store: KnowledgeStore, uri: str = "a.md", chunks=("one", "two")) -> list[str]:
    sync = store.sync_document(doc(uri, "|".join(chunks)), list(chunks))
    return list(sync.new_chunk_ids)


def test_entity_upsert_keeps_max_confidence_fills_summary_merges_provenance(
    store: KnowledgeStore,
) -> None:
    c1, c2 = _seed_chunk(store)
    e1 = EntityIn("Alice", "person", "default", "", 0.7, None, (c1,))
    store.write_graph([e1], [])
    e2 = EntityIn("alice", "person", "default", "An engineer.", 0.9, vec("a"), (c2,))
    store.write_graph([e2], [])
    e3 = EntityIn("ALICE", "person", "default", "Other text.", 0.6, vec("b"), (c1,))
    store.write_graph([e3], [])
    with store.connect() as conn:
        row = conn.execute(text("SELECT name, summary, confidence, embedding IS NOT NULL AS emb "
                                "FROM entities")).one()
        prov = conn.execute(text("SELECT count(*) FROM entity_provenance")).scalar()
    assert row.name == "Alice" and row.summary == "An engineer."
    assert row.confidence == pytest.approx(0.9) and row.emb
    assert prov == 2


def _graph(store: KnowledgeStore, chunk_ids: list[str]) -> tuple[str, str, str]:
    c1, c2 = chunk_ids
    a = EntityIn("Alice", "person", "default", "Engineer", 0.9, vec("a"), (c1, c2))
    b = EntityIn("Acme", "organization", "default", "A company", 0.9, vec("b"), (c1,))
    c = EntityIn("Rust", "technology", "default", "A language", 0.9, vec("c"), (c2,))
    r1 = RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.", "default", 0.8,
                    vec("r1"), chunk_ids=(c1,))
    r2 = RelationIn(a.id, "uses", c.id, "Alice uses Rust.", "default", 0.8, vec("r2"),
                    chunk_ids=(c2,))
    store.write_graph([a, b, c], [r1, r2], [ChunkOutcome(c1, 2, 1), ChunkOutcome(c2, 2, 1)])
    return a.id, b.id, c.id


def test_two_workers_syncing_the_same_new_documents_take_turns(store: KnowledgeStore) -> None:
    """Two `krag ingest` on one corpus sync the same documents at once: each document is
    stored once, as new by one worker and unchanged for the other, never a unique-key
    error (racing inserts could meet the (scope, source, uri) key before ON CONFLICT (id))."""
    import contextvars
    import threading

    docs = [(doc(f"race-{i}.md", f"text {i}"), [f"text {i} one", f"text {i} two"])
            for i in range(60)]
    barrier = threading.Barrier(4)
    outcomes: list[bool] = []
    errors: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        for d, chunks in docs:
            try:
                outcomes.append(store.sync_document(d, chunks).unchanged)
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,))
               for _ in range(4)]  # each with the test's access (row-level security)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert outcomes.count(False) == len(docs) and outcomes.count(True) == 3 * len(docs)
    assert store.counts()["documents"] == len(docs) and store.counts()["chunks"] == 2 * len(docs)


def test_write_graph_marks_chunks_completed(store: KnowledgeStore) -> None:
    chunks = _seed_chunk(store)
    _graph(store, chunks)
    with store.connect() as conn:
        statuses = conn.execute(text("SELECT status FROM extraction_status")).scalars().all()
    assert statuses == ["completed", "completed"]
    assert store.counts() == {"documents": 1, "chunks": 2, "entities": 3, "relations": 2}


def test_changed_document_removes_only_what_old_version_supported(store: KnowledgeStore) -> None:
    chunks = _seed_chunk(store)
    _graph(store, chunks)
    sync = store.sync_document(doc("a.md", "one|three"), ["one", "three"])
    assert sync.kept_chunk_ids == (chunks[0],) and len(sync.new_chunk_ids) == 1
    # chunk "two" vanished: Rust and "Alice uses Rust" go; Alice stays (still in chunk one)
    assert sync.removed.chunks == 1 and sync.removed.entities == 1
    assert sync.removed.relations == 1
    assert store.counts()["entities"] == 2
    unchanged = store.sync_document(doc("a.md", "one|three"), ["one", "three"])
    assert unchanged.unchanged and unchanged.new_chunk_ids == ()


def test_remove_source_cascades_in_one_transaction(store: KnowledgeStore) -> None:
    _graph(store, _seed_chunk(store))
    report = store.remove_source("default", "src")
    assert (report.documents, report.chunks, report.entities, report.relations) == (1, 2, 3, 2)
    assert store.counts() == {"documents": 0, "chunks": 0, "entities": 0, "relations": 0}
    with store.connect() as conn:
        left = conn.execute(text(
            "SELECT (SELECT count(*) FROM entity_provenance) + "
            "(SELECT count(*) FROM relation_provenance) + "
            "(SELECT count(*) FROM extraction_status)")).scalar()
    assert left == 0
    with pytest.raises(NotFoundError, match="krag status"):
        store.remove_source("default", "src")


def test_entity_shared_by_two_documents_survives_removal_of_one(store: KnowledgeStore) -> None:
    (c1,) = store.sync_document(doc("a.md", "a"), ["a"]).new_chunk_ids
    (c2,) = store.sync_document(doc("b.md", "b", source="other"), ["b"]).new_chunk_ids
    store.write_graph([EntityIn("Alice", "person", "default", "", 0.9, None, (c1,)),
                       EntityIn("Alice", "person", "default", "", 0.9, None, (c2,))], [])
    store.remove_source("default", "src")
    assert store.counts()["entities"] == 1


def test_claims_are_exclusive_and_resumable(store: KnowledgeStore) -> None:
    _seed_chunk(store, chunks=("a", "b", "c"))
    first = store.claim_chunks(2, "w1")
    second = store.claim_chunks(2, "w2")
    assert len(first) == 2 and len(second) == 1
    assert not {c.id for c in first} & {c.id for c in second}
    assert store.claim_chunks(5, "w3") == []
    store.fail_chunk(second[0].id, "LLM unreachable")
    assert store.claim_chunks(5, "w3") == []
    retried = store.claim_chunks(5, "w3", retry_failed=True)
    assert [c.id for c in retried] == [second[0].id] and retried[0].attempts == 2
    # a claim whose worker died (stale) is picked up again
    assert len(store.claim_chunks(5, "w4", stale_after_s=0)) == 3


def test_like_patterns_match_literally(store: KnowledgeStore) -> None:
    (c1,) = store.sync_document(doc("a.md", "a"), ["a"]).new_chunk_ids
    names = ["100% Cotton", "1000 Cotton", "snake_case", "snakeXcase", r"back\slash", "backslash"]
    store.write_graph([EntityIn(n, "concept", "default", "", 0.9, None, (c1,)) for n in names], [])
    with store.connect() as conn:
        def like(term: str) -> list[str]:
            return sorted(conn.execute(text("SELECT name FROM entities WHERE name ILIKE :p"),
                                       {"p": contains_pattern(term)}).scalars())
        assert like("100%") == ["100% Cotton"]
        assert like("snake_") == ["snake_case"]
        assert like("k\\s") == [r"back\slash"]
        assert like("'") == []


def _fill_big(store: KnowledgeStore) -> None:
    """12,000 entities with varied names and summaries (2,000 with vectors)."""
    (c1,) = store.sync_document(doc("big.md", "big"), ["big"]).new_chunk_ids
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))

    def word() -> str:
        return "".join(rng.choice(letters, size=int(rng.integers(5, 10))))

    ents = [EntityIn(f"{word()} {word()} {word()}", "concept", "default",
                     f"{word()} {word()} {word()} {word()}", 0.9,
                     vec(str(i)) if i < 2000 else None, (c1,))
            for i in range(12000)]
    store.write_graph(ents, [])
    with store.connect(autocommit=True) as conn:  # maintenance: as the tables' owner
        conn.execute(text("ANALYZE entities"))


@pytest.fixture(scope="module")
def big_template(pg_server_url: str, pg_template: str) -> Iterator[str]:
    """A database of :func:`_fill_big`'s entities, written once for this module; each test
    gets a file copy of it (its pages, indexes and statistics as written) of its own."""
    with migrated_database(pg_server_url, pg_template, "krag_big_") as url:
        filled = open_app_store(url)
        try:
            with use_access(WHOLE_STORE):
                _fill_big(filled)
        finally:
            filled.close()  # no session left on it: a template must be idle to be copied
        yield urlsplit(url).path.lstrip("/")


@pytest.fixture
def big_store(pg_server_url: str, big_template: str) -> Iterator[KnowledgeStore]:
    """A fresh copy of the 12,000-entity database for one test (dropped afterwards)."""
    with migrated_database(pg_server_url, big_template) as url:
        store = open_app_store(url)
        try:
            yield store
        finally:
            store.close()


def _plan(store: KnowledgeStore, sql: str, **params) -> str:
    with store.connect() as conn:
        rows = conn.execute(text("EXPLAIN " + sql), params).scalars().all()
    return "\n".join(rows)


@pytest.mark.slow
def test_trigram_and_hnsw_indexes_are_used(big_store: KnowledgeStore) -> None:
    trgm = _plan(big_store, "SELECT id FROM entities WHERE name % :q", q="qwertzu")
    assert "entities_name_trgm" in trgm, trgm
    like = _plan(big_store, "SELECT id FROM entities WHERE name ILIKE :p",
                 p=contains_pattern("qwert"))
    assert "entities_name_trgm" in like, like
    summ = _plan(big_store, "SELECT id FROM entities WHERE summary ILIKE :p",
                 p=contains_pattern("zyxwv"))
    assert "entities_summary_trgm" in summ, summ
    knn = _plan(big_store, "SELECT id FROM entities ORDER BY embedding <=> CAST(:v AS vector) "
                "LIMIT 10", v=vector_literal(vec("q")))
    assert "entities_embedding_hnsw" in knn, knn


@pytest.mark.slow
def test_substring_search_reads_the_first_pages_then_the_index(
        big_store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    with big_store.connect() as conn:
        plain = search._head_first(conn, "e.id", "entities e", "true")
        monkeypatch.setattr(search, "HEAD_MIN_ROWS", 10_000)  # the 12,000 count as large
        last = conn.execute(text(
            "SELECT summary, (ctid::text::point)[0] AS page FROM entities "
            "ORDER BY ctid DESC LIMIT 1")).one()
        common = list(conn.execute(text("SELECT substr(summary, 1, 5) FROM entities "
                                        "ORDER BY ctid LIMIT 10")).scalars())
        rare = search.entity_summary(conn, "default", [last.summary.split()[-1]], 6)
        many = search.entity_summary(conn, "default", common, 6)
        clause, params = search._ilike_any("e.summary", [last.summary.split()[-1]])
        plan = "\n".join(conn.execute(text("EXPLAIN " + search._head_first(
            conn, "e.id", "entities e", f"e.scope = ANY(:s) AND {clause}")),
            {"s": ["default"], "n": 6, **params}).scalars())
    assert "UNION ALL" not in plain  # a table under HEAD_MIN_ROWS: the plain statement
    assert last.page >= search.HEAD_PAGES  # found beyond the first pages: by the index
    assert last.summary in {h.entity.summary for h in rare}
    assert len(many) == 6
    assert all(any(t in h.entity.summary for t in common) for h in many)
    assert "Tid Range Scan" in plan and "entities_summary_trgm" in plan, plan


def test_substring_patterns_drop_the_terms_another_term_implies() -> None:
    """An OR of substring matches needs no repeat and no term holding another (ASCII) term;
    a non-ASCII term is never the one that makes a longer term redundant."""
    assert search.needed_patterns(["Lars Stonexgri", "Lars", "link", "Lars", "Stonexgri"]) \
        == ["Lars", "link", "Stonexgri"]
    assert search.needed_patterns(["lars stonexgri", "Lars"]) == ["lars stonexgri", "Lars"]
    assert search.needed_patterns(["Straße Nord", "Straße"]) == ["Straße Nord", "Straße"]
    assert search.needed_patterns(["Straße Nord", "Nord"]) == ["Nord"]
    assert search.needed_patterns([]) == []


@pytest.mark.slow
def test_substring_search_returns_the_rows_in_physical_order_whatever_the_branch(
        big_store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The head, the next pages (read only when the head found a match) and the rest by the
    index return the first :n matching rows in physical order, as one scan would: for words
    found in the head, only past it, and only past the next pages; and the patterns a
    longer term implies change no row."""
    monkeypatch.setattr(search, "HEAD_MIN_ROWS", 10_000)  # the 12,000 count as large
    monkeypatch.setattr(search, "HEAD_PAGES", 4)
    monkeypatch.setattr(search, "NEXT_PAGES", 8)
    with big_store.connect() as conn:
        rows = conn.execute(text(
            "SELECT summary, (ctid::text::point)[0] AS page FROM entities ORDER BY ctid")).all()
        pages = rows[-1].page
        assert pages > 12  # past the head and the next pages
        head_word = rows[0].summary.split()[1]
        next_word = next(r.summary.split()[2] for r in rows if 6 <= r.page < 12)
        rest_word = next(r.summary.split()[0] for r in rows if r.page >= pages - 2)
        sets = [[head_word], [next_word], [rest_word], [rest_word, next_word],
                [head_word, rest_word], [f"{rest_word} x", rest_word],
                [rows[5].summary[:4]]]
        for terms in sets:
            clause, params = search._ilike_any("e.summary", terms)
            where = f"e.scope = ANY(:s) AND {clause}"
            args = {"s": ["default"], "n": 6, **params}
            got = conn.execute(text(search._head_first(conn, "e.id", "entities e", where)),
                               args).scalars().all()
            scan = conn.execute(text(
                f"SELECT e.id FROM entities e WHERE {where} ORDER BY e.ctid LIMIT :n"),
                args).scalars().all()
            fenced = conn.execute(text(search._head_first(
                conn, "e.id", "entities e", where, fenced=True)), args).scalars().all()
            assert got == scan == fenced and got, terms
            longer = [f"{t} {u}" for t in terms for u in terms if t != u]
            also, more = search._ilike_any("e.summary", longer + list(terms))
            assert also == clause and more == params  # the longer terms are not asked
        plan = "\n".join(conn.execute(text("EXPLAIN " + search._head_first(
            conn, "e.id", "entities e", f"e.scope = ANY(:s) AND {clause}")),
            {"s": ["default"], "n": 6, **params}).scalars())
        # where a range scan looks dear (at 1M facts: a rare word's estimate), the next
        # pages are still not answered by the rest's index bitmap (built twice otherwise)
        conn.exec_driver_sql("SET LOCAL enable_tidscan = off")
        dear = "\n".join(conn.execute(text("EXPLAIN " + search._head_first(
            conn, "e.id", "entities e", f"e.scope = ANY(:s) AND {clause}")),
            {"s": ["default"], "n": 6, **params}).scalars())
    assert plan.count("Tid Range Scan") == 2 and "One-Time Filter" in plan, plan
    # the head and the rest by the index, the next pages by a scan of their range only
    assert dear.count("Bitmap Heap Scan") == 2 and "Subquery Scan" in dear, dear


@pytest.mark.slow
def test_alias_links_of_the_neighbourhood_are_found_through_their_indexes(
        big_store: KnowledgeStore) -> None:
    """The neighbourhood's alias link (an entity holding a seed's name among its aliases, or
    named by one of the seed's aliases) is looked up by the aliases' GIN index and the
    scope + name index, never by the primary key in order with the condition as a filter:
    that plan, chosen under the link's ORDER BY id LIMIT, reads every entity when nothing
    matches (1.6 s per seed at 1M entities). The old statement took it here too."""
    from storage import evidence

    with big_store.connect() as conn:
        seeds = list(conn.execute(text("SELECT id FROM entities ORDER BY id LIMIT 3")).scalars())
        plan = "\n".join(conn.execute(text("EXPLAIN " + evidence._NEIGHBOURHOOD), {
            "ids": seeds, "chunks": [], "s": ["default"], "per": 20, "syn_min": 0.9,
            "syn_k": 5, "as_of": None}).scalars())
        found = evidence.neighbourhood(conn, ["default"], seeds, [], synonyms=5)
    lines = plan.splitlines()
    filtered_by_key = [line for i, line in enumerate(lines[1:], 1)
                       if "aliases @>" in line and "Filter" in line
                       and "entities_pkey" in lines[i - 1]]
    assert not filtered_by_key, plan
    assert "entities_aliases_gin" in plan and "entities_scope_name_idx" in plan, plan
    assert found.synonyms == []  # none of these names is another's alias
    # a name one document joined into a fuller one, still an entity of its own elsewhere:
    # linked both ways, in scope only
    (c1,) = big_store.sync_document(doc("bridge.md", "Paul Robeson sang."), ["x"]).new_chunk_ids
    big_store.write_graph([
        EntityIn("Paul Robeson", "person", "default", "", 0.9, None, (c1,), ("Robeson",)),
        EntityIn("Robeson", "person", "default", "", 0.9, None, (c1,)),
        EntityIn("Robeson", "person", "other", "", 0.9, None, ())], [])
    full, short = (ids.entity_id(n, "person", "default") for n in ("Paul Robeson", "Robeson"))
    with big_store.connect() as conn:
        from_short = evidence.neighbourhood(conn, ["default"], [short], [], synonyms=5)
        from_full = evidence.neighbourhood(conn, ["default"], [full], [], synonyms=5)
        off = evidence.neighbourhood(conn, ["default"], [short], [], synonyms=0)
    assert from_short.synonyms == [(short, full)] and from_full.synonyms == [(full, short)]
    assert off.synonyms == []


@pytest.mark.slow
def test_name_substrings_are_found_through_the_index_under_a_limit(
        big_store: KnowledgeStore) -> None:
    """entity_like's substring branch is planned for all its rows (the GIN bitmap), not as
    an in-order scan expected to stop early, and returns the rows a plain LIMIT would."""
    with big_store.connect() as conn:
        names = list(conn.execute(text("SELECT name FROM entities ORDER BY ctid")).scalars())
    terms = [names[-1].split()[0], names[-2].split()[1], "zzzq"]
    clause, params = search._ilike_any("e.name", terms, also="e.alias_text")
    select = f"SELECT e.id FROM entities e WHERE e.scope = ANY(:s) AND {clause}"
    plan = _plan(big_store, search._all_then_first(select), s=["default"], n=2, **params)
    with big_store.connect() as conn:
        fenced = conn.execute(text(search._all_then_first(select)),
                              {"s": ["default"], "n": 2, **params}).scalars().all()
        plain = conn.execute(text(f"SELECT * FROM ({select} ORDER BY e.ctid) m LIMIT 2"),
                             {"s": ["default"], **params}).scalars().all()
        hits = search.entity_like(conn, "default", terms, 2)
    assert "entities_name_trgm" in plan and "Seq Scan on entities" not in plan, plan
    assert fenced == plain and len(fenced) == 2
    assert [h.entity.id for h in hits] == fenced


def test_facts_of_an_entity_rank_by_the_question_words_they_hold(store: KnowledgeStore) -> None:
    """fact_by_endpoints counts the terms a fact holds as ILIKE would: any case, and ``%``
    and ``_`` literally (the text is lowercased once, each term found by strpos)."""
    c1, _ = _seed_chunk(store)
    a = EntityIn("Ada", "person", "default", "", 0.9, None, (c1,))
    others = [EntityIn(n, "concept", "default", "", 0.9, None, (c1,))
              for n in ("Notes", "Engine", "London", "Paris")]
    facts = ["Ada wrote 100% of the NOTES.", "Ada built the_engine in Paris.",
             "Ada lived in London.", "Ada visited Paris in 100 days."]
    rels = [RelationIn(a.id, "rel", o.id, f, "default", 0.5 + i / 10, chunk_ids=(c1,))
            for i, (o, f) in enumerate(zip(others, facts, strict=True))]
    store.write_graph([a, *others], rels)
    with store.connect() as conn:
        hits = search.fact_by_endpoints(conn, "default", [a.id], ["100%", "notes", "THE_ENGINE"],
                                        [], 4)
        none = search.fact_by_endpoints(conn, "default", [a.id], ["xy"], [], 4)
    assert [h.fact.fact for h in hits][:2] == [facts[0], facts[1]]
    # two terms in the first, one in the second, none in the others ("100" is not "100%")
    assert {h.fact.fact for h in hits[2:]} == {facts[2], facts[3]}
    assert [h.fact.fact for h in none] == sorted(facts, key=facts.index, reverse=True)


def test_long_text_columns_keep_small_planner_statistics(store: KnowledgeStore) -> None:
    with store.connect() as conn:
        targets = dict(conn.execute(text(
            "SELECT attrelid::regclass::text || '.' || attname, attstattarget "
            "FROM pg_attribute WHERE (attrelid, attname) IN "
            "(('relations'::regclass, 'fact'), ('entities'::regclass, 'summary'), "
            "('entities'::regclass, 'name'))")).all())
    assert targets == {"relations.fact": 1, "entities.summary": 1, "entities.name": None}


def test_name_similarity_is_pg_trgm_per_group(store: KnowledgeStore) -> None:
    names = [("tech", "PostgreSQL"), ("tech", "Postgresql"), ("tech", "Python 2"),
             ("tech", "Python 3"), ("person", "postgresql")]
    pairs = store.similar_name_pairs(names, 0.8)
    assert pairs == {("PostgreSQL", "Postgresql"), ("Postgresql", "PostgreSQL")}
    sims = store.name_similarities([("PostgreSQL", "Postgresql"), ("Python 2", "Python 3")])
    assert sims[0] == 1.0 and 0.5 < sims[1] < 0.8
    assert store.name_similarities([]) == [] and store.similar_name_pairs(names[:1], 0.1) == set()


def test_a_relation_written_again_unchanged_keeps_its_row_version(
    store: KnowledgeStore,
) -> None:
    """The relation upsert rewrites a stored relation only when a value changes (as the
    entity upsert): the same relation from another chunk adds provenance and leaves the row
    as it is (no new row version, so no new entry in its HNSW and other indexes); a higher
    confidence or a first valid date still updates it."""
    c1, c2 = _seed_chunk(store)
    a = EntityIn("Alice", "person", "default", "Engineer", 0.9, vec("a"), (c1,))
    b = EntityIn("Acme", "organization", "default", "A company", 0.9, vec("b"), (c1,))
    rel = RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.", "default", 0.8,
                     vec("r"), chunk_ids=(c1,))
    store.write_graph([a, b], [rel])

    def version() -> tuple[str, str, float, str | None]:
        with store.connect() as conn:
            row = conn.execute(text(
                "SELECT xmin::text AS x, ctid::text AS place, confidence, valid_at::text AS v "
                "FROM relations")).one()
        return row.x, row.place, row.confidence, row.v

    first = version()
    store.write_graph([], [RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.",
                                      "default", 0.8, vec("r"), chunk_ids=(c2,))])
    assert version() == first
    with store.connect() as conn:
        prov = conn.execute(text("SELECT count(*) FROM relation_provenance")).scalar()
    assert prov == 2
    # a lower confidence, a later fact in code point order: nothing changes either
    store.write_graph([], [RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.",
                                      "default", 0.5, vec("r"), chunk_ids=(c2,))])
    assert version() == first
    store.write_graph([], [RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.",
                                      "default", 0.95, vec("r"), chunk_ids=(c2,))])
    higher = version()
    assert higher[0] != first[0] and higher[2] == pytest.approx(0.95)
    store.write_graph([], [RelationIn(a.id, "relates_to", b.id, "Alice works at Acme.",
                                      "default", 0.95, vec("r"), chunk_ids=(c2,),
                                      valid_at=datetime(2020, 1, 1, tzinfo=UTC))])
    dated = version()
    assert dated[0] != higher[0] and dated[3] is not None


def test_entity_name_trigrams_have_no_pending_list(store: KnowledgeStore) -> None:
    """Migration 0017: the name trigram index every batch's resolution reads takes new
    names into its tree (no GIN pending list that each search would scan); a name just
    written is a candidate of the next batch's search."""
    with store.connect() as conn:
        options = conn.execute(text(
            "SELECT reloptions FROM pg_class WHERE relname = 'entities_name_trgm'")).scalar()
    assert options == ["fastupdate=off"]
    c1, _ = _seed_chunk(store)
    store.write_graph([EntityIn("Postgres Database", "technology", "default", "", 0.9,
                                vec("p"), (c1,))], [])
    with store.connect() as conn:
        found = similar_entities(conn, "default", [("Postgres Databases", "technology"),
                                                   ("Postgres Databases", "person")])
    assert [e.name for e in found[0]] == ["Postgres Database"] and found[1] == []


def test_an_asynchronous_commit_holds_for_its_transaction_only_and_is_flushed(
        store: KnowledgeStore) -> None:
    """``transaction(durable=False)`` commits without waiting for the WAL flush, in that
    transaction only (the pooled connection's next one waits again); ``flush_commits``
    returns once the WAL holds every commit so far on disk."""
    with store.transaction(durable=False) as conn:
        assert conn.execute(text("SHOW synchronous_commit")).scalar() == "off"
        sync_document(conn, doc("async.md", "a|b"), ["a", "b"])
        written = conn.execute(text("SELECT pg_current_wal_insert_lsn()")).scalar()
    for _ in range(3):  # whichever pooled connection comes next
        with store.transaction() as conn:
            assert conn.execute(text("SHOW synchronous_commit")).scalar() == "on"
    store.flush_commits()
    with store.connect() as conn:
        behind = conn.execute(text("SELECT pg_wal_lsn_diff(CAST(:lsn AS pg_lsn), "
                                   "pg_current_wal_flush_lsn())"), {"lsn": written}).scalar()
        stored = conn.execute(text("SELECT count(*) FROM chunks c JOIN documents d "
                                   "ON d.id = c.document_id WHERE d.uri = 'async.md'")).scalar()
    assert behind <= 0 and stored == 2
    assert store.sync_document(doc("async.md", "a|b"), ["a", "b"], durable=False).unchanged


def test_sync_documents_stores_a_group_as_one_by_one_would(store: KnowledgeStore) -> None:
    """One call over new, unchanged and changed documents gives each the result a call of
    its own gives: the unchanged left alone, the changed one's vanished chunk removed with
    the graph only it supported, new chunks pending, results in the order given."""
    chunks = _seed_chunk(store)  # a.md: "one", "two"
    _graph(store, chunks)
    (b_chunk,) = store.sync_document(doc("b.md", "b"), ["b"]).new_chunk_ids
    group = [(doc("c.md", "c1|c2"), ["c1", "c2"]), (doc("b.md", "b"), ["b"]),
             (doc("a.md", "one|three"), ["one", "three"])]
    c, b, a = store.sync_documents(group)
    assert [s.document_id for s in (c, b, a)] == [d.id for d, _ in group]
    assert not c.unchanged and len(c.new_chunk_ids) == 2 and c.kept_chunk_ids == ()
    assert b.unchanged and b.new_chunk_ids == () and b.kept_chunk_ids == (b_chunk,)
    assert a.kept_chunk_ids == (chunks[0],) and len(a.new_chunk_ids) == 1
    assert (a.removed.chunks, a.removed.entities, a.removed.relations) == (1, 1, 1)
    assert c.removed.chunks == b.removed.chunks == 0
    assert store.counts() == {"documents": 3, "chunks": 5, "entities": 2, "relations": 1}
    with store.connect() as conn:
        pending = set(conn.execute(text(
            "SELECT chunk_id FROM extraction_status WHERE status = 'pending'")).scalars())
    assert pending == {b_chunk, *c.new_chunk_ids, *a.new_chunk_ids}
    again = store.sync_documents(group)
    assert all(s.unchanged and s.new_chunk_ids == () for s in again)


def test_sync_documents_refuses_a_document_twice_in_one_call(store: KnowledgeStore) -> None:
    with pytest.raises(ValueError, match="twice"):
        store.sync_documents([(doc("a.md", "a"), ["a"]), (doc("a.md", "b"), ["b"])])
    assert store.counts()["documents"] == 0


def test_sync_documents_takes_the_documents_locks_in_id_order(store: KnowledgeStore) -> None:
    """Locks in id order, whatever the order given: a call that has to wait for the middle
    document holds the first one's lock and not yet the last one's. (Two workers storing
    overlapping groups therefore never wait on each other in a cycle.)"""
    import contextvars
    import threading
    import time

    first, middle, last = sorted((doc("a.md", "a"), doc("b.md", "b"), doc("c.md", "c")),
                                 key=lambda d: d.id)

    def held(d: DocumentIn) -> bool:
        with store.transaction() as conn:
            return not conn.execute(text(
                "SELECT pg_try_advisory_xact_lock(hashtextextended(:k, 7))"),
                {"k": f"document\x1f{d.id}"}).scalar()

    done: list[object] = []
    with store.transaction() as blocker:
        lock_document(blocker, middle.id)
        thread = threading.Thread(target=contextvars.copy_context().run, args=(
            lambda: done.append(store.sync_documents(
                [(last, ["c"]), (middle, ["b"]), (first, ["a"])])),))
        thread.start()
        deadline = time.monotonic() + 20
        while not held(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert held(first) and not held(last) and not done
    thread.join(20)
    assert len(done) == 1 and store.counts()["documents"] == 3
