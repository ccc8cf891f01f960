"""The no-LLM answer, its confidence and the diagram, as pure functions (no database)."""

from __future__ import annotations

import re

from graph_flows.query import answer, extractive
from graph_flows.query.mermaid import build_mermaid, node_key
from tests.query.test_query_graph import assert_valid_mermaid

ARTICLE = {"label": "P1", "id": "c1", "uri": "harrowgate.md", "title": "Harrowgate Foods",
           "text": "Harrowgate Foods makes frozen pies in Leeds. It was "
                   "founded in 1987 by Margaret Ellison. In 2015 it was acquired by Norvale "
                   "Group."}
OTHER = {"label": "P2", "id": "c2", "uri": "norvale.md", "title": "Norvale Group",
         "text": "Norvale Group is a Dutch company. It is headquartered in Utrecht."}


def _fact(fid: str, subject: str, obj: str, sentence: str, predicate: str = "relates_to",
          **extra: str) -> dict:
    return {"id": fid, "label": fid.upper(), "subject_id": subject.lower(), "subject": subject,
            "object_id": obj.lower(), "object": obj, "predicate": predicate, "fact": sentence,
            **extra}


def test_sentences_keep_initials_and_leave_out_headings() -> None:
    text = ("# Early databases\n## Dora K. Venn and the ledger model\n"
            "Dora K. Venn was a statistician who worked\nat a bank in Leeds. She proposed "
            "the ledger model in 1969.\n\nIt was adopted by 1972.")
    assert extractive.sentences(text) == [
        "Dora K. Venn was a statistician who worked at a bank in Leeds.",
        "She proposed the ledger model in 1969.", "It was adopted by 1972."]


def test_question_names_predicate_and_kind() -> None:
    q = extractive.question("Which company acquired Harrowgate Foods in 2015?")
    assert q.names == {"harro", "food", "2015"} and q.other == {"compa", "acqui"}
    assert q.kind == {"compa"} and q.predicate == {"acqui"} and not q.wants_number
    assert extractive.question("When was it founded?").wants_number
    assert extractive.question("who made quillpoint", ["Quillpoint"]).names == {"quill"}
    assert {extractive.stem(w) for w in ("use", "uses", "used", "using")} == {"us"}
    assert extractive.stem("founded") == extractive.stem("founder") == "found"


def test_lead_is_the_sentence_that_answers_read_with_its_title() -> None:
    for query, expected in [("Who founded Harrowgate Foods?", "Margaret Ellison"),
                            ("Which company acquired Harrowgate Foods?", "Norvale Group"),
                            ("When was Harrowgate Foods founded?", "1987")]:
        text = answer.extractive_answer([], query=query, passages=[ARTICLE, OTHER])
        assert text.startswith(answer.EXTRACTIVE_HEADER)
        assert expected in text.split("\n")[2], (query, text)


def test_bridge_leads_to_the_second_hop() -> None:
    facts = [_fact("f1", "Harrowgate Foods", "Norvale Group",
                   "In 2015 it was acquired by Norvale Group.")]
    picked = extractive.pick("Where is the company that acquired Harrowgate Foods headquartered?",
                             facts, [ARTICLE, OTHER])
    assert "acquired" in picked[0].sentence and picked[1].sentence.endswith("Utrecht.")


def test_facts_alone_repeat_one_sentence_once_with_all_its_topics() -> None:
    said = "He was born in Lagos and studied in Turku."
    facts = [_fact("f1", "Daniel Okafor", "1978", "Daniel Okafor (born 1978) is an author."),
             _fact("f2", "Lagos", "Turku", said), _fact("f3", "Daniel Okafor", "Lagos", said)]
    pool = extractive.candidates(facts, [])
    assert [c.sentence for c in pool].count(said) == 1
    assert extractive.terms("Daniel Lagos Turku") <= next(
        c for c in pool if c.sentence == said).topic
    lead = extractive.pick("Where was Daniel Okafor born?", facts, [])[0]
    assert lead.sentence == said and lead.label == "F2"


def test_nothing_relevant_answer_says_so() -> None:
    text = answer.nothing_relevant_answer("The reason.", ["Leeds"])
    assert "Nothing relevant found" in text and "the question. The reason." in text
    assert "Leeds" in text


