"""The diagram measure of `krag eval multihop` (graph_flows.services.evaluation.diagram):
the Mermaid parser and the counts, on hand-written diagrams (pure functions)."""

from __future__ import annotations

from graph_flows.query.mermaid import escape_label
from graph_flows.services.evaluation.diagram import (
    DiagramCounts,
    decode,
    holds,
    parse_mermaid,
)

OLD = """graph LR
    n1["Ingres"]
    n2["own query language"]
    n3["Relational Model of Data for Large Shared Data Banks#34; in Co#8230;"]
    n4["QUEL"]
    n1 -->|"uses"| n2
    n3 --- n1
    n4 -->|"was based on"| n1
    classDef asked fill:#fef3c7,stroke:#b45309
    class n4 asked
    linkStyle 0 stroke:#b45309,stroke-width:2px"""


def test_parse_reads_nodes_edges_and_decodes_escapes() -> None:
    d = parse_mermaid(OLD)
    assert d.nodes == {"n1": "Ingres", "n2": "own query language", "n4": "QUEL",
                       "n3": 'Relational Model of Data for Large Shared Data Banks" in Co…'}
    assert d.edges == [("n1", "uses", "n2"), ("n3", "", "n1"), ("n4", "was based on", "n1")]
    hostile = '<b>"x"|y #quot; ü'
    assert decode(escape_label(hostile)) == hostile
    assert decode("#quot;a#amp;") == '"a&'
    assert parse_mermaid("") == parse_mermaid("graph TD")
    assert parse_mermaid('graph TD\n    n1["A"]\n    n2["B"]\n    n1 -->|"x#124;y"| n2'
                         ).edges == [("n1", "x|y", "n2")]


def test_holds_matches_whole_words_case_insensitively() -> None:
    assert holds("The Anglican Communion, in full", ["the Anglican Communion"])
    assert holds("born in G. Stanley Hall's house", ["G. Stanley Hall"])
    assert not holds("Italy", ["it"]) and holds("it is so", ["IT"])
    assert not holds("anything", ["", "  "])


def _result(mermaid: str, answer: str, label: str = "medium") -> dict:
    return {"mermaid": mermaid, "answer": answer, "answer_confidence": {"label": label}}


def test_counts_over_questions() -> None:
    counts = DiagramCounts()
    counts.add("Which query language was based on Codd's relational calculus?",
               _result(OLD, "QUEL was based on it."), ["QUEL"])
    new = 'graph TD\n    n1["1992"]\n    n2["Ingres"]\n    n2 -->|"released in"| n1'
    counts.add("When was Ingres released?", _result(new, "Ingres came out in 1992."),
               ["1992"])
    counts.add("Who wrote it?", _result("", "Nothing relevant found.", "none"), ["Ada"])
    counts.add("Who wrote that?", _result('graph TD\n    n1["x"]', "no", "none"), ["Ada"])
    out = counts.as_dict()
    assert out["drawn"] == 3 and out["nodes_max"] == 4 and out["nodes_p50"] == 2.0
    assert out["edges"] == 4 and out["labelled_share"] == 0.75
    assert (out["answer_shown"], out["answer_shown_of"]) == (2, 2)
    # of the two answered questions, only the second's diagram draws a name it asks about
    # ("Ingres"); the first draws none of "Codd", "relational calculus"
    assert out["question_entities_shown"] == 0.5
    # "own query language" and the half-quoted title of 7 names; "1992" is the answer
    assert out["fragment_names_share"] == round(2 / 7, 4)
    assert (out["none_answers"], out["none_diagrams"]) == (2, 1)


def test_counts_without_edges_or_answers() -> None:
    out = DiagramCounts().as_dict()
    assert out["labelled_share"] is None and out["question_entities_shown"] is None
    assert out["nodes_p95"] == 0.0 and out["answer_shown_of"] == 0


def test_the_no_llm_header_is_no_answer_text() -> None:
    """"No-LLM mode ... (no model wrote this)" holds an alias "no" of Norway: the answer
    text the measure reads leaves the fixed header out."""
    from graph_flows.query.answer import EXTRACTIVE_HEADER

    result = {"answer": f"{EXTRACTIVE_HEADER}\n\nBrand is a play by the Norwegian Ibsen.",
              "mermaid": 'graph TD\n    n1["Norwegian"]',
              "answer_confidence": {"label": "medium"}}
    counts = DiagramCounts()
    counts.add("What country was the author of Brand a citizen of?", result,
               ["Norway", "NO", "no"])
    assert (counts.shown, counts.shown_of) == (0, 0)
    counts.add("Where was Ibsen born?", {**result, "answer": f"{EXTRACTIVE_HEADER} Norway"},
               ["Norway"])
    assert (counts.shown, counts.shown_of) == (0, 1)
