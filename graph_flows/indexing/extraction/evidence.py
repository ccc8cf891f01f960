"""Sentence-level evidence: a fact for every pair of entities one parsed sentence names.

The fact's text is the sentence. Its predicate is the verb phrase that connects the two
mentions in spaCy's dependency parse (their lowest common ancestor, when it is a verb, with
its auxiliaries, negation, particle and the preposition leading to the object: "was founded
by", "did not join", "was born in"); the mention on the verb's subject side becomes the
subject. Without a connecting verb (a list, an apposition, "X of Y") the predicate is the
generic ``relates_to``, subject and object in reading order.

Confidence says how likely such a pair is to be a real relation, never more than a pattern
(0.7-0.8) or an LLM (usually 0.8-0.9) claims: :data:`PAIR_CONFIDENCE` (0.6, kept at the
default threshold) unless the two ends are of kinds that rarely relate by merely sharing a
sentence (:data:`UNLIKELY_PAIRS`), then :data:`COOCCURRENCE_CONFIDENCE` (0.45, kept only when
``min_confidence`` is lowered). Measured on Re-DocRED dev (200 documents), kinds separate
true from chance pairs better than whether a verb connects them. Coreference, the simplest
rules: a sentence-initial He/She/It/They stands for the previous sentence's subject
(:func:`sentence_subject`), and the text's first subject (its topic) is paired, without a
predicate, with the mentions of later sentences that do not name it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from graph_flows.indexing.extraction.rule_mentions import Mention

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

PAIR_CONFIDENCE = 0.6
COOCCURRENCE_CONFIDENCE = 0.45
TOPIC_CONFIDENCE = 0.6
UNLIKELY_PAIRS = frozenset({
    ("date", "date"), ("date", "location"), ("date", "organization"), ("date", "technology"),
    ("concept", "concept"), ("organization", "organization"), ("person", "person"),
    *(tuple(sorted((kind, "phrase"))) for kind in (
        "concept", "date", "location", "organization", "phrase", "technology")),
})
"""Kinds of ends (sorted) that rarely stand in a relation when they merely share a sentence:
two dates, a date and a place or an organisation, two people, two organisations, two
concepts, an untyped capitalised phrase and anything but a person (a title of a work is
often such a phrase, and relates to its author or performer)."""
GENERIC_PREDICATE = "relates_to"
PRONOUNS = frozenset({"he", "she", "it", "they"})
_SUBJECTS = frozenset({"nsubj", "nsubjpass"})
_VERB_PARTS = frozenset({"aux", "auxpass", "neg", "prt"})


@dataclass(frozen=True)
class Evidence:
    """A pair of mentions of one sentence, oriented, with its predicate and confidence."""

    subject: Mention
    object: Mention
    predicate: str
    confidence: float


def mention_root(doc: Doc, mention: Mention) -> Token | None:
    """The syntactic head token of a mention in its sentence's parse."""
    span = doc.char_span(mention.start, mention.end, alignment_mode="expand")
    return span.root if span is not None and len(span) else None


def sentence_evidence(doc: Doc, mentions: list[Mention]) -> Iterator[Evidence]:
    """Evidence for every pair of distinct mentions of one parsed sentence, reading order."""
    roots = [mention_root(doc, m) for m in mentions]
    for i, left in enumerate(mentions):
        for j in range(i + 1, len(mentions)):
            right = mentions[j]
            if left.name.casefold() == right.name.casefold():
                continue
            yield _evidence(left, right, roots[i], roots[j])