# --- the diagram -------------------------------------------------------------------------
def _chain_with_decoys() -> tuple[list[dict], list[dict]]:
    """Decoy pairs rank first; the path Quillpoint -> Brightmoor -> Samuel Reyes ranks last;
    one fact spells the entity "brightmoor" as "brightmoor!"."""
    facts = [_fact(f"d{i}", f"Decoy {i}", f"Other {i}", f"Decoy {i} met Other {i}.")
             for i in range(8)]
    facts += [_fact("a", "Quillpoint", "Brightmoor", "Quillpoint was acquired by Brightmoor.",
                    predicate_text="was acquired by"),
              {**_fact("b", "Samuel Reyes", "brightmoor!", "Samuel Reyes founded Brightmoor.",
                       predicate="founded"), "object_id": "brightmoor"}]
    entities = [{"id": f["subject_id"], "name": f["subject"]} for f in facts]
    return entities, facts


def test_diagram_draws_the_path_between_the_question_entities() -> None:
    entities, facts = _chain_with_decoys()
    q = extractive.question("Who founded the company that acquired Quillpoint?")
    diagram = build_mermaid(entities, facts, max_nodes=4, question=q, cited=["b"])
    assert_valid_mermaid(diagram)
    assert diagram.count('["') == 3  # Quillpoint, Brightmoor (one node), Samuel Reyes
    assert '"Decoy' not in diagram and '"Brightmoor"' in diagram
    assert '-->|"was acquired by"|' in diagram and '-->|"founded"|' in diagram
    assert "linkStyle 0 " in diagram  # the cited fact is drawn first and marked
    assert "class n1 question" in diagram  # Quillpoint, the entity the question names
    assert node_key("Brightmoor!") == node_key(" brightmoor ") == "brightmoor"


def test_diagram_keys_nodes_by_entity_id_not_by_name() -> None:
    """Two entities sharing a name are two nodes, told apart by their types; one entity
    named two ways in two facts is one node, under its own name."""
    entities = [{"id": "p1", "name": "Codd", "type": "person"},
                {"id": "o1", "name": "CODD", "type": "organization"},
                {"id": "x1", "name": "Codd", "type": "person"},
                {"id": "m1", "name": "Relational model", "type": "concept"}]
    facts = [{**_fact("f1", "Codd", "Relational model", "Codd proposed it."),
              "subject_id": "p1", "object_id": "m1", "predicate_text": "proposed"},
             {**_fact("f2", "CODD", "Relational model", "CODD sells it."),
              "subject_id": "o1", "object_id": "m1", "predicate_text": "sells"},
             {**_fact("f3", "Edgar F. Codd", "the relational model", "He defined it."),
              "subject_id": "p1", "object_id": "m1", "predicate_text": "defined"},
             {**_fact("f4", "Codd", "Relational model", "Another Codd used it."),
              "subject_id": "x1", "object_id": "m1", "predicate_text": "used"}]
    diagram = build_mermaid(entities, facts, max_nodes=10)
    assert_valid_mermaid(diagram)
    nodes = re.findall(r'^    (n\d+)\["(.*)"\]$', diagram, re.M)
    assert [label for _, label in nodes] == [
        "Codd (person)", "Relational model", "CODD (organization)", "Codd (person)"]
    assert "Edgar F. Codd" not in diagram and "the relational model" not in diagram
    assert '    n1 -->|"proposed"| n2' in diagram and '    n1 -->|"defined"| n2' in diagram
    assert '    n3 -->|"sells"| n2' in diagram and '    n4 -->|"used"| n2' in diagram


def test_diagram_without_question_grows_connected_from_the_best_labelled_fact() -> None:
    """The best-ranked facts are co-occurrences (decoys): none is drawn, not even as a plain
    line; the labelled facts are, connected. Only co-occurrences: no diagram."""
    entities, facts = _chain_with_decoys()
    diagram = build_mermaid(entities, facts, max_nodes=6)
    assert_valid_mermaid(diagram)
    assert diagram.count('["') == 3 and '"Decoy' not in diagram and " --- " not in diagram
    assert '-->|"was acquired by"|' in diagram and '-->|"founded"|' in diagram
    assert build_mermaid([], [_fact("x", "A", "B", "A and B.")]) == ""


def test_terms_are_read_once_per_request_and_every_time_outside() -> None:
    """A passage's terms are kept for the read-only request (the same set object again),
    never across requests nor outside one (a fresh set each call)."""
    from storage.request_memo import request_memo

    text = "The Tower was founded in 1889 by engineers of Paris."
    outside = [extractive.terms(text), extractive.terms(text)]
    words = ("tower", "founded", "1889", "engineers", "paris")  # "the", "was", ... stop words
    assert outside[0] == outside[1] == {extractive.stem(w) for w in words}
    assert outside[0] is not outside[1]
    with request_memo():
        first = extractive.terms(text)
        assert extractive.terms(text) is first and first == outside[0]
    with request_memo():
        assert extractive.terms(text) is not first
