"""Personalized PageRank over a small graph of entities and passages (pure functions).

The graph is undirected and weighted: an entity–passage edge for each provenance pair, an
entity–entity edge for each relation (parallel relations add weight). PageRank runs by power
iteration on the column-stochastic transition matrix, kept as edge arrays (a sparse
matrix-vector product is one ``numpy.bincount``); the mass of a node without edges returns to
the seed distribution, so the scores sum to one (under one when whole-graph degrees are given
for a neighbourhood: the mass of the edges left outside leaks).

Seeds (HippoRAG 2): an entity gets ``fact score / number of passages it appears in`` summed
over the linked facts it is an end of (rare entities say more than ubiquitous ones), with the
facts' cosines min-max scaled over the linked facts (raw cosines of related and unrelated
facts differ little); a passage its scaled dense score times a small weight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np

DAMPING = 0.5
ITERATIONS = 30
TOLERANCE = 1e-8
PASSAGE_WEIGHT = 0.05


@dataclass(frozen=True)
class Graph:
    """Nodes by id and the undirected weighted edges between them (index pairs)."""

    nodes: list[str]
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    index: dict[str, int] = field(default_factory=dict)
    """Node id -> position in ``nodes`` (filled from ``nodes`` when not given)."""

    def __post_init__(self) -> None:
        if len(self.index) != len(self.nodes):
            object.__setattr__(self, "index", {n: i for i, n in enumerate(self.nodes)})


def build_graph(edges: Iterable[tuple[str, str]], nodes: Iterable[str] = ()) -> Graph:
    """An undirected graph from ``(a, b)`` pairs (repeats add weight, self-loops dropped);
    ``nodes`` adds nodes that may have no edge (e.g. seeds outside the neighbourhood).
    Nodes are numbered in order of first appearance."""
    flat = list(chain.from_iterable(edges))
    index = {n: i for i, n in enumerate(dict.fromkeys(chain(nodes, flat)))}
    ends = np.fromiter(map(index.__getitem__, flat), dtype=np.int64,
                       count=len(flat)).reshape(-1, 2)
    return indexed_graph(list(index), ends, index)


def indexed_graph(nodes: list[str], pairs: np.ndarray, index: dict[str, int] | None = None,
                  extra: Iterable[str] = ()) -> Graph:
    """An undirected graph from index pairs into ``nodes`` (an ``(n, 2)`` integer array;
    repeats add weight, self-loops dropped), the pairs counted with numpy. ``extra``: ids
    appended as nodes when not among ``nodes`` (seeds outside the neighbourhood); ``index``:
    ``nodes``' positions when already known (it is extended, not copied)."""
    index = {n: i for i, n in enumerate(nodes)} if index is None else index
    nodes = list(nodes)
    for node in extra:
        if node not in index:
            index[node] = len(nodes)
            nodes.append(node)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    n = max(len(nodes), 1)
    keys, counts = np.unique(np.minimum(pairs[:, 0], pairs[:, 1]) * n
                             + np.maximum(pairs[:, 0], pairs[:, 1]), return_counts=True)
    lo, hi, w = keys // n, keys % n, counts.astype(np.float64)
    return Graph(nodes, np.concatenate([lo, hi]), np.concatenate([hi, lo]),
                 np.concatenate([w, w]), index)


def personalized_pagerank(graph: Graph, seeds: Mapping[str, float], *,
                          damping: float = DAMPING, iterations: int = ITERATIONS,
                          tolerance: float = TOLERANCE,
                          degrees: Mapping[str, float] | np.ndarray | None = None,
                          ) -> dict[str, float]:
    """PageRank mass of every node for restarts drawn from ``seeds`` (weights, normalised;
    unknown ids and non-positive weights ignored). ``damping`` is the chance to follow an
    edge rather than restart. No usable seed: an empty result.

    ``degrees``: a node's degree in the whole graph when ``graph`` is only a neighbourhood
    of it. A node then passes each kept edge ``weight / degree`` of its mass (not ``weight /
    kept weight``), and the share of the edges left outside leaks: a hub whose edges were
    cut to a few keeps giving each of them what the whole graph would, instead of
    inflating them (the local approximation of PageRank; the masses then sum to under one).
    An array gives the degrees of the first nodes by position (the rest have none)."""
    n = len(graph.nodes)
    index = graph.index
    reset = np.zeros(n)
    for node, weight in seeds.items():
        if node in index and weight > 0:
            reset[index[node]] += weight
    if n == 0 or reset.sum() <= 0:
        return {}
    reset /= reset.sum()
    out_weight = np.bincount(graph.src, weights=graph.weight, minlength=n)
    if isinstance(degrees, np.ndarray):
        full = np.zeros(n)
        full[:min(n, len(degrees))] = degrees[:n]
        out_weight = np.maximum(out_weight, full)
    elif degrees:
        full = np.fromiter(map(degrees.get, graph.nodes, repeat(0.0)), dtype=np.float64,
                           count=n)
        out_weight = np.maximum(out_weight, full)
    share = graph.weight / np.where(out_weight[graph.src] > 0, out_weight[graph.src], 1.0)
    dangling = out_weight == 0
    rank = reset.copy()
    for _ in range(iterations):
        flow = np.bincount(graph.dst, weights=share * rank[graph.src], minlength=n)
        new = damping * (flow + rank[dangling].sum() * reset) + (1 - damping) * reset
        done = np.abs(new - rank).sum() < tolerance
        rank = new
        if done:
            break
    return dict(zip(graph.nodes, rank.tolist(), strict=True))


def entity_seeds(fact_scores: Iterable[tuple[str, str, float]],
                 chunk_counts: Mapping[str, int]) -> dict[str, float]:
    """Seed weight of each entity from ``(subject id, object id, fact score)``: the fact
    score divided by the number of passages the entity appears in (at least 1), summed."""
    out: dict[str, float] = {}
    for subject, obj, score in fact_scores:
        if score <= 0:
            continue
        for entity in dict.fromkeys((subject, obj)):
            out[entity] = out.get(entity, 0.0) + score / max(chunk_counts.get(entity, 1), 1)
    return out


def min_max(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores scaled to 0..1 over their own range (all 1.0 when they are equal)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    span = high - low
    return {k: 1.0 if span <= 0 else (v - low) / span for k, v in scores.items()}


def passage_seeds(scores: Mapping[str, float], weight: float = PASSAGE_WEIGHT,
                  ) -> dict[str, float]:
    """Dense passage scores min-max scaled to (0, 1] and multiplied by ``weight`` (a passage
    with the lowest score of several keeps a small share rather than none)."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    low, high = float(values.min()), float(values.max())
    span = high - low
    return {k: weight * (1.0 if span <= 0 else 0.1 + 0.9 * (v - low) / span)
            for k, v in scores.items()}


def combine(*seed_maps: Mapping[str, float]) -> dict[str, float]:
    """Sum of seed maps."""
    out: dict[str, float] = {}
    for seeds in seed_maps:
        for k, v in seeds.items():
            out[k] = out.get(k, 0.0) + v
    return out


def rank(ids: Sequence[str], mass: Mapping[str, float], limit: int | None = None,
         ) -> list[tuple[str, float]]:
    """``ids`` ordered by PageRank mass (highest first, ties in the given order); only the
    first ``limit`` when given (a partial sort)."""
    values = np.fromiter(map(mass.get, ids, repeat(0.0)), dtype=np.float64, count=len(ids))
    order = np.argsort(-values, kind="stable")
    if limit is not None:
        order = order[:max(limit, 0)]
    return [(ids[i], float(values[i])) for i in order.tolist()]
