"""How likely an answer is right: a small rule model over evidence that predicts it.

The label is read from a few signals of the answer and what it cites (:class:`Signals`):

- ``names``: how many of the question's names (the things it asks about) the cited facts
  and passages say; evidence that misses most of them is about something else, evidence
  that misses one may be.
- ``candidate``: the kind of answer the question asks for (:mod:`answer_kind`: a date for
  "when", a number or amount for "how many/much/heavy", a person or organisation for "who",
  a place for "where", else a name; read from the entity type, not capitals) and the first
  mention of that kind in the answer that the question does not already contain, the one
  standing where the question's wh-phrase stands first (:mod:`answer_slot`: "designed by
  *Joseph Hellerstein*"). A sentence with a pronoun there ("In 1986 *he* started ...")
  gives none. An answer without one cannot be the answer.
- ``main_said``: the relation words of the question's main clause (:mod:`asked_relation`:
  "spouse" in "Who is the spouse of the director of X?", not the nested "director") that the
  candidate's sentence says. A sentence stating a nested relation answers the way to the
  answer (the bridge), not the question.
- ``agree``: how many other retrieved documents also say the candidate (independent
  evidence agreeing).
- ``reached``: a later answer sentence about a named thing an earlier one introduced (the
  bridge) adds a mention of the asked kind (:func:`chain`): a multi-hop answer that went
  past its bridge. It counts only when the question nests a relation outside its main
  clause (a question without one needs no bridge).
- ``declined``: the answer model said the knowledge base does not hold the answer.

:func:`label` states the rules. Each rests on a reason that holds on other text: "none" and
"low" are necessary conditions of a right answer failing (about the asked things, holding a
thing of the asked kind); "high" asks for evidence about every asked thing and for the
answer to reach a candidate, directly (its sentence states the relation asked and another
document says the same candidate) or through a bridge, a candidate of no doubt: of the
kind asked by its type (a person, not an organisation, reached through a bridge to "who";
a date, not a bare "17", to "when") and not a fuller form of a name the question asks
about. Measured on the shared MuSiQue questions, both halves, and on held-out prose in
HISTORY: confidence.md. The query loop's stop reason was no signal (HISTORY:
confidence.md). The reason is one plain sentence
(:mod:`plain_reason`): what the evidence covers and what it lacks.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.query import (
    answer,
    answer_kind,
    answer_slot,
    asked_relation,
    extractive,
    plain_reason,
)
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
    """The question's names the cited evidence says (of ``names_asked``)."""
    names_asked: int
    predicate_asked: int
    """The question's relation words (:func:`relation_words`)."""
    main_asked: int
    """Those of its main clause (:func:`asked_relation.main_relation`)."""
    main_said: int
    """The relation words of the question's main clause (:mod:`asked_relation`) that the
    sentence holding the candidate says."""
    kind: str
    """The kind of answer asked for (:func:`answer_kind.asked_kind`)."""
    candidate: str
    """The answer's first mention of that kind the question does not hold, or ""."""
    agree: int
    """Other retrieved documents that say the candidate (:func:`agreeing`)."""
    bridge: str = ""
    """A named thing an earlier answer sentence introduced that a later one is about
    (:func:`chain`), or ""."""
    reached: str = ""
    """The mention of the asked kind that later sentence adds past the bridge, or ""."""
    declined: bool = False
    """The answer says the knowledge base does not hold the answer."""
    candidate_label: str = ""
    """The candidate's entity type (spaCy's label: ``PERSON``, ``ORG``, ``DATE`` ...)."""
    reached_label: str = ""
    """The entity type of ``reached``."""
    candidate_repeats: bool = False
    """The candidate repeats a word of one of the question's names (:func:`repeats`)."""
    reached_repeats: bool = False
    """``reached`` repeats a word of one of the question's names."""
    pronoun: str = ""
    """A personal pronoun standing where the answer should be in an answer sentence ("he"
    in "In 1986 he started ..." to "Who started ...?"; :mod:`answer_slot`): that sentence
    gives no candidate."""


def answer_sentences(text: str) -> list[str]:
    """The sentences an answer states, without the extractive header, the "Supporting
    evidence" line and citation labels."""
    lines = [ln.lstrip("- ").strip()
             for ln in text.replace(answer.EXTRACTIVE_HEADER, "").splitlines()]
    body = " ".join(_CITE.sub("", ln) for ln in lines if ln and ln != "Supporting evidence:")
    return extractive.sentences(body) if body else []


Parsed = Mapping[str, tuple[answer_kind.Mention, ...]]
"""Each answer sentence's mentions (:func:`answer_kind.read`), parsed once per answer."""


def parsed(sentences: Sequence[str]) -> dict[str, tuple[answer_kind.Mention, ...]]:
    """:data:`Parsed` of ``sentences``."""
    return {s: answer_kind.read(s) for s in sentences}


def _of_kind(sentence: str, kind: str, ents: Parsed | None) -> list[answer_kind.Mention]:
    found = ents[sentence] if ents is not None else answer_kind.read(sentence)
    return [m for m in found if answer_kind.fits(m.text, m.label, kind, m.prep)]


