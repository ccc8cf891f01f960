"""One entity per real-world thing within a document: its short forms joined to full names.

Once every chunk of a document is extracted and stored, its entities are read back in the
order the document first writes their names; the rules of :mod:`graph_flows.indexing.aliases`
decide which later name shortens which earlier one ("Robeson" -> "Paul Robeson", "LASM" ->
"Latin American School of Medicine"), judged on the whole document (a surname that two
people of the document share joins neither), and :func:`storage.merge.join_in_document`
moves the document's mentions of each short form to its full name's entity.

Deciding on the stored document, not batch by batch, makes the graph the same whatever order
the chunks were resolved in (a chunk retried after a fault, a resumed run, two workers), and
a document joined twice is joined once. :func:`join_documents` runs after each batch's write
for the documents that batch completed, and at the end of a run for any document a stopped
run left unjoined.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from graph_flows.indexing.aliases import DocumentNames, Known, is_acronym
from storage import KnowledgeStore
from storage.documents import lock_document
from storage.merge import (
    document_text,
    documents_text,
    documents_to_join,
    join_in_document,
    mark_joined,
    unjoined_documents,
)
from storage.resolution import DocumentEntity, document_entities


@dataclass
class Joins:
    """A document's short-form entities -> full-name entities, and the names to add."""

    into: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, list[str]] = field(default_factory=dict)
    merges: list[dict[str, str]] = field(default_factory=list)


def document_joins(chunks: Sequence[tuple[str, str]],
                   entities: Sequence[DocumentEntity]) -> Joins:
    """Which of a document's entities shortens which (pure; ``chunks``: (id, text) in
    reading order). Names are read in the order the text first writes them (a name the
    text never writes as such: last), the longer of two at one place first, acronyms after
    every other name (so "U.S." written before "United States" joins it, and the entity
    keeps the full name)."""
    text = "\n".join(t for _, t in chunks)
    folded = text.casefold()

    def first(ent: DocumentEntity) -> tuple[bool, int, int, str, str]:
        at = folded.find(ent.name.casefold())
        return (is_acronym(ent.name), at if at >= 0 else len(folded), -len(ent.name),
                ent.name, ent.id)

    ordered = sorted(entities, key=first)
    whole = DocumentNames()
    for ent in ordered:
        whole.add(ent.name, ent.type)
    names = DocumentNames()
    owner: dict[int, str] = {}  # id(Known) -> the entity holding that full name
    out = Joins()
    for ent in ordered:
        target: Known | None = names.short_form_of(ent.name, ent.type, text, whole)
        if target is None or id(target) not in owner:
            known = names.add(ent.name, ent.type)
            owner.setdefault(id(known), ent.id)
            continue
        names.alias(target, ent.name, ent.type)
        into = owner[id(target)]
        if into == ent.id:
            continue
        out.into[ent.id] = into
        out.aliases.setdefault(into, []).extend([ent.name, *ent.aliases])
        out.merges.append({"name": ent.name, "into": target.name, "type": ent.type})
    return out


def join_document(store: KnowledgeStore, document_id: str, *,
                  durable: bool = True) -> list[dict[str, str]]:
    """Join one stored document's short forms (in one transaction, under the document's
    lock); nothing when a chunk of it is not extracted yet. Returns the merges.
    ``durable``: see ``KnowledgeStore.transaction``."""
    with store.transaction(durable=durable) as conn:
        lock_document(conn, document_id)
        doc = document_text(conn, document_id)
        if not doc.complete:
            return []
        ents = document_entities(conn, [document_id]).get(document_id, [])
        joins = document_joins(doc.chunks, ents)
        join_in_document(conn, [c for c, _ in doc.chunks], joins.into, joins.aliases)
        mark_joined(conn, [(document_id, doc.content_hash)])
    return joins.merges


def join_documents(store: KnowledgeStore, document_ids: Sequence[str], *,
                   durable: bool = True) -> list[dict[str, str]]:
    """Join the documents of ``document_ids`` whose chunks are all extracted and whose
    current version is not joined yet; returns the merges.

    All are read at once; those with nothing to join are marked joined in one statement
    (only if still that version), the others joined one by one under their locks.
    ``durable=False``: the commits do not wait for the disk (``KnowledgeStore.transaction``;
    a batch's store turn, whose caller flushes them after it)."""
    with store.connect() as conn:
        ready = documents_to_join(conn, document_ids)
        if not ready:
            return []
        ids = [d for d, _ in ready]
        texts = documents_text(conn, ids)
        ents = document_entities(conn, ids)
    to_join = [d for d in ids if d in texts and document_joins(
        texts[d].chunks, ents.get(d, [])).into]
    quiet = [(d, h) for d, h in ready if d not in to_join]
    if quiet:
        with store.transaction(durable=durable) as conn:
            mark_joined(conn, quiet)
    merges: list[dict[str, str]] = []
    for doc in to_join:
        merges.extend(join_document(store, doc, durable=durable))
    return merges


def join_left_over(store: KnowledgeStore, scope: str,
                   source: str | None = None) -> list[dict[str, str]]:
    """At the end of a run: join every complete document of ``scope`` (``source``) that a
    stopped run left unjoined."""
    with store.connect() as conn:
        docs = unjoined_documents(conn, scope, source)
    return join_documents(store, docs) if docs else []
