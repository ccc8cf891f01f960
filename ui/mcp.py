"""MCP server (official ``mcp`` SDK, ``MCPServer`` - FastMCP's name since mcp 2): the knowledge
graph as tools for any MCP client, over stdio or streamable HTTP (``krag mcp``).

Tools, all confined to the server's one scope (``--scope``, default ``KRAG_SCOPE``):

- ``kag_query``: the query graph without the answer step (analysis, retrieval, context):
  entities, relations with dates and sources, a formatted context and counts; ``max_hops`` > 1
  adds facts up to that many hops from the entities found (:mod:`storage.multihop`);
- ``recall``: facts matching a text (LIKE + vector), currently valid ones or as of a date;
- ``remember``: store a caller's fact through the extraction validation
  (:func:`~graph_flows.indexing.extraction.validation.validate_extraction`) with MCP provenance;
- ``correct``: invalidate a fact (``invalid_at``; nothing is deleted), optionally stating the
  corrected sentence.

Anticipated failures (limits, unknown ids, rejected facts) come back as tool errors whose text
says what to change; nothing else from the server's internals reaches the client.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from langgraph.graph import END, START, StateGraph
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.embed import entity_text
from graph_flows.indexing.extraction.schema import ExtractedEntity, ExtractedRelation, Extraction
from graph_flows.indexing.extraction.types import normalize_attribute
from graph_flows.indexing.extraction.validation import parse_valid_at, validate_extraction
from graph_flows.indexing.resolve import parse_date
from graph_flows.query import analyze, sections
from graph_flows.query.context import QueryContext
from graph_flows.query.nodes import analyze_query, build_context, retrieve_knowledge
from graph_flows.query.state import QueryInput, QueryState
from graph_flows.shared.resources import get_resources
from storage import EntityIn, RelationIn, facts, multihop, scopes, search

log = logging.getLogger(__name__)

MAX_HOPS = 3
MAX_LIMIT = 100
MAX_RECALL = 100
MAX_REASON_CHARS = 1000
RECALL_MIN_SIMILARITY = 0.3
"""Vector hits of ``recall`` below this cosine similarity are noise (MiniLM), not matches."""

_DROP_TEXT = {
    "injection": "it reads like instructions to a model (prompt injection), not a fact",
    "low_confidence": "its confidence is below the minimum of {min}",
    "bad_name": "the subject or object name is empty, has no letter or digit, or is over "
                "200 characters",
    "self_loop": "subject and object are the same entity",
    "unknown_endpoint": "its subject or object was rejected",
    "over_limit": "it exceeds the per-fact limits",
    "duplicate": "it duplicates itself",
}

# The query graph without generate_response: the same nodes, so the same limits and methods.
_builder = StateGraph(QueryState, context_schema=QueryContext, input_schema=QueryInput)
_builder.add_node(analyze_query)
_builder.add_node(retrieve_knowledge)
_builder.add_node(build_context)
_builder.add_edge(START, "analyze_query")
_builder.add_edge("analyze_query", "retrieve_knowledge")
_builder.add_edge("retrieve_knowledge", "build_context")
_builder.add_edge("build_context", END)
retrieval_graph = _builder.compile(name="query_retrieval")


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _valid_at(fact: dict[str, Any] | Any, when: datetime | None) -> bool:
    """Valid now (``when`` None: not invalidated, or invalidated in the future) or at ``when``
    (started by then, or undated, and not yet invalidated)."""
    get = fact.get if isinstance(fact, dict) else lambda k: getattr(fact, k)
    invalid, valid = get("invalid_at"), get("valid_at")
    at = when or datetime.now(UTC)
    if invalid is not None and _aware(invalid) <= at:
        return False
    return not (when is not None and valid is not None and _aware(valid) > when)


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ToolError(message)


def _relation_out(f: dict[str, Any]) -> dict[str, Any]:
    out = {k: f.get(k) for k in ("id", "subject", "predicate", "object", "fact", "confidence")}
    out.update(subject_id=f["subject_id"], object_id=f["object_id"],
               valid_at=_iso(f.get("valid_at")), invalid_at=_iso(f.get("invalid_at")),
               sources=f.get("sources", []), methods=list(f.get("methods", [])))
    if f.get("label"):
        out["label"] = f["label"]
    if f.get("hop") is not None:
        out["hop"] = f["hop"]
    return out


def _entity_out(e: dict[str, Any]) -> dict[str, Any]:
    return {"id": e["id"], "name": e["name"], "type": e["type"],
            "description": e.get("summary", ""), "confidence": e.get("confidence"),
            "methods": list(e.get("methods", []))}


class KnowledgeTools:
    """The four tools as plain methods on one scope (the MCP layer only adds schemas)."""

    def __init__(self, scope: str | None = None) -> None:
        self._scope = scope

    @property
    def scope(self) -> str:
        return self._scope or get_resources().settings.scope

    # -- kag_query -------------------------------------------------------------------------
    def kag_query(
        self, query: str, entities: list[str] | None = None, include_relations: bool = True,
        max_hops: int = 1, limit: int = 20, source_id: str | None = None,
    ) -> dict[str, Any]:
        _check(1 <= max_hops <= MAX_HOPS, f"max_hops must be 1..{MAX_HOPS}, got {max_hops}.")
        _check(1 <= limit <= MAX_LIMIT, f"limit must be 1..{MAX_LIMIT}, got {limit}.")
        if source_id is not None:
            source_id = source_id.strip()
            _check(0 < len(source_id) <= 500, "source_id must be 1..500 characters.")
        res, scope = get_resources(), self.scope
        # Named entities anchor the query: no vector fill-up diluting them.
        ctx = QueryContext(entity_limit=limit, fact_limit=limit, max_hops=max_hops,
                           fallback_ratio=0.0 if entities else 0.5)
        try:
            state = retrieval_graph.invoke(
                {"query": query, "scope": scope, "entity_hints": list(entities or [])},
                context=ctx)
        except analyze.InvalidQueryError as exc:
            raise ToolError(str(exc)) from None
        found = [f for f in state.get("facts", []) if _valid_at(f, None)]
        ents = list(state.get("entities", []))
        with res.store.engine.connect() as conn:
            if source_id:
                found = [f for f in found
                         if any(s["source"] == source_id for s in f.get("sources", []))]
                keep = facts.entities_with_source(conn, scope, [e["id"] for e in ents],
                                                  source_id)
                ents = [e for e in ents if e["id"] in keep]
            if include_relations and max_hops > 1:
                seeds = [e["id"] for e in ents if e.get("methods") != ["endpoint"]]
                self._expand(conn, scope, ents, found, seeds, max_hops, limit, source_id)
        rels = found[:limit] if include_relations else []
        ends = {f[k] for f in rels for k in ("subject_id", "object_id")}
        retrieved = [e for e in ents if e.get("methods") != ["endpoint"]][:limit]
        shown = {e["id"] for e in retrieved}
        ents = retrieved + [e for e in ents if e["id"] in ends and e["id"] not in shown]
        sections.label_facts(rels)
        definitions = sections.definitions_text(ents)
        facts_text = sections.facts_text(rels)
        context = f"Knowledge Graph Results for: {query.strip()[:500]}\n\n## Entities\n" + (
            definitions or "(none found)")
        if include_relations:
            context += "\n\n## Facts\n" + (facts_text or "(none found)")
        return {
            "scope": scope, "query": state.get("query", query),
            "entities": [_entity_out(e) for e in ents],
            "relations": [_relation_out(f) for f in rels],
            "context": context, "definitions": definitions, "facts_text": facts_text,
            "total_entities": len(ents), "total_relations": len(rels),
            "total": len(ents) + len(rels), "errors": list(state.get("errors", [])),
        }

    def _expand(self, conn: Any, scope: str, ents: list[dict], found: list[dict],
                seeds: list[str], max_hops: int, limit: int, source: str | None) -> None:
        """Append facts within ``max_hops`` of ``seeds`` (and their endpoints) until ``limit``."""
        have = {f["id"] for f in found}
        known = {e["id"] for e in ents}
        chain = scopes.scope_chain(conn, scope)  # own scope + ancestors
        hops = multihop.neighbour_facts(conn, chain, seeds, max_hops,
                                        min(multihop.MAX_LIMIT, 4 * limit), source=source)
        new = [h for h in hops if h.fact.id not in have][: max(0, limit - len(found))]
        sources = search.fact_sources(conn, [h.fact.id for h in new])
        missing = {i for h in new for i in (h.fact.subject_id, h.fact.object_id)} - known
        for e in search.entities_by_ids(conn, scope, sorted(missing)):
            ents.append({"id": e.id, "name": e.name, "type": e.type, "summary": e.summary,
                         "confidence": e.confidence, "methods": ["endpoint"]})
        for h in new:
            f = h.fact
            found.append({"id": f.id, "subject_id": f.subject_id, "predicate": f.predicate,
                          "object_id": f.object_id, "fact": f.fact, "confidence": f.confidence,
                          "valid_at": f.valid_at, "invalid_at": f.invalid_at,
                          "subject": h.subject, "object": h.object, "hop": h.hop,
                          "methods": ["graph"], "sources": sources.get(f.id, [])})

    # -- recall ----------------------------------------------------------------------------
    def recall(self, query: str, limit: int = 10, as_of: str | None = None) -> dict[str, Any]:
        _check(1 <= limit <= MAX_RECALL, f"limit must be 1..{MAX_RECALL}, got {limit}.")
        try:
            query, _ = analyze.validate_input(query, [])
        except analyze.InvalidQueryError as exc:
            raise ToolError(str(exc)) from None
        when = None
        if as_of is not None and as_of.strip():
            when = parse_date(parse_valid_at(as_of))
            _check(when is not None, f"as_of {as_of!r} is not a date: use YYYY, YYYY-MM, "
                   "YYYY-MM-DD or an ISO 8601 timestamp.")
        res, scope = get_resources(), self.scope
        terms = analyze.search_terms(analyze.heuristic_analysis(query, [])) or [query[:200]]
        pool = min(400, 4 * limit)
        errors: list[str] = []
        scores: dict[str, float] = {}
        rows: dict[str, Any] = {}
        with res.store.engine.connect() as conn:
            for hit in search.fact_like(conn, scope, terms, pool, when):
                rows[hit.fact.id], scores[hit.fact.id] = hit.fact, 1.0
            try:
                vector = res.embeddings.embed_query(query)
            except Exception as exc:  # degrade to text matches only
                errors.append(f"embedding the query failed ({type(exc).__name__}); "
                              "text matches only")
                vector = None
            if vector is not None:
                for hit in search.fact_vector(conn, scope, vector, pool, when):
                    if hit.fact.id in rows or hit.similarity >= RECALL_MIN_SIMILARITY:
                        rows.setdefault(hit.fact.id, hit.fact)
                        scores[hit.fact.id] = scores.get(hit.fact.id, 0.0) + hit.similarity
            kept = sorted(rows.values(),  # both searches already kept facts valid `when`
                          key=lambda f: (-scores[f.id], -f.confidence, f.id))[:limit]
            names = {e.id: e.name for e in search.entities_by_ids(
                conn, scope, sorted({i for f in kept for i in (f.subject_id, f.object_id)}))}
            sources = search.fact_sources(conn, [f.id for f in kept])
        out = [{"id": f.id, "subject": names.get(f.subject_id, ""), "predicate": f.predicate,
                "object": names.get(f.object_id, ""), "fact": f.fact,
                "confidence": f.confidence, "valid_at": _iso(f.valid_at),
                "invalid_at": _iso(f.invalid_at), "score": round(scores[f.id], 4),
                "sources": sources.get(f.id, [])} for f in kept]
        return {"scope": scope, "query": query, "as_of": _iso(when), "facts": out,
                "total": len(out), "errors": errors}

    # -- remember --------------------------------------------------------------------------
    def _prepare(
        self, subject: str, predicate: str, object_: str, fact: str, subject_type: str,
        object_type: str, confidence: float, valid_at: str | None,
        attribute: str | None = None,
    ) -> tuple[list[EntityIn], RelationIn, dict[str, Any]]:
        """Validate like extracted knowledge, resolve to stored entities, embed."""
        _check(isinstance(fact, str) and bool(fact.strip()), "fact must be a non-empty sentence.")
        if valid_at is not None and valid_at.strip():
            _check(parse_valid_at(valid_at) is not None,
                   f"valid_at {valid_at!r} is not a date: use YYYY, YYYY-MM, YYYY-MM-DD or "
                   "an ISO 8601 timestamp.")
        min_conf = IndexingContext().min_confidence
        ex = Extraction(
            entities=[ExtractedEntity(name=subject, type=subject_type, confidence=confidence),
                      ExtractedEntity(name=object_, type=object_type, confidence=confidence)],
            relations=[ExtractedRelation(subject=subject, predicate=predicate, object=object_,
                                         fact=fact, confidence=confidence,
                                         valid_at=valid_at or None, attribute=attribute)])
        result = validate_extraction(ex, min_confidence=min_conf)
        if not result.relations:
            reasons = [r for r in _DROP_TEXT if result.dropped.get(r)]
            primary = [r for r in reasons if r != "unknown_endpoint"] or reasons
            text = "; ".join(_DROP_TEXT[r].format(min=min_conf) for r in primary)
            raise ToolError(f"remember rejected the fact: {text or 'it failed validation'} "
                            f"(dropped: {result.dropped}).")
        rel = result.relations[0]
        by_name = {e.name: e for e in result.entities}
        res, scope = get_resources(), self.scope
        chosen: list[tuple[str, str, float]] = []
        with res.store.engine.connect() as conn:
            for name in (rel.subject, rel.object):
                ent = by_name[name]
                stored = facts.find_entity(conn, scope, ent.name, ent.type)
                chosen.append((*(stored or (ent.name, ent.type)), ent.confidence))
        vectors: list[list[float] | None] = [None, None, None]
        warnings: list[str] = []
        try:
            vectors = res.embeddings.embed_documents(
                [entity_text(chosen[0][0], ""), entity_text(chosen[1][0], ""), rel.fact])
        except Exception as exc:  # stored without vectors; `krag reembed` fills them
            warnings.append(f"embedding failed ({type(exc).__name__}); stored without vectors")
        ents = [EntityIn(name, type_, scope, "", conf, vec)
                for (name, type_, conf), vec in zip(chosen, vectors[:2], strict=True)]
        relation = RelationIn(ents[0].id, rel.predicate, ents[1].id, rel.fact, scope,
                              rel.confidence, vectors[2], valid_at=parse_date(rel.valid_at),
                              attribute=rel.attribute)
        info = {"subject": ents[0].name, "subject_type": ents[0].type,
                "predicate": rel.predicate, "object": ents[1].name,
                "object_type": ents[1].type, "fact": rel.fact, "confidence": rel.confidence,
                "valid_at": _iso(relation.valid_at), "attribute": rel.attribute,
                "adjusted": {k: v for k, v in result.dropped.items() if k not in _DROP_TEXT},
                "warnings": warnings}
        return ents, relation, info

    def remember(
        self, subject: str, predicate: str, object: str, fact: str,  # noqa: A002
        subject_type: str = "concept", object_type: str = "concept", confidence: float = 0.9,
        valid_at: str | None = None, attribute: str | None = None,
    ) -> dict[str, Any]:
        if attribute is not None and attribute.strip():
            _check(normalize_attribute(attribute) is not None,
                   f"attribute {attribute[:40]!r} is not a property name: use snake_case "
                   "letters, digits and underscores (at most 40), e.g. 'ceo'.")
        ents, relation, info = self._prepare(subject, predicate, object, fact, subject_type,
                                             object_type, confidence, valid_at, attribute)
        with get_resources().store.transaction() as conn:
            fact_id = facts.remember_fact(conn, self.scope, ents, relation, relation.fact)
            closed = facts.superseded_by(conn, fact_id)
        return {"stored": True, "fact_id": fact_id, "scope": self.scope, **info,
                "superseded": closed}

    # -- correct ---------------------------------------------------------------------------
    def correct(
        self, fact_id: str, reason: str = "", replacement: str | None = None
    ) -> dict[str, Any]:
        fact_id = (fact_id or "").strip()
        _check(0 < len(fact_id) <= 200, "fact_id must be a fact id such as 'rel_…' "
               "(kag_query and recall return them).")
        reason = " ".join(str(reason or "").split())[:MAX_REASON_CHARS]
        res, scope = get_resources(), self.scope
        with res.store.engine.connect() as conn:
            old = facts.get_fact(conn, scope, fact_id)
        if old is None:
            raise ToolError(f"no fact {fact_id!r} in scope {scope!r}; kag_query and recall "
                            "return the ids of existing facts.")
        prepared = None
        if replacement is not None and replacement.strip():
            prepared = self._prepare(old.subject, old.fact.predicate, old.object, replacement,
                                     old.subject_type, old.object_type, 0.9, None,
                                     old.attribute)
        with res.store.transaction() as conn:
            invalid_at = facts.invalidate_fact(conn, scope, fact_id, reason)
            new_id = None
            if prepared is not None:
                ents, relation, _ = prepared
                new_id = facts.remember_fact(conn, scope, ents, relation, relation.fact)
        log.info("fact %s in scope %s invalidated: %r", fact_id, scope, reason)
        out: dict[str, Any] = {
            "fact_id": fact_id, "scope": scope, "invalidated": True,
            "was_already_invalid": old.fact.invalid_at is not None,
            "invalid_at": _iso(invalid_at), "fact": old.fact.fact, "reason": reason,
            "replacement_id": new_id}
        if prepared is not None:
            out["replacement"] = prepared[2]
        return out


_INSTRUCTIONS = (
    "Knowledge graph of the documents indexed in krag (one scope). Use kag_query for questions "
    "about entities and how they relate, recall to look up stored facts, remember to store a "
    "new fact (validated), and correct to mark a fact wrong (it stays in history as invalid).")


def build_server(scope: str | None = None) -> MCPServer:
    """The MCP server with the four tools bound to ``scope`` (default: KRAG_SCOPE)."""
    tools = KnowledgeTools(scope)
    server = MCPServer("krag", instructions=_INSTRUCTIONS, log_level="WARNING")

    @server.tool(description=(
        "Query the knowledge graph for entities and their relationships. Use this for "
        "questions about concepts, people, organizations, or how things relate to each other "
        "in the indexed documents. Returns entities, relations (facts with subject, predicate, "
        "object, dates and sources), a formatted context for an LLM, and counts."))
    def kag_query(
        query: Annotated[str, Field(description="Natural language question or search terms")],
        entities: Annotated[list[str] | None, Field(
            description="Optional: specific entity names to search for (anchors the search; "
                        "at most 50)")] = None,
        include_relations: Annotated[bool, Field(
            description="Include relationships between entities")] = True,
        max_hops: Annotated[int, Field(
            ge=1, le=MAX_HOPS,
            description="Maximum relationship hops for graph traversal (1..3)")] = 1,
        limit: Annotated[int, Field(
            ge=1, le=MAX_LIMIT,
            description="Maximum number of entities (and of relations) to return (1..100)")]
        = 20,
        source_id: Annotated[str | None, Field(
            description="Optional: limit search to specific KB source (as `krag status` "
                        "lists it)")] = None,
    ) -> dict[str, Any]:
        return tools.kag_query(query, entities, include_relations, max_hops, limit, source_id)

    @server.tool(description=(
        "Search stored facts by text and meaning. Returns only facts valid now, or valid at "
        "`as_of` when given, with their ids (for `correct`), dates and sources."))
    def recall(
        query: Annotated[str, Field(description="What to look for")],
        limit: Annotated[int, Field(ge=1, le=MAX_RECALL,
                                    description="Maximum facts to return (1..100)")] = 10,
        as_of: Annotated[str | None, Field(
            description="Optional date (YYYY, YYYY-MM, YYYY-MM-DD or ISO 8601): facts valid "
                        "then instead of now")] = None,
    ) -> dict[str, Any]:
        return tools.recall(query, limit, as_of)

    @server.tool(description=(
        "Store a fact: subject -predicate-> object, with the sentence stating it. Checked like "
        "extracted knowledge (prompt-injection filter, type normalisation, minimum "
        "confidence) and linked to existing entities of the same name. Returns the fact id."))
    def remember(
        subject: Annotated[str, Field(description="Subject entity name")],
        predicate: Annotated[str, Field(
            description="Relation: uses, contains, part_of, defines, mentions or relates_to "
                        "(other wording is mapped)")],
        object: Annotated[str, Field(description="Object entity name")],  # noqa: A002
        fact: Annotated[str, Field(description="The fact as one self-contained sentence")],
        subject_type: Annotated[str, Field(
            description="concept, person, organization, technology, location or section")]
        = "concept",
        object_type: Annotated[str, Field(
            description="concept, person, organization, technology, location or section")]
        = "concept",
        confidence: Annotated[float, Field(ge=0.0, le=1.0,
                                           description="How sure (0..1)")] = 0.9,
        valid_at: Annotated[str | None, Field(
            description="Optional date from which the fact holds (YYYY, YYYY-MM, YYYY-MM-DD "
                        "or ISO 8601)")] = None,
        attribute: Annotated[str | None, Field(
            description="Optional single-valued property of the subject this fact sets "
                        "(e.g. 'ceo', 'headquarters'): an older fact on the same subject and "
                        "attribute with another object is then marked invalid, kept in "
                        "history")] = None,
    ) -> dict[str, Any]:
        return tools.remember(subject, predicate, object, fact, subject_type, object_type,
                              confidence, valid_at, attribute)

    @server.tool(description=(
        "Mark a fact as no longer valid (sets invalid_at; the fact stays in history and is "
        "hidden from kag_query and recall). Optionally give the corrected sentence, stored as "
        "a new fact between the same entities."))
    def correct(
        fact_id: Annotated[str, Field(description="Id of the fact (rel_…) from kag_query or "
                                                  "recall")],
        reason: Annotated[str, Field(
            description="Why it is wrong (stored with the fact, returned and logged)")] = "",
        replacement: Annotated[str | None, Field(
            description="Optional corrected fact sentence (same subject, predicate and "
                        "object)")] = None,
    ) -> dict[str, Any]:
        return tools.correct(fact_id, reason, replacement)

    return server


Transport = Literal["stdio", "http"]


def serve(transport: Transport = "stdio", host: str = "127.0.0.1", port: int = 8765,
          scope: str | None = None) -> None:
    """Open the store and models (before the handshake, so errors show), then serve."""
    with contextlib.redirect_stdout(sys.stderr):  # stdout belongs to the protocol
        resources = get_resources()
    server = build_server(scope or resources.settings.scope)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")


if __name__ == "__main__":  # python -m ui.mcp [krag mcp options]
    from ui.cli.app import main

    main(["mcp", *sys.argv[1:]])
