"""Joining one document's short-form entities into the full names they stand for.

Resolution writes every name it meets as its own entity; once all chunks of a document are
stored, :func:`join_in_document` moves that document's mentions of a short form ("Robeson")
to the entity of its full name ("Paul Robeson"): the entity's provenance in the document's
chunks, the relations those chunks stated about it (re-keyed to the full name's id, merged
with an equal relation by :data:`storage.graph_writes.RELATION_MERGE`), and the short
name as an alias. What the short form's entity keeps from other documents stays where it is;
rows left without provenance are deleted (:func:`storage.documents.delete_orphans`).

Working on stored rows, after the whole document is known, makes the result independent of
the order its chunks were resolved in (a retry, a restart, another worker), and running it
again changes nothing. The document's advisory lock (:func:`storage.documents.lock_document`,
which its syncs take too) keeps two workers from joining one document at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from storage import supersede
from storage.documents import delete_orphans
from storage.graph_writes import RELATION_MERGE
from storage.ids import relation_id


@dataclass(frozen=True, slots=True)
class DocumentText:
    """A stored document's version, its chunks in reading order, and whether all are
    extracted."""

    id: str
    content_hash: str
    chunks: tuple[tuple[str, str], ...]  # (chunk id, text)
    complete: bool


def document_text(conn: Connection, document_id: str) -> DocumentText:
    """The document's chunks by ordinal; ``complete``: every chunk's extraction completed."""
    return documents_text(conn, [document_id]).get(
        document_id, DocumentText(document_id, "", (), False))


def documents_text(conn: Connection, document_ids: Sequence[str]) -> dict[str, DocumentText]:
    """:func:`document_text` of several documents (those with chunks)."""
    rows = conn.execute(text("""
        SELECT c.document_id, d.content_hash, c.id, c.text, s.status FROM chunks c
        JOIN documents d ON d.id = c.document_id
        LEFT JOIN extraction_status s ON s.chunk_id = c.id
        WHERE c.document_id = ANY(:d) ORDER BY c.document_id, c.ordinal, c.id"""),
        {"d": sorted(set(document_ids))}).all()
    grouped: dict[str, list[Any]] = {}
    for r in rows:
        grouped.setdefault(r.document_id, []).append(r)
    return {d: DocumentText(d, rs[0].content_hash, tuple((r.id, r.text) for r in rs),
                            all(r.status == "completed" for r in rs))
            for d, rs in grouped.items()}


def documents_to_join(conn: Connection, document_ids: Sequence[str]) -> list[tuple[str, str]]:
    """Of ``document_ids``: (id, content hash) of those whose chunks are all completed and
    whose current version has not been joined yet (``documents.names_joined``)."""
    if not document_ids:
        return []
    return [(r.id, r.content_hash) for r in conn.execute(text("""
        SELECT d.id, d.content_hash FROM documents d
        WHERE d.id = ANY(:ids) AND d.names_joined IS DISTINCT FROM d.content_hash
          AND EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)
          AND NOT EXISTS (
              SELECT 1 FROM chunks c JOIN extraction_status s ON s.chunk_id = c.id
              WHERE c.document_id = d.id AND s.status <> 'completed')
        ORDER BY d.id"""), {"ids": sorted(set(document_ids))})]


def unjoined_documents(conn: Connection, scope: str, source: str | None = None) -> list[str]:
    """Documents of ``scope`` (and ``source``) whose current version is not joined yet."""
    return list(conn.execute(text("""
        SELECT id FROM documents
        WHERE scope = :scope AND (CAST(:source AS text) IS NULL OR source = :source)
          AND names_joined IS DISTINCT FROM content_hash ORDER BY id"""),
        {"scope": scope, "source": source}).scalars())


def mark_joined(conn: Connection, versions: Sequence[tuple[str, str]]) -> int:
    """Record (document id, content hash) versions as joined (a document changed since is
    left for its new version's join)."""
    if not versions:
        return 0
    return conn.execute(text("""
        UPDATE documents d SET names_joined = v.hash
        FROM unnest(CAST(:ids AS text[]), CAST(:hashes AS text[])) AS v(id, hash)
        WHERE d.id = v.id AND d.content_hash = v.hash"""),
        {"ids": [v[0] for v in versions], "hashes": [v[1] for v in versions]}).rowcount or 0


def unmark_joined(conn: Connection, chunk_ids: Sequence[str]) -> int:
    """Forget the join of the documents of ``chunk_ids`` (their graph was just written
    again: a write retried after its batch's join re-adds the short forms the join moved),
    so the next join of those documents decides again; joins are idempotent."""
    if not chunk_ids:
        return 0
    return conn.execute(text("""
        UPDATE documents SET names_joined = NULL
        WHERE names_joined IS NOT NULL
          AND id IN (SELECT document_id FROM chunks WHERE id = ANY(:ids))"""),
        {"ids": list(chunk_ids)}).rowcount or 0


_MOVED_RELATIONS = """
SELECT r.id, r.scope, r.subject_id, r.object_id, r.predicate, r.predicate_text, r.attribute,
       r.fact, array_agg(p.chunk_id ORDER BY p.chunk_id) AS chunk_ids
FROM relations r JOIN relation_provenance p ON p.relation_id = r.id
WHERE (r.subject_id = ANY(:ents) OR r.object_id = ANY(:ents)) AND p.chunk_id = ANY(:chunks)
GROUP BY r.id ORDER BY r.id
"""

# relations already stating a fact word for word between the same entities: a moved
# relation joins one of them (the extractor wrote the sentence's fact once with the full
# name, once with the short form, with or without a predicate text)
_SAME_FACT = """
SELECT m.i, min(r.id) AS id
FROM unnest(CAST(:subj AS text[]), CAST(:pred AS text[]), CAST(:obj AS text[]),
            CAST(:fact AS text[])) WITH ORDINALITY AS m(subject_id, predicate, object_id, fact, i)
JOIN relations r ON r.subject_id = m.subject_id AND r.object_id = m.object_id
                AND r.predicate = m.predicate AND r.fact = m.fact
WHERE NOT (r.id = ANY(:moving))
GROUP BY m.i
"""

# A copy of each moved relation under its new id, merged into an equal one by the rules of
# storage.graph_writes (higher confidence, then code point order, wins the fact)
_RELATION_COPY = f"""
INSERT INTO relations AS r (id, scope, subject_id, object_id, predicate, fact, confidence,
                            embedding, valid_at, invalid_at, attribute, predicate_text)
SELECT DISTINCT ON (m.new_id) m.new_id, o.scope, m.subject_id, m.object_id, o.predicate,
       o.fact, o.confidence, o.embedding, o.valid_at, o.invalid_at, o.attribute,
       o.predicate_text
FROM unnest(CAST(:old AS text[]), CAST(:new AS text[]), CAST(:subj AS text[]),
            CAST(:obj AS text[])) AS m(old_id, new_id, subject_id, object_id)
JOIN relations o ON o.id = m.old_id
ORDER BY m.new_id, o.confidence DESC, o.fact COLLATE "C"
{RELATION_MERGE}"""


def join_in_document(
    conn: Connection, chunk_ids: Sequence[str], into: Mapping[str, str],
    aliases: Mapping[str, Sequence[str]],
) -> None:
    """Within ``chunk_ids`` (one document's), move entity ``x``'s mentions to ``into[x]``.

    ``aliases``: names to add to each target entity. Relations of the moved mentions are
    re-keyed (:func:`storage.ids.relation_id`); one that would join an entity to itself is
    dropped, as resolution drops it."""
    if not into:
        return
    chunks, ents = sorted(set(chunk_ids)), sorted(into)
    # the rows first, in id order as writers lock them: a writer naming one of them now
    # waits, then finds it (kept, or gone and inserted again), never half deleted
    conn.execute(text("SELECT 1 FROM entities WHERE id = ANY(:ids) ORDER BY id FOR UPDATE"),
                 {"ids": sorted({*ents, *into.values()})})
    for target, names in sorted(aliases.items()):
        conn.execute(text("""
            UPDATE entities e SET aliases = e.aliases || ARRAY(
                SELECT DISTINCT a FROM unnest(CAST(:names AS text[])) a
                WHERE a <> ALL(e.aliases) AND a <> e.name ORDER BY a), updated_at = now()
            WHERE e.id = :id AND EXISTS (SELECT 1 FROM unnest(CAST(:names AS text[])) a
                                         WHERE a <> ALL(e.aliases) AND a <> e.name)"""),
            {"id": target, "names": list(names)})
    conn.execute(text("""
        INSERT INTO entity_provenance (entity_id, chunk_id, scope)
        SELECT m.target, p.chunk_id, p.scope
        FROM unnest(CAST(:ents AS text[]), CAST(:targets AS text[])) AS m(source, target)
        JOIN entity_provenance p ON p.entity_id = m.source AND p.chunk_id = ANY(:chunks)
        ON CONFLICT DO NOTHING"""),
        {"ents": ents, "targets": [into[e] for e in ents], "chunks": chunks})
    conn.execute(text("DELETE FROM entity_provenance WHERE entity_id = ANY(:ents) "
                      "AND chunk_id = ANY(:chunks)"), {"ents": ents, "chunks": chunks})
    rows = conn.execute(text(_MOVED_RELATIONS), {"ents": ents, "chunks": chunks}).all()
    copies: list[tuple[str, str, str, str]] = []
    facts: list[tuple[str, str, str, str]] = []
    groups = set()
    for r in rows:
        subj, obj = into.get(r.subject_id, r.subject_id), into.get(r.object_id, r.object_id)
        if subj != obj:
            copies.append((r.id, relation_id(subj, r.predicate, obj, r.predicate_text),
                           subj, obj))
            facts.append((subj, r.predicate, obj, r.fact))
            if r.attribute:
                groups.add((r.scope, subj, r.attribute))
    if copies:
        same = dict(conn.execute(text(_SAME_FACT), {
            "subj": [f[0] for f in facts], "pred": [f[1] for f in facts],
            "obj": [f[2] for f in facts], "fact": [f[3] for f in facts],
            "moving": [r.id for r in rows]}).all())
        first: dict[tuple[str, str, str, str], str] = {}  # two moved ones stating one fact
        for i, (fact, copy) in enumerate(zip(facts, copies, strict=True)):
            new = same.get(i + 1) or first.setdefault(fact, copy[1])
            copies[i] = (copy[0], new, copy[2], copy[3])
    supersede.lock_groups(conn, groups)
    if copies:
        conn.execute(text(_RELATION_COPY), {
            "old": [c[0] for c in copies], "new": [c[1] for c in copies],
            "subj": [c[2] for c in copies], "obj": [c[3] for c in copies]})
        conn.execute(text("""
            INSERT INTO relation_provenance (relation_id, chunk_id, scope)
            SELECT m.new_id, p.chunk_id, p.scope
            FROM unnest(CAST(:old AS text[]), CAST(:new AS text[])) AS m(old_id, new_id)
            JOIN relation_provenance p ON p.relation_id = m.old_id AND p.chunk_id = ANY(:chunks)
            ON CONFLICT DO NOTHING"""),
            {"old": [c[0] for c in copies], "new": [c[1] for c in copies], "chunks": chunks})
    old_ids = [r.id for r in rows]
    if old_ids:
        conn.execute(text("DELETE FROM relation_provenance WHERE relation_id = ANY(:ids) "
                          "AND chunk_id = ANY(:chunks)"), {"ids": old_ids, "chunks": chunks})
    delete_orphans(conn, old_ids, ents)
    supersede.settle(conn, groups)
