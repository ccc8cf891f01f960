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
from graph_flows.indexing.resolve import compact, find_short_forms


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


def test_a_defined_acronym_stands_for_its_expansion_in_later_chunks() -> None:
    validated = [
        {"chunk_id": "c1", "scope": "s", "relations": [], "entities": [
            {"name": "Latin American School of Medicine", "type": "organization"},
            {"name": "LASM", "type": "organization"}]},
        {"chunk_id": "c2", "scope": "s", "relations": [], "entities": [
            {"name": "LASM", "type": "organization"}, {"name": "Smith", "type": "person"}]},
        {"chunk_id": "c3", "scope": "s", "relations": [], "entities": [
            {"name": "LASM", "type": "organization"}]}]
    texts = {"c1": "The Latin American School of Medicine (LASM) opened.",
             "c2": "LASM grew. Smith taught there.", "c3": "LASM closed."}
    found = find_short_forms(validated, texts, {"c1": "d1", "c2": "d1", "c3": "d2"}, {})
    full = ("Latin American School of Medicine", "organization")
    assert found == {("c1", "organization", "lasm"): full, ("c2", "organization", "lasm"): full}
