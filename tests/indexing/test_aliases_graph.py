"""One entity per real-world thing: short forms and aliases through the real indexing graph
and PostgreSQL (scripted extraction replies, so the test states exactly what was extracted)."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.embeddings import DeterministicFakeEmbedding
from sqlalchemy import text

from bench.fakes import ScriptedChatModel
from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings
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
    ctx.setdefault("short_forms", True)  # the rules under test (off by default)
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


def test_short_forms_are_off_by_default(store: KnowledgeStore) -> None:
    body = script("Paul Robeson sang. Later Robeson acted.",
                  [("Paul Robeson", "person"), ("Robeson", "person")])
    ingest(store, {"a": body}, short_forms=False)
    assert entities(store) == {"Paul Robeson": ("person", []), "Robeson": ("person", [])}
