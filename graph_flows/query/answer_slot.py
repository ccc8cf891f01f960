"""Where a question's asked thing stands in an answer sentence, and whether a pronoun holds it.

"Who started the POSTGRES project?" asks for the subject of "started". The sentence "In
1986 he started the POSTGRES project at the University of California, Berkeley." says who
did it only as "he": the sentence does not name the answer, whatever else it names (a
university, a year). :func:`asked_slot` reads from spaCy's dependency parse the verb whose
subject or object the wh-phrase is ("Who started", "Which company acquired", "Whom did X
marry"); :func:`pronoun` finds a personal pronoun in that place of the same verb (by its
stem) in a sentence, as subject, as the agent of a passive ("was started by him") or as
object. A relative pronoun ("Stonebraker, who started ...") names its antecedent and is
not counted. Without the pipeline nothing is read (no slot, no pronoun).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from graph_flows.query import answer_kind, extractive

_WH = frozenset({"who", "whom", "what", "which"})
_PERSONAL = frozenset({"he", "she", "it", "they", "him", "her", "them", "we", "us", "i",
                       "me", "you"})
"""Personal pronouns (a closed English word class): they stand for a thing named elsewhere."""
_COPULA = frozenset({"be", "is", "was", "are", "were", "been", "being", "am"})


class Slot(NamedTuple):
    """The asked place: the stem of its verb and the role the wh-phrase has there."""

    verb: str
    role: str
    """``subject`` or ``object``."""


def asked_slot(query: str, doc: Any = None) -> Slot | None:
    """The verb and role of the question's wh-phrase (see the module docstring); None when
    the wh-phrase is no subject or object of a verb (a copula, "where", "when") or without
    the pipeline (``doc``: the question's parse, when already made)."""
    doc = doc if doc is not None else answer_kind.parse([query])[0]
    if doc is None:
        return None
    for tok in doc:
        if tok.text.lower() not in _WH:
            continue
        phrase = tok.head if tok.dep_ == "det" else tok  # "which company"
        verb = phrase.head
        if answer_kind.pos(verb) not in ("VERB", "AUX") or verb.text.lower() in _COPULA:
            return None
        if phrase.dep_ == "nsubj":
            return Slot(extractive.stem(verb.text), "subject")
        if phrase.dep_ == "dobj":
            return Slot(extractive.stem(verb.text), "object")
        return None
    return None


class Filled(NamedTuple):
    """What stands in the asked place of a sentence: a personal pronoun ("he"), or the
    words of the phrase there up to its head word ("Joseph Hellerstein" in "... was designed
    by Joseph Hellerstein at Berkeley"); "" when nothing does."""

    pronoun: str = ""
    phrase: str = ""


def fill(slot: Slot | None, sentence: str, doc: Any = None) -> Filled:
    """What stands in ``slot`` of the same verb (by stem) in ``sentence`` (``doc``: its
    parse, when already made): as subject, as the agent of a passive ("was started by
    him"), or as object (see the module docstring)."""
    if slot is None:
        return Filled()
    doc = doc if doc is not None else answer_kind.parse([sentence])[0]
    if doc is None:
        return Filled()
    for verb in doc:
        if extractive.stem(verb.text) != slot.verb or answer_kind.pos(verb) not in (
                "VERB", "AUX"):
            continue
        passive = any(c.dep_ == "nsubjpass" for c in verb.children)
        for filler in _fillers(verb, slot.role, passive):
            if filler.tag_ == "PRP" and filler.text.lower() in _PERSONAL:
                return Filled(pronoun=str(filler.text))
            if filler.tag_ not in ("WP", "WDT"):
                # the phrase up to its head word: "Joseph Hellerstein", not "... at Berkeley"
                span = filler.doc[filler.left_edge.i: filler.i + 1]
                return Filled(phrase=str(span.text))
    return Filled()


def pronoun(slot: Slot | None, sentence: str) -> str:
    """The personal pronoun standing in ``slot`` in ``sentence`` ("he" in "In 1986 he
    started the project"), or "" (:func:`fill`)."""
    return fill(slot, sentence).pronoun


def _fillers(verb: Any, role: str, passive: bool) -> list[Any]:
    """The tokens in ``role`` of ``verb``: a subject (the agent's object when passive) or
    an object (the passive subject)."""
    kids = list(verb.children)
    if role == "subject" and not passive:
        return [c for c in kids if c.dep_ == "nsubj"]
    if role == "subject":
        return [g for c in kids if c.dep_ == "agent" for g in c.children if g.dep_ == "pobj"]
    return [c for c in kids if c.dep_ in ("dobj", "nsubjpass")]
