"""The answer's diagram is its evidence chain (graph_flows.query.mermaid and
answer_diagram): the answer's entity highlighted, the cited facts with their relation text,
the question's entities and the labelled paths between them; at most 12 nodes, no
unlabelled edge, no fragment names, a legend, and no diagram when nothing relevant was
found."""

from __future__ import annotations

import re

from graph_flows.query import answer_diagram, extractive
from graph_flows.query.context import QueryContext
from graph_flows.query.diagram_nodes import clean_mention
from graph_flows.query.mermaid import MAX_NODES, build_mermaid, legend, legend_text
from graph_flows.services.evaluation.diagram import parse_mermaid
from tests.query.test_query_graph import assert_valid_mermaid

QUESTION = "Who founded the company that acquired Quillpoint?"


def _fact(fid: str, subject: str, obj: str, label: str | None = None, **more) -> dict:
    return {"id": fid, "subject_id": subject.lower(), "subject": subject,
            "object_id": obj.lower(), "object": obj, "predicate": "relates_to",
            "predicate_text": label, "fact": f"{subject} and {obj}.", **more}


def _evidence() -> tuple[list[dict], list[dict]]:
    """A crowd of well-ranked facts (co-occurrences and labelled ones) about other things,
    then the chain Quillpoint -> Brightmoor <- Samuel Reyes, a fragment-named entity and a
    co-occurrence of the answer."""
    facts = [_fact(f"d{i}", f"Decoy {i}", f"Other {i}", "met" if i % 2 else None)
             for i in range(30)]
    facts += [_fact("a", "Quillpoint", "Brightmoor", "was acquired by"),
              _fact("b", "Samuel Reyes", "Brightmoor", "founded"),
              _fact("c", "Samuel Reyes", "Revolt of the", "led"),
              _fact("e", "Samuel Reyes", "Lisbon")]
    entities = [{"id": f["subject_id"], "name": f["subject"], "type": "thing"} for f in facts]
    return entities, facts


def test_the_answer_diagram_draws_its_evidence_chain_within_twelve_nodes() -> None:
    entities, facts = _evidence()
    q = extractive.question(QUESTION)
    diagram = build_mermaid(entities, facts, question=q, cited=["b", "c", "e"],
                            answer="Samuel Reyes's")
    assert_valid_mermaid(diagram)
    drawn = parse_mermaid(diagram)
    names = set(drawn.nodes.values())
    assert names == {"Samuel Reyes", "Quillpoint", "Brightmoor", "Lisbon"}, names
    assert len(drawn.nodes) <= MAX_NODES == QueryContext().max_diagram_nodes == 12
    by_id = {v: k for k, v in drawn.nodes.items()}
    assert (by_id["Samuel Reyes"], "founded", by_id["Brightmoor"]) in drawn.edges  # cited
    assert (by_id["Quillpoint"], "was acquired by", by_id["Brightmoor"]) in drawn.edges
    assert all(label for _, label, _ in drawn.edges) and " --- " not in diagram
    assert f"class {by_id['Samuel Reyes']} answer" in diagram
    assert f"class {by_id['Quillpoint']} question" in diagram
    assert re.search(r"^    linkStyle 0 ", diagram, re.M)  # the cited edge, styled
    assert [role for role, _ in legend(diagram)] == ["question", "answer", "cited"]
    assert legend_text(diagram).startswith("legend: amber node = named in the question")


def test_a_crowd_of_facts_is_capped_and_generic_links_are_never_lines() -> None:
    entities = [{"id": f"e{i}", "name": f"Station {i}", "type": "place"} for i in range(30)]
    facts = [{**_fact(f"f{i}", f"Station {i}", f"Station {i + 1}",
                      "was succeeded by" if i % 3 else None),
              "subject_id": f"e{i}", "object_id": f"e{i + 1}"} for i in range(29)]
    q = extractive.question("What succeeded Station 0?", ["Station 0"])
    diagram = build_mermaid(entities, facts, question=q, cited=[f"f{i}" for i in range(29)],
                            answer="Station 1")
    drawn = parse_mermaid(diagram)
    assert 0 < len(drawn.nodes) <= 12 and all(label for _, label, _ in drawn.edges)
    assert build_mermaid(entities, facts, 40).count('["') <= 40
    assert " --- " not in build_mermaid(entities, facts, 40)


