"""The answer's confidence label: its signals and rules, as pure functions (no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graph_flows.query import answer, answer_kind, confidence, extractive
from graph_flows.query.confidence import Signals

WHO = "Who founded Harrowgate Foods?"


def _cite(*texts: str) -> list[dict]:
    return [{"fact_id": str(i), "fact": t, "subject": "", "object": "",
             "sources": [{"uri": f"doc{i}.md"}]} for i, t in enumerate(texts)]


def _assess(query: str, text: str, cited: list[dict] | None = None, **kw) -> dict[str, str]:
    q = extractive.question(query)
    return confidence.assess(q, query, text, _cite(text) if cited is None else cited, **kw)


@pytest.mark.parametrize(("query", "kind"), [
    ("When was Harrowgate Foods founded?", "date"),
    ("In what year did the mill close?", "date"),
    ("How many shops does Norvale own?", "number"),
    ("Where was Margaret Ellison born?", "place"),
    ("Who founded Harrowgate Foods?", "person"),
    ("Which company acquired Harrowgate Foods?", "name"),
    ("What did Edgar Codd propose?", "name"),
])
def test_asked_kind_by_the_wh_phrase(query: str, kind: str) -> None:
    assert answer_kind.asked_kind(query) == kind


def test_candidate_is_a_mention_of_the_asked_kind_the_question_lacks() -> None:
    q = extractive.question("When did Edgar Codd publish the paper?")
    said = ["Edgar F. Codd published the paper in June 1970 in Communications of the ACM."]
    assert confidence.candidate(said, "date", q) == "June 1970"
    assert confidence.candidate(said[:1], "place", q) == ""
    assert confidence.candidate(["Edgar F. Codd wrote it."], "person", q) == ""  # asked
    assert confidence.candidate(["Codd was a mathematician."], "date", q) == ""
    who = extractive.question(WHO)
    assert confidence.candidate(["It was founded by Margaret Ellison in Leeds."], "person",
                                 who) == "Margaret Ellison"


def test_labels_follow_the_rules() -> None:
    right = Signals(covered=3, names=2, names_asked=2, predicate_asked=1,
                    lead_predicate=1, kind="person", candidate="Margaret Ellison", agree=1)
    assert confidence.label(right) == "high"
    assert confidence.label(replace(right, agree=0)) == "medium"  # no other document says it
    assert confidence.label(replace(right, lead_predicate=0)) == "medium"  # nor the relation
    assert confidence.label(replace(right, candidate="")) == "low"
    assert confidence.label(replace(right, names=1, names_asked=3)) == "low"
    assert confidence.label(replace(right, names=1)) == "high"  # half the names suffice
    assert confidence.label(replace(right, names=0)) == "none"
    assert confidence.label(replace(right, declined=True)) == "none"
    nameless = replace(right, names=0, names_asked=0)
    assert confidence.label(nameless) == "high"
    assert confidence.label(replace(nameless, covered=0)) == "none"


def test_assess_says_why() -> None:
    cited = _cite("Harrowgate Foods was founded by Margaret Ellison.",
                  "Margaret Ellison was a baker in Leeds.")
    text = ("Harrowgate Foods was founded by Margaret Ellison. [F1]\n\nSupporting evidence:\n"
            "- Margaret Ellison was a baker in Leeds. [F2]")
    high = _assess(WHO, text, cited)
    assert high == {"label": "high", "reason": (
        "the cited evidence names 2 of the question's 2 names (Harrowgate, Foods); it holds a "
        "person as asked (Margaret Ellison), also said by 1 other document; its first "
        "sentence says 1 of the question's 1 relation words (founded)")}
    alone = _assess(WHO, "Harrowgate Foods was founded by Margaret Ellison. [F1]", cited[:1])
    assert alone["label"] == "medium" and "said by no other document" in alone["reason"]
    no_person = _assess(WHO, "Harrowgate Foods was founded in 1987. [F1]",
                        _cite("Harrowgate Foods was founded in 1987."))
    assert no_person["label"] == "low" and "it holds no person as asked" in no_person["reason"]
    other = _assess(WHO, "Norvale was founded by Ada Brook. [F1]",
                    _cite("Norvale was founded by Ada Brook."))
    assert other["label"] == "none" and "names 0 of the question's 2 names" in other["reason"]
    assert _assess(WHO, "x", [], retrieved=False) == {"label": "none",
                                                       "reason": "nothing was retrieved"}
    assert _assess(WHO, "x", [])["label"] == "none"


def test_agreeing_documents_count_other_sources_of_the_candidate() -> None:
    cited = _cite("Harrowgate Foods was founded by Margaret Ellison.")
    passages = [{"label": "P1", "uri": "doc0.md", "text": "Margaret Ellison, a baker ..."},
                {"label": "P2", "uri": "bio.md", "text": "Margaret Ellison (1940-2011) ..."},
                {"label": "P3", "uri": "x.md", "text": "Leeds is a city."}]
    facts = [{"fact": "Margaret Ellison founded Harrowgate.", "sources": [{"uri": "y.md"}]}]
    assert confidence.agreeing("Margaret Ellison", cited, facts, passages) == 2
    assert confidence.agreeing("", cited, facts, passages) == 0


def test_a_model_saying_it_does_not_know_is_none() -> None:
    cited = _cite("Margaret Ellison worked at Harrowgate Foods.",
                  "Margaret Ellison founded Harrowgate Foods.")
    text = ("The knowledge base does not say who founded Harrowgate Foods; it only says "
            "that Margaret Ellison worked there [F1].")
    assert _assess(WHO, text, cited) == {"label": "none", "reason": "the answer says the "
                                         "knowledge base does not contain the answer"}
    plain = "Margaret Ellison founded Harrowgate Foods [F2], where she worked [F1]."
    assert _assess(WHO, plain, cited)["label"] == "high"
    assert _assess(WHO, text, cited, declined=False)["label"] != "none"  # extractive text


def test_answer_sentences_drop_header_citations_and_the_support_line() -> None:
    text = answer.extractive_text([
        extractive.Candidate(0, "It was founded in 1987.", "P1", frozenset(), frozenset()),
        extractive.Candidate(1, "Leeds is a city.", "F2", frozenset(), frozenset())])
    assert confidence.answer_sentences(text) == ["It was founded in 1987.", "Leeds is a city."]


def test_relation_words_leave_out_one_letter_pieces() -> None:
    q = extractive.question("Which query language was based on Codd's relational calculus?")
    assert "s" in q.predicate and "s" not in confidence.relation_words(q)
    assert confidence.relation_words(q) == {"langu", "bas", "relat", "calcu"}
