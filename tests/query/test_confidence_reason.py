"""The confidence reason a person reads (issue 40, item 5): one plain sentence of at most
30 words; kinds from the entity type (spaCy's real model), not capitals; a pronoun where the
answer should stand is no answer."""

from __future__ import annotations

import re

import pytest

from graph_flows.query import answer_kind, answer_slot, confidence, extractive, plain_reason

POSTGRES = "Who started the POSTGRES project?"
HE = "In 1986 he started the POSTGRES project at the University of California, Berkeley."
BERKELEY = [{"label": "P2", "uri": "berkeley.md",
             "text": "The University of California, Berkeley is a public university."}]


def _passages(*texts: str) -> list[dict]:
    return [{"passage_id": f"p{i}", "label": f"P{i + 1}", "text": t, "uri": f"doc{i}.md"}
            for i, t in enumerate(texts)]


def _assess(query: str, text: str, cited: list[dict], passages: list[dict] | None = None,
            ) -> dict[str, str]:
    return confidence.assess(extractive.question(query), query, f"{text} [P1]", cited,
                             passages=passages or [], declined=False)


def test_a_pronoun_where_the_answer_stands_is_no_candidate() -> None:
    # before: "it holds a person as asked (the University of California, Berkeley)", and
    # another document names the university: high
    out = _assess(POSTGRES, HE, _passages(HE), BERKELEY)
    assert out == {"label": "low", "reason": (
        "The cited passage names POSTGRES, but says “he” where the answer's name should be.")}
    named = "In 1986 Michael Stonebraker started the POSTGRES project at Berkeley."
    other = [{"label": "P2", "uri": "mit.md", "text": "Michael Stonebraker taught at MIT."}]
    out = _assess(POSTGRES, named, _passages(named), other)
    assert out["label"] == "high"
    assert "gives Michael Stonebraker, a person, as the answer" in out["reason"], out


def test_the_asked_place_is_read_from_the_parse() -> None:
    slot = answer_slot.asked_slot(POSTGRES)
    assert slot == answer_slot.Slot("start", "subject")
    assert answer_slot.pronoun(slot, HE) == "he"
    assert answer_slot.pronoun(slot, "The project was started by him in 1986.") == "him"
    # a relative pronoun names its antecedent; a pronoun elsewhere is no matter
    assert answer_slot.pronoun(slot, "Stonebraker, who started POSTGRES, left.") == ""
    assert answer_slot.pronoun(slot, "Stonebraker started it in 1986.") == ""
    assert answer_slot.asked_slot("Which company acquired Illustra?") == (
        answer_slot.Slot("acqui", "subject"))
    assert answer_slot.asked_slot("Where was he born?") is None  # no subject or object


def test_the_mention_in_the_asked_place_is_the_candidate() -> None:
    said = ("GiST, the Generalized Search Tree, was designed by Joseph Hellerstein at "
            "Berkeley and is part of PostgreSQL.")
    slot = answer_slot.asked_slot("Who designed GiST?")
    assert answer_slot.fill(slot, said) == answer_slot.Filled(phrase="Joseph Hellerstein")
    q = extractive.question("Who designed GiST?")
    # before: the first organisation-or-person mention, "the Generalized Search Tree"
    assert confidence.located([said], "person", q, filled=[answer_slot.fill(slot, said)]
                              )[1].text == "Joseph Hellerstein"
    out = _assess("Who designed GiST?", said, _passages(said))
    assert "gives Joseph Hellerstein, a person, as the answer" in out["reason"], out


@pytest.mark.parametrize("sentence", [
    "The POSTGRES project started at the University of California, Berkeley in 1986.",
    "The POSTGRES project started in 1986 in Berkeley at the University of California.",
])
def test_a_university_where_something_happened_is_not_who(sentence: str) -> None:
    q = extractive.question(POSTGRES)
    assert confidence.candidate([sentence], "person", q) == ""
    # an organisation that acts still answers "who"
    acted = "The journal is published by the American Psychological Association."
    asked = extractive.question("Who publishes the journal?")
    assert confidence.candidate([acted], "person", asked) == (
        "the American Psychological Association")


def test_a_bank_is_an_organisation_not_a_person() -> None:
    query = "Who lent the money to Harrowgate Foods?"
    said = "Harrowgate Foods borrowed the money from Barclays Bank in 1990."
    out = _assess(query, said, _passages(said))
    assert "Barclays Bank, an organisation, as the answer" in out["reason"], out
    assert "person" not in out["reason"]


def test_a_year_is_not_a_weight() -> None:
    query = "How heavy is the Kestrel K2?"
    assert answer_kind.asked_kind(query) == "number"
    q = extractive.question(query)
    assert confidence.candidate(["The Kestrel K2 was released in 2021."], "number", q) == ""
    assert confidence.candidate(["The Kestrel K2 weighs 1,200 kg and was released in 2021."],
                                "number", q) == "1,200 kg"
    years = extractive.question("How many years did the Kestrel K2 fly?")
    assert confidence.candidate(["It flew from 2001 for 12 years."], "number",
                                years) == "12 years"
    out = _assess(query, "The Kestrel K2 was released in 2021.",
                  _passages("The Kestrel K2 was released in 2021."))
    assert out == {"label": "low", "reason": (
        "The cited passage names Kestrel K2, but gives no number or amount that answers the "
        "question.")}


