"""The no-LLM answer from facts and passages: the best sentences for the question, cited.

Every sentence of the top passages and every top fact is a candidate. Sentences are picked
greedily: a candidate scores by the share of the question's content words it covers that
the picks so far do not, plus (half weight) the bridge words it contains (names of the
retrieved facts' entities that earlier picks mention and the question does not: the bridge
of a multi-hop question, "the founder of X" -> the founder's name), plus a prior from the
rank of its passage or fact. Each passage gives at most one sentence; the first pick leads.
Words are compared by their first :data:`STEM` letters (a crude stemmer: founder/founded).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

STEM = 5
TOP_PASSAGES = 3  # passages that may give a sentence
TOP_FACTS = 3  # facts that are candidates, and whose ends give the bridge words
MAX_SENTENCES = 3
BRIDGE_WEIGHT = 0.5
MAX_CHARS = 300
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"“'(\[]?[A-Z0-9])")
_STOP_WORDS = """a an and are as at be been being but by can could did do does for from
had has have he her hers him his how i if in into is it its me my no not of on or our she so
than that the their them then there these they this those to us was we were what when where
which while who whom whose why will with would you your about after before during many much
one ones same some such"""
_STOP = frozenset(_STOP_WORDS.split())


def terms(text: str) -> frozenset[str]:
    """Content-word stems of ``text`` (lower case, no stop words)."""
    return frozenset(w[:STEM] for w in _WORD.findall(text.lower()) if w not in _STOP)


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (whitespace collapsed, each clipped to MAX_CHARS)."""
    out = []
    for s in _SENTENCE.split(" ".join(str(text).split())):
        s = s.strip()
        if s:
            out.append(s if len(s) <= MAX_CHARS else s[: MAX_CHARS - 1] + "…")
    return out


def candidates(facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
               ) -> list[tuple[int, str, str]]:
    """(rank, sentence, label): every sentence of the top passages, then the top facts."""
    out = [(rank, s, p["label"]) for rank, p in enumerate(passages[:TOP_PASSAGES])
           for s in sentences(p.get("text", ""))]
    return out + [(rank, " ".join(f["fact"].split()), f["label"])
                  for rank, f in enumerate(facts[:TOP_FACTS])]


def _gain(words: frozenset[str], rank: int, open_terms: frozenset[str], n_question: int,
          bridge: frozenset[str]) -> float:
    return (len(words & open_terms) / max(n_question, 1)
            + BRIDGE_WEIGHT * len(words & bridge) / max(len(bridge), 1) + 1.0 / (2 + rank))


def pick(query: str, facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
         limit: int = MAX_SENTENCES) -> list[tuple[str, str]]:
    """(sentence, label) to answer with, best first, chosen greedily: each pick scores by
    the question words still uncovered, the bridge words (entity names the picks so far
    mention, beyond the question's) and its rank; a sentence adding no new word, or from a
    passage already used, is skipped."""
    question = terms(query)
    names = [terms(f"{f.get(k, '')}") for f in facts for k in ("subject", "object")]
    pool = [(terms(s), rank, s, label) for rank, s, label in candidates(facts, passages)]
    covered: set[str] = set()
    bridge: frozenset[str] = frozenset()
    used: set[str] = set()
    out: list[tuple[str, str]] = []
    while pool and len(out) < limit:
        fresh = [c for c in pool if not c[0] <= covered and c[3] not in used]
        if not fresh:
            break
        open_terms = question - covered
        words, _, sentence, label = max(
            fresh, key=lambda c: _gain(c[0], c[1], open_terms, len(question), bridge))
        out.append((sentence, label))
        pool.remove((words, _, sentence, label))
        covered |= words
        bridge |= frozenset().union(*(n for n in names if n and n <= words)) - question
        if label.startswith("P"):
            used.add(label)
    return out
