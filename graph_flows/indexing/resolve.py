"""Entity resolution for one batch: the same thing from many chunks becomes one entity.

1. **Exact**: mentions with the same normalised name (NFKC, casefold, single spaces) and
   type in the same scope share their deterministic id (``ent_`` + sha256(name:type:scope)),
   so they merge within the batch and with the store by id.
2. **Near duplicates, same type only**: a new name whose *compact* form (letters and digits
   only: "Postgre SQL" = "PostgreSQL" = "postgre-sql") or whose pg_trgm similarity (>=
   ``threshold``, computed by PostgreSQL) matches an earlier name of the batch or a stored
   entity is mapped onto that entity's id. The earlier mention wins within a batch, the
   stored entity wins over a new one, so the result does not depend on how chunks were
   batched (chunks are claimed in document order). Names that match but have different
   types are never merged.
3. **Short forms within a document** ("Robeson" after "Paul Robeson") are not decided here,
   batch by batch, but on the stored document once all its chunks are written
   (:mod:`graph_flows.indexing.join_names`), so the result does not depend on the order
   chunks are resolved in.
4. Relations are re-pointed to the resolved ids; self-loops created by a merge are dropped.

An entity's other names (spelling variants and short forms) are its ``aliases``.

The longest description wins (within the batch here, against the store in the write step).
Only entities and relations the store lacks, or whose text changes, are marked for
embedding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC
from functools import lru_cache
from typing import Any

from sqlalchemy import Connection

from graph_flows.indexing.aliases import fold
from graph_flows.shared.dates import parse_date
from storage import KnowledgeStore, ids
from storage.resolution import (
    existing_entities,
    existing_relations,
    similar_entities,
)

MIN_FUZZY_LEN = 4  # shorter names only merge exactly (trigrams of "Go" match too much)


# -- name similarity (pg_trgm's, computed by the store) -------------------------------------
@lru_cache(maxsize=65536)
def compact(name: str) -> str:
    """Letters and digits only, casefolded, diacritics removed: the spelling-variant key
    ("Mediaș" = "Medias", "Qur'an" = "Quran")."""
    return "".join(fold(name).split())


def wins(summary: str, other: str) -> bool:
    """Whether ``summary`` replaces ``other`` as an entity's description: the longer one,
    of two as long the first in code point order. A total order, so the description does
    not depend on which chunk or which worker came first (storage.graph_writes applies the
    same rule, and a relation's fact: the higher confidence, then code point order)."""
    return (len(summary), other) > (len(other), summary)


def fact_wins(confidence: float, fact: str, other_confidence: float, other: str) -> bool:
    """Whether ``fact`` replaces ``other`` as a relation's fact: the higher confidence, of two
    as confident the first in code point order (a total order, as :func:`wins`)."""
    return (confidence, other) > (other_confidence, fact)


def near_duplicate(a: str, b: str, similarity: float, threshold: float) -> bool:
    """Same compact form, or pg_trgm ``similarity`` >= threshold (names of 4+ characters)."""
    if compact(a) == compact(b):
        return True
    return min(len(a), len(b)) >= MIN_FUZZY_LEN and similarity >= threshold


class NameIndex:
    """Earlier names of one (scope, type) bucket, found by compact key or by similarity
    (``similar``: the name pairs at or above the threshold, from the store)."""

    def __init__(self, similar: set[tuple[str, str]]) -> None:
        self.by_compact: dict[str, Group] = {}
        self.names: list[tuple[str, Group]] = []
        self.similar = similar

    def find(self, name: str) -> Group | None:
        """The group of the earliest matching name (compact key first)."""
        hit = self.by_compact.get(compact(name))
        if hit is not None or len(name) < MIN_FUZZY_LEN:
            return hit
        return next((group for other, group in self.names
                     if len(other) >= MIN_FUZZY_LEN and (name, other) in self.similar), None)

    def add(self, name: str, group: Group) -> None:
        self.by_compact.setdefault(compact(name), group)
        self.names.append((name, group))


# -- grouping -------------------------------------------------------------------------------
@dataclass
class Group:
    """Mentions resolved to one entity."""

    name: str
    type: str
    scope: str
    summary: str = ""
    confidence: float = 0.0
    chunk_ids: list[str] = field(default_factory=list)
    variants: list[str] = field(default_factory=list)
    stored_id: str | None = None
    stored_summary: str | None = None
    stored_has_embedding: bool = False

    @property
    def id(self) -> str:
        return self.stored_id or ids.entity_id(self.name, self.type, self.scope)

    @property
    def aliases(self) -> list[str]:
        """Every other name of the group (its spelling variants), first met first."""
        own = ids.normalize_name(self.name)
        return [n for n in dict.fromkeys(self.variants) if ids.normalize_name(n) != own]

    def absorb(self, name: str, summary: str, confidence: float, chunk_ids: Sequence[str]) -> None:
        if name not in self.variants:
            self.variants.append(name)
        if wins(summary, self.summary):
            self.summary = summary
        self.confidence = max(self.confidence, confidence)
        self.chunk_ids.extend(c for c in chunk_ids if c not in self.chunk_ids)


@dataclass
class Resolution:
    """Result of resolving one batch (plain data, ready for the state)."""

    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    merges: list[dict[str, str]]
    dropped: dict[str, dict[str, int]]  # chunk id -> reason -> count
    relation_counts: dict[str, int]     # chunk id -> relations kept


def group_mentions(
    store: Any, validated: Sequence[dict[str, Any]], threshold: float,
) -> list[Group]:
    """Exact then near-duplicate grouping of the batch's entity mentions (first one wins)."""
    groups: list[Group] = []
    by_key: dict[tuple[str, str, str], Group] = {}
    buckets: dict[tuple[str, str], NameIndex] = {}
    similar = store.similar_name_pairs(
        [(f"{c['scope']}\x1f{e['type']}", e["name"]) for c in validated for e in c["entities"]
         if len(e["name"]) >= MIN_FUZZY_LEN], threshold)
    for chunk in validated:
        for ent in chunk["entities"]:
            name, type_ = ent["name"], ent["type"]
            key = (chunk["scope"], type_, ids.normalize_name(name))
            bucket = buckets.setdefault(key[:2], NameIndex(similar))
            group = by_key.get(key) or bucket.find(name)
            if group is None:
                group = Group(name, type_, chunk["scope"])
                groups.append(group)
            if key not in by_key:
                by_key[key] = group
                bucket.add(name, group)
            group.absorb(name, ent.get("description") or "", ent["confidence"],
                         [chunk["chunk_id"]])
    return groups


def match_store(store: KnowledgeStore, groups: Sequence[Group], threshold: float) -> None:
    """Point groups at stored entities: exact id of any variant first, then near duplicates."""
    with store.connect() as conn:
        _match_store(conn, store, groups, threshold)


def _match_store(
    conn: Connection, store: KnowledgeStore, groups: Sequence[Group], threshold: float
) -> None:
    variant_ids = {ids.entity_id(v, g.type, g.scope): g for g in groups for v in g.variants}
    known = existing_entities(conn, list(variant_ids))
    for group in groups:
        hit = next((known[i] for i in (ids.entity_id(v, group.type, group.scope)
                                       for v in group.variants) if i in known), None)
        if hit:
            group.name, group.stored_id = hit.name, hit.id
            group.stored_summary, group.stored_has_embedding = hit.summary, hit.has_embedding
    for scope in sorted({g.scope for g in groups}):
        fresh = [g for g in groups if g.scope == scope and g.stored_id is None]
        found = similar_entities(conn, scope, [(g.name, g.type) for g in fresh])
        pairs = [(v, c.name) for group, candidates in zip(fresh, found, strict=True)
                 for c in candidates for v in group.variants]
        sims = dict(zip(pairs, store.name_similarities(pairs), strict=True))
        for group, candidates in zip(fresh, found, strict=True):
            hit = next((c for c in candidates if any(
                near_duplicate(v, c.name, sims[(v, c.name)], threshold)
                for v in group.variants)), None)
            if hit:
                group.name, group.stored_id = hit.name, hit.id
                group.stored_summary, group.stored_has_embedding = hit.summary, hit.has_embedding


# -- relations ------------------------------------------------------------------------------
def build_relations(
    validated: Sequence[dict[str, Any]], id_of: dict[tuple[str, str, str], str],
    dropped: dict[str, dict[str, int]], kept: dict[str, int],
) -> list[dict[str, Any]]:
    """Relations on resolved ids, merged by id (best confidence's fact, earliest date)."""
    out: dict[str, dict[str, Any]] = {}
    for chunk in validated:
        cid, scope = chunk["chunk_id"], chunk["scope"]
        types = {ids.normalize_name(e["name"]): e["type"] for e in chunk["entities"]}
        for rel in chunk["relations"]:
            ends = []
            for name in (rel["subject"], rel["object"]):
                norm = ids.normalize_name(name)
                ends.append(id_of.get((scope, types.get(norm, ""), norm)))
            reason = "unknown_endpoint" if None in ends else (
                "self_loop_after_merge" if ends[0] == ends[1] else None)
            if reason:
                counts = dropped.setdefault(cid, {})
                counts[reason] = counts.get(reason, 0) + 1
                continue
            kept[cid] = kept.get(cid, 0) + 1
            rid = ids.relation_id(ends[0], rel["predicate"], ends[1], rel.get("predicate_text"))
            when = parse_date(rel.get("valid_at"))
            when_iso = when.astimezone(UTC).isoformat() if when else None
            cur = out.get(rid)
            if cur is None:
                out[rid] = cur = {"id": rid, "subject_id": ends[0], "object_id": ends[1],
                                  "predicate": rel["predicate"], "fact": rel["fact"],
                                  "predicate_text": rel.get("predicate_text"),
                                  "scope": scope, "confidence": rel["confidence"],
                                  "valid_at": None, "chunk_ids": [],
                                  "attribute": rel.get("attribute")}
            elif fact_wins(rel["confidence"], rel["fact"], cur["confidence"], cur["fact"]):
                cur["fact"], cur["confidence"] = rel["fact"], rel["confidence"]
            cur["attribute"] = cur["attribute"] or rel.get("attribute")
            if when_iso and (cur["valid_at"] is None or when_iso < cur["valid_at"]):
                cur["valid_at"] = when_iso
            if cid not in cur["chunk_ids"]:
                cur["chunk_ids"].append(cid)
    return list(out.values())


# -- the batch ------------------------------------------------------------------------------
def resolve_batch(
    store: KnowledgeStore, validated: Sequence[dict[str, Any]], threshold: float,
) -> Resolution:
    """Resolve a batch's validated extractions against itself and the store."""
    groups = group_mentions(store, validated, threshold)
    match_store(store, groups, threshold)
    by_id: dict[str, Group] = {}
    id_of: dict[tuple[str, str, str], str] = {}
    merges: list[dict[str, str]] = []
    for group in groups:
        target = by_id.setdefault(group.id, group)
        if target is not group:  # two batch groups resolved onto one stored entity
            target.absorb(group.name, group.summary, group.confidence, group.chunk_ids)
            target.variants.extend(v for v in group.variants if v not in target.variants)
        for variant in group.variants:
            id_of[(group.scope, group.type, ids.normalize_name(variant))] = group.id
            if ids.normalize_name(variant) != ids.normalize_name(target.name):
                merges.append({"name": variant, "into": target.name, "type": group.type})
    dropped: dict[str, dict[str, int]] = {}
    kept: dict[str, int] = {}
    relations = build_relations(validated, id_of, dropped, kept)
    with store.connect() as conn:
        known = existing_relations(conn, [r["id"] for r in relations])
    for rel in relations:
        old = known.get(rel["id"])
        rel["embed"] = old is None or not old.has_embedding or fact_wins(
            rel["confidence"], rel["fact"], old.confidence, old.fact)
    return Resolution([_entity_row(g) for g in by_id.values()], relations,
                      _unique(merges), dropped, kept)


def _entity_row(g: Group) -> dict[str, Any]:
    longer = g.stored_summary is not None and wins(g.summary, g.stored_summary)
    summary = g.summary if g.stored_summary is None or longer else g.stored_summary
    return {"id": g.id, "name": g.name, "type": g.type, "scope": g.scope, "summary": summary,
            "confidence": g.confidence, "chunk_ids": list(g.chunk_ids),
            "embed": g.stored_id is None or not g.stored_has_embedding,
            "longer_summary": longer, "aliases": g.aliases}


def _unique(merges: list[dict[str, str]]) -> list[dict[str, str]]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for m in merges:
        key = (m["name"], m["into"], m["type"])
        if key not in seen:
            seen.add(key)
            out.append(m)
    return out
