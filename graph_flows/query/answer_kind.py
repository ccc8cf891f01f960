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
    "person": {"PERSON", "ORG", "NORP"}, "place": {"GPE", "LOC", "FAC"},
}
"""spaCy labels that answer each kind ("who" is often an organisation: "who published");
``name`` takes any entity."""


def asked_kind(query: str) -> str:
    """``number``, ``date``, ``place``, ``person`` or ``name``: what the question asks for."""
    for kind, cue in _KINDS:
        if cue.search(query):
            return kind
    return "name"


def mentions(sentence: str, kind: str) -> tuple[str, ...]:
    """The mentions of ``kind`` in ``sentence``, in reading order (see the module docstring)."""
    from graph_flows.shared.nlp import load_nlp

    nlp = load_nlp()
    if nlp is not None:
        out = []
        for ent in nlp(sentence).ents:
            fits = ent.label_ in NER_KINDS[kind] if kind in NER_KINDS else True
            if kind == "date" and not any(c.isdigit() for c in ent.text):
                fits = False
            if fits:
                out.append(ent.text)
        return tuple(out)
    tokens = _WORD.findall(sentence)
    numeric = kind in ("date", "number")
    return tuple(t for i, t in enumerate(tokens)
                 if (t[0].isdigit() if numeric else (i > 0 and t[0].isupper())))
