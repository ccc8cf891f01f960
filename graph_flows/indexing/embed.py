"""Embedding texts of the graph, batched: entities by their names, relations as facts, chunks
as their text.

An entity's vector is its name's (as HippoRAG's phrase nodes): the vector fallback matches
names a question words differently; what the entity did is matched through the fact and
passage vectors. Embedding "name: description" instead cost 1.5x the ingest time in no-LLM
mode (descriptions are copied sentences) for no retrieval gain on MuSiQue
(docs/bench/HISTORY.md, "Ingestion speed, no-LLM mode (target 30 chunks/s: missed)").

Vectors never enter the graph state: :func:`embed_marked` runs inside the ``write`` node and
its vectors go straight into that node's transaction; :func:`reembed_all` (``krag reembed``)
pages through the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.embeddings import Embeddings

from graph_flows.shared.untrusted import scan_chunk
from storage import KnowledgeStore, injection_spans, synonyms, vectors


def entity_text(name: str) -> str:
    """What an entity's vector represents: its name."""
    return name


def embed_texts(
    embeddings: Embeddings, texts: Sequence[str], batch_size: int
) -> list[list[float]]:
    """``embed_documents`` in batches of ``batch_size``; one vector per text, in order.

    Identical texts are embedded once (facts taken from one sentence often share their
    text), and texts go to the model shortest first, so each batch pads to similar lengths.
    """
    unique = sorted(set(texts), key=lambda t: (len(t), t))
    found: dict[str, list[float]] = {}
    step = max(1, batch_size)
    for start in range(0, len(unique), step):
        part = unique[start:start + step]
        found.update(zip(part, embeddings.embed_documents(part), strict=True))
    return [found[t] for t in texts]


def embed_marked(
    embeddings: Embeddings, resolved: dict[str, Any], batch_size: int,
    ready: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Vectors by id of the resolved entities and relations marked ``embed`` (those the store
    lacks, or whose text changed); texts in ``ready`` (text -> vector, from
    :func:`embed_candidates`) are not embedded again."""
    todo = [e for e in resolved["entities"] if e["embed"]] + \
        [r for r in resolved["relations"] if r["embed"]]
    texts = [entity_text(x["name"]) if "name" in x else x["fact"] for x in todo]
    known = dict(ready or {})
    missing = list(dict.fromkeys(t for t in texts if t not in known))
    known.update(zip(missing, embed_texts(embeddings, missing, batch_size), strict=True))
    return {x["id"]: known[t] for x, t in zip(todo, texts, strict=True)}


def embed_candidates(
    embeddings: Embeddings, validated: Sequence[dict[str, Any]], batch_size: int,
) -> dict[str, list[float]]:
    """Vectors (text -> vector) of what a batch's resolution can mark for embedding, computed
    before it: every validated name and fact of the batch. Resolution then only embeds what
    this missed (a stored entity's own spelling, when it has no vector yet), so a batch can
    be embedded before its store turn (:mod:`graph_flows.indexing.in_order`).

    Names already stored are embedded too: the int8 model quantises activations per run,
    so a vector depends slightly on the other texts of its run, and only a set of texts
    that does not depend on what other workers stored meanwhile gives the same vectors
    (hence the same synonym edges) with one worker or several."""
    texts = [entity_text(e["name"]) for c in validated for e in c["entities"]]
    texts += [r["fact"] for c in validated for r in c["relations"]]
    unique = list(dict.fromkeys(texts))
    return dict(zip(unique, embed_texts(embeddings, unique, batch_size), strict=True))


def reembed_all(
    store: KnowledgeStore, embeddings: Embeddings, *, batch_size: int = 64,
    on_progress: Callable[[int, int], Any] | None = None,
) -> dict[str, int]:
    """Re-embed every entity and relation of the store, then compute every entity's synonym
    edges again and scan every chunk for instruction-like text again; returns rows embedded
    per table (and ``synonyms``: entities computed; ``scanned``: chunks scanned).

    The HNSW indexes are dropped during the load and rebuilt at the end (much faster than
    maintaining them row by row). Each page of vectors is written in its own transaction.
    """
    step = max(1, batch_size)
    with store.connect() as conn:
        total = sum(vectors.count_rows(conn).values())
    done = dict.fromkeys(vectors.TABLES, 0)
    store.drop_vector_indexes()
    try:
        for table in vectors.TABLES:
            after = ""
            while True:
                with store.connect() as conn:
                    page = vectors.text_page(conn, table, after, step)
                if not page:
                    break
                found = embed_texts(embeddings, [body for _, body in page], batch_size)
                with store.transaction() as conn:
                    vectors.write_vectors(conn, table, [
                        (i, v) for (i, _), v in zip(page, found, strict=True)])
                done[table] += len(page)
                after = page[-1][0]
                if on_progress:
                    on_progress(sum(done.values()), total)
    finally:
        store.create_vector_indexes()
    with store.transaction() as conn:  # the synonym edges follow the new name vectors
        synonyms.reset(conn)
        done["synonyms"] = synonyms.fill(conn)
    with store.transaction() as conn:  # every chunk scanned again by this detector
        injection_spans.reset(conn)
        done["scanned"] = injection_spans.fill(conn, scan_chunk)
    return done
