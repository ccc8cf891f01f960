"""Rule-based extraction (no LLM): deterministic, explainable, and deliberately modest.

With spaCy and its English model installed (:mod:`ner`), named entities come from its NER
and every sentence also yields evidence facts (:mod:`evidence`); without them the rules below
work alone (one notice in the log).

Entities:

* Markdown headings are document structure, not entities: they are left out of the
  sentences and name nothing (the chunk's heading path stays in the stored chunk text and
  the document's title, as context for retrieval and answers).
* spaCy named entities typed by :data:`ner.LABEL_TYPES`, confidence 0.75 (:mod:`ner`).
* Where NER found nothing: capitalised word runs ("University of Cambridge", lowercase
  connectors such as "of"/"van" allowed inside), acronyms ("NASA") and technical tokens
  (CamelCase "PostgreSQL", snake_case "pg_trgm", "GPT-4", "Node.js", "C++"), a short version
  number after them included ("PostgreSQL 18"). A stopword never stands alone and is trimmed
  from the ends of a run; a single capitalised word at the start of a sentence is kept only if
  the text also capitalises it mid-sentence. Runs of more than five words are ignored.
  Type guesses from cue words (:mod:`rule_mentions`, :mod:`rule_lexicon`): title ("Dr.") ->
  person, organisation word ("Inc", "University") -> organization, "born/based in X" or a
  place word ("River") -> location, technical token -> technology, else concept.
* Every mention is cut down to its name (:mod:`name_bounds`: lower-case function words, a
  naming participle and half quotations off its ends); what is still a fragment is dropped.
* Description: the first sentence that mentions the entity, trimmed to 300 characters.
Relations:

* A verb phrase alone between two neighbouring mentions (:data:`rule_lexicon.VERB_PATTERNS`:
  "uses", "is part of", "contains", "is defined as", "founded", passive "was founded by" with
  subject and object swapped ...) -> that type, confidence 0.7-0.8; not after a comma, nor
  with a bare number as subject; for uses/contains/part_of/defines a lowercase noun phrase
  after the verb is accepted as the object ("The Analytical Engine uses punched cards" ->
  concept "punched cards", 0.65; :mod:`rule_objects`).
* One-at-a-time properties first (:data:`rule_lexicon.ATTRIBUTE_PATTERNS`): "headquartered
  in", "acquired by", "led by", "maintained by", "released under" -> relates_to with that
  ``attribute``, so a newer statement supersedes an older one (storage.supersede).
* Date: when the sentence names exactly one year ("in 1996") a verb relation gets it as
  ``valid_at``; several different years -> no date.
* With spaCy, other pairs of a sentence's mentions and document-level links -> evidence facts
  (:mod:`evidence` lists the rules and confidences); without it, neighbouring mentions ->
  ``mentions`` at 0.3, at most three per sentence.
* Fact: the sentence (a 300-character window around the two mentions when longer).

Limits: no negation in the patterns, English only. MAX_ENTITIES and MAX_RELATIONS apply
(relations by falling confidence; relation endpoints kept first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from graph_flows.indexing.documents.chunking import HEADING, lines_with_fences, split_sentences
from graph_flows.indexing.extraction import rule_lexicon as lex
from graph_flows.indexing.extraction.evidence import (
    evidence_with_coreference,
    opening_evidence,
    place_evidence,
    place_kinds,
)
from graph_flows.indexing.extraction.ner import load_nlp, merge_mentions, named_mentions, pipe
from graph_flows.indexing.extraction.rule_mentions import (
    Mention,
    capitalised_words,
    find_mentions,
    trimmed,
)
from graph_flows.indexing.extraction.rule_objects import object_span
from graph_flows.indexing.extraction.rule_output import limited
from graph_flows.indexing.extraction.schema import (
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
)
from graph_flows.indexing.extraction.validation import name_key
from graph_flows.shared.fragments import is_number

FACT_CHARS = 300
COOCCURRENCE_CONFIDENCE = 0.3
COOCCURRENCE_PER_SENTENCE = 3
OBJECT_PHRASE_CONFIDENCE = 0.65
_ITEM_MARK = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_VERBS = [
    (re.compile(rf"^\s*,?\s*(?:{lex.ADVERBS}\s+)?(?:{verb})\s+(?:{lex.DETERMINERS}\s+)?$", re.I),
     re.compile(rf"^\s*,?\s*(?:{lex.ADVERBS}\s+)?(?:{verb})\s+(?:{lex.DETERMINERS}\s+)?"
                r"(?P<obj>(?-i:[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}))", re.I),
     rtype, swap, confidence)
    for verb, rtype, swap, confidence in lex.VERB_PATTERNS
]


_ATTRIBUTES = [
    (re.compile(rf"^\s*,?\s*(?:{lex.ADVERBS}\s+)?(?:{verb})\s+(?:{lex.DETERMINERS}\s+)?$", re.I),
     rtype, swap, confidence, attribute)
    for verb, rtype, swap, confidence, attribute in lex.ATTRIBUTE_PATTERNS
]
_YEAR = re.compile(lex.YEAR, re.I)


@dataclass
class _Found:
    """Entities and relations collected so far, in order of first appearance."""

    entities: dict[str, ExtractedEntity]
    verb_relations: list[ExtractedRelation]
    cooccurrences: list[ExtractedRelation]


def extract_rules(text: str, *, use_ner: bool = True) -> Extraction:
    """Entities and relations found in ``text`` by the rules in the module docstring
    (``use_ner=False``: the capitalised-phrase rules alone, as without spaCy)."""
    return extract_rules_batch([text], use_ner=use_ner)[0]


def extract_rules_only(text: str) -> Extraction:
    """:func:`extract_rules` without spaCy: the fallback, measured as the baseline."""
    return extract_rules(text, use_ner=False)


def extract_rules_batch(texts: Sequence[str], *, use_ner: bool = True) -> list[Extraction]:
    """:func:`extract_rules` of each text, their sentences parsed in one ``nlp.pipe`` run."""
    units = [_units(text) for text in texts]
    nlp = load_nlp() if use_ner else None
    if nlp is None:
        return [_extract(sentences, None) for _, sentences in units]
    docs = iter(pipe(nlp, [s for _, sentences in units for s in sentences]))
    return [_extract(sentences, [next(docs) for _ in sentences]) for _, sentences in units]


def _extract(sentences: list[str], docs: list[Any] | None) -> Extraction:
    """One text's extraction; ``docs`` are the spaCy parses of its sentences, if any."""
    found = _Found({}, [], [])
    known = capitalised_words(sentences)
    previous: Mention | None = None
    topic: Mention | None = None
    places: list[tuple[Mention, str]] = []
    opening: list[tuple[Mention, str]] = []
    for k, sentence in enumerate(sentences):
        mentions = find_mentions(sentence, known)
        if docs is not None:
            mentions = merge_mentions(sentence, named_mentions(docs[k][:]), mentions)
        mentions = [t for m in mentions if (t := trimmed(sentence, m)) is not None]
        for mention in mentions:
            _add_entity(found, _entity(mention, sentence))
        _relate(found, sentence, mentions, None if docs is None else docs[k])
        if docs is None:
            continue
        evidence, previous = evidence_with_coreference(docs[k], mentions, previous, topic,
                                                       opening=k == 0)
        here = place_kinds(docs[k], mentions)
        if k == 0:
            topic = previous or (mentions[0] if mentions and mentions[0].start == 0 else None)
            opening = here
        evidence.extend(opening_evidence(opening, mentions) if k else ())
        evidence.extend(place_evidence(places, here))
        places.extend(here)
        found.cooccurrences.extend(
            _relation(e.subject, e.object, e.predicate, e.confidence, sentence)
            for e in evidence)
    return limited(list(found.entities.values()), found.verb_relations, found.cooccurrences)