def _evidence(left: Mention, right: Mention, lroot: Token | None,
              rroot: Token | None) -> Evidence:
    """Orient a pair, name its connecting verb phrase if the parse has one, and rate it by
    the kinds of its two ends (:data:`UNLIKELY_PAIRS`)."""
    kinds = tuple(sorted((_kind(left, lroot), _kind(right, rroot))))
    confidence = COOCCURRENCE_CONFIDENCE if kinds in UNLIKELY_PAIRS else PAIR_CONFIDENCE
    if lroot is None or rroot is None or lroot == rroot:
        return Evidence(left, right, GENERIC_PREDICATE, confidence)
    lpath, rpath = _path_up(lroot), _path_up(rroot)
    common = next((t for t in lpath if t in rpath), None)
    if common is None or common.pos_ not in ("VERB", "AUX") or common in (lroot, rroot):
        return Evidence(left, right, GENERIC_PREDICATE, confidence)
    lside = lpath[lpath.index(common) - 1]
    rside = rpath[rpath.index(common) - 1]
    if rside.dep_ in _SUBJECTS and lside.dep_ not in _SUBJECTS:
        left, right, rside = right, left, lside
    return Evidence(left, right, _verb_phrase(common, rside), confidence)


def _kind(mention: Mention, root: Token | None) -> str:
    """The mention's entity type; "date" for a date; "phrase" for a capitalised phrase that
    NER did not take for an entity and no cue word typed ("President", "Fresh")."""
    if root is not None and root.ent_type_ in ("DATE", "TIME"):
        return "date"
    if mention.type == "concept" and (root is None or not root.ent_type_):
        return "phrase"
    return mention.type


def _path_up(token: Token) -> list[Token]:
    """The token and its ancestors up to the sentence root."""
    path = [token]
    while path[-1].head != path[-1]:
        path.append(path[-1].head)
    return path


def _verb_phrase(verb: Token, object_side: Token) -> str:
    """The verb with its auxiliaries, negation and particle, and the preposition (or
    agent "by") through which the object hangs on it."""
    words = [t for t in verb.children if t.dep_ in _VERB_PARTS] + [verb]
    if object_side.dep_ in ("prep", "agent", "dative"):
        words.append(object_side)
    words.sort(key=lambda t: t.i)
    return " ".join(t.text for t in words).lower()


def sentence_subject(doc: Doc, mentions: list[Mention]) -> Mention | None:
    """The mention that is the grammatical subject of the sentence's main verb, if any."""
    for mention in mentions:
        root = mention_root(doc, mention)
        if root is not None and root.dep_ in _SUBJECTS and root.head.dep_ == "ROOT":
            return mention
    return None


def leading_pronoun(doc: Doc) -> Token | None:
    """A sentence-initial He/She/It/They that is the subject of its clause."""
    if len(doc) and doc[0].lower_ in PRONOUNS and doc[0].dep_ in _SUBJECTS:
        return doc[0]
    return None


def evidence_with_coreference(
    doc: Doc, mentions: list[Mention], previous: Mention | None, topic: Mention | None = None
) -> tuple[list[Evidence], Mention | None]:
    """Evidence of one sentence, a leading pronoun standing for ``previous`` (the last
    sentence's subject), and the subject this sentence hands on to the next one. With a
    ``topic`` (the text's first subject) absent from the sentence, each mention is also
    paired with the topic, without a predicate."""
    pronoun = leading_pronoun(doc)
    if pronoun is not None and previous is not None and all(m.start > 0 for m in mentions):
        end = pronoun.idx + len(pronoun.text)
        mentions = [Mention(previous.name, pronoun.idx, end, previous.type,
                            previous.confidence), *mentions]
    found = list(sentence_evidence(doc, mentions))
    if topic is not None and all(m.name.casefold() != topic.name.casefold() for m in mentions):
        found.extend(_topic_evidence(doc, topic, mentions))
    subject = sentence_subject(doc, mentions)
    if subject is None and pronoun is not None:
        subject = previous
    return found, subject


def _topic_evidence(doc: Doc, topic: Mention, mentions: list[Mention]) -> Iterator[Evidence]:
    """The topic paired with every mention of a sentence that does not name it."""
    for mention in mentions:
        root = mention_root(doc, mention)
        kinds = tuple(sorted((topic.type, _kind(mention, root))))
        confidence = COOCCURRENCE_CONFIDENCE if kinds in UNLIKELY_PAIRS else TOPIC_CONFIDENCE
        anchor = Mention(topic.name, mention.start, mention.end, topic.type, topic.confidence)
        yield Evidence(anchor, mention, GENERIC_PREDICATE, confidence)
