"""Sentence evidence with spaCy: how pairs are rated (kinds, lists), places across
sentences, and pronoun subjects (sentences written for these tests)."""

from __future__ import annotations

import pytest

from graph_flows.indexing.extraction import evidence, ner
from graph_flows.indexing.extraction.rules import extract_rules

pytestmark = pytest.mark.skipif(ner.load_nlp() is None, reason="spaCy model not installed")


def _pairs(text: str) -> dict[frozenset[str], float]:
    return {frozenset((r.subject, r.object)): r.confidence for r in extract_rules(text).relations}


def test_pair_confidence_by_kinds_verb_and_list() -> None:
    rate = evidence.pair_confidence
    assert rate(("person", "location")) == evidence.PLACE_CONFIDENCE
    assert rate(("organization", "person"), verb=True) == evidence.PAIR_CONFIDENCE
    assert rate(("organization", "person")) == evidence.COOCCURRENCE_CONFIDENCE
    assert rate(("person", "location"), listed=True) == evidence.COOCCURRENCE_CONFIDENCE
    assert rate(("date", "person"), verb=True) == evidence.COOCCURRENCE_CONFIDENCE
    assert rate(("person", "person"), verb=True) == evidence.COOCCURRENCE_CONFIDENCE
    assert evidence.topic_confidence("person", "organization") == evidence.TOPIC_CONFIDENCE
    assert evidence.topic_confidence("organization", "location") < evidence.TOPIC_CONFIDENCE


def test_items_of_a_list_rate_below_a_place_and_its_subject() -> None:
    pairs = _pairs("Tobias Brenner was a painter. "
                   "Tobias Brenner sold his paintings in Hamburg, Vienna and Prague.")
    assert pairs[frozenset(("Tobias Brenner", "Hamburg"))] == evidence.PLACE_CONFIDENCE
    assert pairs[frozenset(("Hamburg", "Vienna"))] == evidence.COOCCURRENCE_CONFIDENCE


def test_places_of_later_sentences_link_to_earlier_places() -> None:
    text = ("Karlsdorf is a village in Bavaria. The mill there was built by Anna Roth. "
            "In the winter the river freezes near Regensburg.")
    ex = extract_rules(text)
    link = {frozenset((r.subject, r.object)): r for r in ex.relations}[
        frozenset(("Bavaria", "Regensburg"))]
    assert link.predicate == "relates_to" and link.fact.startswith("In the winter")
    assert link.confidence == evidence.PAIR_CONFIDENCE


def test_pronoun_subject_after_an_opening_phrase_stands_for_the_previous_subject() -> None:
    text = ("Clara Weiss trained as an engineer in Zurich. "
            "In 1931, she joined Alpen Motorwerke in Basel.")
    by_pair = {frozenset((r.subject, r.object)): r for r in extract_rules(text).relations}
    joined = by_pair[frozenset(("Clara Weiss", "Alpen Motorwerke"))]
    assert (joined.subject, joined.predicate) == ("Clara Weiss", "joined")
    assert by_pair[frozenset(("Clara Weiss", "Basel"))].confidence == evidence.PLACE_CONFIDENCE


def test_a_date_range_gives_two_dates_and_a_parenthesis_dates_its_name() -> None:
    text = "Ottilie Brandt (1871 – 1950) was a painter from Kassel."
    ex = extract_rules(text)
    names = {e.name for e in ex.entities}
    assert {"1871", "1950"} <= names and "1871 – 1950" not in names
    pairs = {frozenset((r.subject, r.object)): r.confidence for r in ex.relations}
    assert pairs[frozenset(("Ottilie Brandt", "1950"))] == evidence.PAIR_CONFIDENCE
    ranged = {e.name for e in extract_rules("Anton Pfeil lived from 1802 to 1861.").entities}
    assert {"1802", "1861"} <= ranged
    later = _pairs("Ottilie Brandt moved to Kassel. She painted there until 1950.")
    assert later.get(frozenset(("Ottilie Brandt", "1950")), 0.0) < evidence.PAIR_CONFIDENCE


def test_a_season_like_range_stays_one_date() -> None:
    names = {e.name for e in extract_rules("The club won the league in 1991–92.").entities}
    assert "1991" not in names


def test_opening_sentence_lists_and_places_reach_later_sentences() -> None:
    text = ("Hollberg Werke is a Danish maker of pumps with plants in Aarhus, Odense and "
            "Esbjerg. The firm was bought by Norrland Industri in 1988. "
            "Its chief engineer was Sigrid Aalto.")
    by_pair = {frozenset((r.subject, r.object)): r for r in extract_rules(text).relations}
    assert by_pair[frozenset(("Hollberg Werke", "Odense"))].confidence >= (
        evidence.PAIR_CONFIDENCE)  # a list item of the opening sentence
    bought = by_pair[frozenset(("Aarhus", "Norrland Industri"))]  # opening place, later org
    assert bought.confidence == evidence.PAIR_CONFIDENCE
    assert bought.fact.startswith("The firm was bought")
    assert frozenset(("Esbjerg", "Sigrid Aalto")) in by_pair


def test_two_nationalities_are_not_taken_for_a_relation() -> None:
    assert evidence.pair_confidence(("nationality", "nationality")) == (
        evidence.COOCCURRENCE_CONFIDENCE)
    assert evidence.pair_confidence(("nationality", "person")) == evidence.PLACE_CONFIDENCE
