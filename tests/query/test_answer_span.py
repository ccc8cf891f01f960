"""The span an answer's diagram draws as its answer (graph_flows.query.answer_span): each
cited line on its own, no possessive, a one-digit number, the question's class noun, the
mention nearest the bridge, a coordinated list; and the span drawn as the answer node,
joined by its sentence's relation, when no stored entity is named so. The names are made
up; spaCy's small English model reads them."""

from __future__ import annotations

import re

import pytest

from graph_flows.query import answer_diagram, answer_kind, answer_span, extractive
from graph_flows.query.answer import EXTRACTIVE_HEADER
from graph_flows.query.mermaid import MAX_NODES
from graph_flows.services.evaluation.diagram import parse_mermaid
from graph_flows.shared.nlp import load_nlp
from tests.query.test_query_graph import assert_valid_mermaid

needs_parse = pytest.mark.skipif(load_nlp() is None, reason="spaCy's model is not installed")


def _answer(lead: str, *support: str) -> str:
    """An extractive answer: its lead sentence citing [P1], then supporting sentences."""
    lines = [EXTRACTIVE_HEADER, "", f"{lead} [P1]", "", "Supporting evidence:"]
    return "\n".join([*lines, *(f"- {s} [P{i}]" for i, s in enumerate(support, 2))])


def _mentions(query: str, text: str) -> tuple[str, list[str]]:
    return answer_diagram.answer_mentions(query, text, extractive.question(query))


def test_a_clipped_cited_line_is_not_run_into_the_next() -> None:
    text = _answer("Canon law In the Church of Varnia, the old courts still decide some "
                   "matters (e.g. discipline of clergy, and issues rel…",
                   "Other churches in the Varnian Communion still function.")
    said = answer_span.said_sentences(text)
    assert said[1] == "Other churches in the Varnian Communion still function."
    assert len(said) == 2 and said[0].endswith("rel…")


@needs_parse
def test_a_possessive_names_whose_the_answer_is_not_the_answer() -> None:
    query = "Who is the wife of Tomas Brenner?"
    text = _answer("Paul Brenner's mother, Orsina Kael, was Samuel Hartley's first wife.")
    assert _mentions(query, text)[0] == "Orsina Kael"
    # no apposition renames it: the possessive names the candidate (drawn without "'s")
    book = "Who wrote Adolescence?"
    said = _answer("The study began with the publication of Samuel Hartley's Adolescence.")
    assert _mentions(book, said)[0] == "Samuel Hartley's"


@needs_parse
def test_a_one_digit_number_is_an_answer_the_question_does_not_hold() -> None:
    query = "The state where Henry Tallis died has how many congressional districts?"
    text = _answer("He died in Kansas in 1902.",
                   "Kansas is currently divided into 4 congressional districts.")
    assert _mentions(query, text)[0] == "4"
    assert answer_span.fresh(extractive.question("Who won 4 races?"))("4") is False


@needs_parse
def test_the_class_noun_of_the_question_picks_the_mention() -> None:
    query = "Of what church is the Diocese of Brightmoor?"
    text = _answer("The Diocese of Brightmoor is a diocese of the Ecclesiastical Province "
                   "of Canada of the Anglican Church of Canada.")
    assert _mentions(query, text)[0] == "the Anglican Church of Canada"
    q = extractive.question("Which county is Midway in?")
    found = (answer_kind.Mention("Today's Country", "ORG"),
             answer_kind.Mention("White County", "GPE"))
    assert answer_span.surest(found, "name", q)[0].text == "White County"
    assert answer_span.surest(found[::-1], "name", q)[0].text == "White County"


@needs_parse
def test_what_a_later_sentence_says_of_the_bridge_is_the_nearest_mention() -> None:
    query = "What amount of TEUs did the city where the 3rd Chess Games took place handle?"
    assert answer_kind.asked_kind(query) == "number"
    text = _answer("The 3rd Chess Games took place in Thessaloniki, Greece.",
                   "In 2010 Piraeus handled 513,319 TEUs, followed by Thessaloniki, "
                   "which handled 273,282 TEUs.")
    assert _mentions(query, text)[0] == "273,282"


@needs_parse
def test_a_coordinated_list_is_one_answer() -> None:
    query = "Where did Germany have imperial interests?"
    text = _answer("In 1884 Germany began to build a colonial empire in Africa and the "
                   "South Pacific.")
    assert _mentions(query, text)[0] == "Africa and the South Pacific"


@needs_parse
def test_an_answer_span_that_is_no_stored_entity_is_drawn_with_its_sentence_relation(
) -> None:
    """The answer ("4") is no stored entity and no fact holds it: the diagram draws it as
    the answer node, joined to the question's entity by the words the cited sentence puts
    between them."""
    query = "How many congressional districts does Kansas have?"
    text = _answer("Kansas is currently divided into 4 congressional districts.")
    facts = [{"id": "f", "subject_id": "k", "subject": "Kansas", "object_id": "t",
              "object": "Topeka", "predicate": "has_capital", "predicate_text": "has capital",
              "fact": "Kansas has capital Topeka."}]
    entities = [{"id": "k", "name": "Kansas", "type": "place"},
                {"id": "t", "name": "Topeka", "type": "place"}]
    q = extractive.question(query)
    diagram = answer_diagram.answer_diagram(query, q, text, "extractive", "medium",
                                            [{"passage_id": "p1"}], entities, facts, [],
                                            MAX_NODES)
    assert_valid_mermaid(diagram)
    drawn = parse_mermaid(diagram)
    by_name = {v: k for k, v in drawn.nodes.items()}
    assert f"class {by_name['4']} answer" in diagram
    assert (by_name["Kansas"], "is currently divided into", by_name["4"]) in drawn.edges
    assert re.search(r"^    linkStyle 0 ", diagram, re.M)  # the cited sentence's edge
