"""The short-form rules of entity resolution (graph_flows.indexing.aliases), no database."""

from __future__ import annotations

import pytest

from graph_flows.indexing.aliases import (
    DocumentNames,
    abbreviates,
    defined_beside,
    fold,
    is_acronym,
    words,
)
from graph_flows.indexing.join_names import document_joins
from graph_flows.indexing.resolve import compact
from storage.resolution import DocumentEntity


def names(*full: tuple[str, str]) -> DocumentNames:
    doc = DocumentNames()
    for name, type_ in full:
        doc.add(name, type_)
    return doc


def target(doc: DocumentNames, name: str, type_: str = "concept", text: str = "") -> str | None:
    hit = doc.short_form_of(name, type_, text)
    return None if hit is None else hit.name


def test_case_punctuation_and_diacritics_fold_to_one_key() -> None:
    assert fold("Mediaș") == fold("MEDIAS") == "medias"
    assert compact("Zürich") == compact("zurich") == compact("ZURICH")
    assert compact("Qur'an") == compact("Quran")
    assert compact("Smith") != compact("Smyth")
    assert words("The Sacramento Bee") == ["sacramento", "bee"]
    assert words("Paul Desmarais Jr.") == ["paul", "desmarais"]


def test_surname_and_first_name_plus_surname_join_the_person() -> None:
    doc = names(("Paul Robeson", "person"), ("Henrik August Angell", "person"))
    assert target(doc, "Robeson", "organization") == "Paul Robeson"  # type guessed wrong
    assert target(doc, "Henrik Angell", "person") == "Henrik August Angell"
    assert target(doc, "Paul", "person") == "Paul Robeson"
    assert target(doc, "robeson") is None  # not written as a name
    assert target(doc, "Paul Robeson", "person") is None  # the full name is itself


def test_a_surname_shared_by_two_people_joins_neither() -> None:
    doc = names(("John Smith", "person"), ("Anna Smith", "person"))
    assert target(doc, "Smith", "person") is None
    assert target(doc, "John Smith", "person") is None
    assert target(doc, "Anna", "person") == "Anna Smith"
    # the second Smith appears only later: the bare surname before it is ambiguous too
    early = names(("John Smith", "person"))
    whole = names(("John Smith", "person"), ("Anna Smith", "person"))
    assert early.short_form_of("Smith", "person", "", whole) is None
    assert early.short_form_of("Smith", "person", "") is not None


def test_acronym_joins_only_when_defined_beside_its_expansion() -> None:
    text = "He studied at the Latin American School of Medicine ( LASM ) in Havana."
    assert defined_beside("LASM", "Latin American School of Medicine", text)
    assert abbreviates("PRC", "People's Republic of China")
    assert not abbreviates("ELAM", "Latin American School of Medicine")
    doc = names(("Latin American School of Medicine", "organization"))
    assert target(doc, "LASM", "organization", text) == "Latin American School of Medicine"
    assert target(doc, "LASM", "organization", "LASM was founded in 1999.") is None
    # defined the other way round
    doc = names(("People's Republic of China", "location"))
    assert target(doc, "PRC", "location", "the PRC (People's Republic of China)") == \
        "People's Republic of China"


@pytest.mark.parametrize(("acronym", "expansion"), [
    ("IT", "Information Technology"), ("US", "United States"),
    ("ACE", "American Council on Education")])
def test_acronym_that_is_also_a_word_needs_its_definition(acronym: str, expansion: str) -> None:
    assert is_acronym(acronym)
    doc = names((expansion, "organization"))
    assert target(doc, acronym, "organization", f"{expansion} grew. {acronym} won.") is None
    defined = f"The {expansion} ({acronym}) grew."
    assert target(doc, acronym, "organization", defined) == expansion


def test_vowelless_acronym_spelling_the_initials_joins() -> None:
    doc = names(("Naval Canteen Service", "organization"), ("Communist Party of China",
                                                            "organization"))
    assert target(doc, "NCS", "organization", "NCS ran shops.") == "Naval Canteen Service"
    assert target(doc, "CPC", "organization", "") == "Communist Party of China"
    assert target(doc, "NC", "organization", "") is None  # two letters: too short to tell


def test_head_of_a_longer_name_needs_a_definite_article() -> None:
    doc = names(("The Sacramento Bee", "organization"), ("Norwegian Parliament",
                                                         "organization"))
    assert target(doc, "the Bee", "concept") == "The Sacramento Bee"
    assert target(doc, "Bee", "concept", "The Bee reported it.") == "The Sacramento Bee"
    assert target(doc, "Bee", "concept", "Bee reported it.") is None
    assert target(doc, "Bee", "concept", "the Bee Gees sang.") is None  # another name
    assert target(doc, "Sacramento Bee", "organization") == "The Sacramento Bee"
    # a place is not the head of an organisation's name, nor a part of a place
    doc = names(("United States Naval Forces Germany", "organization"),
                ("British Columbia", "location"))
    assert target(doc, "Germany", "location", "the Germany team") is None
    assert target(doc, "Columbia", "concept", "the Columbia") is None


