"""The two-hop corpus of the query loop's tests (tests/evidence_corpus.py plus passages like
the question) with passage vectors, for the surfaces' round tests."""

from __future__ import annotations

import json
from typing import Any

from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import DocumentIn, KnowledgeStore, evidence, ids
from tests.evidence_corpus import QUESTION, write_corpus
from tests.query.test_query_loop import ENOUGH, FILLERS, FOLLOW

__all__ = ["ENOUGH", "FOLLOW", "QUESTION", "llm_script", "seed_two_hop", "stops"]


def seed_two_hop(store: KnowledgeStore, embedder: MiniLMEmbeddings | None = None) -> None:
    """Store the two-hop corpus and the filler passages, passages embedded (recipe 'ppr')."""
    embedder = embedder or MiniLMEmbeddings()
    write_corpus(store, embedder)
    for i, text in enumerate(FILLERS):
        doc = DocumentIn("default", "evidence", f"filler-{i}.md", ids.content_hash(text),
                         title=f"filler {i}")
        store.sync_document(doc, [text])
    with store.transaction() as conn:
        evidence.fill_chunk_embeddings(conn, embedder.embed_documents)


def llm_script(answer: str) -> list[str]:
    """Replies of the fake LLM server (bench/llm_server.py) for one question that takes two
    rounds: the analysis, the planner's follow-up, the planner's "enough", the answer."""
    analysis = {"entities": ["Velmor Prize"], "keywords": ["founder", "childhood"],
                "intent": "factual"}
    return [json.dumps(analysis), json.dumps(FOLLOW), json.dumps(ENOUGH), answer]


def stops(rounds: list[dict[str, Any]]) -> list[str | None]:
    """The stop reasons of ``rounds``, in order."""
    return [r["stop"] for r in rounds]