def test_fragment_names_are_skipped_unless_they_are_the_answer() -> None:
    facts = [_fact("a", "Mother of", "Ingres", "named"),
             _fact("b", "Ingres", "1992", "released in"),
             _fact("c", "Ingres", "QUEL", "uses")]
    q = extractive.question("When was Ingres released?")
    diagram = build_mermaid([], facts, question=q, cited=["a", "b", "c"], answer="1992")
    names = set(parse_mermaid(diagram).nodes.values())
    assert "Mother of" not in names and {"1992", "Ingres", "QUEL"} <= names
    other = build_mermaid([], facts, question=q, cited=["a", "b", "c"], answer="QUEL")
    assert "1992" not in set(parse_mermaid(other).nodes.values())  # a bare number, not it
    assert clean_mention("the American Psychological Association") == (
        "American Psychological Association")
    assert clean_mention("G. Stanley Hall's") == "G. Stanley Hall"


def test_an_answer_not_in_the_graph_is_drawn_as_its_mention() -> None:
    facts = [_fact("a", "Quillpoint", "Brightmoor", "was acquired by")]
    q = extractive.question(QUESTION)
    diagram = build_mermaid([], facts, question=q, cited=["a"], answer="the Reyes family")
    drawn = parse_mermaid(diagram)
    answer_id = re.search(r"^    class (\S+) answer$", diagram, re.M).group(1)
    assert drawn.nodes[answer_id] == "Reyes family"


def test_no_diagram_when_nothing_relevant_was_found() -> None:
    entities, facts = _evidence()
    q = extractive.question(QUESTION)
    text = "Samuel Reyes founded Brightmoor. [F2]"
    cited = [{"label": "F2", "fact_id": "b"}]
    args = (QUESTION, q, text, "extractive")
    rest = (cited, entities, facts, [], 12)
    assert answer_diagram.answer_diagram(*args, "none", *rest) == ""
    drawn = answer_diagram.answer_diagram(*args, "medium", *rest)
    assert '-->|"founded"|' in drawn


def test_cited_facts_follow_the_answer_reading_order() -> None:
    text = "Samuel Reyes founded Brightmoor. Later, Quillpoint was acquired by Brightmoor."
    late = _fact("a", "Quillpoint", "Brightmoor", "was acquired by",
                 fact="Quillpoint was acquired by Brightmoor.")
    early = _fact("b", "Samuel Reyes", "Brightmoor", fact="Samuel Reyes founded Brightmoor.")
    assert answer_diagram.reading_order(text, early) < answer_diagram.reading_order(text, late)


def test_an_entity_diagram_is_its_labelled_facts_capped_and_clean() -> None:
    """Explore: the entity (styled as the one shown) and its labelled facts, at most 12
    nodes, no co-occurrence line, no fragment name."""
    facts = [_fact(f"f{i}", "Ingres", f"Release {i}", "shipped" if i % 2 else None)
             for i in range(40)]
    facts += [_fact("x", "Ingres", "Revolt of the", "named")]
    diagram = build_mermaid([{"id": "ingres", "name": "Ingres"}], facts, focus="ingres")
    drawn = parse_mermaid(diagram)
    assert len(drawn.nodes) == 12 and all(label for _, label, _ in drawn.edges)
    assert "Revolt of the" not in drawn.nodes.values() and " --- " not in diagram
    assert re.search(r"^    class n1 focus$", diagram, re.M) and drawn.nodes["n1"] == "Ingres"
    assert [role for role, _ in legend(diagram)] == ["focus"]


def _chain_ends(diagram: str) -> tuple[dict[str, str], dict[frozenset[str], str]]:
    """Node name -> id, and each drawn edge (its two names) -> its label."""
    drawn = parse_mermaid(diagram)
    return ({n: k for k, n in drawn.nodes.items()},
            {frozenset((drawn.nodes[a], drawn.nodes[b])): label for a, label, b in drawn.edges})


def test_an_answer_that_is_no_entity_is_linked_by_its_sentence_relation() -> None:
    """The answer span is drawn as the answer node, joined to the question's entity by the
    words the cited sentence puts between them (no fact joins them)."""
    facts = [_fact("a", "Quillpoint", "Decoy", "was sold to")]
    q = extractive.question("Who founded Quillpoint?")
    said = ["Quillpoint was founded by the Reyes family in 1999."]
    diagram = build_mermaid([], facts, question=q, cited=["a"], answer="the Reyes family",
                            sentences=said)
    assert_valid_mermaid(diagram)
    ids, edges = _chain_ends(diagram)
    assert edges[frozenset(("Quillpoint", "Reyes family"))] == "was founded by"
    assert f"class {ids['Reyes family']} answer" in diagram
    assert re.search(r"^    linkStyle 0,1 ", diagram, re.M)  # the cited fact, the sentence
    bare = build_mermaid([], facts, question=q, cited=["a"], answer="the Reyes family")
    assert "Reyes family" in parse_mermaid(bare).nodes.values()
    assert frozenset(("Quillpoint", "Reyes family")) not in _chain_ends(bare)[1]


