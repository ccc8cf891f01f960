"""Embedding texts of the graph, batched: entities as "name: description", relations as facts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings


def entity_text(name: str, summary: str) -> str:
    """What an entity's vector represents."""
    return f"{name}: {summary}" if summary else name


def embed_texts(
    embeddings: Embeddings, texts: Sequence[str], batch_size: int
) -> list[list[float]]:
    """``embed_documents`` in batches of ``batch_size`` (order kept)."""
    out: list[list[float]] = []
    step = max(1, batch_size)
    for start in range(0, len(texts), step):
        out.extend(embeddings.embed_documents(list(texts[start:start + step])))
    return out


def embed_resolved(
    embeddings: Embeddings, resolved: dict[str, Any], batch_size: int
) -> dict[str, Any]:
    """``resolved`` with an ``embedding`` on every entity/relation marked ``embed``."""
    entities = [dict(e) for e in resolved["entities"]]
    relations = [dict(r) for r in resolved["relations"]]
    todo = [e for e in entities if e["embed"]] + [r for r in relations if r["embed"]]
    texts = [entity_text(x["name"], x["summary"]) if "name" in x else x["fact"] for x in todo]
    for item, vector in zip(todo, embed_texts(embeddings, texts, batch_size), strict=True):
        item["embedding"] = vector
    return {**resolved, "entities": entities, "relations": relations}


def reembed_all(
    store: Any, embeddings: Embeddings, *, batch_size: int = 64,
    on_progress: Any = None,
) -> dict[str, int]:
    """Re-embed every entity and relation of the store; returns rows embedded per table.

    The HNSW indexes are dropped during the load and rebuilt at the end (much faster than
    maintaining them row by row).
    """
    from storage import vectors

    totals = vectors.count_rows(store.engine)
    done = {table: 0 for table in vectors.TABLES}
    vectors.drop_vector_indexes(store.engine)
    try:
        for table in vectors.TABLES:
            for page in vectors.iter_texts(store.engine, table, max(1, batch_size)):
                vecs = embed_texts(embeddings, [body for _, body in page], batch_size)
                vectors.write_vectors(store.engine, table,
                                      [(i, v) for (i, _), v in zip(page, vecs, strict=True)])
                done[table] += len(page)
                if on_progress:
                    on_progress(sum(done.values()), sum(totals.values()))
    finally:
        vectors.create_vector_indexes(store.engine)
    return done
