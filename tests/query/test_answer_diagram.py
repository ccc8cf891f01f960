"""The answer's diagram is its evidence chain (graph_flows.query.mermaid and
answer_diagram): the answer's entity highlighted, the cited facts with their relation text,
the question's entities and the labelled paths between them; at most 12 nodes, no
unlabelled edge, no fragment names, a legend, and no diagram when nothing relevant was
found."""

from __future__ import annotations

import re

from graph_flows.query import answer_diagram, extractive
from graph_flows.query.context import QueryContext
from graph_flows.query.mermaid import (
    MAX_NODES,
    build_mermaid,
    clean_mention,
    legend,
    legend_text,
)
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
