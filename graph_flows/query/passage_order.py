"""The final passage order of recipe ``ppr``: PageRank chooses the passages, the graph's
and the question-match evidence together order them (issue 24, pure functions).

PageRank's top :data:`~graph_flows.query.evidence.PASSAGE_LIMIT` passages are kept as they
are (the depth the graph wins: R@10 and AllSupp@10 cannot change), and put in the order of
a mixture of three probability distributions over the candidate passages, each made from
one kind of evidence so that their scores are comparable:

- the graph's: PageRank mass, as each passage's share of the mass on the candidates
  (PageRank's mass is a probability distribution already);
- the dense retriever's: a softmax of its cosines standardised over its own hit list (the
  temperature is their spread: a passage far above the rest of the list gets most of the
  probability, a flat list spreads it), 0 for a passage it did not return;
- the BM25 retriever's: the same softmax of its scores over its own hit list.

Each is a distribution summing to one, so no retriever's raw scale decides, and a passage
that one retriever singles out, or that several agree on, comes first. The weights are
:data:`WEIGHTS` (docs/BENCHMARKS.md, "Issue 24", says what was tried and on which
questions). Ties keep PageRank's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat

import numpy as np

GRAPH, DENSE, TEXT = "graph", "dense", "text"
WEIGHTS: Mapping[str, float] = {GRAPH: 1 / 3, DENSE: 1 / 3, TEXT: 1 / 3}
"""Mixture weights of the three distributions (equal: no kind of evidence preferred)."""


def standardised_softmax(scores: Mapping[str, float]) -> dict[str, float]:
    """A probability per id: ``exp(z)`` normalised, ``z`` the score standardised over the
    given scores (mean 0, standard deviation 1; all equal: uniform). Empty: empty."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    spread = float(values.std())
    z = (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
    weights = np.exp(z - z.max())
    return dict(zip(scores, (weights / weights.sum()).tolist(), strict=True))


def mass_shares(ids: Sequence[str], mass: Mapping[str, float],
                candidates: Sequence[str] | None = None) -> dict[str, float]:
    """Each of ``ids``' share of the (positive) mass on ``candidates`` (default: ``ids``);
    no mass: all 0."""
    def positive(keys: Sequence[str]) -> np.ndarray:
        values = np.fromiter(map(mass.get, keys, repeat(0.0)), dtype=np.float64,
                             count=len(keys))
        return np.maximum(values, 0.0)

    values = positive(ids)
    total = float((values if candidates is None else positive(candidates)).sum())
    return dict(zip(ids, (values / total if total > 0 else values).tolist(), strict=True))


def mixture(ids: Sequence[str], distributions: Mapping[str, Mapping[str, float]],
            weights: Mapping[str, float] = WEIGHTS) -> np.ndarray:
    """The weighted sum of ``distributions`` (by name, as in ``weights``) at each id."""
    out = np.zeros(len(ids))
    for name, dist in distributions.items():
        weight = weights.get(name, 0.0)
        if weight and dist:
            out += weight * np.fromiter((dist.get(i, 0.0) for i in ids), dtype=np.float64,
                                        count=len(ids))
    return out


def head_order(top: Sequence[str], candidates: Sequence[str], mass: Mapping[str, float],
               dense: Mapping[str, float], text: Mapping[str, float],
               weights: Mapping[str, float] = WEIGHTS) -> list[str]:
    """``top`` (PageRank's chosen passages, in its order) ordered by the mixture of the
    graph's share of the mass on ``candidates`` (every passage PageRank ranked), the dense
    cosines' and the BM25 scores' standardised softmax over their own hit lists
    (``dense``, ``text``: passage id -> score); ties keep ``top``'s order."""
    if len(top) < 2:
        return list(top)
    fused = mixture(top, {GRAPH: mass_shares(top, mass, candidates),
                          DENSE: standardised_softmax(dense),
                          TEXT: standardised_softmax(text)}, weights)
    return [top[i] for i in np.argsort(-fused, kind="stable").tolist()]
