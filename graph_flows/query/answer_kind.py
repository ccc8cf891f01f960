"""The kind of answer a question asks for, and the mentions of that kind in a sentence.

"When" asks for a date; "what time" (of day) for a time; "how many", "how much", "how
heavy" (any "how" + measure), "what amount of" for a number or amount; "where" for a
place; "who" for a person (or an organisation: "who published ..."); anything else for a
name. A mention's kind comes from
its entity type — spaCy's named-entity label (:data:`NER_KINDS`) when the pipeline is installed
(:func:`graph_flows.shared.nlp.load_nlp`, loaded once per process, never at import) — not
from its capitals: a year is a date, not a weight; an organisation is not a person, and
answers "who" only where it can act (not as the place of a locative preposition: "at the
University of California"). Without the pipeline: numbers (date, number) and capitalised
words after the first (person, place, name).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("number", re.compile(r"\bhow (?:many|much|old|long|far|tall|big|large|heavy|high|wide|"
                          r"deep|fast|often)\b|"
                          r"\bwhat (?:percentage|number|amount|quantity)\b", re.I)),
    ("time", re.compile(r"\b(?:what|which) (?:time|hour)\b(?!\s+of\s+(?:the\s+)?(?:year|month|"
                        r"season|century|decade|life))", re.I)),
    ("date", re.compile(r"^\s*when\b|\b(?:what|which|in what) (?:year|date|century|decade)\b|"
                        r"\bwhen (?:did|was|were|does|is|do)\b", re.I)),
    ("place", re.compile(r"^\s*where\b|\bwhere (?:did|was|were|is|does|do)\b", re.I)),
    ("person", re.compile(r"^\s*(?:who|whom|whose)\b", re.I)),
)
"""The answer's kind by the question's wh-phrase, first match wins; else ``name``."""
NER_KINDS = {
    "date": {"DATE"}, "time": {"TIME"},
    "number": {"CARDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE", "TIME"},
    "person": {"PERSON", "ORG"}, "place": {"GPE", "LOC", "FAC"},
}
"""spaCy labels that answer each kind ("who" is often an organisation: "who published");
``name`` takes any entity. A date or time answers "how many/long/old" only as a duration
(:func:`fits`)."""
TYPE_NOUNS = {
    "PERSON": "a person", "ORG": "an organisation", "GPE": "a place", "LOC": "a place",
    "FAC": "a place", "DATE": "a date", "TIME": "a time", "CARDINAL": "a number",
    "QUANTITY": "an amount", "MONEY": "a sum of money", "PERCENT": "a percentage",
}
"""What a mention of each spaCy label is, in words a person reads."""
LOCATIVE = frozenset({"at", "in", "near", "within", "inside", "outside", "across",
                      "throughout", "around"})
"""English prepositions of place: an organisation after one is where something happened,
not who did it ("he started the project at the University of California")."""
_DURATION = re.compile(r"\b(?:second|minute|hour|day|week|month|year|decade|centur)", re.I)
_YEAR = re.compile(r"^\s*(?:in\s+)?[12]\d{3}\s*$")
_BARE = re.compile(r"^\s*\d{1,2}\s*$")


class Mention(NamedTuple):
    """A sentence's mention: its text, entity label, and the preposition it is the object
    of ("" when none)."""

    text: str
    label: str
    prep: str = ""


COUNTED = frozenset({"date", "time", "number"})
"""Kinds a number answers (a bare number is a candidate only to these)."""


def asked_kind(query: str) -> str:
    """``number``, ``time``, ``date``, ``place``, ``person`` or ``name``: what the question
    asks for ("what time" is a time of day, spaCy's ``TIME``; "what time of year" is not)."""
    for kind, cue in _KINDS:
        if cue.search(query):
            return kind
    return "name"


NUMERIC = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
NOT_NAMED = NUMERIC | {"NORP", "NUMBER"}
"""spaCy labels of no named thing: amounts, dates, and nationalities ("British") that describe
rather than name."""


_PARSED: ContextVar[dict[str, Any] | None] = ContextVar("krag_parsed", default=None)
"""The parses of the request in progress (:func:`parsed_once`), by text; None outside one."""


@contextmanager
def parsed_once() -> Iterator[None]:
    """Within it each text is parsed once: one answer's confidence label and its diagram
    read the same question and sentences. Per request (a context variable), never shared
    between requests; spaCy's parse of a text does not depend on the batch it is in
    (checked on 1,603 MuSiQue questions and sentences in batches of 1-17), so reusing one
    changes nothing."""
    token = _PARSED.set({})
    try:
        yield
    finally:
        _PARSED.reset(token)


def parse(texts: Sequence[str]) -> list[Any]:
    """spaCy's parse of each text (one batch), or Nones without the pipeline: parsed once,
    read by :func:`read`, :func:`graph_flows.query.answer_slot.fill` and
    :func:`graph_flows.query.asked_relation.main_relation`; inside :func:`parsed_once` a
    text parsed before in the request is not parsed again."""
    from graph_flows.shared.nlp import load_nlp

    nlp = load_nlp()
    if nlp is None:
        return [None] * len(texts)
    memo = _PARSED.get()
    if memo is None:
        return _pipe(nlp, texts)
    todo = list(dict.fromkeys(t for t in texts if t not in memo))
    memo.update(zip(todo, _pipe(nlp, todo), strict=True))
    return [memo[t] for t in texts]


def _pipe(nlp: Any, texts: Sequence[str]) -> list[Any]:
    """The parses of ``texts`` in one batch, without the attribute ruler where it may be
    skipped (its part of speech is read by :func:`pos`; every tag, label and entity is the
    full pipeline's: :mod:`graph_flows.shared.ruler_pos`)."""
    from graph_flows.shared.nlp import lazy_ruler, use_pipeline_ops

    if not texts:
        return []
    use_pipeline_ops()
    lazy = lazy_ruler()
    if lazy is None:
        return list(nlp.pipe(texts))
    return [lazy.settle(doc) for doc in nlp.pipe(texts, disable=lazy.skip)]


def pos(token: Any) -> str:
    """The universal part of speech of ``token`` (of a :func:`parse`): the full pipeline's
    ``pos_``, worked out from the attribute ruler's patterns when the parse skipped it."""
    from graph_flows.shared.nlp import lazy_ruler

    lazy = lazy_ruler()
    return lazy.pos(token) if lazy is not None else str(token.pos_)


def read(sentence: str, doc: Any = None) -> tuple[Mention, ...]:
    """The sentence's mentions in reading order: spaCy's named entities with the preposition
    governing each (from ``doc``, its parse, when given), or without the pipeline its
    numbers (``NUMBER``) and capitalised words after the first (``NAME``)."""
    doc = doc if doc is not None else parse([sentence])[0]
    if doc is not None:
        return tuple(Mention(ent.text, ent.label_, _prep(ent.root)) for ent in doc.ents)
    tokens = _WORD.findall(sentence)
    return tuple(Mention(t, "NUMBER" if t[0].isdigit() else "NAME")
                 for i, t in enumerate(tokens) if t[0].isdigit() or (i > 0 and t[0].isupper()))


def _prep(root: Any) -> str:
    """The preposition whose object ``root`` (a spaCy token) is, through appositions and
    conjunctions ("at Berkeley and MIT"), or ""."""
    tok = root
    while tok.dep_ in ("appos", "conj", "compound") and tok.head is not tok:
        tok = tok.head
    head = tok.head
    return head.text.lower() if tok.dep_ == "pobj" and head.dep_ == "prep" else ""


def entities(sentence: str) -> tuple[tuple[str, str], ...]:
    """``(text, label)`` of the sentence's mentions (:func:`read`)."""
    return tuple((m.text, m.label) for m in read(sentence))


def fits(text: str, label: str, kind: str, prep: str = "") -> bool:
    """Whether a mention of spaCy ``label`` (object of preposition ``prep``) is of ``kind``
    (:data:`NER_KINDS`; a date holds a digit; a date or time answers a number only as a
    duration, "12 years", never a year; an organisation answers "who" unless it is the
    object of a preposition of place; ``name`` takes any). Without the pipeline a number
    is a date or number and a capitalised word anything else."""
    if label in ("NAME", "NUMBER"):
        return (label == "NUMBER") == (kind in COUNTED)
    if kind not in NER_KINDS:
        return True
    if label not in NER_KINDS[kind]:
        return False
    if kind == "date":
        return any(c.isdigit() for c in text)
    if kind == "number" and label in ("DATE", "TIME"):
        return bool(_DURATION.search(text)) and not _YEAR.match(text)
    return not (kind == "person" and label == "ORG" and prep in LOCATIVE)


def unambiguous(text: str, label: str, kind: str, stated: bool = False) -> bool:
    """Whether a mention of ``kind`` (:func:`fits`) is one without doubt, as a ``high``
    label needs. A date is a year, a month or more, not a bare one- or two-digit number
    (the "17" of "State Route 17"). "Who" asks for a person; an organisation answers it
    where organisations act ("who acquired ..."): only when its sentence states the asked
    relation (``stated``), which says what kind of doer answers. Reached otherwise (through
    a bridge) its type alone must say it, and spaCy's ``ORG`` also holds capitalised spans
    it cannot place ("the Hot Country Songs")."""
    if kind == "person" and label == "ORG" and not stated:
        return False
    return not (kind == "date" and _BARE.match(text))


def mentions(sentence: str, kind: str) -> tuple[str, ...]:
    """The mentions of ``kind`` in ``sentence``, in reading order (see the module docstring)."""
    return tuple(m.text for m in read(sentence) if fits(m.text, m.label, kind, m.prep))


def named(sentence: str) -> tuple[str, ...]:
    """The sentence's mentions of named things (no amount, date or nationality): what a
    later sentence can be about."""
    return tuple(text for text, label in entities(sentence) if label not in NOT_NAMED)
