"""A small seeded knowledge graph and scripted chat models for query-graph tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids

ENTITIES = [
    ("Ada Lovelace", "person", "English mathematician who wrote the first published program."),
    ("Charles Babbage", "person", "English inventor who designed mechanical computers."),
    ("Analytical Engine", "technology", "A proposed mechanical general-purpose computer."),
    ("Punched Cards", "technology", "Stiff paper cards encoding data by holes."),
    ("PostgreSQL", "technology", "An open-source relational database server."),
    ("pg_trgm", "technology", "A PostgreSQL extension for trigram similarity search."),
    ("pgvector", "technology", "A PostgreSQL extension for vector similarity search."),
    ("Acme Corp", "organization", "A company building knowledge-graph tools."),
    ("London", "location", "Capital city of England."),
    ("100% Cotton", "concept", "A fabric label meaning pure cotton."),
    ("snake_case", "concept", "Identifier style using underscores between words."),
]
RELATIONS = [
    ("Ada Lovelace", "relates_to", "Charles Babbage", "Ada Lovelace worked with Charles Babbage."),
    ("Ada Lovelace", "relates_to", "Analytical Engine",
     "Ada Lovelace wrote the first program for the Analytical Engine."),
    ("Charles Babbage", "relates_to", "Analytical Engine",
     "Charles Babbage designed the Analytical Engine in 1837."),
    ("Analytical Engine", "uses", "Punched Cards", "The Analytical Engine uses punched cards."),
    ("pg_trgm", "part_of", "PostgreSQL", "pg_trgm is an extension shipped with PostgreSQL."),
    ("pgvector", "relates_to", "PostgreSQL", "pgvector adds vector search to PostgreSQL."),
    ("Acme Corp", "uses", "PostgreSQL", "Acme Corp runs its knowledge graph on PostgreSQL."),
    ("Charles Babbage", "relates_to", "London", "Charles Babbage lived in London."),
]


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model whose ``bind_tools`` returns itself, so structured output works."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def scripted(*messages: AIMessage | str) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(
        [m if isinstance(m, AIMessage) else AIMessage(content=m) for m in messages]))


def analysis_message(entities: list[str], intent: str = "factual") -> AIMessage:
    return AIMessage(content="", tool_calls=[{
        "name": "QueryAnalysis", "id": "call_1",
        "args": {"entities": entities, "keywords": [], "intent": intent}}])


_EMBEDDER = MiniLMEmbeddings()


def seed_graph(store: KnowledgeStore, scope: str = "default", source: str = "history") -> None:
    """Write ENTITIES and RELATIONS (with real MiniLM embeddings) under one document."""
    text = "\n".join(r[3] for r in RELATIONS)
    doc = DocumentIn(scope=scope, source=source, uri=f"{source}.md",
                     content_hash=ids.content_hash(text + scope), title=source)
    (chunk,) = store.sync_document(doc, [text]).new_chunk_ids
    e_vecs = _EMBEDDER.embed_documents([f"{n}: {s}" for n, _, s in ENTITIES])
    ents = [EntityIn(n, t, scope, s, 0.9, v, (chunk,))
            for (n, t, s), v in zip(ENTITIES, e_vecs, strict=True)]
    eid = {e.name: e.id for e in ents}
    r_vecs = _EMBEDDER.embed_documents([r[3] for r in RELATIONS])
    rels = [RelationIn(eid[s], p, eid[o], f, scope, 0.8, v, chunk_ids=(chunk,))
            for (s, p, o, f), v in zip(RELATIONS, r_vecs, strict=False)]
    store.write_graph(ents, rels)


@pytest.fixture
def seeded_store(store: KnowledgeStore) -> KnowledgeStore:
    seed_graph(store)
    return store


@pytest.fixture
def resources(seeded_store: KnowledgeStore) -> Iterator[Resources]:
    """Query-graph resources on the seeded store, in no-LLM mode unless a test swaps it."""
    settings = Settings(_env_file=None, chat_model="none", database_url=None)
    res = Resources(settings=settings, store=seeded_store, embeddings=_EMBEDDER,
                    chat_override=NO_LLM)
    with use_resources(res):
        yield res
