"""The final passage order of recipe "ppr" (graph_flows.query.passage_order): PageRank's
passages kept, ordered by the mixture of the graph's, the dense and the BM25 evidence."""

from __future__ import annotations

import math

import pytest

from graph_flows.query import passage_order as po


def test_standardised_softmax_is_a_distribution_over_the_retrievers_own_list() -> None:
    probs = po.standardised_softmax({"a": 0.9, "b": 0.5, "c": 0.4})
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs["a"] > probs["b"] > probs["c"] > 0
    # z-scores: the scale and offset of a retriever's scores do not matter
    assert po.standardised_softmax({"a": 90.0, "b": 50.0, "c": 40.0}) == pytest.approx(probs)
    assert po.standardised_softmax({"a": 1.9, "b": 1.5, "c": 1.4}) == pytest.approx(probs)
    # the value itself: exp(z) normalised
    values = [0.9, 0.5, 0.4]
    mean = sum(values) / 3
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / 3)
    weights = [math.exp((v - mean) / spread) for v in values]
    assert probs["a"] == pytest.approx(weights[0] / sum(weights))


def test_standardised_softmax_of_equal_or_no_scores() -> None:
    assert po.standardised_softmax({"a": 0.3, "b": 0.3}) == {"a": 0.5, "b": 0.5}
    assert po.standardised_softmax({}) == {}
    assert po.standardised_softmax({"only": -4.0}) == {"only": 1.0}


def test_a_standout_gets_more_than_a_leader_of_a_flat_list() -> None:
    standout = po.standardised_softmax({"a": 0.9, **{f"x{i}": 0.4 for i in range(9)}})
    even = po.standardised_softmax({"a": 0.49, **{f"x{i}": 0.4 + i / 100 for i in range(9)}})
    assert standout["a"] > 0.5 > even["a"] > even["x8"]


def test_mass_shares_are_over_the_candidates() -> None:
    shares = po.mass_shares(["a", "b", "c"], {"a": 0.3, "b": 0.1, "e": 5.0})
    assert shares == pytest.approx({"a": 0.75, "b": 0.25, "c": 0.0})
    over = po.mass_shares(["a"], {"a": 0.3, "b": 0.1, "c": 0.6, "e": 5.0}, ["a", "b", "c"])
    assert over == pytest.approx({"a": 0.3})
    assert po.mass_shares(["a"], {}) == {"a": 0.0}
    assert po.mass_shares(["a", "b"], {"a": -1.0, "b": 1.0}) == {"a": 0.0, "b": 1.0}


def test_match_distribution_is_a_product_of_the_two_retrievers() -> None:
    dense = {"both": 0.8, "dense_only": 0.7, "d3": 0.3, "d4": 0.2}
    text = {"both": 9.0, "text_only": 8.0, "t3": 1.0}
    match = po.match_distribution(dense, text)
    assert set(match) == set(dense) | set(text)
    assert sum(match.values()) == pytest.approx(1.0)
    d, t = po.standardised_softmax(dense), po.standardised_softmax(text)
    # a passage one retriever missed gets that retriever's smallest probability
    assert match["dense_only"] / match["both"] == pytest.approx(
        d["dense_only"] * min(t.values()) / (d["both"] * t["both"]))
    assert max(match, key=match.__getitem__) == "both"  # singled out by both
    assert match["both"] > d["both"] and match["both"] > t["both"]


def test_match_distribution_with_one_or_no_retriever() -> None:
    dense = {"a": 0.9, "b": 0.1}
    assert po.match_distribution(dense, {}) == pytest.approx(po.standardised_softmax(dense))
    assert po.match_distribution({}, dense) == pytest.approx(po.standardised_softmax(dense))
    assert po.match_distribution({}, {}) == {}


def test_head_order_keeps_pagerank_passages_and_puts_agreed_evidence_first() -> None:
    top = ["g1", "g2", "d1"]  # PageRank's order
    mass = {"g1": 0.30, "g2": 0.25, "d1": 0.20, "other": 0.25}
    dense = {"d1": 0.80, "g2": 0.45, "x": 0.44, "y": 0.43, "z": 0.42}
    text = {"d1": 12.0, "x": 4.0, "y": 3.5}
    order = po.head_order(top, list(mass), mass, dense, text)
    assert sorted(order) == sorted(top)  # the same passages, none added or dropped
    assert order == ["d1", "g1", "g2"]  # singled out by both retrievers; then the graph's
    # the graph alone decides when the retrievers found none of them
    assert po.head_order(top, list(mass), mass, {"x": 1.0, "y": 0.5}, {}) == top
    # BM25 alone singling a passage out moves it first; the dense retriever putting that
    # passage last of its list holds it back (a product, not a sum, of the two)
    lexical = {"g2": 12.0, "x": 1.0, "y": 1.0, "z": 1.0}
    assert po.head_order(top, list(mass), mass, {}, lexical)[0] == "g2"
    doubting = {"g1": 0.9, "x": 0.85, "y": 0.8, "z": 0.75, "g2": 0.1}
    assert po.head_order(top, list(mass), mass, doubting, lexical)[0] == "g1"


