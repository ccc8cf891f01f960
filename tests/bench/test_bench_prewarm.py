"""The latency benchmark reads the queried tables and their indexes into the page cache
before measuring (bench.retrieval_latency.prewarm), on a real server."""

from __future__ import annotations

import psycopg

from bench.retrieval_latency import prewarm
from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import KnowledgeStore
from tests.evidence_corpus import write_corpus


def test_prewarm_reads_the_tables_and_their_indexes(store: KnowledgeStore, db_url: str) -> None:
    write_corpus(store, MiniLMEmbeddings())
    assert "skipped" in prewarm(store)  # the extension is a superuser's to create
    with psycopg.connect(db_url, autocommit=True) as admin:  # as bench open_store() does
        admin.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    out = prewarm(store)
    if "skipped" in out:  # an external server without the extension says so
        assert "pg_prewarm" in out["skipped"]
        return
    blocks = out["blocks"]
    assert blocks["entities"] > 0 and blocks["relations"] > 0 and blocks["chunks"] > 0
    assert blocks["entities_pkey"] > 0 and "relations_embedding_bq_hnsw" in blocks  # indexes
    assert "krag_meta" not in blocks and out["seconds"] >= 0
    assert prewarm(store)["blocks"] == blocks  # again: the extension is already there