def test_legal_form_dropped_joins_the_company() -> None:
    doc = names(("Atari, Inc.", "organization"), ("Taito Corporation", "organization"))
    assert target(doc, "Atari", "organization") == "Atari, Inc."
    assert target(doc, "Taito", "person") == "Taito Corporation"


def entity(name: str, type_: str) -> DocumentEntity:
    return DocumentEntity("d1", f"id:{name}:{type_}", name, type_, ())


def test_a_defined_acronym_stands_for_its_expansion_in_later_chunks() -> None:
    chunks = [("c1", "The Latin American School of Medicine (LASM) opened."),
              ("c2", "LASM grew. Smith taught there.")]
    full = entity("Latin American School of Medicine", "organization")
    joins = document_joins(chunks, [entity("LASM", "organization"), entity("Smith", "person"),
                                    full])
    assert joins.into == {"id:LASM:organization": full.id}
    assert joins.aliases == {full.id: ["LASM"]}
    # the same acronym in a document that never defines it joins nothing
    assert document_joins([("c3", "LASM closed.")], [entity("LASM", "organization")]).into == {}


def test_joins_do_not_depend_on_the_order_entities_are_listed() -> None:
    """The document's text orders the names: a surname shared by two people of the document
    joins neither, wherever the second one appears."""
    chunks = [("c1", "Paul Robeson sang. Robeson acted."), ("c2", "Later Eslanda Robeson wrote.")]
    ents = [entity("Robeson", "person"), entity("Eslanda Robeson", "person"),
            entity("Paul Robeson", "person")]
    assert document_joins(chunks, ents).into == {}
    assert document_joins(chunks, ents[::-1]).into == {}
    one = [("c1", "Paul Robeson sang. Robeson acted.")]
    for listed in (ents[::2], ents[::-2]):
        assert document_joins(one, listed).into == {"id:Robeson:person": "id:Paul Robeson:person"}


def test_plural_and_singular_are_one_thing_but_not_for_people() -> None:
    doc = names(("Protestant", "concept"), ("Native American", "organization"),
                ("John Williams", "person"), ("William", "person"))
    assert target(doc, "Protestants", "organization") == "Protestant"
    assert target(doc, "Native Americans", "location") == "Native American"
    assert target(doc, "Williams", "person") == "John Williams"  # the surname rule
    assert target(doc, "Williams", "person") != "William"
    assert target(doc, "Protestantism", "concept") is None
    assert target(names(("Church", "organization")), "Churches", "organization") == "Church"


def test_dotted_initials_join_the_one_name_they_spell() -> None:
    doc = names(("United States", "location"), ("District of Columbia", "location"))
    assert target(doc, "U.S.", "location", "U.S. troops left.") == "United States"
    assert target(doc, "D.C.", "location") == "District of Columbia"
    assert target(doc, "US", "location", "US troops left.") is None  # could be a word
    # two names the initials spell: neither
    two = names(("United States", "location"), ("Upper Silesia", "location"))
    assert target(two, "U.S.", "location") is None
    assert target(names(("United States Navy", "organization")), "U.S.", "location") is None


def test_an_acronym_written_before_its_expansion_joins_it() -> None:
    chunks = [("c1", "U.S. troops landed. The United States had declared war.")]
    full = entity("United States", "location")
    joins = document_joins(chunks, [entity("U.S.", "location"), full])
    assert joins.into == {"id:U.S.:location": full.id}  # the entity keeps the full name
    assert joins.aliases == {full.id: ["U.S."]}


def test_one_name_typed_twice_in_a_document_is_one_thing() -> None:
    chunks = [("c1", "Jacob had twelve sons. Jacob settled in Egypt.")]
    ents = [entity("Jacob", "organization"), entity("Jacob", "location")]
    joins = document_joins(chunks, ents)
    assert len(joins.into) == 1 and {*joins.into, *joins.into.values()} == {e.id for e in ents}
    assert document_joins(chunks, ents[::-1]).into == joins.into
    # a person's name typed otherwise too: the surname still joins the person
    chunks = [("c1", "Andry Rajoelina led. Andry Rajoelina won. Rajoelina resigned.")]
    ents = [entity("Andry Rajoelina", "organization"), entity("Andry Rajoelina", "person"),
            entity("Rajoelina", "location")]
    for listed in (ents, ents[::-1]):
        joins = document_joins(chunks, listed)
        assert len(joins.into) == 2 and len(set(joins.into.values())) == 1
        assert {*joins.into, *joins.into.values()} == {e.id for e in ents}
    # a surname two people share still joins neither, whatever their types
    chunks = [("c1", "John Smith met Anna Smith. Smith spoke.")]
    ents = [entity("John Smith", "organization"), entity("John Smith", "person"),
            entity("Anna Smith", "person"), entity("Smith", "person")]
    joins = document_joins(chunks, ents)
    assert {*joins.into, *joins.into.values()} == {"id:John Smith:organization",
                                                   "id:John Smith:person"}


def test_transliteration_marks_are_punctuation() -> None:
    assert fold("Qurʾān") == fold("Qur'an") == "qur an"
    assert compact("Yaʿqūb") == compact("Yaqub")