def test_head_order_without_question_match_is_pagerank_order() -> None:
    top = ["a", "b", "c"]
    assert po.head_order(top, top, {"a": 0.5, "b": 0.3, "c": 0.2}, {}, {}) == top
    assert po.head_order(["a"], ["a"], {}, {"a": 1.0}, {}) == ["a"]
    assert po.head_order([], [], {}, {}, {}) == []


def test_ties_keep_pagerank_order() -> None:
    top = ["b", "a"]
    assert po.head_order(top, top, {"a": 0.5, "b": 0.5}, {}, {}) == ["b", "a"]


def test_graph_weight_decides_between_the_graph_and_the_match() -> None:
    top = ["g", "d"]
    mass = {"g": 0.9, "d": 0.1}
    dense = {"d": 0.9, "g": 0.1, "x": 0.1}
    assert po.head_order(top, top, mass, dense, {}, graph_weight=1.0)[0] == "g"
    assert po.head_order(top, top, mass, dense, {}, graph_weight=0.0)[0] == "d"


def _row(doc: str, title: str, text: str, chunk: str = "") -> dict[str, str]:
    return {"id": chunk or doc, "document_id": doc, "title": title, "text": text}


def _ids(rows: list) -> list[str]:
    return [r["id"] for r in rows]


QUESTION = "Who was the first president of the association that published Journal of Fooz?"


def test_cover_order_keeps_the_head_and_brings_the_bridge_document_forward() -> None:
    rows = [
        _row("j", "Journal of Fooz", "The Journal of Fooz is published by the Quux Society."),
        _row("j2", "Journal of Fooz Studies", "A journal of Fooz studies."),
        _row("x", "Topics", "Fooz is a journal topic, as the Journal of Fooz says."),
        _row("y", "Journal of Barz", "The Journal of Barz is a journal."),
        _row("q", "Quux Society", "The Quux Society's first president was Ada Lane."),
    ]
    order = po.cover_order(rows, QUESTION)
    assert sorted(_ids(order)) == sorted(_ids(rows))  # the same passages
    # the first document stays; the bridge's own article (its title named by a placed
    # passage) comes before passages that only repeat the question's names
    assert _ids(order) == ["j", "q", "j2", "x", "y"]
    # with two documents kept, the bridge comes after them
    assert _ids(po.cover_order(rows, QUESTION, kept=2)) == ["j", "j2", "q", "x", "y"]


def test_cover_order_places_a_passage_naming_an_uncovered_name_of_the_question() -> None:
    question = "Which river flows through the birthplace of Mira Solen?"
    rows = [
        _row("a", "Solen family", "The Solen family is old."),
        _row("b", "Old families", "Many old families."),
        _row("c", "Water", "Rivers flow."),
        _row("d", "Some town", "Mira Solen was born in Tarn."),
    ]
    # "Mira" is named by no placed passage: the passage that names it comes next
    assert _ids(po.cover_order(rows, question)) == ["a", "b", "d", "c"]


def test_cover_order_without_anything_to_add_keeps_the_order() -> None:
    rows = [_row(d, "", "nothing here") for d in "abcde"]
    assert _ids(po.cover_order(rows, "what is it?")) == list("abcde")
    assert po.cover_order([], QUESTION) == []
    short = [_row("a", "Quux Society", "x"), _row("b", "Journal of Fooz", "y")]
    assert _ids(po.cover_order(short, QUESTION)) == ["a", "b"]


def test_cover_order_counts_documents_not_chunks_for_the_head() -> None:
    rows = [
        _row("j", "Journal of Fooz", "published by the Quux Society", chunk="j#1"),
        _row("j", "Journal of Fooz", "more of it", chunk="j#2"),
        _row("z", "Zed", "nothing"),
        _row("w", "Wye", "nothing"),
        _row("q", "Quux Society", "first president Ada Lane"),
    ]
    # two chunks of one document are one place of the head
    assert _ids(po.cover_order(rows, QUESTION)) == ["j#1", "j#2", "q", "z", "w"]
    assert _ids(po.cover_order(rows, QUESTION, kept=2)) == ["j#1", "j#2", "z", "q", "w"]
    # a document already placed does not link again (its title is a placed title)
    again = [_row("q", "Quux Society", "a"), _row("w", "Wye", "b"),
             _row("q2", "Quux Society", "c", chunk="q#2"), _row("j", "Journal of Fooz", "d")]
    assert _ids(po.cover_order(again, QUESTION)) == ["q", "j", "w", "q#2"]
    assert _ids(po.cover_order(rows, QUESTION, kept=5)) == _ids(rows)
