"""Guards around extraction: text going into the prompt, and what comes back out of it.

Before the prompt, :func:`sanitize_for_prompt` makes a chunk safe to paste between the
extraction prompt's delimiters: control, zero-width and bidi characters go, any of the
prompt's own tags (:data:`PROMPT_TAGS`, opening or closing, any case, with spaces, ASCII or
full-width ``<``) gets its ``<`` swapped for ``‹``, chat-template markers (``<|im_start|>``,
``[INST]``, ``<<SYS>>``) are defused the same way, and the length is capped.

After extraction, :func:`validate_extraction` keeps only what may be written to the graph
(rules in its docstring) and counts every dropped item by reason. Injection detection itself
(:data:`INJECTION_PATTERNS`, :func:`looks_like_injection`) lives in
:mod:`graph_flows.shared.injection` and is re-exported here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

from graph_flows.indexing.extraction.name_bounds import is_junk, trim_name, trim_predicate
from graph_flows.indexing.extraction.schema import (
    CAP_ENTITIES,
    CAP_RELATIONS,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
    clamp_confidence,
)
from graph_flows.indexing.extraction.types import (
    normalize_attribute,
    normalize_entity_type,
    normalize_relation_type,
    stated_predicate,
)
from graph_flows.shared.dates import parse_date
from graph_flows.shared.injection import (
    BIDI,
    INJECTION_PATTERNS,
    PROMPT_TAGS,
    ZERO_WIDTH,
    looks_like_injection,
    normalize_for_matching,
)
from storage.ids import predicate_key

T = TypeVar("T")

__all__ = [
    "DROP_REASONS",
    "INJECTION_PATTERNS",
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "PROMPT_TAGS",
    "ValidationResult",
    "looks_like_injection",
    "name_key",
    "sanitize_for_prompt",
    "validate_extraction",
]

DEFAULT_MAX_PROMPT_CHARS = 8000
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 1000
MAX_FACT_CHARS = 1000
MAX_PREDICATE_CHARS = 100
DROP_REASONS = (
    "malformed",
    "bad_name",
    "fragment",
    "injection",
    "low_confidence",
    "duplicate",
    "over_limit",
    "unknown_endpoint",
    "self_loop",
)
"""Reasons an item is dropped. ``dropped`` also counts non-drops: ``description_truncated``,
``fact_truncated`` and ``bad_date`` (an unparseable ``valid_at`` set to None)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_TAG_OPEN = re.compile(r"[<＜﹤](?=\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r")\b)", re.IGNORECASE)
_CHAT_MARKERS = (
    (re.compile(r"<\|"), "‹|"),
    (re.compile(r"\|>"), "|›"),
    (re.compile(r"\[(\s*/?\s*INST\s*)\]", re.IGNORECASE), r"⟦\1⟧"),
    (re.compile(r"<<(\s*/?\s*SYS\s*)>>", re.IGNORECASE), r"‹‹\1››"),
)


def sanitize_for_prompt(text: str, *, max_chars: int = DEFAULT_MAX_PROMPT_CHARS) -> str:
    """Make user text safe to place inside the extraction prompt's ``<document>`` tags."""
    if max_chars <= 0:
        raise ValueError(f"max_chars must be > 0, got {max_chars}")
    text = str(text).replace("\r\n", "\n").replace("\r", "\n")
    text = BIDI.sub("", ZERO_WIDTH.sub("", _CONTROL.sub("", text)))
    text = _TAG_OPEN.sub("‹", text)
    for pattern, replacement in _CHAT_MARKERS:
        text = pattern.sub(replacement, text)
    return _cap(text, max_chars)


def _cap(text: str, max_chars: int) -> str:
    """Cut to ``max_chars``, at the last whitespace of the final 10% when there is one."""
    if len(text) <= max_chars:
        return text
    lower = max_chars - max_chars // 10
    cut = max(text.rfind(" ", lower, max_chars + 1), text.rfind("\n", lower, max_chars + 1))
    return text[: cut if cut > 0 else max_chars].rstrip()


def clean_name(name: str) -> str:
    """A display name: control characters removed, whitespace collapsed and trimmed."""
    return " ".join(_CONTROL.sub(" ", ZERO_WIDTH.sub("", str(name))).split())


