"""One entity per real-world thing: short forms and aliases through the real indexing graph
and PostgreSQL (scripted extraction replies, so the test states exactly what was extracted)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from sqlalchemy import text

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings
from graph_flows.testing.fakes import ScriptedChatModel
from storage import KnowledgeStore, search

# text -> entities the scripted model extracts from it (name, type), and relations
SCRIPT: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}


def reply(doc: str) -> str:
    for key, (ents, rels) in SCRIPT.items():
        if key in doc:
            return json.dumps({
                "entities": [{"name": n, "type": t, "description": f"{n} in the text.",
                              "confidence": 0.9} for n, t in ents],
                "relations": [{"subject": s, "predicate": "relates_to", "object": o,
                               "fact": f"{s} and {o}.", "confidence": 0.9} for s, o in rels]})
    return json.dumps({"entities": [], "relations": []})


def ingest(store: KnowledgeStore, docs: dict[str, str], **ctx: Any) -> dict[str, Any]:
    res = Resources(Settings(_env_file=None), store, DeterministicFakeEmbedding(size=384),
                    chat_override=ScriptedChatModel.per_document(reply))
    records = [{"uri": uri, "text": body} for uri, body in docs.items()]
    with use_resources(res):
        return runner.run_indexing({"records": records, "source": "t"}, IndexingContext(**ctx))


def entities(store: KnowledgeStore) -> dict[str, tuple[str, list[str]]]:
    with store.connect() as conn:
        rows = conn.execute(text("SELECT name, type, aliases FROM entities")).all()
    return {r.name: (r.type, list(r.aliases)) for r in rows}


def script(body: str, ents: list[tuple[str, str]],
           rels: list[tuple[str, str]] | None = None) -> str:
    SCRIPT[body] = (ents, rels or [])
    return body


def test_short_forms_join_the_full_name_and_are_stored_as_aliases(
        store: KnowledgeStore) -> None:
    body = script(
        "Paul Robeson sang. Robeson studied law. The Latin American School of Medicine "
        "(LASM) trains doctors; LASM is in Havana. The Sacramento Bee reported it, and the "
        "Bee praised Robeson.",
        [("Paul Robeson", "person"), ("Robeson", "organization"),
         ("Latin American School of Medicine", "organization"), ("LASM", "organization"),
         ("The Sacramento Bee", "organization"), ("Bee", "concept")],
        [("Bee", "Robeson"), ("LASM", "Paul Robeson")])
    out = ingest(store, {"a": body})
    got = entities(store)
    assert got == {
        "Paul Robeson": ("person", ["Robeson"]),
        "Latin American School of Medicine": ("organization", ["LASM"]),
        "The Sacramento Bee": ("organization", ["Bee"])}
    assert {"name": "Robeson", "into": "Paul Robeson", "type": "organization"} in out["merges"]
    with store.connect() as conn:  # relations re-pointed to the full names
        facts = conn.execute(text(
            "SELECT s.name, o.name FROM relations r JOIN entities s ON s.id = r.subject_id "
            "JOIN entities o ON o.id = r.object_id")).all()
        assert sorted(map(tuple, facts)) == [
            ("Latin American School of Medicine", "Paul Robeson"),
            ("The Sacramento Bee", "Paul Robeson")]
        # an alias finds its entity through the LIKE search of the query graph
        hits = search.entity_like(conn, "default", ["Robeson", "LASM"], 10)
        assert {h.entity.name for h in hits} == {"Paul Robeson",
                                                 "Latin American School of Medicine"}
        assert next(h.entity for h in hits if h.entity.name == "Paul Robeson").aliases == \
            ("Robeson",)
        # and the trigram search, through a misspelt alias
        fuzzy = search.entity_fuzzy(conn, "default", ["Robesonn"], 10)
        assert "Paul Robeson" in {h.entity.name for h in fuzzy}


def test_a_surname_shared_by_two_people_joins_neither(store: KnowledgeStore) -> None:
    body = script("John Smith founded Acme. Smith hired many. Later Anna Smith ran it.",
                  [("John Smith", "person"), ("Smith", "person"), ("Anna Smith", "person")])
    ingest(store, {"a": body})
    assert entities(store) == {"John Smith": ("person", []), "Smith": ("person", []),
                               "Anna Smith": ("person", [])}


def test_acronym_colliding_with_a_word_needs_its_definition(store: KnowledgeStore) -> None:
    undefined = script(
        "The American Council on Education met. The pilot was an ACE. United States and US.",
        [("American Council on Education", "organization"), ("ACE", "organization"),
         ("United States", "location"), ("US", "location")])
    defined = script(
        "The Information Technology (IT) office grew. IT hired two people.",
        [("Information Technology", "organization"), ("IT", "organization")])
    ingest(store, {"a": undefined, "b": defined})
    got = entities(store)
    assert got["ACE"] == ("organization", []) and got["US"] == ("location", [])
    assert got["American Council on Education"] == ("organization", [])
    assert got["Information Technology"] == ("organization", ["IT"]) and "IT" not in got


def test_dotted_initials_and_a_name_typed_twice_join_through_the_store(
        store: KnowledgeStore) -> None:
    body = script(
        "U.S. forces landed first. The United States had declared war on Spain. Jacob "
        "sailed with them; Jacob kept a diary. The pilot was an ACE.",
        [("U.S.", "location"), ("United States", "location"), ("Spain", "location"),
         ("Jacob", "person"), ("Jacob", "organization"), ("ACE", "organization")],
        [("United States", "Spain"), ("Jacob", "United States")])
    ingest(store, {"a": body})
    got = entities(store)
    assert got["United States"] == ("location", ["U.S."]) and "U.S." not in got
    with store.connect() as conn:
        jacobs = conn.execute(text("SELECT count(*) FROM entities WHERE name = 'Jacob'")).scalar()
    assert jacobs == 1
    assert got["ACE"] == ("organization", [])  # an undotted acronym that is a word: itself


def test_names_differing_by_case_punctuation_or_diacritics_are_one(
        store: KnowledgeStore) -> None:
    body = script("Mediaș is a town. MEDIAS grew; Medias has a church. Zürich and Zurich.",
                  [("Mediaș", "location"), ("MEDIAS", "location"), ("Medias", "location"),
                   ("Zürich", "location"), ("Zurich", "location")])
    ingest(store, {"a": body})
    # "Medias" and "MEDIAS" are one spelling to validation (case folded): one alias
    assert entities(store) == {"Mediaș": ("location", ["MEDIAS"]),
                               "Zürich": ("location", ["Zurich"])}


def test_short_forms_stay_in_their_document_and_across_batches(store: KnowledgeStore) -> None:
    """A later chunk of the same document, resolved in a later batch, finds the full name
    stored by the earlier one; a bare surname in another document stays its own entity, and
    the full name there merges with the stored one as before (same name and type)."""
    first = script("Edgar F. Codd wrote the paper on relations in 1970; it changed how "
                   "databases were built.",
                   [("Edgar F. Codd", "person")])
    later = script("Codd received the Turing Award for it.", [("Codd", "person")])
    other = script("Boyce and Codd defined a normal form. Edgar F. Codd taught.",
                   [("Codd", "person"), ("Boyce", "person"), ("Edgar F. Codd", "person")])
    other_first = script("Codd is cited by many.", [("Codd", "person")])
    out = ingest(store, {"a": first + "\n\n" + later}, chunk_size=100, chunk_overlap=0,
                 batch_size=1)
    assert out["chunks"]["completed"] == 2
    assert entities(store) == {"Edgar F. Codd": ("person", ["Codd"])}
    ingest(store, {"b": other_first, "c": other})
    got = entities(store)
    assert got["Edgar F. Codd"] == ("person", ["Codd"])
    assert got["Codd"] == ("person", [])  # document b: no full name there


def test_short_forms_can_be_left_apart(store: KnowledgeStore) -> None:
    body = script("Paul Robeson sang. Later Robeson acted.",
                  [("Paul Robeson", "person"), ("Robeson", "person")])
    ingest(store, {"a": body}, short_forms=False)
    assert entities(store) == {"Paul Robeson": ("person", []), "Robeson": ("person", [])}


def graph_by_name(store: KnowledgeStore, scope: str) -> dict[str, Any]:
    """The scope's graph with names for ids: entities (type, aliases), relations, provenance
    by chunk position (scopes differ, so chunk ids do too)."""
    with store.connect() as conn:
        ents = conn.execute(text(
            "SELECT name, type, aliases FROM entities WHERE scope = :s"), {"s": scope}).all()
        rels = conn.execute(text(
            "SELECT s.name AS s, r.predicate, o.name AS o FROM relations r "
            "JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id "
            "WHERE r.scope = :s"), {"s": scope}).all()
        prov = conn.execute(text(
            "SELECT e.name, c.ordinal FROM entity_provenance p JOIN entities e "
            "ON e.id = p.entity_id JOIN chunks c ON c.id = p.chunk_id WHERE e.scope = :s"),
            {"s": scope}).all()
    return {"entities": sorted((r.name, r.type, sorted(r.aliases)) for r in ents),
            "relations": sorted(map(tuple, rels)), "provenance": sorted(map(tuple, prov))}


def test_a_document_resolved_out_of_order_ends_as_a_clean_run(store: KnowledgeStore) -> None:
    """The short form's chunk is stored before the full name's chunk (that one failed first
    and is retried by the next run): once the document is complete, the graph equals the
    graph of a run that resolved the chunks in order."""
    first = script("Paul Robeson sang in London in 1928, and the concert hall was full that night.",
                   [("Paul Robeson", "person"), ("London", "location")],
                   [("Paul Robeson", "London")])
    later = script("Robeson studied at Columbia Law School, where he took his law degree in 1923.",
                   [("Robeson", "person"), ("Columbia Law School", "organization")],
                   [("Robeson", "Columbia Law School")])
    body = first + "\n\n" + later
    small = IndexingContext(chunk_size=100, chunk_overlap=0, batch_size=1)
    down = {"first": False}

    def flaky(doc: str) -> str:
        if down["first"] and first in doc:
            raise RuntimeError("the model is down")
        return reply(doc)

    res = Resources(Settings(_env_file=None), store, DeterministicFakeEmbedding(size=384),
                    chat_override=ScriptedChatModel.per_document(flaky))

    def run(scope: str, **extra: Any) -> dict[str, Any]:
        return runner.run_indexing({"records": [{"uri": "a", "text": body}], "source": "t",
                                    "scope": scope, **extra}, small)

    with use_resources(res):
        assert run("clean")["chunks"]["completed"] == 2
        down["first"] = True
        out = run("faulty")
        assert (out["chunks"]["completed"], out["chunks"]["failed"]) == (1, 1)
        half = graph_by_name(store, "faulty")  # not joined: the document is not complete
        assert ("Robeson", "person", []) in half["entities"]
        down["first"] = False
        again = run("faulty", retry_failed=True)
    assert again["chunks"]["completed"] == 1
    assert {"name": "Robeson", "into": "Paul Robeson", "type": "person"} in again["merges"]
    assert graph_by_name(store, "faulty") == graph_by_name(store, "clean") == {
        "entities": [("Columbia Law School", "organization", []), ("London", "location", []),
                     ("Paul Robeson", "person", ["Robeson"])],
        "relations": [("Paul Robeson", "relates_to", "Columbia Law School"),
                      ("Paul Robeson", "relates_to", "London")],
        "provenance": [("Columbia Law School", 1), ("London", 0), ("Paul Robeson", 0),
                       ("Paul Robeson", 1)]}
    # joined once: a third run changes nothing
    with use_resources(res):
        run("faulty")
    assert graph_by_name(store, "faulty") == graph_by_name(store, "clean")


def test_a_write_retried_after_its_join_is_joined_again(store: KnowledgeStore) -> None:
    """A batch's write retried after its documents were joined (the connection lost once
    the join had committed) writes the short form again; the retry's join moves it again."""
    from graph_flows.indexing.join_names import join_documents
    from storage import ChunkOutcome, EntityIn

    body = script("Paul Robeson sang. Robeson studied law in New York.",
                  [("Paul Robeson", "person"), ("Robeson", "organization")])
    ingest(store, {"retried": body})
    assert entities(store) == {"Paul Robeson": ("person", ["Robeson"])}
    with store.connect() as conn:
        doc_id, chunk_id = conn.execute(text(
            "SELECT d.id, c.id FROM documents d JOIN chunks c ON c.document_id = d.id")).one()
    store.write_graph([EntityIn("Robeson", "organization", "default", "", 0.9, None,
                                (chunk_id,))], [], completed=[ChunkOutcome(chunk_id)])
    assert "Robeson" in entities(store)  # the retried write, before its join
    join_documents(store, [doc_id])
    assert entities(store) == {"Paul Robeson": ("person", ["Robeson"])}
