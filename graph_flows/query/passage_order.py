"""The final passage order of recipe ``ppr``: PageRank chooses the passages, the graph's
evidence and the question-match evidence, made comparable, order them (issue 24; pure
functions).

PageRank's top :data:`~graph_flows.query.evidence.PASSAGE_LIMIT` passages are kept as they
are (the depth the graph wins: R@10 and AllSupp@10 cannot change), and ordered by a
mixture of two probability distributions over passages, one per kind of evidence:

- the graph's: each passage's share of the PageRank mass on all the passages PageRank
  ranked (PageRank's mass is a probability distribution already);
- the question match's: the two retrievers that compare the question with the passage
  text, dense (cosine) and BM25, each turned into a distribution over its own hit list by a
  softmax of its scores standardised over that list (:func:`standardised_softmax`: the
  temperature is the list's own spread, so neither retriever's raw scale counts; a passage
  far above the rest of its list gets most of the probability, a flat list spreads it), and
  combined as a product of experts (:func:`match_distribution`): a passage both retrievers
  single out comes first, one only one of them likes is held back by the other.

The two kinds weigh the same (:data:`GRAPH_WEIGHT` one half: no kind preferred). Ties keep
PageRank's order. docs/bench/HISTORY.md ("Issue 24 (2026-11-25): ranking at the head") says
what else was tried, on which questions, and why this should hold on others.

Then, with the passages' text at hand, :func:`cover_order` keeps the first document
(:data:`KEPT_DOCUMENTS`) of that order where it is and places each next passage for
what it *adds* to the passages already placed (a greedy, coverage-aware choice, issue 24): the
first passage, in that order, that is the document of something the question or the placed
passages name (its title's words all among theirs: the bridge's own article, the next hop),
or that names a name of the question no placed passage names yet (a part of the question
still uncovered); when none does, the next in order. A multi-hop question needs passages
about different parts of it and about the bridge between them, not several passages about
its best-matched part. HISTORY: head_r5.md has the measurements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, TypeVar

import numpy as np

from graph_flows.query import extractive

Row = TypeVar("Row", bound=Mapping[str, Any])

GRAPH_WEIGHT = 0.5
"""Weight of the graph's distribution in the mixture (the question match's: the rest)."""

KEPT_DOCUMENTS = 1
"""Documents at the head that :func:`cover_order` leaves where the evidence put them: the
best (a greedy choice starts from it; every later place goes to the first passage that
adds something)."""


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


def match_distribution(dense: Mapping[str, float], text: Mapping[str, float],
                       ) -> dict[str, float]:
    """The question match over the passages either retriever returned (``dense``,
    ``text``: passage id -> its score): the product of the two retrievers'
    :func:`standardised_softmax` distributions, normalised. A passage one retriever did
    not return gets that retriever's smallest probability (it ranked below its whole list:
    the list's last is the most it could have). One list empty: the other's alone."""
    experts = [p for p in (standardised_softmax(dense), standardised_softmax(text)) if p]
    if not experts:
        return {}
    ids = list(dict.fromkeys(i for p in experts for i in p))
    product = np.ones(len(ids))
    for p in experts:
        product *= np.fromiter(map(p.get, ids, repeat(min(p.values()))), dtype=np.float64,
                               count=len(ids))
    return dict(zip(ids, (product / product.sum()).tolist(), strict=True))


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


def head_order(top: Sequence[str], candidates: Sequence[str], mass: Mapping[str, float],
               dense: Mapping[str, float], text: Mapping[str, float],
               graph_weight: float = GRAPH_WEIGHT) -> list[str]:
    """``top`` (PageRank's chosen passages, in its order) ordered by ``graph_weight`` times
    their share of the PageRank mass on ``candidates`` (every passage PageRank ranked) plus
    the rest times the question match (:func:`match_distribution` of the dense and BM25
    hits); ties keep ``top``'s order."""
    if len(top) < 2:
        return list(top)
    graph = mass_shares(top, mass, candidates)
    match = match_distribution(dense, text)
    fused = np.fromiter((graph_weight * graph[i] + (1 - graph_weight) * match.get(i, 0.0)
                         for i in top), dtype=np.float64, count=len(top))
    return [top[i] for i in np.argsort(-fused, kind="stable").tolist()]


def _document(row: Mapping[str, Any]) -> Any:
    return row.get("document_id") or row.get("uri") or row.get("id")


def cover_order(rows: Sequence[Row], question: str, kept: int = KEPT_DOCUMENTS) -> list[Row]:
    """``rows`` (passages with ``title`` and ``text``, in the evidence's order) with the
    rows of the first ``kept`` documents in place and each later place given to the first
    remaining row that adds to the rows placed before it (see the module docstring):
    its title's content words are non-empty, all among the question's and the placed rows'
    words, and not a placed row's title; or it names one of the question's names
    (graph_flows.query.extractive.question) that no placed row names. When no row adds,
    the next row in order. The same rows, none added or dropped."""
    rest = list(rows)
    placed: list[Row] = []
    documents: set[Any] = set()
    while rest and (len(documents) < kept or _document(rest[0]) in documents):
        documents.add(_document(rest[0]))
        placed.append(rest.pop(0))
    if not rest:
        return placed
    names = extractive.question(question).names
    question_words = extractive.terms(question)
    words = [_said(r) for r in rest]
    titles = [extractive.terms(r.get("title") or "") for r in rest]
    said = frozenset().union(*map(_said, placed))
    placed_titles = [extractive.terms(r.get("title") or "") for r in placed]
    while rest:
        context = said | question_words
        pick = next((i for i, (title, text) in enumerate(zip(titles, words, strict=True))
                     if (title and title <= context and title not in placed_titles)
                     or (text & names) - said), 0)
        placed.append(rest.pop(pick))
        said |= words.pop(pick)
        placed_titles.append(titles.pop(pick))
    return placed


def _said(row: Mapping[str, Any]) -> frozenset[str]:
    """The terms a passage row says: its title's and its text's."""
    return frozenset(extractive.terms(f"{row.get('title') or ''} {row.get('text') or ''}"))