def entity_name(name: str) -> str:
    """A name as the graph stores it: cleaned (:func:`clean_name`) and cut down to the name
    it holds (:func:`name_bounds.trim_name`: "the Semantic Web in" -> "Semantic Web")."""
    return trim_name(clean_name(name))


def name_key(name: str) -> str:
    """Matching key of a name: NFKC, case-folded, whitespace collapsed."""
    return " ".join(normalize_for_matching(name).casefold().split())


@dataclass
class ValidationResult:
    """What survived validation, and how many items were dropped (or altered) by reason."""

    entities: list[ExtractedEntity]
    relations: list[ExtractedRelation]
    dropped: dict[str, int] = field(default_factory=dict)


def validate_extraction(ex: Extraction, *, min_confidence: float = 0.6) -> ValidationResult:
    """Keep only entities and relations fit for the graph.

    Entities: name cleaned (whitespace collapsed) and cut down to the name it holds
    (:func:`entity_name`); dropped when the name is empty, has no letter or digit, or
    exceeds 200 characters (``bad_name``), when it is still a fragment of a sentence
    (:func:`name_bounds.is_junk`) (``fragment``), when name or description looks
    like an injection, as cleaned or as sent (a markdown role heading such as "### System:"
    is only recognisable before line breaks are collapsed) (``injection``), below
    ``min_confidence`` (``low_confidence``, after clamping to [0, 1]); type normalised; a
    heading or other part of the document itself (type ``section``) is structure, not an
    entity (``document_structure``);
    description over 1000 characters truncated;
    duplicates by (name key, type) merged into the first spelling with the highest
    confidence and the longest description (``duplicate``); at most CAP_ENTITIES kept
    (``over_limit``).

    Relations: endpoints named as entities are (:func:`entity_name`); predicate normalised
    to a canonical type, ``predicate_text`` the predicate as stated
    (:func:`name_bounds.trim_predicate`: no punctuation or determiner at its ends; at most
    100 characters; None when it repeats the type), the fact the original
    wording (empty: "subject predicate object"); dropped on injection in any field, low
    confidence, an endpoint that is not a kept entity (matched on the name key, then spelled
    like the entity: ``unknown_endpoint``), same endpoint twice (``self_loop``), duplicates
    by (subject, type, object, stated predicate) (``duplicate``), beyond CAP_RELATIONS
    (``over_limit``). ``valid_at`` becomes an ISO 8601 UTC date-time (:func:`parse_valid_at`) or
    None (``bad_date``).
    """
    dropped: Counter[str] = Counter()
    if ex.over_limit:
        dropped["over_limit"] += ex.over_limit
    if ex.malformed:
        dropped["malformed"] += ex.malformed
    entities = _validate_entities(ex.entities, min_confidence, dropped)
    names = {name_key(e.name): e.name for e in entities}
    relations = _validate_relations(ex.relations, names, min_confidence, dropped)
    return ValidationResult(entities=entities, relations=relations, dropped=dict(dropped))


def _validate_entities(
    items: list[ExtractedEntity], min_confidence: float, dropped: Counter[str]
) -> list[ExtractedEntity]:
    """Entity rules of :func:`validate_extraction`, in order."""
    kept: dict[tuple[str, str], ExtractedEntity] = {}
    for item in items:
        entity = _check_entity(item, min_confidence, dropped)
        if entity is None:
            continue
        key = (name_key(entity.name), entity.type)
        if key in kept:
            dropped["duplicate"] += 1
            kept[key] = _merge(kept[key], entity)
        else:
            kept[key] = entity
    return _capped(list(kept.values()), CAP_ENTITIES, dropped)


def _capped(items: list[T], cap: int, dropped: Counter[str]) -> list[T]:
    """The first ``cap`` items; the rest counted as ``over_limit``."""
    if len(items) > cap:
        dropped["over_limit"] += len(items) - cap
    return items[:cap]


