"""The predicate as stated (migration 0007): stored, read back, part of a fact's identity."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import text

from storage import KnowledgeStore, ids, search
from storage.models import DocumentIn, EntityIn, RelationIn

MS = EntityIn("Microsoft", "organization", "default", "A software company.")
GH = EntityIn("GitHub", "organization", "default", "A code hosting service.")
NAT = EntityIn("Nat Friedman", "person", "default", "An executive.")
ERIN = EntityIn("Erin Vale", "person", "default", "An executive.")


def _chunk(store: KnowledgeStore, name: str) -> str:
    doc = DocumentIn("default", name, f"{name}.md", ids.content_hash(name))
    return store.sync_document(doc, [f"text of {name}"]).new_chunk_ids[0]


def _rel(obj: EntityIn, said: str | None, fact: str, chunk: str, **kw) -> RelationIn:
    return RelationIn(MS.id, "relates_to", obj.id, fact, "default", 0.9, chunk_ids=(chunk,),
                      predicate_text=said, **kw)


def test_ids_without_a_stated_predicate_are_unchanged() -> None:
    old = "rel_" + hashlib.sha256(f"{MS.id}:relates_to:{GH.id}".encode()).hexdigest()
    assert ids.relation_id(MS.id, "relates_to", GH.id) == old
    assert ids.relation_id(MS.id, "relates_to", GH.id, None) == old
    assert ids.relation_id(MS.id, "relates_to", GH.id, "") == old
    assert ids.relation_id(MS.id, "relates_to", GH.id, "Relates To") == old  # the type again
    acquired = ids.relation_id(MS.id, "relates_to", GH.id, "acquired")
    assert acquired != old
    assert acquired == ids.relation_id(MS.id, "relates_to", GH.id, "  Acquired ")
    assert acquired != ids.relation_id(MS.id, "relates_to", GH.id, "was founded by")
    assert _rel(GH, "acquired", "x", "c").id == acquired
    # A specific type already says how they relate: its wordings are one fact.
    uses = ids.relation_id(MS.id, "uses", GH.id)
    assert ids.relation_id(MS.id, "uses", GH.id, "utilizes") == uses
    assert ids.relation_id(MS.id, "uses", GH.id, "employs") == uses


def test_distinct_statements_stay_distinct_and_read_back(store: KnowledgeStore) -> None:
    a, b = _chunk(store, "a"), _chunk(store, "b")
    store.write_graph([MS, GH], [
        _rel(GH, "acquired", "Microsoft acquired GitHub in 2018.", a),
        _rel(GH, "invested in", "Microsoft invested in GitHub.", a),
        _rel(GH, None, "Microsoft and GitHub appear together.", a)], completed=[])
    store.write_graph([MS, GH], [  # the same statement again, other spelling: one fact
        _rel(GH, "Acquired", "Microsoft bought GitHub.", b)], completed=[])
    with store.connect() as conn:
        rows = conn.execute(text(
            "SELECT predicate, predicate_text FROM relations ORDER BY predicate_text")).all()
        hits = search.fact_like(conn, "default", ["GitHub"], 10)
    assert [tuple(r) for r in rows] == [("relates_to", "acquired"),
                                        ("relates_to", "invested in"), ("relates_to", None)]
    assert {h.fact.predicate_text for h in hits} == {"acquired", "invested in", None}


def test_supersession_by_attribute_ignores_the_wording(store: KnowledgeStore) -> None:
    a, b = _chunk(store, "a"), _chunk(store, "b")
    store.write_graph([MS, NAT, ERIN], [
        _rel(NAT, "is led by", "Microsoft is led by Nat Friedman.", a, attribute="ceo",
             valid_at=datetime(2015, 1, 1, tzinfo=UTC))], completed=[])
    store.write_graph([MS, NAT, ERIN], [
        _rel(ERIN, "appointed as chief", "Microsoft appointed Erin Vale as chief.", b,
             attribute="ceo", valid_at=datetime(2021, 1, 1, tzinfo=UTC)),
        _rel(ERIN, "is run by", "Microsoft is run by Erin Vale.", b, attribute="ceo")],
        completed=[])
    with store.connect() as conn:
        rows = {r.predicate_text: r for r in conn.execute(text(
            "SELECT predicate_text, invalid_at, invalidated_by FROM relations")).all()}
    assert rows["is led by"].invalid_at == datetime(2021, 1, 1, tzinfo=UTC)
    # Two wordings of the same value do not contradict each other.
    assert rows["appointed as chief"].invalid_at is None
    assert rows["is run by"].invalid_at is None
