"""The kind of answer a question asks for, and the mentions of that kind in a sentence.

"When" asks for a date, "how many" for a number, "where" for a place, "who" for a person
(or an organisation: "who published ..."), anything else for a name. A sentence's mentions
of a kind are spaCy's named entities of the matching labels (:data:`NER_KINDS`) when the
pipeline is installed (:func:`graph_flows.shared.nlp.load_nlp`, loaded once per
process, never at import), else numbers (date, number) and capitalised words after the first
(person, place, name).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("number", re.compile(r"\bhow (?:many|much|old|long|far|tall|big|large)\b|"
                          r"\bwhat (?:percentage|number)\b", re.I)),
    ("date", re.compile(r"^\s*when\b|\b(?:what|which|in what) (?:year|date|century|decade)\b|"
                        r"\bwhen (?:did|was|were|does|is|do)\b", re.I)),
    ("place", re.compile(r"^\s*where\b|\bwhere (?:did|was|were|is|does|do)\b", re.I)),
    ("person", re.compile(r"^\s*(?:who|whom|whose)\b", re.I)),
)
"""The answer's kind by the question's wh-phrase, first match wins; else ``name``."""
NER_KINDS = {
    "date": {"DATE"}, "number": {"CARDINAL", "QUANTITY", "MONEY", "PERCENT", "DATE"},
    "person": {"PERSON", "ORG"}, "place": {"GPE", "LOC", "FAC"},
}
"""spaCy labels that answer each kind ("who" is often an organisation: "who published");
``name`` takes any entity."""


def asked_kind(query: str) -> str:
    """``number``, ``date``, ``place``, ``person`` or ``name``: what the question asks for."""
    for kind, cue in _KINDS:
        if cue.search(query):
            return kind
    return "name"


NUMERIC = frozenset({"DATE", "TIME", "CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY"})
NOT_NAMED = NUMERIC | {"NORP", "NUMBER"}
"""spaCy labels of no named thing: amounts, dates, and nationalities ("British") that describe
rather than name."""


def entities(sentence: str) -> tuple[tuple[str, str], ...]:
    """``(text, label)`` of the sentence's mentions in reading order: spaCy's named entities,
    or without the pipeline its numbers (``NUMBER``) and capitalised words after the first
    (``NAME``)."""
    from graph_flows.shared.nlp import load_nlp

    nlp = load_nlp()
    if nlp is not None:
        return _parsed(nlp, sentence)
    tokens = _WORD.findall(sentence)
    return tuple((t, "NUMBER" if t[0].isdigit() else "NAME") for i, t in enumerate(tokens)
                 if t[0].isdigit() or (i > 0 and t[0].isupper()))


@lru_cache(maxsize=1024)
def _parsed(nlp: Any, sentence: str) -> tuple[tuple[str, str], ...]:
    """spaCy's named entities of ``sentence``, memoised (a pure function of the pipeline and
    the sentence): an answer's confidence label and its diagram parse the same sentences."""
    return tuple((ent.text, ent.label_) for ent in nlp(sentence).ents)


def fits(text: str, label: str, kind: str) -> bool:
    """Whether a mention of spaCy ``label`` is of ``kind`` (:data:`NER_KINDS`; a date holds
    a digit; ``name`` takes any). Without the pipeline a number is a date or number and a
    capitalised word anything else."""
    if label in ("NAME", "NUMBER"):
        return (label == "NUMBER") == (kind in ("date", "number"))
    if kind not in NER_KINDS:
        return True
    return label in NER_KINDS[kind] and (kind != "date" or any(c.isdigit() for c in text))


def mentions(sentence: str, kind: str) -> tuple[str, ...]:
    """The mentions of ``kind`` in ``sentence``, in reading order (see the module docstring)."""
    return tuple(text for text, label in entities(sentence) if fits(text, label, kind))


def named(sentence: str) -> tuple[str, ...]:
    """The sentence's mentions of named things (no amount, date or nationality): what a
    later sentence can be about."""
    return tuple(text for text, label in entities(sentence) if label not in NOT_NAMED)
