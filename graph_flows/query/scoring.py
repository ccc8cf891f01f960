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
