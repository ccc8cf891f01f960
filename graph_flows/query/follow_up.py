"""The no-LLM assessment of the evidence: a follow-up only when part of the question is not
covered by the top passages and a bridge entity leads on from what they did cover.

From hop-1 passages first (issue 41): when round 1 ranked passages that belong to things
the question names (graph_flows.query.hop_one), only the words those passages say count as
covered; a word they do not say asks for the follow-up of graph_flows.query.second_hop,
which chooses each one's bridge among the entities it mentions and places the bridge's best
passage right after it (loop.merge_hops). The rule below is the weaker guess, kept for
questions whose named things have no passage in round 1.

Covered: a content word of the question (its stem, graph_flows.query.extractive) occurs in
one of the first :data:`TOP` passages or facts. When every word is covered the loop stops.
Otherwise the bridge is the best-ranked retrieved entity that the question does not name and
that occurs in those top passages (found through the evidence, not the question); the
follow-up searches for the bridge together with the uncovered words ("Who founded the label
that signed X?" with the label not named -> "<label> founded"). No bridge: the loop stops.

The follow-up's evidence only fills the tail of the ranking (loop.RULES_HEAD) and only its
best new document comes in (loop.RULES_NEW): without a model to read the evidence, a second
search is a guess, and a guess must not push out what the question itself found. So the
round searches only what decides that document (graph_flows.query.guess_search). It runs
by default (QueryContext.no_llm_follow_up): measured in docs/bench/HISTORY.md (issue 24), it
raises R@10 and AllSupp@10 on both MuSiQue graphs and lowers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.query import extractive, hop_one, loop
from graph_flows.shared.untrusted import without_flagged

TOP = 3  # passages (and facts) whose words count as covered
MAX_UNCOVERED = 6  # uncovered words put into the follow-up


@dataclass(frozen=True)
class Assessment:
    """A follow-up query (``query``: bridge and uncovered words; None: stop, ``stop`` says
    why), the bridge entity and the uncovered words."""

    query: str | None
    bridge: str
    uncovered: tuple[str, ...]
    stop: str | None
    hops: tuple[hop_one.HopOne, ...] = ()
    """The hop-1 passages to follow (then ``bridge`` is chosen by the follow-up round)."""


def assess(question: str, names: Sequence[str], passages: Sequence[dict[str, Any]],
           facts: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]],
           ) -> Assessment:
    """The no-LLM verdict on the evidence so far (see the module docstring). Instruction-
    like text in the question is never searched for again nor echoed in the follow-up."""
    clean = without_flagged(question)
    q = extractive.question(clean, names)
    hops = hop_one.hop_one_passages(clean, names, passages)
    if hops:
        uncovered = [q.words[s] for s in q.words if s in q.all - hop_one.covered(hops)]
        if not uncovered:
            return Assessment(None, "", (), loop.HOP1_COVERED)
        words = tuple(uncovered[:MAX_UNCOVERED])
        titles = " / ".join(h.name for h in hops)
        return Assessment(f"the bridge from {titles}: {' '.join(words)}", "", words, None,
                          tuple(hops))
    top_texts = [f"{p.get('title') or ''} {p.get('text') or ''}" for p in passages[:TOP]]
    top_texts += [str(f.get("fact") or "") for f in facts[:TOP]]
    covered = frozenset().union(*(extractive.terms(t) for t in top_texts))
    uncovered = [q.words[s] for s in q.words if s in q.all - covered]
    if not uncovered:
        return Assessment(None, "", (), loop.COVERED)
    top_passages = frozenset().union(*(extractive.terms(t) for t in top_texts[:TOP]))
    for e in entities:
        name = str(e.get("name") or "")
        stems = extractive.terms(name)
        if not stems or stems <= q.all or not stems <= top_passages:
            continue  # the question names it, or the top passages never mention it
        words = tuple(uncovered[:MAX_UNCOVERED])
        return Assessment(" ".join([name, *words]), name, words, None)
    return Assessment(None, "", tuple(uncovered), loop.NO_BRIDGE)
