"""The answer's confidence label: its signals and rules, as pure functions (no database)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from graph_flows.query import answer, answer_kind, asked_relation, confidence, extractive
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
    ("What time does the Norvale market close?", "time"),
    ("At what time of year does the mill close?", "name"),  # a season, not a time of day
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


def test_what_time_asks_a_time_of_day_not_an_age_or_a_date() -> None:
    q = extractive.question("What time does the Norvale market stop selling fish?")
    said = ["Fish may be sold only to those 18 years of age or older on 4 May 2020 "
            "during the hours 7 a.m. to 3 a.m."]
    assert confidence.candidate(said, "time", q) == "the hours 7 a.m. to 3 a.m."
    assert confidence.candidate(said, "name", q) != "the hours 7 a.m. to 3 a.m."


def test_labels_follow_the_rules() -> None:
    right = Signals(covered=3, names=2, names_asked=2, predicate_asked=1, main_asked=1,
                    main_said=1, kind="person", candidate="Margaret Ellison", agree=1)
    assert confidence.label(right) == "high"
    assert confidence.label(replace(right, agree=0)) == "medium"  # no other document says it
    assert confidence.label(replace(right, main_said=0)) == "medium"  # nor the relation
    assert confidence.label(replace(right, candidate="")) == "low"
    assert confidence.label(replace(right, names=1, names_asked=3)) == "low"
    assert confidence.label(replace(right, names=1)) == "medium"  # a name is not covered
    assert confidence.label(replace(right, names=0)) == "none"
    assert confidence.label(replace(right, declined=True)) == "none"
    nameless = replace(right, names=0, names_asked=0)
    assert confidence.label(nameless) == "high"
    assert confidence.label(replace(nameless, covered=0)) == "none"
    # reached through a bridge: no relation word or second document needed, when the
    # question nests a relation (2 relation words, 1 in its main clause)
    bridged = replace(right, main_said=0, agree=0, predicate_asked=2, bridge="Madonna",
                      reached="Andrew Morton")
    assert confidence.label(bridged) == "high"
    assert confidence.label(replace(bridged, predicate_asked=1)) == "medium"  # no nesting
    assert confidence.label(replace(bridged, names=1)) == "medium"
    assert confidence.label(replace(bridged, candidate="")) == "low"


@pytest.mark.parametrize(("query", "main", "nested"), [
    # the relation asked, not the nested ones that lead to its subject
    ("Who is the spouse of the director of Jump for Glory?", {"spous"}, {"direc"}),
    ("Who was the first president of the association which published the journal?",
     {"first", "presi"}, {"publi"}),
    ("When did the country containing Nugegoda leave the British Empire?", {"leav"},
     {"conta"}),
    ("Where did the band form that made the live album Maiden Japan?", {"form"},
     {"mad", "album"}),
    ("What county shares a border with the county in which Johnnycake is located?",
     {"shar", "borde"}, {"locat"}),
    ("Who founded Harrowgate Foods?", {"found"}, set()),
])
def test_main_relation_leaves_out_nested_clauses(query: str, main: set[str],
                                                 nested: set[str]) -> None:
    q = extractive.question(query)
    got = asked_relation.main_relation(query, confidence.relation_words(q))
    assert main <= got and not got & nested
    assert nested <= confidence.relation_words(q)


def test_main_relation_without_the_pipeline_is_every_relation_word(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from graph_flows.shared import nlp

    monkeypatch.setattr(nlp, "load_nlp", lambda: None)
    words = frozenset({"spous", "direc"})
    assert asked_relation.main_relation("Who is the spouse of the director of X?",
                                        words) == words


def test_chain_reaches_past_a_bridge_the_lead_introduced() -> None:
    query = "Who wrote the book named after the artist known as the creation of MTV?"
    q = extractive.question(query)
    said = ['He asserted that "the most remarkable creation of MTV is Madonna.',
            "Madonna (book) Madonna is a biography by English author Andrew Morton."]
    assert confidence.chain(said, "person", q) == ("Madonna", "Andrew Morton")
    assert confidence.chain(said[:1], "person", q) == ("", "")  # the lead alone
    # a later sentence about something else reaches nothing
    assert confidence.chain([said[0], "The Jump is a series by Raoul Walsh."], "person",
                            q) == ("", "")
    # nor does one that only repeats the bridge, or names a nationality ("British")
    assert confidence.chain([said[0], "Madonna toured Europe."], "person", q) == ("", "")
    assert confidence.chain([said[0], "Madonna is a British citizen."], "person",
                            q) == ("", "")
    # the question's own names are no bridge
    asked = extractive.question("Who wrote the book about Madonna?")
    assert confidence.chain(said, "person", asked) == ("", "")


def test_a_nationality_is_no_person_and_no_bridge() -> None:
    assert answer_kind.mentions("Jump for Glory is a British film by Raoul Walsh.",
                                "person") == ("Raoul Walsh",)
    assert answer_kind.named("Raoul Walsh was an American director born in 1887 in New York "
                             "City.") == ("Raoul Walsh", "New York City")


def test_assess_says_why() -> None:
    cited = _cite("Harrowgate Foods was founded by Margaret Ellison.",
                  "Margaret Ellison was a baker in Leeds.")
    text = ("Harrowgate Foods was founded by Margaret Ellison. [F1]\n\nSupporting evidence:\n"
            "- Margaret Ellison was a baker in Leeds. [F2]")
    high = _assess(WHO, text, cited)
    assert high == {"label": "high", "reason": (
        "The cited facts name Harrowgate Foods and give Margaret Ellison, a person, as the "
        "answer, in a sentence saying “founded”; another document agrees.")}
    alone = _assess(WHO, "Harrowgate Foods was founded by Margaret Ellison. [F1]", cited[:1])
    assert alone["label"] == "medium" and alone["reason"].endswith(
        "; no other document confirms it.")
    no_person = _assess(WHO, "Harrowgate Foods was founded in 1987. [F1]",
                        _cite("Harrowgate Foods was founded in 1987."))
    assert no_person == {"label": "low", "reason": (
        "The cited fact names Harrowgate Foods, but gives no person or organisation that "
        "answers the question.")}
    other = _assess(WHO, "Norvale was founded by Ada Brook. [F1]",
                    _cite("Norvale was founded by Ada Brook."))
    assert other == {"label": "none", "reason": (
        "The cited fact mentions none of the names the question asks about.")}
    assert _assess(WHO, "x", [], retrieved=False) == {
        "label": "none", "reason": "Nothing in the knowledge base matched the question."}
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
    assert _assess(WHO, text, cited) == {"label": "none", "reason": "The answer says the "
                                         "knowledge base does not hold the answer."}
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


def test_a_nested_relation_is_no_answer_but_a_bridge_past_it_is() -> None:
    query = "Who is the spouse of the director of Jump for Glory?"
    lead = ("Jump for Glory is a 1937 British drama film directed by Raoul Walsh and "
            "starring Valerie Hobson.")
    other = [{"label": "P9", "uri": "walsh.md", "text": "Raoul Walsh directed many films."}]
    cited = _cite(lead)
    # the lead states the nested relation ("directed"): its person is the bridge, not the
    # answer, though another document says the same name
    nested = _assess(query, f"{lead} [F1]", cited, passages=other)
    assert nested["label"] == "medium", nested
    assert "Raoul Walsh, a person, as the answer, but that sentence does not say “spouse”" in (
        nested["reason"])
    # a later sentence about the bridge adds a person: reached
    later = "Raoul Walsh was married to Miriam Cooper from 1916 to 1926."
    text = f"{lead} [F1]\n\nSupporting evidence:\n- {later} [F2]"
    both = _assess(query, text, _cite(lead, later))
    assert both["label"] == "high", both
    assert both["reason"] == ("The cited facts name Jump for Glory and lead through Raoul "
                              "Walsh to Miriam Cooper, a person.")
    # to a question without a nested relation a later sentence only adds more
    one_doc = [{**c, "sources": [{"uri": "film.md"}]} for c in _cite(lead, later)]
    single = _assess("Who directed Jump for Glory?", text, one_doc)
    assert single == {"label": "medium", "reason": (
        "The cited facts name Jump for Glory and give Raoul Walsh, a person, as the answer, "
        "in a sentence saying “directed”; no other document confirms it.")}
    assert _assess(query, text, one_doc)["label"] == "high"  # the bridge needs no 2nd doc
    # the same answer with evidence missing one of the asked names is no more than medium
    missing = _assess("Who is the spouse of the director of Jump for Glory in Ohio?", text,
                      _cite(lead, later))
    assert missing["label"] == "medium", missing


def test_who_reached_through_a_bridge_is_high_only_for_a_person() -> None:
    # an organisation answers "who" where its sentence states the asked act ("Brightmoor
    # acquired ..."); reached through a bridge only its type speaks, and spaCy's ORG also
    # holds spans it cannot place ("the Hot Country Songs")
    person = Signals(covered=3, names=1, names_asked=1, predicate_asked=2, main_asked=1,
                     main_said=0, kind="person", candidate="Kansas", agree=0,
                     bridge="Kansas", reached="Ada Brook", reached_label="PERSON")
    assert confidence.label(person) == "high"
    org = replace(person, reached="the Hot Country Songs", reached_label="ORG")
    assert confidence.label(org) == "medium"
    assert confidence.label(replace(org, kind="name")) == "high"  # a name may be one
    stated = replace(org, main_said=1, agree=1, candidate="Brightmoor Software",
                     candidate_label="ORG")
    assert confidence.label(stated) == "high"
    assert not answer_kind.unambiguous("Brightmoor Software", "ORG", "person")
    assert answer_kind.unambiguous("Brightmoor Software", "ORG", "person", stated=True)


def test_a_bare_one_or_two_digit_number_is_no_date_for_high() -> None:
    # spaCy tags the "17" of "State Route 17" as a date
    road = Signals(covered=3, names=1, names_asked=1, predicate_asked=2, main_asked=2,
                   main_said=1, kind="date", candidate="17", agree=1, candidate_label="DATE")
    assert confidence.label(road) == "medium"
    for date in ("1817", "December 10, 1817", "the 1990s", "17 May"):
        assert confidence.label(replace(road, candidate=date)) == "high", date


def test_an_answer_repeating_a_word_of_an_asked_name_is_not_high() -> None:
    q = extractive.question("Who did Ada Brook's team play in the final?")
    assert confidence.repeats("Lynn Brook", q)  # read from "Ada Lynn Brook (born 1970)"
    assert not confidence.repeats("Norvale Rovers", q)
    said = Signals(covered=3, names=2, names_asked=2, predicate_asked=1, main_asked=1,
                   main_said=1, kind="person", candidate="Norvale Rovers", agree=1,
                   candidate_label="PERSON")
    assert confidence.label(said) == "high"
    assert confidence.label(replace(said, candidate="Lynn Brook",
                                    candidate_repeats=True)) == "medium"
    bridged = replace(said, main_said=0, predicate_asked=2, bridge="Norvale",
                      reached="Lynn Brook", reached_label="PERSON", reached_repeats=True)
    assert confidence.label(bridged) == "medium"
    assert confidence.label(replace(bridged, reached_repeats=False)) == "high"
