"""Domain records passed into and out of the store (plain frozen dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storage import ids

ENTITY_TYPES = ("concept", "person", "organization", "technology", "location", "section")
RELATION_TYPES = ("mentions", "defines", "relates_to", "contains", "part_of", "uses")
CHUNK_STATUSES = ("pending", "extracting", "completed", "failed")


@dataclass(frozen=True, slots=True)
class DocumentIn:
    """A document to store; ``content_hash`` is of the cleaned text."""

    scope: str
    source: str
    uri: str
    content_hash: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return ids.document_id(self.scope, self.source, self.uri)


@dataclass(frozen=True, slots=True)
class EntityIn:
    """An entity to upsert, with the chunks it was found in."""

    name: str
    type: str
    scope: str
    summary: str = ""
    confidence: float = 1.0
    embedding: list[float] | None = None
    chunk_ids: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    """Other names of the entity (short forms, spellings); added to the stored ones."""

    @property
    def id(self) -> str:
        return ids.entity_id(self.name, self.type, self.scope)


@dataclass(frozen=True, slots=True)
class RelationIn:
    """A relation (fact) between two stored entities, with its provenance chunks."""

    subject_id: str
    predicate: str
    object_id: str
    fact: str
    scope: str
    confidence: float = 1.0
    embedding: list[float] | None = None
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    chunk_ids: tuple[str, ...] = ()
    attribute: str | None = None
    """Single-valued property of the subject this fact sets ("ceo"): a newer fact with the
    same subject and attribute but another object supersedes it (storage.supersede)."""
    predicate_text: str | None = None
    """The predicate as stated ("acquired", "was founded by"); ``predicate`` is its type."""

    @property
    def id(self) -> str:
        return ids.relation_id(self.subject_id, self.predicate, self.object_id,
                               self.predicate_text)


@dataclass(frozen=True, slots=True)
class Entity:
    """A stored entity as read back."""

    id: str
    name: str
    type: str
    summary: str
    confidence: float
    scope: str
    aliases: tuple[str, ...] = ()
    """Other names the documents use for it (short forms, spellings; issue 25)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """A stored relation as read back."""

    id: str
    subject_id: str
    predicate: str
    object_id: str
    fact: str
    confidence: float
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    predicate_text: str | None = None
    """The predicate as stated (None when only the type is known)."""


def as_row(record: Entity | Fact) -> dict[str, Any]:
    """A stored record's fields as a new dict: ``dataclasses.asdict`` without its deep copy
    (every field is immutable), which the query path calls for each candidate."""
    return {name: getattr(record, name) for name in record.__slots__}


@dataclass(frozen=True, slots=True)
class ChunkWork:
    """A chunk claimed for extraction."""

    id: str
    document_id: str
    ordinal: int
    text: str
    attempts: int
    scope: str
    source: str
    uri: str


@dataclass(frozen=True, slots=True)
class ChunkOutcome:
    """What extraction of one chunk produced (recorded on its status row)."""

    chunk_id: str
    entity_count: int = 0
    relation_count: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(slots=True)
class RemovalReport:
    """Counts of rows a removal deleted."""

    documents: int = 0
    chunks: int = 0
    entities: int = 0
    relations: int = 0

    def __add__(self, other: RemovalReport) -> RemovalReport:
        return RemovalReport(
            self.documents + other.documents,
            self.chunks + other.chunks,
            self.entities + other.entities,
            self.relations + other.relations,
        )


@dataclass(frozen=True, slots=True)
class DocumentSync:
    """Result of storing a document version: which chunks need extraction."""

    document_id: str
    unchanged: bool
    new_chunk_ids: tuple[str, ...]
    kept_chunk_ids: tuple[str, ...]
    removed: RemovalReport
