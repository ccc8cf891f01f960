"""Relevance scoring and the search split: small pure functions, testable without a database."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from graph_flows.query import extractive

NAME_MATCH, SUMMARY_MATCH, BASE = 3, 2, 1
FACT_TEXT_MATCH, BOTH_ENDPOINTS, ONE_ENDPOINT = 2, 3, 1


def split_limit(limit: int, like_share: float) -> tuple[int, int]:
    """(LIKE share, trigram share) of a limit: 15 at 0.6 -> (9, 6); 20 -> (12, 8)."""
    like = min(limit, max(0, math.floor(limit * like_share + 0.5)))
    return like, limit - like


def needs_fallback(found: int, limit: int, ratio: float) -> bool:
    """Vector fallback when LIKE + trigram found under ``ratio`` of the limit."""
    return found < limit * ratio


def entity_score(name_match: bool, summary_match: bool) -> int:
    """Name match 3, summary match 2, base 1."""
    return BASE + NAME_MATCH * name_match + SUMMARY_MATCH * summary_match


def fact_score(text_match: bool, subject_in: bool, object_in: bool) -> int:
    """Base 1, fact text match 2, both endpoints among retrieved entities 3, one endpoint 1."""
    ends = BOTH_ENDPOINTS if subject_in and object_in else (
        ONE_ENDPOINT if subject_in or object_in else 0)
    return BASE + FACT_TEXT_MATCH * text_match + ends


# -- fused ranking (recipe "rrf") --------------------------------------------------------------
LEXICAL_METHODS = frozenset({"like", "trigram", "summary"})


def rrf(ranked_lists: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal Rank Fusion: sum of ``1 / (k + rank)`` over the lists, rank from 1.
    A list naming an id twice counts its first (best) rank only."""
    out: dict[str, float] = {}
    for ranked in ranked_lists:
        seen: set[str] = set()
        for rank, item in enumerate(ranked, start=1):
            if item in seen:
                continue
            seen.add(item)
            out[item] = out.get(item, 0.0) + 1.0 / (k + rank)
    return out


def _words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\w+", text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Word-set Jaccard similarity (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def mmr(candidates: Sequence[tuple[str, float, str]], limit: int,
        lambda_: float = 0.7) -> list[str]:
    """Maximal Marginal Relevance over ``(id, relevance, text)``: greedily pick the id with
    the highest ``lambda_ * relevance - (1 - lambda_) * max Jaccard to those picked``.
    Ties keep the input order; duplicate ids count once."""
    pool: dict[str, tuple[float, frozenset[str], int]] = {}
    for pos, (cid, rel, text) in enumerate(candidates):
        if cid not in pool:
            pool[cid] = (rel, _words(text), pos)
    chosen: list[str] = []
    chosen_words: list[frozenset[str]] = []
    while pool and len(chosen) < limit:
        def gain(cid: str) -> tuple[float, int]:
            rel, words, pos = pool[cid]
            dup = max((jaccard(words, w) for w in chosen_words), default=0.0)
            return (lambda_ * rel - (1 - lambda_) * dup, -pos)
        best = max(pool, key=gain)
        chosen.append(best)
        chosen_words.append(pool.pop(best)[1])
    return chosen


def agreement(methods: Sequence[str]) -> str:
    """"high": found by >= 2 distinct search methods ("endpoint" not counted); "medium":
    one lexical method, or the graph walk from a matched entity; "low": vector only,
    endpoint only, or nothing."""
    found = set(methods) - {"endpoint"}
    if len(found) >= 2:
        return "high"
    if found & (LEXICAL_METHODS | {"graph"}):
        return "medium"
    return "low"


def evidence_terms(cited: Sequence[dict]) -> frozenset[str]:
    """Content-word stems of what an answer cites: a fact's sentence and the names of its
    two ends; a passage's text and its document's title."""
    texts = [" ".join(str(c.get(k) or "") for k in ("fact", "subject", "object", "text",
                                                   "title")) for c in cited]
    return extractive.terms(" ".join(texts))


def _kinds(cited: Sequence[dict]) -> str:
    facts = sum("passage_id" not in c for c in cited)
    passages = len(cited) - facts
    parts = [f"cited {noun}{'s' if n > 1 else ''}" for n, noun in
             ((facts, "fact"), (passages, "passage")) if n]
    return " and ".join(parts)


def _shown(hit: frozenset[str], q: extractive.Question) -> str:
    """`` (Word, Word)``: the question's own spelling of the covered stems, in its order."""
    shown = ", ".join(w for t, w in q.words.items() if t in hit)
    return f" ({shown})" if shown else ""


def answer_confidence(question: extractive.Question, cited: Sequence[dict],
                      retrieved: bool = True) -> dict[str, str]:
    """How well what the answer cites covers *this* question: the names in it (the things
    it asks about) and its other words (the predicate), by content-word stems.

    "high": every name and at least half of the other words; "medium": every name, or at
    least half of each; "low": some of them; "none": nothing was retrieved, the answer cites
    nothing, or what it cites names none of the question's names (and, for a question
    without names, none of its words)."""
    if not retrieved:
        return {"label": "none", "reason": "nothing was retrieved"}
    if not cited:
        return {"label": "none", "reason": "the answer cites no retrieved fact or passage"}
    found = evidence_terms(cited)
    names, other = question.names & found, question.other & found
    whole_names = names == question.names
    half_other = 2 * len(other) >= len(question.other)
    if (question.names and not names) or not (names or other):
        label = "none"
    elif whole_names and half_other:
        label = "high"
    elif whole_names or (2 * len(names) >= len(question.names) and half_other):
        label = "medium"
    else:
        label = "low"
    parts = []
    if question.names:
        parts.append(f"{len(names)} of the question's {len(question.names)} names"
                     + _shown(names, question))
    if question.other:
        parts.append(f"{len(other)} of its {len(question.other)} other words"
                     + _shown(other, question))
    verb = "covers" if len(cited) == 1 else "cover"
    reason = f"the {_kinds(cited)} {verb} " + " and ".join(parts or ["none of its words"])
    return {"label": label, "reason": reason}