def test_the_bridge_is_the_middle_of_the_chain() -> None:
    """Issue 41.5: question entity -> bridge (a hop-1 passage's sentence) -> answer (the
    answer's sentence), each link labelled, the bridge drawn between them."""
    q = extractive.question("Where did the founder of the Velmor Prize grow up?")
    decoys = [_fact(f"d{i}", f"Decoy {i}", f"Other {i}", "met") for i in range(12)]
    diagram = build_mermaid(
        [{"id": "v", "name": "Velmor Prize"}, {"id": "k", "name": "Orsina Kael"}], decoys,
        question=q, cited=[f"d{i}" for i in range(12)], answer="Trelvik",
        bridges=["Orsina Kael"], sentences=["Orsina Kael grew up near the docks of Trelvik."],
        context=["The Velmor Prize was founded by Orsina Kael in 1931."])
    ids, edges = _chain_ends(diagram)
    assert edges[frozenset(("Velmor Prize", "Orsina Kael"))] == "was founded by"
    assert edges[frozenset(("Orsina Kael", "Trelvik"))] == "grew up near the docks of"
    assert frozenset(("Velmor Prize", "Trelvik")) not in edges  # through the bridge
    assert len(ids) <= MAX_NODES and f"class {ids['Trelvik']} answer" in diagram
    assert f"class {ids['Velmor Prize']} question" in diagram
    without = parse_mermaid(build_mermaid(
        [{"id": "v", "name": "Velmor Prize"}, {"id": "k", "name": "Orsina Kael"}], decoys,
        question=q, cited=[f"d{i}" for i in range(12)], answer="Trelvik"))
    assert "Orsina Kael" not in without.nodes.values()  # only a round's bridge is drawn


def test_a_co_occurrence_is_drawn_as_the_relation_its_sentence_states() -> None:
    facts = [_fact("a", "Orsina Kael", "Velmor Prize",
                   fact="The Velmor Prize was founded by Orsina Kael."),
             _fact("b", "Orsina Kael", "Trelvik", fact="Orsina Kael and Trelvik.")]
    q = extractive.question("Who founded the Velmor Prize?")
    diagram = build_mermaid([], facts, question=q, cited=["a", "b"], answer="Orsina Kael")
    ids, edges = _chain_ends(diagram)
    assert edges == {frozenset(("Velmor Prize", "Orsina Kael")): "was founded by"}
    assert "Trelvik" in ids  # no words of its own: its entities only, unconnected


def test_rounds_give_the_bridges_and_their_hop_one_sentences() -> None:
    rounds = [{"round": 1, "bridge": ""},
              {"round": 2, "bridge": "Orsina Kael", "hops": [
                  {"passage": "velmor.md", "uri": "velmor.md", "bridge": "Orsina Kael"},
                  {"passage": "other.md", "uri": "other.md", "bridge": ""}]}]
    passages = [{"title": "velmor.md", "uri": "velmor.md",
                 "text": "The prize is old. It was founded by Orsina Kael in 1931."},
                {"title": "kael.md", "uri": "kael.md", "text": "Orsina Kael grew up."}]
    assert answer_diagram.hop_links(rounds, passages) == (
        ["Orsina Kael"], ["It was founded by Orsina Kael in 1931."])
    assert answer_diagram.hop_links([], passages) == ([], [])


def test_a_bare_number_answers_only_a_question_asking_a_number_or_date() -> None:
    """"What movie ...?" is not answered by "1985": the diagram's answer is the next
    candidate; "When ...?" is."""
    text = "Released in 1985, The Jewel of the Nile was produced by Michael Douglas. [P1]"
    movie = "What film was produced by Michael Douglas?"
    assert answer_diagram.answer_mention(movie, text, extractive.question(movie)) == (
        "The Jewel of the Nile")
    when = "When did Michael Douglas produce The Jewel of the Nile?"
    assert answer_diagram.answer_mention(when, text, extractive.question(when)) == "1985"
    assert clean_mention("the Opposition (Jamaica") == "Opposition"
    assert clean_mention("Hello (song)") == "Hello (song)"


