"""storage.bridge_reads gives the rows of storage.bridges' statements in fewer round trips
(issue 41.4: the second hop's cost): the entities chunks mention with their passages in one
statement, and the facts of chunks read before the caller knows which it keeps, cut after.
The query loop's two-hop corpus (tests/loop_corpus.py) in the real PostgreSQL."""

from __future__ import annotations

import pytest

from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import KnowledgeStore, bridge_reads, bridges, ids
from tests.evidence_corpus import P1, P2, QUESTION
from tests.loop_corpus import seed_two_hop

_EMBEDDER = MiniLMEmbeddings()


@pytest.fixture
def chunks(store: KnowledgeStore) -> dict[str, str]:
    """uri -> chunk id of the corpus, stored with chunk vectors."""
    seed_two_hop(store, _EMBEDDER)
    with store.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT d.uri, c.id FROM chunks c JOIN documents d ON d.id = c.document_id").all()
    return {uri: chunk for uri, chunk in rows}


@pytest.mark.parametrize("per", [1, 2, 0])
def test_the_mentioned_entities_and_their_passages_are_the_two_statements_rows(
        store: KnowledgeStore, chunks: dict[str, str], per: int) -> None:
    asked = [chunks[P1], chunks["ostrand.md"], chunks[P2]]
    vector = _EMBEDDER.embed_query(QUESTION)
    skip = [ids.document_id("default", "evidence", P1)]
    with store.connect() as conn:
        mentioned, near = bridge_reads.mentioned_with_chunks(
            conn, ["default"], asked, vector, skip, per)
        entities = bridges.chunk_entities(conn, asked)
        every = [e.id for es in entities.values() for e in es]
        expected = bridges.bridge_chunks(conn, ["default"], every, vector, skip, per)
    assert mentioned == entities and len(every) > len(set(every))  # Kael is said twice
    assert near == expected and (per == 0 or near)
    assert all(h.row["document_id"] not in skip for h in near)


def test_the_facts_read_before_the_choice_and_cut_after_are_those_of_chunk_facts(
        store: KnowledgeStore, chunks: dict[str, str]) -> None:
    kael = ids.entity_id("Orsina Kael", "person", "default")
    lunde = ids.entity_id("Piet Lunde", "person", "default")
    read = [chunks[u] for u in (P1, P2, "ostrand.md", "vire.md")]
    with store.connect() as conn:
        rows = bridge_reads.chunk_fact_rows(conn, ["default"], read, [kael, lunde])
        for kept, ents, limit in [([chunks[P2]], [kael], 10), (read, [kael, lunde], 10),
                                  (read, [kael], 1), ([chunks["vire.md"]], [kael], 10)]:
            want = bridges.chunk_facts(conn, ["default"], kept, ents, limit)
            assert bridge_reads.cut_facts(rows, kept, ents, limit) == want
    assert {r[1].fact.fact for r in rows} == {"Orsina Kael founded the Velmor Prize.",
                                             "Orsina Kael grew up in Trelvik.",
                                             "Piet Lunde founded the Ostrand Medal."}