def _named(sentence: str, ents: Parsed | None) -> list[str]:
    found = ents[sentence] if ents is not None else answer_kind.read(sentence)
    return [m.text for m in found if m.label not in answer_kind.NOT_NAMED]


def candidate(sentences: Sequence[str], kind: str, q: extractive.Question) -> str:
    """The first mention of the asked kind in ``sentences`` that the question does not
    contain ("" when none)."""
    return located(sentences, kind, q)[1].text


_NONE = answer_kind.Mention("", "")


def located(sentences: Sequence[str], kind: str, q: extractive.Question,
            ents: Parsed | None = None,
            filled: Sequence[answer_slot.Filled] = (),
            is_new: Callable[[str], bool] | None = None,
            ) -> tuple[int, answer_kind.Mention]:
    """(index of its sentence, mention) of :func:`candidate`; with ``filled`` (what stands
    in the asked place of each sentence: :func:`answer_slot.fill`) a sentence whose place
    holds a pronoun is skipped, and a mention inside the phrase in that place comes first;
    (-1, an empty mention) when none. ``is_new`` tells a mention that adds to the question
    (default: :func:`new` on its words)."""
    fresh = is_new or (lambda text: new(extractive.terms(text), q))
    for i, sentence in enumerate(sentences):
        fill = filled[i] if i < len(filled) else answer_slot.Filled()
        if fill.pronoun:
            continue
        in_place = fill.phrase
        for found in sorted(_of_kind(sentence, kind, ents),
                            key=lambda m: not (in_place and m.text in in_place)):
            if fresh(found.text):
                return i, found
    return -1, _NONE


def chain(sentences: Sequence[str], kind: str, q: extractive.Question,
          ents: Parsed | None = None) -> tuple[str, str]:
    """(bridge, reached) of :func:`chained`, as text."""
    bridge, reached = chained(sentences, kind, q, ents)
    return bridge, reached.text


def chained(sentences: Sequence[str], kind: str, q: extractive.Question,
            ents: Parsed | None = None,
            filled: Sequence[answer_slot.Filled] = (),
            is_new: Callable[[str], bool] | None = None,
            ) -> tuple[str, answer_kind.Mention]:
    """(bridge, reached): the first answer sentence after the lead that is about a named
    thing an earlier sentence introduced (the bridge: a name the question does not hold)
    and adds a mention of the asked kind the question does not hold, other than the bridge
    ("Madonna" introduced by the lead, then "Madonna is a biography by Andrew Morton" to "Who
    wrote the book named after ...?"); ("", "") when no sentence does. A multi-hop answer
    reaches its answer this way; a sentence that repeats the bridge adds nothing.
    ``is_new`` as in :func:`located`."""
    fresh = is_new or (lambda text: new(extractive.terms(text), q))
    blocked = {i for i, f in enumerate(filled) if f.pronoun}
    seen: list[str] = []
    for i, sentence in enumerate(sentences):
        said = sentence.casefold()
        bridges = [b for b in seen if b.casefold() in said]
        if i and bridges and i not in blocked:
            for found in _of_kind(sentence, kind, ents):
                f = found.text.casefold()
                if fresh(found.text) and not any(
                        f in b.casefold() or b.casefold() in f for b in bridges):
                    return bridges[0], found
        seen += [m for m in _named(sentence, ents) if new(extractive.terms(m), q)]
    return "", _NONE


def repeats(mention: str, q: extractive.Question) -> bool:
    """Whether ``mention`` says a word (of two letters or more) of one of the question's
    names: "Jarvis Wesson" to a question about Barry Wesson, read from "Barry Jarvis Wesson
    (born 1977) ..."; it may be the asked thing under a fuller name (:func:`new` already
    refuses the same name with an initial added)."""
    return any(len(w) > 1 and w in q.names for w in extractive.terms(mention))


def new(words: set[str] | frozenset[str], q: extractive.Question) -> bool:
    """Whether a mention adds a word (of two letters or more) the question does not hold:
    "Edgar F. Codd" is no answer to a question naming Edgar Codd."""
    return any(len(w) > 1 and w not in q.all for w in words)


def agreeing(found: str, cited: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]],
             passages: Sequence[dict[str, Any]]) -> int:
    """How many retrieved documents besides the answer's first cited one say ``found``
    (case-insensitive): the documents of the passages and the source documents of the facts
    (cited or not) whose text holds it."""
    if not found:
        return 0
    needle = found.casefold()
    first = _document(cited[0]) if cited else None
    said = [c for c in cited if "passage_id" in c]
    docs = {_document(p) for p in [*passages, *said]
            if needle in str(p.get("text", "")).casefold()}
    for f in [*facts, *(c for c in cited if "passage_id" not in c)]:
        if needle in str(f.get("fact", "")).casefold():
            docs |= {s.get("uri") or s.get("document_id") for s in f.get("sources") or []}
    return len(docs - {first, None})


def _document(item: dict[str, Any]) -> Any:
    """The document a cited or retrieved item comes from."""
    if "passage_id" in item or "text" in item:
        return item.get("uri") or item.get("document_id")
    sources = item.get("sources") or []
    return (sources[0].get("uri") or sources[0].get("document_id")) if sources else None


