"""How likely an answer is right: a small rule model over evidence that predicts it.

The label is read from a few signals of the answer and what it cites (:class:`Signals`):

- ``names``: how many of the question's names (the things it asks about) the cited facts
  and passages say; an answer whose evidence misses a name is about something else.
- ``predicate``: how many of the question's relation words ("founded", "born", "published")
  the answer's own sentences say; the subject alone does not answer.
- ``kind`` and ``candidate``: the kind of answer the question asks for (a date for "when", a
  number for "how many", a person for "who", a place for "where", else a name) and the first
  mention of that kind in the answer that the question does not already contain (spaCy's
  named entities when the model is installed, else numbers and capitalised words). An
  answer with no candidate of the asked kind cannot be the answer.
- ``agree``: how many other retrieved documents also say that candidate (independent
  evidence agreeing).
- ``declined``: the answer model said the knowledge base does not contain the answer.

The rules (:func:`label`) and their thresholds were chosen on the development half (even
index) of the shared MuSiQue questions and checked on the other half (docs/BENCHMARKS.md,
"Issue 25"). They hold beyond that data because each one states a necessary condition of a
right answer (it is about the asked things, says the asked relation, holds a thing of the
asked kind); the reason string names the signals that decided.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.query import answer, answer_kind, extractive
from graph_flows.query.scoring import evidence_terms

LABELS = ("high", "medium", "low", "none")
_CITE = re.compile(r"\s*\[[FP]\d+\]")
_DECLINED = re.compile(
    r"\b(?:does not|doesn't|do not|don't|cannot|can't|could not|did not)\s+"
    r"(?:contain|say|mention|include|state|answer|provide|specify|tell|find|give)\b|"
    r"\bno (?:information|mention|fact|passage|facts|passages|evidence|record)\b|"
    r"\bnot (?:in|found in|mentioned in|part of) the (?:knowledge base|context|facts|passages)\b",
    re.I)
"""How an answer model says it cannot answer (the answer prompt asks it to say so)."""


@dataclass(frozen=True)
class Signals:
    """The evidence an answer's label is read from (see the module docstring)."""

    covered: int
    """The question's content words (names and others) the cited evidence says."""
    names: int
    names_asked: int
    predicate: int
    predicate_asked: int
    kind: str
    candidate: str
    agree: int
    declined: bool = False


def answer_sentences(text: str) -> list[str]:
    """The sentences an answer states, without the extractive header, the "Supporting
    evidence" line and citation labels."""
    lines = [ln.lstrip("- ").strip()
             for ln in text.replace(answer.EXTRACTIVE_HEADER, "").splitlines()]
    body = " ".join(_CITE.sub("", ln) for ln in lines if ln and ln != "Supporting evidence:")
    return extractive.sentences(body) if body else []


def candidate(sentences: Sequence[str], kind: str, q: extractive.Question) -> str:
    """The first mention of the asked kind in ``sentences`` that the question does not
    contain ("" when none)."""
    for sentence in sentences:
        for found in answer_kind.mentions(sentence, kind):
            if new(extractive.terms(found), q):
                return found
    return ""


def new(words: set[str] | frozenset[str], q: extractive.Question) -> bool:
    """Whether a mention adds a word (of two letters or more) the question does not hold:
    "Edgar F. Codd" is no answer to a question naming Edgar Codd."""
    return any(len(w) > 1 and w not in q.all for w in words)


def agreeing(found: str, cited: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
             passages: Sequence[dict[str, Any]]) -> int:
    """How many retrieved documents besides the answer's first cited one say ``found``
    (case-insensitive): other passages' documents and facts' source documents."""
    if not found:
        return 0
    needle = found.casefold()
    first = _document(cited[0]) if cited else None
    docs = {_document(p) for p in passages if needle in str(p.get("text", "")).casefold()}
    for f in facts:
        if needle in str(f.get("fact", "")).casefold():
            docs |= {s.get("uri") or s.get("document_id") for s in f.get("sources") or []}
    return len(docs - {first, None})


def _document(item: dict[str, Any]) -> Any:
    """The document a cited or retrieved item comes from."""
    if "passage_id" in item or "text" in item:
        return item.get("uri") or item.get("document_id")
    sources = item.get("sources") or []
    return (sources[0].get("uri") or sources[0].get("document_id")) if sources else None