def _units(text: str) -> tuple[list[str], list[str]]:
    """(heading texts, sentences) of a Markdown or plain text, code blocks skipped."""
    headings: list[str] = []
    paragraphs: list[str] = []
    current: list[str] = []
    for line, is_code in lines_with_fences(text.split("\n")):
        match = None if is_code else HEADING.match(line)
        if match:
            headings.append(match.group(2).strip())
        starts_item = bool(_ITEM_MARK.match(line))
        if (is_code or match or not line.strip() or starts_item) and current:
            paragraphs.append(" ".join(current))
            current = []
        if not (is_code or match) and line.strip():
            current.append(_ITEM_MARK.sub("", line).strip())
    if current:
        paragraphs.append(" ".join(current))
    sentences = [s for p in paragraphs for s in split_sentences(p)]
    return headings, sentences


def _entity(mention: Mention, sentence: str) -> ExtractedEntity:
    """The entity for a mention, described by its sentence."""
    return ExtractedEntity(
        name=mention.name,
        type=mention.type,
        description=_window(sentence, mention.start, mention.end),
        confidence=mention.confidence,
    )


def _add_entity(found: _Found, entity: ExtractedEntity) -> None:
    """Add an entity, or upgrade a known one (specific type over concept, higher confidence)."""
    key = f"{name_key(entity.name)}|{'section' if entity.type == 'section' else ''}"
    old = found.entities.get(key)
    if old is None:
        found.entities[key] = entity
        return
    update: dict[str, object] = {"confidence": max(old.confidence, entity.confidence)}
    if old.type == "concept" and entity.type != "concept":
        update["type"] = entity.type
    found.entities[key] = old.model_copy(update=update)