def _extractive(lead: str, *support: str) -> str:
    """An extractive answer: its lead sentence citing [P1], then supporting sentences."""
    from graph_flows.query.answer import EXTRACTIVE_HEADER

    lines = [EXTRACTIVE_HEADER, "", f"{lead} [P1]", "", "Supporting evidence:"]
    return "\n".join([*lines, *(f"- {s} [P{i}]" for i, s in enumerate(support, 2))])


def test_the_diagram_draws_what_a_later_cited_sentence_states() -> None:
    """The lead sentence's candidate is not the answer; the second cited sentence states it
    (no stored entity is named so): the diagram still draws it, joined to the question's
    entity by the relation that sentence states, within 12 nodes, every edge labelled."""
    query = "Who founded Brightmoor?"
    lead = "In 1990 Brightmoor hired Samuel Reyes as its chief engineer."
    second = "Brightmoor was founded by Orsina Kael."
    text = _extractive(lead, second)
    q = extractive.question(query)
    facts = [_fact(f"d{i}", "Brightmoor", f"Decoy {i}", "works with") for i in range(20)]
    facts.append({**_fact("h", "Brightmoor", "Samuel Reyes", "hired"), "fact": lead})
    entities = [{"id": f["object_id"], "name": f["object"], "type": "thing"} for f in facts]
    entities.append({"id": "brightmoor", "name": "Brightmoor", "type": "organisation"})
    cited = [{"passage_id": "p1"}, {"passage_id": "p2"}]
    diagram = answer_diagram.answer_diagram(query, q, text, "extractive", "medium", cited,
                                            entities, facts, [], MAX_NODES)
    assert_valid_mermaid(diagram)
    drawn = parse_mermaid(diagram)
    by_name = {v: k for k, v in drawn.nodes.items()}
    assert "Orsina Kael" in by_name, drawn.nodes
    assert (by_name["Brightmoor"], "was founded by", by_name["Orsina Kael"]) in drawn.edges
    assert len(drawn.nodes) <= MAX_NODES and all(label for _, label, _ in drawn.edges)
    assert f"class {by_name['Samuel Reyes']} answer" in diagram  # as the label reads it
    assert answer_diagram.answer_mentions(query, text, q) == ("Samuel Reyes", ["Orsina Kael"])


def test_a_later_sentence_states_no_possessive_and_no_bare_number() -> None:
    """What a sentence states is a thing a diagram can draw: "Samuel Reyes's" names whose
    the wife is, so the sentence states "Orsina Kael"; a bare number states nothing."""
    query = "Who is the wife of Tomas Reyes?"
    text = _extractive("Tomas Reyes is the son of Samuel Reyes.",
                       "Samuel Reyes's wife, Orsina Kael, was born in 1931.")
    found, stated = answer_diagram.answer_mentions(query, text, extractive.question(query))
    assert found == "Samuel Reyes" and stated == ["Orsina Kael"]


def test_the_facts_that_touch_the_chain_are_drawn_before_the_others() -> None:
    """A cited sentence's fact joining the question's entity to what it adds comes before
    facts naming only other things, even when these are said first and fill the budget."""
    q = extractive.question("Where are Gila monsters found?")
    facts = [_fact(f"d{i}", f"Decoy {i}", f"Other {i}", "met") for i in range(8)]
    facts.append(_fact("h", "Gila", "Sonora", "is found in"))
    entities = [{"id": "gila", "name": "Gila", "type": "animal"}]
    diagram = build_mermaid(entities, facts, question=q,
                            cited=[*(f"d{i}" for i in range(8)), "h"], answer="Lone Hill")
    drawn = parse_mermaid(diagram)
    assert "Sonora" in drawn.nodes.values(), drawn.nodes
    assert len(drawn.nodes) <= MAX_NODES


def test_a_possessive_s_names_no_node_of_the_question() -> None:
    """The "s" of "Eye's" is no name of the question: "U.S." is not drawn as one (its last
    word read as one stem, whatever the hash order of a set)."""
    from graph_flows.query.diagram_nodes import _last_term, asked_keys

    q = extractive.question("Who is the spouse of Big Eye's main director?")
    names = {"us": "U.S.", "big": "Big Eyes", "tb": "Tim Burton"}
    assert asked_keys(names, q) == ["big"]
    assert _last_term("U.S.") == _last_term("S") and _last_term("Edgar F. Codd") == "codd"
