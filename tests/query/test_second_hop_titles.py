"""The second hop places a passage about the chosen bridge (its document's title says the
bridge's name) when the extractor stored the bridge for other passages only (issue 41, the
replayed GPT-3.5 graph): an invented corpus in the real PostgreSQL.

"Dunmore Fist" names the bridge Kestavia; the extractor stored Kestavia for a passage about
a director that merely mentions it, and the passage that says when Kestavia was taken is
stored under its own phrase, "British Kestavia" (as an LLM extractor names things)."""

from __future__ import annotations

import pytest

from graph_flows.query import hop_one, second_hop
from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, evidence, ids
from storage.bridges import BridgeChunk

QUESTION = "When was the country that produced Dunmore Fist taken by the Orlan crown?"
# uri -> (title, text, entities the extractor stored for it)
DOCS = {
    "dunmore.md": ("Dunmore Fist", "Dunmore Fist is an action film made in Kestavia in 2000.",
                   ["Dunmore Fist", "Kestavia"]),
    "orr.md": ("Aman Orr", "Aman Orr is a director who worked in Kestavia for many years.",
               ["Aman Orr", "Kestavia"]),
    "british.md": ("British Kestavia", "British Kestavia was a colony. The Orlan crown took "
                   "Kestavia from its kings in 1841.", ["British Kestavia", "Orlan crown"]),
    "kestavians.md": ("Kestavian cooking", "Kestavian cooking uses rice, taken by boat "
                      "from the Orlan crown's ports.", ["Kestavian cooking"]),
}
_EMBEDDER = MiniLMEmbeddings()


@pytest.fixture
def chunks(store: KnowledgeStore) -> dict[str, str]:
    """The corpus stored with chunk vectors; uri -> chunk id."""
    out: dict[str, str] = {}
    for uri, (title, body, _) in DOCS.items():
        doc = DocumentIn("default", "evidence", uri, ids.content_hash(body), title=title)
        (out[uri],) = store.sync_document(doc, [body]).new_chunk_ids
    names = sorted({n for _, _, ns in DOCS.values() for n in ns})
    where = {n: tuple(out[u] for u, (_, _, ns) in DOCS.items() if n in ns) for n in names}
    vectors = _EMBEDDER.embed_documents(names)
    store.write_graph([EntityIn(n, "concept", "default", "", 0.9, v, where[n])
                       for n, v in zip(names, vectors, strict=True)], [])
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, _EMBEDDER.embed_documents)
    return out


def _hop(chunks: dict[str, str]) -> hop_one.HopOne:
    title, body, _ = DOCS["dunmore.md"]
    row = {"id": chunks["dunmore.md"], "uri": "dunmore.md", "title": title, "text": body,
           "document_id": ids.document_id("default", "evidence", "dunmore.md")}
    (hop,) = hop_one.hop_one_passages(QUESTION, ["Dunmore Fist"], [row])
    return hop


def test_the_passage_about_the_bridge_is_placed_though_stored_under_another_name(
        store: KnowledgeStore, chunks: dict[str, str]) -> None:
    with store.connect() as conn:
        found = second_hop.find(conn, ["default"], QUESTION, ["Dunmore Fist"],
                                [_hop(chunks)], lambda: _EMBEDDER.embed_query(QUESTION))
    (record,) = found.hops
    # the choice is the extractor's (Kestavia, through its stored passage "Aman Orr");
    # the passage placed is the one about it, whose title says its name
    assert record["bridge"] == "Kestavia" and record["document"] == "British Kestavia"
    assert "whose title names it" in record["why"]
    (place,) = found.places
    assert place == (chunks["dunmore.md"], place[1]) and place[1]["uri"] == "british.md"
    # "Kestavian cooking" says neither the name in its title nor in its text as a phrase
    assert all(row["uri"] != "kestavians.md" for row in [place[1], *found.tail])


def _chunk(entity: str, chunk: str, title: str, similarity: float) -> BridgeChunk:
    return BridgeChunk(entity, {"id": chunk, "title": title}, False, similarity)


def test_a_passage_about_the_bridge_is_placed_only_when_it_matches_better() -> None:
    cand = hop_one.Candidate("e1", "Kestavia", 0.0, "no relation word")
    chosen = (cand, _chunk("e1", "c1", "Aman Orr", 0.30), "why")
    assert second_hop.placed(chosen, []) == chosen
    assert second_hop.placed(chosen, [_chunk("e1", "c2", "British Kestavia", 0.25)]) == chosen
    # another candidate's passage about itself does not count
    assert second_hop.placed(chosen, [_chunk("e2", "c3", "Orlan crown", 0.9)]) == chosen
    better = second_hop.placed(chosen, [_chunk("e1", "c2", "British Kestavia", 0.45),
                                        _chunk("e1", "c4", "Kestavia (band)", 0.35)])
    assert better[1].row["id"] == "c2" and better[0] is cand
    assert better[2].startswith("why; “British Kestavia”, whose title names it")


def test_the_facts_read_beside_the_titled_passages_are_those_read_after_them(
        store: KnowledgeStore, chunks: dict[str, str]) -> None:
    """With a pool, the round reads the facts of the passages it may place beside the
    titled passages, and those of a titled passage placed instead after them: the same
    round as reading them all after."""
    kestavia, crown = (ids.entity_id(n, "concept", "default") for n in ("Kestavia",
                                                                        "Orlan crown"))
    store.write_graph([], [RelationIn(kestavia, "taken_by", crown,
                                      "The Orlan crown took Kestavia in 1841.", "default",
                                      0.9, _EMBEDDER.embed_query("taken"),
                                      chunk_ids=(chunks["british.md"],)),
                           RelationIn(kestavia, "works_in", crown,
                                      "Aman Orr worked in Kestavia.", "default", 0.7,
                                      _EMBEDDER.embed_query("worked"),
                                      chunk_ids=(chunks["orr.md"],))])
    args = (["default"], QUESTION, ["Dunmore Fist"], [_hop(chunks)],
            lambda: _EMBEDDER.embed_query(QUESTION))
    with store.connect() as conn:
        after = second_hop.find(conn, *args)
    with store.connect() as conn:
        beside = second_hop.find(conn, *args, engine=store.search_engine(5000))
    assert beside.hops == after.hops and beside.places == after.places
    assert beside.facts == after.facts
    assert [f["fact"] for f in after.facts] == ["The Orlan crown took Kestavia in 1841."]
