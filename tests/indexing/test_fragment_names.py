"""No fragments of sentences stored as names (issue 40 item 3): the no-LLM extractor ends a
name where the name ends, takes no year for the subject of a verb, and states relation texts
without punctuation at their ends; validation guards what an LLM sends the same way."""

from __future__ import annotations

import pytest

from graph_flows.indexing.extraction.ner import load_nlp
from graph_flows.indexing.extraction.rules import extract_rules, extract_rules_only
from graph_flows.indexing.extraction.schema import Extraction
from graph_flows.indexing.extraction.validation import validate_extraction
from graph_flows.shared.fragments import is_fragment, is_number

needs_spacy = pytest.mark.skipif(load_nlp() is None, reason="spaCy model not installed")

INGRES = ("Michael Stonebraker and Eugene Wong started the Ingres project in 1973. Ingres "
          "used its own query language, QUEL, which was based on Codd's relational calculus.")
POSTQUEL = ("The POSTGRES project at Berkeley used a query language called PostQUEL, derived "
            "from the QUEL language of Ingres.")
ILLUSTRA = ("The commercial Illustra system, founded by Stonebraker in 1992, was based on "
            "POSTGRES.")
CODD = ('In June 1970 Codd published "A Relational Model of Data for Large Shared Data '
        'Banks" in Communications of the ACM.')
LASSILA = ("In 2001 Tim Berners-Lee, James Hendler and Ora Lassila described the Semantic Web "
           "in Scientific American.")
BERT = "Comparing two sentences with BERT requires running both through the network."


def _kept(text: str) -> Extraction:
    """What the pipeline keeps of the rule extractor's output (validated, loose threshold so
    evidence facts count too)."""
    out = validate_extraction(extract_rules(text), min_confidence=0.3)
    return Extraction(entities=out.entities, relations=out.relations)


def _names(ex: Extraction) -> set[str]:
    return {e.name for e in ex.entities}


def _fragments(ex: Extraction) -> list[str]:
    """Stored names that are fragments; a bare year is a date the graph keeps as a value."""
    return [e.name for e in ex.entities if is_fragment(e.name) and not is_number(e.name)]


@needs_spacy
@pytest.mark.parametrize("text", [INGRES, POSTQUEL, ILLUSTRA, CODD, LASSILA, BERT])
def test_no_fragment_is_stored_as_a_name(text: str) -> None:
    ex = _kept(text)
    assert _fragments(ex) == [], _names(ex)
    for rel in ex.relations:
        said = rel.predicate_text or rel.predicate
        assert said[0].isalnum() and said[-1].isalnum(), rel
        assert said.split()[-1] not in {"the", "a", "an", "its", "their"}, rel


@needs_spacy
def test_an_object_phrase_is_a_noun_phrase() -> None:
    ingres, postquel, bert = _kept(INGRES), _kept(POSTQUEL), _kept(BERT)
    assert "query language" in _names(ingres)  # not "own query language"
    assert not any(n.startswith(("own ", "its ")) for n in _names(ingres))
    assert not any(n.endswith("called") for n in _names(postquel)), _names(postquel)
    assert not any("running" in n for n in _names(bert)), _names(bert)


def test_without_spacy_a_name_does_not_end_at_called() -> None:
    ex = extract_rules_only("Postgres used a query language called PostQUEL.")
    assert "query language" in _names(ex) and not _fragments(ex), _names(ex)


@needs_spacy
def test_a_year_is_not_the_subject_of_a_verb() -> None:
    ex = _kept(ILLUSTRA)
    assert not [r for r in ex.relations if is_number(r.subject) and r.predicate_text], \
        ex.relations
    based = [r for r in ex.relations if r.object == "POSTGRES" and r.predicate_text]
    assert based and all(r.subject == "Illustra" for r in based), based


@needs_spacy
def test_a_quoted_title_ends_at_its_closing_quote() -> None:
    names = _names(_kept(CODD))
    assert "Relational Model of Data for Large Shared Data Banks" in names, names
    assert not any('"' in n for n in names), names


@needs_spacy
def test_a_name_does_not_take_the_article_or_preposition_around_it() -> None:
    ex = _kept(LASSILA)
    assert "Semantic Web" in _names(ex) and "Semantic Web in" not in _names(ex)
    said = {r.predicate_text for r in ex.relations if r.object == "Semantic Web"}
    assert "described" in said and "described the" not in said, said


@needs_spacy
def test_a_fronted_preposition_follows_the_verb() -> None:
    said = {r.predicate_text for r in _kept(CODD).relations if r.subject == "Codd"}
    assert "published in" in said and "in published" not in said, said


def test_validation_cuts_an_llm_name_down_and_drops_what_is_left_a_fragment() -> None:
    out = validate_extraction(Extraction.model_validate({
        "entities": [
            {"name": "the University of Cambridge", "type": "organization"},
            {"name": 'Relational Model of Data for Large Shared Data Banks" in Co',
             "type": "concept"},
            {"name": "The", "type": "concept"}, {"name": "US", "type": "location"},
            {"name": "McDonald's", "type": "organization"},
            {"name": "1992", "type": "concept"}, {"name": "Illustra", "type": "organization"},
            {"name": "POSTGRES", "type": "technology"}],
        "relations": [
            {"subject": "Illustra", "predicate": ", was based on", "object": "POSTGRES"},
            {"subject": "the University of Cambridge", "predicate": "is located in",
             "object": "US"},
            {"subject": "Illustra", "predicate": "described the", "object": "POSTGRES"}]}))
    assert [e.name for e in out.entities] == [
        "University of Cambridge", "Relational Model of Data for Large Shared Data Banks",
        "US", "McDonald's", "1992", "Illustra", "POSTGRES"]
    assert out.dropped["fragment"] == 1  # "The"
    assert [(r.subject, r.predicate_text, r.object) for r in out.relations] == [
        ("Illustra", "was based on", "POSTGRES"),
        ("University of Cambridge", "is located in", "US"),
        ("Illustra", "described", "POSTGRES")]


@needs_spacy
def test_a_verb_relates_its_subject_only() -> None:
    """A verb's phrase labels a pair only from its subject: not two of its objects or
    adjuncts, not a name inside a participle's clause; a coordinated verb shares the
    subject and gives its own phrase."""
    ellison = _kept("Larry Ellison worked at Ampex and later founded Oracle.")
    said = {(r.subject, r.object): r.predicate_text for r in ellison.relations}
    assert said.get(("Larry Ellison", "Oracle")) == "founded", said
    assert said.get(("Ampex", "Oracle")) is None, said
    virginia = _kept("Virginia is bordered by Maryland to the north and by North Carolina "
                     "to the south.")
    assert not [r for r in virginia.relations if r.predicate_text
                and {r.subject, r.object} == {"Maryland", "North Carolina"}], virginia.relations
    illustra = _kept(ILLUSTRA)
    assert not [r for r in illustra.relations if r.subject == "Stonebraker"
                and r.object == "POSTGRES" and r.predicate_text], illustra.relations