def relation_words(q: extractive.Question) -> frozenset[str]:
    """The question's relation words (:attr:`extractive.Question.predicate`) of two letters
    or more (the "s" of "Codd's" is none)."""
    return frozenset(w for w in q.predicate if len(w) > 1)


def signals(q: extractive.Question, query: str, text: str, cited: Sequence[dict[str, Any]],
            facts: Sequence[dict[str, Any]] = (), passages: Sequence[dict[str, Any]] = (),
            declined: bool | None = None) -> Signals:
    """The signals of answer ``text`` to ``query`` citing ``cited`` (facts and passages as
    :func:`graph_flows.query.answer.citations` gives them); ``declined`` None reads it from
    the text (an answer model's words)."""
    return _read(q, query, text, cited, facts, passages, declined)[0]


def _read(q: extractive.Question, query: str, text: str, cited: Sequence[dict[str, Any]],
          facts: Sequence[dict[str, Any]], passages: Sequence[dict[str, Any]],
          declined: bool | None) -> tuple[Signals, plain_reason.Read]:
    """:func:`signals` and what its plain reason is written from."""
    said = answer_sentences(text)
    qdoc, *docs = answer_kind.parse([query, *said])  # each parsed once
    ents = {s: answer_kind.read(s, d) for s, d in zip(said, docs, strict=True)}
    found = evidence_terms(cited)
    kind = answer_kind.asked_kind(query)
    slot = answer_slot.asked_slot(query, qdoc)
    filled = [answer_slot.fill(slot, s, d) for s, d in zip(said, docs, strict=True)]
    at, cand = located(said, kind, q, ents, filled)
    main = asked_relation.main_relation(query, relation_words(q), qdoc)
    main_said = main & extractive.terms(said[at]) if cand.text else frozenset()
    bridge, reached = chained(said, kind, q, ents, filled)
    before = [f.pronoun for i, f in enumerate(filled) if f.pronoun and (at < 0 or i < at)]
    signals = Signals(
        covered=len(q.all & found), names=len(q.names & found), names_asked=len(q.names),
        predicate_asked=len(relation_words(q)), main_asked=len(main),
        main_said=len(main_said), kind=kind, candidate=cand.text,
        agree=agreeing(cand.text, cited, facts, passages), bridge=bridge,
        reached=reached.text,
        declined=bool(_DECLINED.search(text)) if declined is None else declined,
        candidate_label=cand.label, reached_label=reached.label,
        candidate_repeats=repeats(cand.text, q), reached_repeats=repeats(reached.text, q),
        pronoun=before[0] if before else "")
    return signals, plain_reason.Read(query, q, q.all & found, main, main_said, cited)


def label(s: Signals) -> str:
    """The label of ``s``, the first rule that holds:

    "none": the model declined, or the evidence names none of the question's names (none
    of its words, for a question without names);
    "low": no candidate of the asked kind, or the evidence names fewer than half of the
    question's names;
    "high": the evidence names all of the question's names, and the answer reaches a
    candidate either directly (the candidate's sentence says the relation of the question's
    main clause and another document says the same candidate) or, when the question nests a
    relation outside its main clause, through a bridge (a later sentence about a thing an
    earlier one introduced adds a candidate: :func:`chain`; to a question without a nested
    relation a later sentence only adds more); the mention reached must be unambiguous
    (:func:`answer_kind.unambiguous`: a person to "who" through a bridge, a date with a
    year or month to "when") and must not repeat a word of the question's names (:func:`repeats`);
    "medium": the rest."""
    if s.declined or (s.names_asked and not s.names) or not s.covered:
        return "none"
    if not s.candidate or 2 * s.names < s.names_asked:
        return "low"
    nested = s.main_asked < s.predicate_asked  # a relation on the way: a bridge is needed
    direct = s.main_said and s.agree and not s.candidate_repeats and answer_kind.unambiguous(
        s.candidate, s.candidate_label, s.kind, stated=True)
    bridged = s.reached and nested and not s.reached_repeats and answer_kind.unambiguous(
        s.reached, s.reached_label, s.kind)
    if s.names == s.names_asked and (direct or bridged):
        return "high"
    return "medium"


def reason(s: Signals, read: plain_reason.Read) -> str:
    """One plain sentence saying what the evidence covers and lacks
    (:func:`plain_reason.sentence`)."""
    return plain_reason.sentence(s, read)


def assess(q: extractive.Question, query: str, text: str, cited: Sequence[dict[str, Any]],
           facts: Sequence[dict[str, Any]] = (), passages: Sequence[dict[str, Any]] = (),
           *, retrieved: bool = True, declined: bool | None = None) -> dict[str, str]:
    """``{"label", "reason"}`` of an answer (see :func:`label`)."""
    if not retrieved:
        return {"label": "none", "reason": plain_reason.NOTHING}
    if not cited:
        return {"label": "none", "reason": plain_reason.UNCITED}
    s, read = _read(q, query, text, cited, facts, passages, declined)
    return {"label": label(s), "reason": reason(s, read)}


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