def _relate(found: _Found, sentence: str, mentions: list[Mention], doc: Any = None) -> None:
    """Verb-pattern relations, and without a parse (``doc``) co-occurrences between
    neighbouring mentions."""
    cooccurrences = 0
    for i, left in enumerate(mentions):
        right = mentions[i + 1] if i + 1 < len(mentions) else None
        between = sentence[left.end : right.start] if right else ""
        relation = _verb_relation(sentence, left, right, between) if right else None
        if relation is None:
            relation = _object_phrase_relation(found, sentence, left, doc)
        if relation is not None:
            found.verb_relations.append(relation)
        elif doc is None and right is not None and cooccurrences < COOCCURRENCE_PER_SENTENCE:
            cooccurrences += 1
            found.cooccurrences.append(
                _relation(left, right, "mentions", COOCCURRENCE_CONFIDENCE, sentence)
            )


def _verb_relation(
    sentence: str, left: Mention, right: Mention, between: str
) -> ExtractedRelation | None:
    """The relation whose verb phrase is all the text between two mentions, if any, dated
    when the sentence names one year ("in 1996"); attribute patterns first. None when a
    comma opens the text between (English puts no comma between a subject and its verb:
    the left mention closes an inserted phrase, "Illustra, founded in 1992, was based on
    POSTGRES", and is not the verb's subject) or when the subject is a bare number (a year
    is the time of an event, not its agent)."""
    if between.lstrip().startswith(","):
        return None
    for exact, rtype, swap, confidence, attribute in _ATTRIBUTES:
        if exact.match(between):
            subject, obj = (right, left) if swap else (left, right)
            if is_number(subject.name):
                return None
            rel = _relation(subject, obj, rtype, confidence, sentence)
            return rel.model_copy(update={"attribute": attribute,
                                          "valid_at": sentence_year(sentence)})
    for exact, _, rtype, swap, confidence in _VERBS:
        if exact.match(between):
            subject, obj = (right, left) if swap else (left, right)
            if is_number(subject.name):
                return None
            rel = _relation(subject, obj, rtype, confidence, sentence)
            return rel.model_copy(update={"valid_at": sentence_year(sentence), "predicate_text":
                                          None if swap else " ".join(between.split())})
    return None


def sentence_year(sentence: str) -> str | None:
    """The one year a sentence dates itself with ("in 1996", "since March 2021"); None when it
    names none or several different ones."""
    years = {m.group("year") for m in _YEAR.finditer(sentence)}
    return years.pop() if len(years) == 1 else None


def _object_phrase_relation(
    found: _Found, sentence: str, left: Mention, doc: Any = None
) -> ExtractedRelation | None:
    """A relation to a lowercase noun phrase right after a verb ("uses punched cards"; the
    phrase's bounds: :func:`rule_objects.object_span`)."""
    rest = sentence[left.end :]
    for _, prefix, rtype, swap, confidence in _VERBS:
        match = prefix.match(rest)
        if swap or rtype not in lex.OBJECT_PHRASE_TYPES or match is None:
            continue
        span = object_span(sentence, left.end + match.start("obj"), left.end + match.end("obj"),
                           doc)
        if span is None or is_number(left.name):
            return None
        obj = Mention(sentence[span[0] : span[1]], *span, "concept", OBJECT_PHRASE_CONFIDENCE)
        _add_entity(found, _entity(obj, sentence))
        return _relation(left, obj, rtype, min(confidence, OBJECT_PHRASE_CONFIDENCE), sentence)
    return None


def _relation(
    subject: Mention, obj: Mention, rtype: str, confidence: float, sentence: str
) -> ExtractedRelation:
    """A relation whose fact is the sentence (or a window of it around both mentions)."""
    start, end = min(subject.start, obj.start), max(subject.end, obj.end)
    return ExtractedRelation(
        subject=subject.name,
        predicate=rtype,
        object=obj.name,
        fact=_window(sentence, start, end),
        confidence=confidence,
    )


def _window(sentence: str, start: int, end: int, limit: int = FACT_CHARS) -> str:
    """The sentence, or a ``limit``-character window of it centred on [start, end)."""
    if len(sentence) <= limit:
        return sentence
    middle = (start + end) // 2
    lo = max(0, min(middle - limit // 2, len(sentence) - limit))
    piece = sentence[lo : lo + limit].strip()
    return ("…" if lo > 0 else "") + piece + ("…" if lo + limit < len(sentence) else "")