def signals(q: extractive.Question, query: str, text: str, cited: Sequence[dict[str, Any]],
            facts: Sequence[dict[str, Any]] = (), passages: Sequence[dict[str, Any]] = (),
            declined: bool | None = None) -> Signals:
    """The signals of answer ``text`` to ``query`` citing ``cited`` (facts and passages as
    :func:`graph_flows.query.answer.citations` gives them)."""
    said = answer_sentences(text)
    found = evidence_terms(cited)
    words = extractive.terms(" ".join(said))
    kind = answer_kind.asked_kind(query)
    cand = candidate(said, kind, q)
    return Signals(
        covered=len(q.all & found), names=len(q.names & found), names_asked=len(q.names),
        predicate=len(q.predicate & words), predicate_asked=len(q.predicate),
        kind=kind, candidate=cand, agree=agreeing(cand, cited, facts, passages),
        declined=bool(_DECLINED.search(text)) if declined is None else declined)


def label(s: Signals) -> str:
    """The label of ``s``.

    "none": the model declined, or the evidence names none of the question's names (none
    of its words, for a question without names).
    "low": no candidate of the asked kind, or the evidence misses a name.
    "high": every name, a candidate of the asked kind, and the relation said (at least half
    the relation words, or all when there are at most two) or another document agreeing.
    "medium": the rest."""
    if s.declined or (s.names_asked and not s.names) or not s.covered:
        return "none"
    if not s.candidate or s.names < s.names_asked:
        return "low"
    said = 2 * s.predicate >= s.predicate_asked
    if said or s.agree:
        return "high"
    return "medium"


def reason(s: Signals, q: extractive.Question, covered: frozenset[str] = frozenset(),
           said: frozenset[str] = frozenset()) -> str:
    """One sentence naming the signals that decided the label (``covered``: the question's
    names the evidence says; ``said``: its relation words the answer says)."""
    if s.declined:
        return "the answer says the knowledge base does not contain the answer"
    parts = []
    if s.names_asked:
        parts.append(f"the cited evidence names {s.names} of the question's "
                     f"{s.names_asked} names" + _shown(covered, q))
    elif not s.covered:
        parts.append("the cited evidence says none of the question's words")
    if s.predicate_asked:
        parts.append(f"the answer says {s.predicate} of its {s.predicate_asked} relation "
                     "words" + _shown(said, q))
    asked = "a name" if s.kind == "name" else f"a {s.kind}"
    if s.candidate:
        agree = f", also in {s.agree} other document{'s' if s.agree > 1 else ''}" \
            if s.agree else ""
        parts.append(f"it holds {asked} as asked ({s.candidate}){agree}")
    else:
        parts.append(f"it holds no {s.kind} as asked")
    return "; ".join(parts)


def _shown(hit: frozenset[str], q: extractive.Question) -> str:
    """`` (Word, Word)``: the question's own spelling of the stems in ``hit``, in its order."""
    shown = ", ".join(w for t, w in q.words.items() if t in hit)
    return f" ({shown})" if shown else ""


def assess(q: extractive.Question, query: str, text: str, cited: Sequence[dict[str, Any]],
           facts: Sequence[dict[str, Any]] = (), passages: Sequence[dict[str, Any]] = (),
           *, retrieved: bool = True, declined: bool | None = None) -> dict[str, str]:
    """``{"label", "reason"}`` of an answer (see :func:`label`)."""
    if not retrieved:
        return {"label": "none", "reason": "nothing was retrieved"}
    if not cited:
        return {"label": "none", "reason": "the answer cites no retrieved fact or passage"}
    s = signals(q, query, text, cited, facts, passages, declined)
    said = q.predicate & extractive.terms(" ".join(answer_sentences(text)))
    return {"label": label(s), "reason": reason(s, q, q.names & evidence_terms(cited), said)}


def extractive_with_confidence(query: str, names: Sequence[str],
                               facts: Sequence[dict[str, Any]],
                               passages: Sequence[dict[str, Any]],
                               q: extractive.Question | None = None,
                               ) -> tuple[str, dict[str, str]]:
    """The no-LLM answer to ``query`` from labelled ``facts`` and ``passages`` (the asked
    entity ``names`` from the analysis) and its :func:`assess` label."""
    q = q or extractive.question(query, names)
    text = answer.extractive_answer(facts, query=query, passages=passages, entity_names=names)
    cited, _ = answer.citations(text, facts, passages)
    return text, assess(q, query, text, cited, facts, passages, declined=False)
