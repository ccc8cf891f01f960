"""Personalized PageRank on hand-made graphs (no database)."""

from __future__ import annotations

import numpy as np
import pytest

from graph_flows.query import ppr


def _two_hop() -> ppr.Graph:
    """Question entity A in passage P1 with bridge B; B's other passage P2 holds the answer
    (reachable only through B); P3 is an unrelated passage about C."""
    return ppr.build_graph([("A", "P1"), ("B", "P1"), ("B", "P2"), ("C", "P3"), ("D", "P3")])


def test_mass_flows_through_the_bridge_entity_to_the_second_passage() -> None:
    mass = ppr.personalized_pagerank(_two_hop(), {"A": 1.0})
    assert sum(mass.values()) == pytest.approx(1.0)
    ranked = [n for n, _ in ppr.rank(["P1", "P2", "P3"], mass)]
    assert ranked == ["P1", "P2", "P3"]
    assert mass["P2"] > 0 and mass["P3"] == 0


def test_relation_edges_carry_mass_between_entities() -> None:
    graph = ppr.build_graph([("A", "B"), ("B", "P2"), ("C", "P3")])
    mass = ppr.personalized_pagerank(graph, {"A": 1.0})
    assert mass["P2"] > mass["P3"] == 0


def test_dangling_seed_keeps_its_mass_and_scores_sum_to_one() -> None:
    graph = ppr.build_graph([("A", "P1")], nodes=["lonely"])
    mass = ppr.personalized_pagerank(graph, {"lonely": 1.0, "A": 1.0})
    assert sum(mass.values()) == pytest.approx(1.0)
    assert mass["lonely"] > mass["P1"] > 0


def test_empty_or_unknown_seeds_give_nothing() -> None:
    graph = _two_hop()
    assert ppr.personalized_pagerank(graph, {}) == {}
    assert ppr.personalized_pagerank(graph, {"nobody": 1.0, "A": 0.0}) == {}
    assert ppr.personalized_pagerank(ppr.build_graph([]), {"A": 1.0}) == {}


def test_repeated_edges_weigh_more() -> None:
    graph = ppr.build_graph([("A", "P1"), ("A", "P2"), ("A", "P2")])
    mass = ppr.personalized_pagerank(graph, {"A": 1.0})
    assert mass["P2"] == pytest.approx(2 * mass["P1"])


def test_entity_seeds_divide_by_passage_count() -> None:
    seeds = ppr.entity_seeds([("A", "B", 0.8), ("A", "C", 0.4), ("X", "X", 0.5),
                              ("Y", "Z", 0.0)], {"A": 4, "B": 1})
    assert seeds == pytest.approx({"A": 0.2 + 0.1, "B": 0.8, "C": 0.4, "X": 0.5})


def test_passage_seeds_scale_and_weigh() -> None:
    seeds = ppr.passage_seeds({"P1": 0.9, "P2": 0.5, "P3": 0.7}, weight=0.1)
    assert seeds["P1"] == pytest.approx(0.1)
    assert seeds["P2"] == pytest.approx(0.01)
    assert seeds["P1"] > seeds["P3"] > seeds["P2"]
    assert ppr.passage_seeds({}) == {}
    assert ppr.passage_seeds({"P": 0.3}) == {"P": ppr.PASSAGE_WEIGHT}


def test_dense_seed_alone_still_ranks_its_passage_first() -> None:
    mass = ppr.personalized_pagerank(_two_hop(), ppr.passage_seeds({"P3": 0.5}))
    assert ppr.rank(["P1", "P2", "P3"], mass)[0][0] == "P3"


def test_combine_sums() -> None:
    assert ppr.combine({"a": 1.0}, {"a": 0.5, "b": 2.0}) == {"a": 1.5, "b": 2.0}


def test_min_max() -> None:
    assert ppr.min_max({"a": 0.7, "b": 0.3, "c": 0.5}) == pytest.approx(
        {"a": 1.0, "b": 0.0, "c": 0.5})
    assert ppr.min_max({"a": 0.2, "b": 0.2}) == {"a": 1.0, "b": 1.0}
    assert ppr.min_max({}) == {}


def test_whole_graph_degrees_let_the_mass_of_cut_edges_leak() -> None:
    """Hub H appears in 50 passages, of which the neighbourhood kept P1 and P2; passage Q's
    entity E appears only there. Without degrees the cut hub hands P1 a third of its mass
    (three edges kept); with its whole-graph degree (51) a fifty-first, as PageRank over the
    whole graph would."""
    graph = ppr.build_graph([("A", "H"), ("H", "P1"), ("H", "P2"), ("A", "E"), ("E", "Q")])
    cut = ppr.personalized_pagerank(graph, {"A": 1.0})
    whole = ppr.personalized_pagerank(graph, {"A": 1.0}, degrees={"H": 51, "A": 2})
    assert cut["P1"] > 0.5 * cut["Q"]  # the cut hub looks almost as specific as E
    assert whole["Q"] > 10 * whole["P1"] > 0
    assert sum(whole.values()) < 1.0 and sum(cut.values()) == pytest.approx(1.0)
    # a degree under the edges kept changes nothing
    same = ppr.personalized_pagerank(graph, {"A": 1.0}, degrees={"E": 1})
    assert same == pytest.approx(cut)


def test_build_graph_counts_pairs_either_way_and_drops_self_loops() -> None:
    graph = ppr.build_graph([("A", "P1"), ("P1", "A"), ("B", "B"), ("B", "P1")], nodes=["S"])
    assert graph.nodes == ["S", "A", "P1", "B"]  # in order of first appearance
    edges = {(graph.nodes[s], graph.nodes[d]): w
             for s, d, w in zip(graph.src, graph.dst, graph.weight, strict=True)}
    assert edges == {("A", "P1"): 2.0, ("P1", "A"): 2.0, ("B", "P1"): 1.0, ("P1", "B"): 1.0}


def test_indexed_graph_is_the_graph_of_the_same_pairs() -> None:
    """The neighbourhood's index pairs give the graph (and PageRank) of the named pairs."""
    names = ["A", "P1", "B", "P2"]
    pairs = np.array([[0, 1], [1, 0], [2, 1], [2, 2], [2, 3]])
    indexed = ppr.indexed_graph(names, pairs, extra=["S", "A"])
    named = ppr.build_graph([(names[a], names[b]) for a, b in pairs.tolist()], nodes=["S"])
    assert indexed.nodes == names + ["S"] and indexed.index["S"] == 4
    assert _same_edges(indexed, named)  # weights 2, 1, 1; the self-loop dropped
    seeds = {"A": 1.0, "S": 0.5}
    degrees = np.array([3.0, 0.0, 4.0, 0.0])  # the first nodes' whole-graph degrees
    by_name = {"A": 3.0, "B": 4.0}
    got = ppr.personalized_pagerank(indexed, seeds, degrees=degrees)
    want = ppr.personalized_pagerank(named, seeds, degrees=by_name)
    assert got.keys() == want.keys()
    assert all(abs(got[k] - want[k]) < 1e-12 for k in got)


def _same_edges(a: ppr.Graph, b: ppr.Graph) -> bool:
    """The same weighted edges between the same names."""
    def named(g: ppr.Graph) -> list[tuple[str, str, float]]:
        return sorted((g.nodes[s], g.nodes[d], w) for s, d, w in
                      zip(g.src.tolist(), g.dst.tolist(), g.weight.tolist(), strict=True))
    return named(a) == named(b)
