"""The attribute ruler's part of speech, worked out only for the tokens a reader asks about.

``en_core_web_sm`` sets ``pos_`` in its ``attribute_ruler``: 179 Matcher patterns over the
tagger's tags, the words and the parser's labels, matched over every token of every parse
(about 7 % of a served question's CPU). The query side reads ``pos_`` of a few tokens ("is
the wh-phrase's head a verb?"). A parse that skips the ruler (:attr:`LazyRuler.skip`) and
asks :meth:`LazyRuler.pos` gets the same part of speech: the ruler's own patterns that set
``POS``, checked on the tokens around the one asked about, the later pattern winning as in
the ruler (it sorts its matches by pattern number and sets them in that order). A pattern is
a fixed run of token conditions; each condition is the Matcher's: an attribute equal to a
value, in (``IN``) or not in (``NOT_IN``) a list, or searched by a ``REGEX``. The ruler's
patterns match what the pipes before it wrote (tags, labels); the pipe after it (the entity
recognizer) writes none of that, so they match the same on a parse without the ruler.

The ruler also changes tags and labels where a pattern says so (whitespace tokens, in this
model): a parse where one of those patterns matches (spaCy's Matcher) gets the whole ruler
(:meth:`LazyRuler.settle`), so every tag and label a reader sees is the full pipeline's. A
ruler with a pattern of variable length (``OP``), another condition or attribute, one that
sets anything besides the part of speech, morphology, lemma, tag and label, or a pipe other
than the entity recognizer after it, is kept in the parse (:func:`lazy_ruler` is None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_SETS = frozenset({"POS", "MORPH", "LEMMA", "TAG", "DEP"})
"""What a ruler may set for the parse to skip it (no later pipe reads these)."""
_AFTER = frozenset({"ner"})
"""Pipes that may follow a skipped ruler: they read none of :data:`_SETS`."""
_CHANGES = frozenset({"TAG", "DEP"})
"""What the ruler sets that readers see without asking (:meth:`LazyRuler.settle`)."""
_ATTRS = {"ORTH": "orth_", "TEXT": "text", "LOWER": "lower_", "NORM": "norm_", "TAG": "tag_",
          "DEP": "dep_", "IS_SPACE": "is_space", "IS_PUNCT": "is_punct",
          "IS_ALPHA": "is_alpha", "IS_DIGIT": "is_digit", "LIKE_NUM": "like_num"}
"""The Matcher's token attributes a condition may read, as :class:`spacy.tokens.Token`
attributes (the ruler runs before the part of speech exists, so none reads it)."""

Spec = tuple[tuple[str, str, Any], ...]
"""A token's conditions: (Token attribute, ``=``/``IN``/``NOT_IN``/``REGEX``, value)."""
Rule = tuple[int, str, tuple[Spec, ...]]
"""A pattern that sets ``POS``: its target token's offset, the part of speech, the run."""


@dataclass(frozen=True)
class LazyRuler:
    """A pipeline's attribute ruler, applied where it changes tags or labels and read for
    the part of speech where asked (module docstring). Read-only once built."""

    ruler: Any
    """The pipeline's ``attribute_ruler`` pipe."""
    skip: tuple[str, ...]
    """The pipes a parse leaves out: the ruler."""
    by_tag: dict[str | None, tuple[Rule, ...]]
    """A tag -> the patterns that set ``POS`` and may match a token of that tag, the latest
    first; None: those for a tag no pattern names (a pattern whose token of that tag cannot
    match sets no part of speech there)."""
    changing: Any
    """A Matcher of the patterns that set a tag or a label (None: there are none)."""

    def settle(self, doc: Any) -> Any:
        """``doc`` (parsed without the ruler) with the whole ruler applied when one of its
        patterns changes a tag or a label there; else as it is."""
        if self.changing is not None and self.changing(doc, allow_missing=True):
            self.ruler(doc)
        return doc

    def pos(self, token: Any) -> str:
        """The part of speech the ruler gives ``token`` ("" when none), read from the token
        when its parse went through the whole ruler."""
        doc = token.doc
        if doc.has_annotation("POS"):
            return str(token.pos_)
        for offset, pos, run in self.by_tag.get(token.tag_, self.by_tag[None]):
            start = token.i - offset
            if start >= 0 and start + len(run) <= len(doc) and all(
                    _holds(spec, doc[start + j]) for j, spec in enumerate(run)):
                return pos
        return ""


