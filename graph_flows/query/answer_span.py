"""Which span of an answer's sentences its diagram draws as the answer (and as what each
other cited sentence states): the mentions a sentence offers, in the order a reader of the
question would take them.

The confidence label reads the answer's candidate from the mentions of the asked kind in
reading order (graph_flows.query.confidence). A diagram draws that candidate as a node, so
it reads the same sentences with what a drawing needs (:func:`sentence_mentions`):

- each cited line of the answer on its own (:func:`said_sentences`): a line the answer
  clipped ("… [P1]") is not run into the next one, whose sentence the clip would hide;
- a possessive is no candidate when the sentence names its thing in apposition ("Kim
  Jong-il's mother, Kim Jong-suk": the one said is Kim Jong-suk; :func:`renamed`), and a
  bare number only to a question asking a number or a date (:func:`drawable`);
- of two mentions of the asked kind in one sentence, the surer first (:func:`surest`: the
  one named by the question's own class noun, "what *church*" -> "the Anglican *Church* of
  Canada"; a person before an organisation to "who"), and, of numbers and dates, the one
  nearer in the sentence's parse to a name an earlier answer sentence introduced
  (:func:`nearest`: "... followed by Thessaloniki, which handled 273,282 TEUs": a number or
  a date is an attribute, said of the thing it stands nearest to in the tree; a name is
  itself one of the things);
- a mention coordinated with others of its kind is the whole list (:func:`coordinated`:
  "in Africa and the South Pacific"): the sentence states them together;
- a number is new to the question when the question does not say it, one digit or more
  (:func:`fresh`: "4 congressional districts").

Why these hold on other text: they read English syntax and entity types (possessive
marker, coordination, the dependency tree, a class noun heading a name), not words of a
corpus.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from graph_flows.query import answer_kind, confidence, extractive
from graph_flows.query.diagram_nodes import clean_mention
from graph_flows.shared.fragments import is_fragment, is_number

Mention = answer_kind.Mention
_CITED_END = re.compile(r"\[[FP]\d+\]\s*$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_LIST = 60  # characters of a coordinated list drawn as one answer (a node label's length)


def said_sentences(text: str) -> list[str]:
    """The sentences the answer states (:func:`confidence.answer_sentences`), each line
    ending in a citation read on its own (module docstring)."""
    units: list[str] = []
    block: list[str] = []
    for line in str(text).splitlines():
        block.append(line)
        if _CITED_END.search(line):
            units.append("\n".join(block))
            block = []
    units.append("\n".join(block))
    return [s for unit in units for s in confidence.answer_sentences(unit)]


def sentence_mentions(said: Sequence[str], docs: Sequence[Any], kind: str,
                      q: extractive.Question, whole: bool = False,
                      ) -> dict[str, tuple[Mention, ...]]:
    """Each sentence's mentions a diagram may draw as its candidate, in the order they are
    taken (module docstring); with ``whole`` no fragment name at all (what another cited
    sentence states is drawn only as a whole name)."""
    return both_mentions(said, docs, kind, q)[1 if whole else 0]


def both_mentions(said: Sequence[str], docs: Sequence[Any], kind: str, q: extractive.Question,
                  ) -> tuple[dict[str, tuple[Mention, ...]], dict[str, tuple[Mention, ...]]]:
    """:func:`sentence_mentions` without and with ``whole``, read in one pass over the
    sentences (both take the same mentions, widened lists and earlier names; ``whole``
    only keeps fewer)."""
    part: dict[str, tuple[Mention, ...]] = {}
    whole: dict[str, tuple[Mention, ...]] = {}
    seen: list[str] = []
    for sentence, doc in zip(said, docs, strict=True):
        found = answer_kind.read(sentence, doc)
        spans = list(doc.ents) if doc is not None else [None] * len(found)
        pairs = [(coordinated(m, s, kind), s) for m, s in zip(found, spans, strict=True)
                 if not renamed(s, kind)]
        kept = drawable([m for m, _ in pairs], kind)
        earlier = seen if kind in answer_kind.COUNTED else []
        for out, keep in ((part, set(kept)), (whole, set(_whole(kept)))):
            order = nearest([(m, s) for m, s in pairs if m in keep], doc, earlier)
            out[sentence] = surest(order, kind, q)
        seen += [m.text for m in found
                 if m.label not in answer_kind.NOT_NAMED and confidence.new(
                     extractive.terms(m.text), q)]
    return part, whole


def drawable(found: Sequence[Mention], kind: str, whole: bool = False,
             ) -> tuple[Mention, ...]:
    """The mentions a diagram draws as a candidate: a bare number only to a question
    asking a number or a date; with ``whole``, no fragment name at all
    (:func:`is_fragment`: a possessive, a bare number)."""
    counted = kind in answer_kind.COUNTED
    kept = tuple(m for m in found if counted or not is_number(m.text))
    return _whole(kept) if whole else kept


def _whole(found: Sequence[Mention]) -> tuple[Mention, ...]:
    """The mentions that are whole names (:func:`is_fragment` of the cleaned mention)."""
    return tuple(m for m in found if not is_fragment(clean_mention(m.text)))


def renamed(span: Any, kind: str) -> bool:
    """Whether ``span`` (a spaCy entity; None without the parse) is a possessive whose
    thing the sentence names in apposition by another mention of the asked kind: "Kim
    Jong-il's mother, Kim Jong-suk": the one said is Kim Jong-suk, Kim Jong-il only whose
    mother she is. A possessive with no such apposition ("G. Stanley Hall's book") still
    names its candidate."""
    if span is None or span.root.dep_ != "poss":
        return False
    doc = span.doc
    return any(c.dep_ == "appos" and any(
        e.start <= c.i < e.end and answer_kind.fits(e.text, e.label_, kind) for e in doc.ents)
        for c in span.root.head.children)


def surest(found: Iterable[Mention], kind: str, q: extractive.Question,
           ) -> tuple[Mention, ...]:
    """The mentions, those surely of the asked kind first, else in the order given: one
    whose words hold the noun the question names its answer by (an English name carries
    its class noun as its head: "X River", "University of Y"), then, to "who", a person
    before an organisation (which answers "who" only where organisations act:
    :func:`answer_kind.unambiguous`)."""
    nouns = {_singular(q.words.get(k, k)) for k in q.kind}

    def doubt(m: Mention) -> tuple[bool, bool]:
        said = {_singular(w) for w in _WORD.findall(m.text)}
        return not (nouns & said), kind == "person" and m.label != "PERSON"
    return tuple(sorted(found, key=doubt))


def _singular(word: str) -> str:
    """A word folded to compare a class noun with a name's head: case, a plural -s
    ("churches" / "Church"); whole words, not stems ("county" is not "country")."""
    w = word.casefold()
    return w[:-2] if w.endswith("es") and w[-3:-2] in "shxz" else w.removesuffix("s")


def nearest(pairs: Sequence[tuple[Mention, Any]], doc: Any, earlier: Sequence[str],
            ) -> list[Mention]:
    """The mentions (with their spaCy spans), those nearer in the parse tree to a name an
    earlier sentence said (and this one says again: the bridge) first; in reading order
    without one or without the parse."""
    if doc is None or not earlier:
        return [m for m, _ in pairs]
    text = doc.text.casefold()
    anchors = [t for name in earlier
               for at in _finds(text, name.casefold())
               if (span := doc.char_span(at, at + len(name), alignment_mode="expand"))
               for t in span]
    if not anchors:
        return [m for m, _ in pairs]
    anchor_ids = {t.i for t in anchors}

    def far(pair: tuple[Mention, Any]) -> int:
        span = pair[1]
        if span is None or any(t.i in anchor_ids for t in span):
            return 1 << 20  # the bridge itself is not what is said of it
        return min(_distance(span.root, a) for a in anchors)
    return [m for m, _ in sorted(pairs, key=far)]


def _finds(text: str, name: str) -> list[int]:
    """Where ``name`` starts in ``text`` (case already folded)."""
    return [m.start() for m in re.finditer(re.escape(name), text)] if name else []


def _distance(a: Any, b: Any) -> int:
    """Edges between two tokens of one parse tree (through their lowest common head)."""
    up: dict[int, int] = {}
    tok, steps = a, 0
    while True:
        up[tok.i] = steps
        if tok.head.i == tok.i:
            break
        tok, steps = tok.head, steps + 1
    tok, steps = b, 0
    while tok.i not in up:
        if tok.head.i == tok.i:
            return 1 << 10  # another sentence of the parse
        tok, steps = tok.head, steps + 1
    return up[tok.i] + steps


def coordinated(mention: Mention, span: Any, kind: str) -> Mention:
    """``mention`` widened to the list it heads when the sentence coordinates it with
    other entities of a kind that fits (``span``: its spaCy entity; "Africa and the South
    Pacific"), within :data:`MAX_LIST` characters; else itself."""
    if span is None or not answer_kind.fits(mention.text, mention.label, kind, mention.prep):
        return mention
    doc = span.doc
    ends = [span.end]
    for tok in span.root.conjuncts:
        if tok.i < span.start:
            return mention  # a later conjunct: the list is the first one's
        other = next((e for e in doc.ents if e.start <= tok.i < e.end), None)
        if other is None or not answer_kind.fits(other.text, other.label_, kind):
            return mention
        ends.append(other.end)
    text = doc[span.start: max(ends)].text
    if max(ends) == span.end or len(text) > MAX_LIST:
        return mention
    return Mention(text, mention.label, mention.prep)


def fresh(q: extractive.Question) -> Callable[[str], bool]:
    """Whether a mention adds to question ``q`` (:func:`confidence.new` on its words), or,
    a number, is a number the question does not say: "4" is new to a question naming no
    4, though one character."""
    said = {w for w in q.words.values() if is_number(w)}

    def is_new(text: str) -> bool:
        if is_number(text):
            return text.strip() not in said
        return confidence.new(extractive.terms(text), q)
    return is_new