def _check_entity(
    item: ExtractedEntity, min_confidence: float, dropped: Counter[str]
) -> ExtractedEntity | None:
    """One entity cleaned and normalised, or None (the reason counted)."""
    name = entity_name(item.name)
    description = clean_name(item.description)
    if not name or len(name) > MAX_NAME_CHARS or not any(c.isalnum() for c in name):
        dropped["bad_name"] += 1
        return None
    if is_junk(name):
        dropped["fragment"] += 1
        return None
    if any(looks_like_injection(t) for t in (name, description, item.name, item.description)):
        dropped["injection"] += 1
        return None
    confidence = clamp_confidence(item.confidence)
    if confidence < min_confidence:
        dropped["low_confidence"] += 1
        return None
    entity_type = normalize_entity_type(item.type)
    if entity_type == "section":
        dropped["document_structure"] += 1
        return None
    if len(description) > MAX_DESCRIPTION_CHARS:
        dropped["description_truncated"] += 1
        description = _truncate(description, MAX_DESCRIPTION_CHARS)
    return ExtractedEntity(
        name=name,
        type=entity_type,
        description=description,
        confidence=confidence,
    )


def _merge(first: ExtractedEntity, other: ExtractedEntity) -> ExtractedEntity:
    """Two mentions of one entity: first spelling, highest confidence, longest description."""
    return first.model_copy(update={
        "confidence": max(first.confidence, other.confidence),
        "description": max((first.description, other.description), key=len),
    })


def _validate_relations(
    items: list[ExtractedRelation],
    names: dict[str, str],
    min_confidence: float,
    dropped: Counter[str],
) -> list[ExtractedRelation]:
    """Relation rules of :func:`validate_extraction`, in order."""
    kept: dict[tuple[str, str, str, str], ExtractedRelation] = {}
    for item in items:
        relation = _check_relation(item, names, min_confidence, dropped)
        if relation is None:
            continue
        key = (name_key(relation.subject), relation.predicate, name_key(relation.object),
               predicate_key(relation.predicate, relation.predicate_text) or "")
        if key in kept:
            dropped["duplicate"] += 1
            if relation.confidence > kept[key].confidence:
                kept[key] = relation
        else:
            kept[key] = relation
    return _capped(list(kept.values()), CAP_RELATIONS, dropped)


def _check_relation(
    item: ExtractedRelation,
    names: dict[str, str],
    min_confidence: float,
    dropped: Counter[str],
) -> ExtractedRelation | None:
    """One relation cleaned, normalised and attached to kept entities, or None."""
    subject, obj = entity_name(item.subject), entity_name(item.object)
    stated = item.predicate_text or item.predicate
    phrase = trim_predicate(clean_name(stated.replace("_", " ")))
    fact = clean_name(item.fact) or f"{subject} {phrase} {obj}"
    raw = (item.subject, item.object, item.predicate, stated, item.fact, item.attribute or "")
    if any(looks_like_injection(t) for t in (subject, obj, phrase, fact, *raw)):
        dropped["injection"] += 1
        return None
    confidence = clamp_confidence(item.confidence)
    if confidence < min_confidence:
        dropped["low_confidence"] += 1
        return None
    s_key, o_key = name_key(subject), name_key(obj)
    if s_key not in names or o_key not in names:
        dropped["unknown_endpoint"] += 1
        return None
    if s_key == o_key:
        dropped["self_loop"] += 1
        return None
    if len(fact) > MAX_FACT_CHARS:
        dropped["fact_truncated"] += 1
        fact = _truncate(fact, MAX_FACT_CHARS)
    valid_at = parse_valid_at(item.valid_at)
    if item.valid_at and valid_at is None:
        dropped["bad_date"] += 1
    rtype = normalize_relation_type(item.predicate)
    said = _truncate(phrase, MAX_PREDICATE_CHARS) if stated_predicate(phrase, rtype) else None
    return ExtractedRelation(
        subject=names[s_key], predicate=rtype, predicate_text=said, object=names[o_key],
        fact=fact,
        confidence=confidence,
        valid_at=valid_at,
        attribute=normalize_attribute(item.attribute),
    )


def parse_valid_at(raw: str | None) -> str | None:
    """``raw`` read by :func:`graph_flows.shared.dates.parse_date` as an ISO 8601 string (UTC;
    ``YYYY`` and ``YYYY-MM`` mean their first day), or None when it is not a date."""
    parsed = parse_date(raw)
    return parsed.isoformat() if parsed else None


def _truncate(text: str, limit: int) -> str:
    """At most ``limit`` characters, ending with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