def _holds(spec: Spec, token: Any) -> bool:
    """Whether ``token`` meets every condition of ``spec`` (the Matcher's meaning)."""
    for attr, op, value in spec:
        got = getattr(token, attr)
        if op == "=":
            ok = got == value
        elif op == "IN":
            ok = got in value
        elif op == "NOT_IN":
            ok = got not in value
        else:
            ok = value.search(got) is not None
        if not ok:
            return False
    return True


def lazy_ruler(nlp: Any) -> LazyRuler | None:
    """The :class:`LazyRuler` of ``nlp``'s ``attribute_ruler``, or None when the pipeline has
    none or one a parse cannot skip (module docstring)."""
    names = list(nlp.pipe_names)
    if "attribute_ruler" not in names or not all(
            nlp.get_pipe_meta(n).factory in _AFTER
            for n in names[names.index("attribute_ruler") + 1:]):
        return None
    from spacy.matcher import Matcher

    ruler = nlp.get_pipe("attribute_ruler")
    patterns = ruler.patterns
    if not all(set(p["attrs"]) <= _SETS for p in patterns):
        return None
    try:
        rules = [(number, _rules(p)) for number, p in enumerate(patterns) if "POS" in p["attrs"]]
    except ValueError:  # a condition this module does not read
        return None
    rules.reverse()  # the latest pattern wins
    tags: set[str | None] = {None, *(t for _, alts in rules for r in alts for t in _tags(r))}
    by_tag = {tag: tuple(r for _, alts in rules for r in alts if _may_match(r, tag))
              for tag in tags}
    changing = Matcher(nlp.vocab)
    for number, p in enumerate(patterns):
        if _CHANGES & set(p["attrs"]):
            changing.add(f"krag-change-{number}", p["patterns"])
    return LazyRuler(ruler, ("attribute_ruler",), by_tag, changing if len(changing) else None)


def _rules(pattern: dict[str, Any]) -> list[Rule]:
    """Each alternative of ``pattern`` as a :data:`Rule`; ValueError when one cannot be."""
    out: list[Rule] = []
    for tokens in pattern["patterns"]:
        index = int(pattern.get("index", 0))
        offset = index + len(tokens) if index < 0 else index
        if not 0 <= offset < len(tokens):
            raise ValueError("index outside the pattern")
        out.append((offset, str(pattern["attrs"]["POS"]), tuple(_spec(t) for t in tokens)))
    return out


def _spec(token: dict[str, Any]) -> Spec:
    """One token's conditions (:data:`Spec`); ValueError for an operator, an attribute or
    a condition outside :data:`_ATTRS` and the four the Matcher reads as described."""
    out = []
    for key, value in token.items():
        if key not in _ATTRS:
            raise ValueError(f"attribute {key}")
        attr = _ATTRS[key]
        flag = attr.startswith(("is_", "like_"))
        if not isinstance(value, dict):
            if not isinstance(value, bool if flag else str):
                raise ValueError(f"value {value!r}")
            out.append((attr, "=", value))
            continue
        if flag or len(value) != 1 or next(iter(value)) not in ("IN", "NOT_IN", "REGEX"):
            raise ValueError(f"condition {value}")
        op, arg = next(iter(value.items()))
        if op == "REGEX" and isinstance(arg, str):
            out.append((attr, op, re.compile(arg)))
        elif op != "REGEX" and all(isinstance(v, str) for v in arg):
            out.append((attr, op, frozenset(arg)))
        else:
            raise ValueError(f"condition {value}")
    return tuple(out)


def _tags(rule: Rule) -> set[str]:
    """The tags the rule's target token names (equal or ``IN``)."""
    offset, _, run = rule
    return {v for attr, op, val in run[offset] if attr == "tag_"
            for v in ([val] if op == "=" else val if op == "IN" else [])}


def _may_match(rule: Rule, tag: str | None) -> bool:
    """Whether the target token of ``rule`` may have ``tag`` (None: a tag no rule names,
    which only rules without an equal or ``IN`` condition on the tag may match)."""
    offset, _, run = rule
    for attr, op, value in run[offset]:
        if attr == "tag_" and op == "=" and value != tag:
            return False
        if attr == "tag_" and op == "IN" and tag not in value:
            return False
    return True
