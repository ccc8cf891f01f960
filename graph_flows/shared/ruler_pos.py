"""The attribute ruler's part of speech, worked out only for the tokens a reader asks about.

``en_core_web_sm`` sets ``pos_`` in its ``attribute_ruler``: 179 Matcher patterns over the
tagger's tags, the words and the parser's labels, matched over every token of every parse
(about 7 % of a served question's CPU). The query side reads ``pos_`` of a few tokens ("is
the wh-phrase's head a verb?"). A parse that skips the ruler (:attr:`LazyRuler.skip`) and
asks :meth:`LazyRuler.pos` gets the same part of speech: the ruler's own patterns (those
that set ``POS``), matched by spaCy's own Matcher on the tokens around the one asked about,
the later pattern winning as in the ruler (it sorts its matches by pattern number and sets
them in that order). The ruler's patterns match what the pipes before it wrote (tags,
labels); the pipe after it (the entity recognizer) writes none of that, so they match the
same on a parse without the ruler.

The ruler also changes tags and labels where a pattern says so (whitespace tokens, in this
model): a parse where one of those patterns matches gets the whole ruler (:meth:`settle`),
so every tag and label a reader sees is the full pipeline's. A ruler whose patterns
read entities, set anything besides the part of speech, morphology, lemma, tag and label,
or have a variable length (an ``OP``), or that a pipe other than the entity recognizer
follows, is kept in the parse (:func:`lazy_ruler` is None).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SETS = frozenset({"POS", "MORPH", "LEMMA", "TAG", "DEP"})
"""What a ruler may set for the parse to skip it (no later pipe reads these)."""
_AFTER = frozenset({"ner"})
"""Pipes that may follow a skipped ruler: they read none of :data:`_SETS`."""
_CHANGES = frozenset({"TAG", "DEP"})
"""What the ruler sets that readers see without asking (:meth:`LazyRuler.settle`)."""


@dataclass(frozen=True)
class LazyRuler:
    """A pipeline's attribute ruler, applied where it changes tags or labels and read for
    the part of speech where asked (module docstring). Read-only once built."""

    ruler: Any
    """The pipeline's ``attribute_ruler`` pipe."""
    skip: tuple[str, ...]
    """The pipes a parse leaves out: the ruler."""
    pos_patterns: Any
    """A Matcher of the ruler's patterns that set ``POS``, each keyed by its number."""
    changing: Any
    """A Matcher of the patterns that set a tag or a label (None: there are none)."""
    reach: int
    """The longest pattern's length in tokens."""
    rules: dict[int, tuple[int, int, str]]
    """Matcher key -> (pattern number, index of the token it sets, the part of speech)."""

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
        lo, hi = max(0, token.i - self.reach + 1), min(len(doc), token.i + self.reach)
        best = (-1, "")
        for key, start, end in self.pos_patterns(doc[lo:hi], allow_missing=True):
            number, index, pos = self.rules[key]
            if lo + (end + index if index < 0 else start + index) == token.i:
                best = max(best, (number, pos))
        return best[1]


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
    if not all(_skippable(p) for p in patterns):
        return None
    pos_patterns, changing = Matcher(nlp.vocab), Matcher(nlp.vocab)
    rules: dict[int, tuple[int, int, str]] = {}
    for number, p in enumerate(patterns):
        if "POS" in p["attrs"]:
            key = nlp.vocab.strings.add(f"krag-pos-{number}")
            pos_patterns.add(key, p["patterns"])
            rules[key] = (number, int(p.get("index", 0)), str(p["attrs"]["POS"]))
        if _CHANGES & set(p["attrs"]):
            changing.add(f"krag-change-{number}", p["patterns"])
    reach = max((len(t) for p in patterns for t in p["patterns"]), default=1)
    return LazyRuler(ruler, ("attribute_ruler",), pos_patterns,
                     changing if len(changing) else None, reach, rules)


def _skippable(pattern: dict[str, Any]) -> bool:
    """A pattern a parse may leave to :class:`LazyRuler`: of fixed length, reading no
    entity, setting only :data:`_SETS`."""
    if not set(pattern["attrs"]) <= _SETS:
        return False
    return all("OP" not in spec and not any(k.startswith("ENT_") for k in spec)
               for tokens in pattern["patterns"] for spec in tokens)