_JARGON = re.compile(r"\d+ of (?:the )?(?:question's )?\d+|as asked|relation asked|holds a|"
                     r"named before|said by|\bnames? \d")

CASES = [
    (POSTGRES, HE, BERKELEY),
    ("Which query language was based on Codd's relational calculus?",
     "Ingres used its own query language, QUEL, which was based on Codd's relational "
     "calculus.", [{"label": "P2", "uri": "b.md", "text": "QUEL was Ingres's language."}]),
    ("How heavy is the Kestrel K2?", "The Kestrel K2 weighs 1,200 kg.", []),
    ("Who founded Harrowgate Foods?", "Norvale was founded by Ada Brook.", []),
    ("When did the Northern Railway of the Grand Duchy of Baden-Württemberg and "
     "Hohenzollern-Sigmaringen open its line to the Free Imperial City of Überlingen am "
     "Bodensee?", "The Northern Railway of the Grand Duchy of Baden-Württemberg opened the "
     "line to the Free Imperial City of Überlingen am Bodensee and Friedrichshafen-Manzell "
     "on 1 October 1901.", []),
    ("Who is the spouse of the director of the International Conference of the Society of "
     "Friends of the Royal Botanic Gardens of Kew and Edinburgh?",
     "The International Conference of the Society of Friends of the Royal Botanic Gardens "
     "was directed by Sir Alexander Montgomery-Cunninghame of Corsehill and Kirktonhall.",
     [{"label": "P2", "uri": "x.md", "text": "Sir Alexander Montgomery-Cunninghame of "
                                            "Corsehill and Kirktonhall married."}]),
]


@pytest.mark.parametrize(("query", "said", "others"), CASES)
def test_the_reason_is_one_plain_sentence_of_at_most_30_words(
        query: str, said: str, others: list[dict]) -> None:
    reason = _assess(query, said, _passages(said), others)["reason"]
    assert len(reason.split()) <= plain_reason.MAX_WORDS, reason
    assert reason[0].isupper() and reason.endswith("."), reason
    assert not _JARGON.search(reason), reason
    assert reason.count(".") == 1 or re.search(r"\b[A-Z]\.|\d,\d", reason), reason


def test_fit_leaves_out_the_least_telling_parts_first() -> None:
    long = "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta"
    parts = ["The cited passages name ", f"{long}, {long} and {long}", " but not ",
             "Omega", " and give Iota Kappa", ", a person, as the answer",
             ", in a sentence saying “founded” and “started”", "; another document agrees",
             "."]
    text = plain_reason.fit(parts, names=[1, 3], optional=[7, 6, 5])
    assert len(text.split()) <= plain_reason.MAX_WORDS
    assert text == ("The cited passages name Alpha Beta Gamma Delta Epsilon… and others but "
                    "not Omega and give Iota Kappa as the answer.")
    short = plain_reason.fit(["The cited fact names ", "Ada", "", "", " and gives Bo",
                              ", a person, as the answer", "", "; another document agrees",
                              "."], optional=[7, 6, 5])
    assert short == "The cited fact names Ada and gives Bo, a person, as the answer; another " \
                    "document agrees."


def test_names_are_shown_as_the_question_writes_them() -> None:
    query = "Who is the spouse of the director of Jump for Glory and Edgar F. Codd's paper?"
    stems = extractive.terms("Jump Glory Edgar F Codd s")
    assert plain_reason.phrases(query, stems) == ["Jump for Glory", "Edgar F. Codd"]
    assert plain_reason.tidy("Abshir Ata Waterfall Abshir Ata Waterfall") == (
        "Abshir Ata Waterfall")
    assert plain_reason.tidy("the Opposition (Jamaica") == "the Opposition"
    assert plain_reason.tidy("G. Stanley Hall's") == "G. Stanley Hall"


def test_the_reason_says_an_answer_may_be_the_asked_name_itself() -> None:
    query = "Who coached Ada Brook?"
    said = "Ada Brook Ada Lynn Brook (born 1970) was coached by Lynn Brook."
    q = extractive.question(query)
    s = confidence.Signals(covered=3, names=2, names_asked=2, predicate_asked=1,
                           main_asked=1, main_said=1, kind="person", candidate="Lynn Brook",
                           agree=1, candidate_label="PERSON", candidate_repeats=True)
    read = plain_reason.Read(query, q, q.names, frozenset({"coach"}), frozenset({"coach"}),
                             _passages(said))
    reason = confidence.reason(s, read)
    assert confidence.label(s) == "medium"
    assert reason.endswith("; it may be Ada Brook under a fuller name."), reason
    assert len(reason.split()) <= plain_reason.MAX_WORDS, reason
