"""The rule extractor's output limits: MAX_ENTITIES and MAX_RELATIONS per chunk, what is
kept first, and one fact per entity pair beyond the pattern relations."""

from __future__ import annotations

from graph_flows.indexing.extraction.evidence import PAIR_CONFIDENCE
from graph_flows.indexing.extraction.schema import (
    MAX_ENTITIES,
    MAX_RELATIONS,
    ExtractedEntity,
    ExtractedRelation,
    Extraction,
)
from graph_flows.indexing.extraction.validation import name_key


def limited(entities: list[ExtractedEntity], verb_relations: list[ExtractedRelation],
            cooccurrences: list[ExtractedRelation]) -> Extraction:
    """Apply MAX_ENTITIES / MAX_RELATIONS, keeping sections and the endpoints of pattern
    relations and of evidence facts with a verb first; pattern relations come first, then
    co-occurrence and evidence facts by falling confidence, one per pair."""
    loose = sorted(cooccurrences, key=lambda r: -r.confidence)
    relations = _dedupe([r for r in verb_relations + loose
                         if name_key(r.subject) != name_key(r.object)],
                        len(verb_relations))
    endpoints = {name_key(n) for r in verb_relations + loose
                 if r.confidence >= PAIR_CONFIDENCE for n in (r.subject, r.object)}

    def rank(item: tuple[int, ExtractedEntity]) -> tuple[int, int]:
        index, entity = item
        if entity.type == "section":
            return (0, index)
        return (1 if name_key(entity.name) in endpoints else 2, index)

    kept = [e for _, e in sorted(enumerate(entities), key=rank)[:MAX_ENTITIES]]
    kept.sort(key=entities.index)
    names = {name_key(e.name) for e in kept}
    relations = [r for r in relations
                 if name_key(r.subject) in names and name_key(r.object) in names]
    return Extraction(entities=kept, relations=relations[:MAX_RELATIONS])


def _dedupe(relations: list[ExtractedRelation], typed: int) -> list[ExtractedRelation]:
    """First relation per (subject, predicate, object) among the first ``typed`` (pattern)
    relations; after them, one co-occurrence or evidence fact per unordered pair not linked
    yet."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for n, relation in enumerate(relations):
        ends = (name_key(relation.subject), name_key(relation.object))
        key = (relation.predicate, *ends)
        pair = ("pair", *sorted(ends))
        if key in seen or (n >= typed and pair in seen):
            continue
        seen.update({key, pair})
        out.append(relation)
    return out
