"""Node functions of the indexing graph. Each reads the context, does one thing and returns
only the state keys it changed. Resources come from
:func:`graph_flows.indexing.resources.get_resources`; nothing about a run is kept outside its
state."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.config import get_stream_writer
from langgraph.runtime import Runtime

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.documents.clean import clean_text
from graph_flows.indexing.documents.loaders import load_path, load_text
from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure
from graph_flows.indexing.embed import embed_marked, embed_texts
from graph_flows.indexing.extraction.llm import extract_batch
from graph_flows.indexing.extraction.schema import Extraction
from graph_flows.indexing.extraction.validation import validate_extraction
from graph_flows.indexing.join_names import join_documents, join_left_over
from graph_flows.indexing.resolve import resolve_batch
from graph_flows.indexing.resources import get_resources
from graph_flows.indexing.state import IndexingState
from graph_flows.shared.control_chars import CONTROL
from graph_flows.shared.dates import parse_date
from graph_flows.shared.untrusted import scan_chunk
from storage import (
    ChunkOutcome,
    DocumentIn,
    EntityIn,
    KnowledgeStore,
    RelationIn,
    ids,
    synonyms,
)
from storage.claims import local_worker_id, release_dead_local_claims, requeue_failed
from storage.evidence import fill_chunk_evidence

SYNC_GROUP_DOCS = 100
"""Document versions stored per transaction at most by ``sync_documents``: one statement
round and one temporary table for the group instead of one per document (the multihop
corpus's 2,884 passages: HISTORY: ingest_docphase.md)."""
SYNC_GROUP_CHARS = 1_000_000
"""Characters of cleaned text per group at most (a larger document is stored alone)."""

Ctx = Runtime[IndexingContext]


def context_of(runtime: Ctx) -> IndexingContext:
    """The run context as the dataclass (Studio may hand over a dict, or nothing)."""
    return IndexingContext.coerce(getattr(runtime, "context", None))


def source_name(path: str, explicit: str | None = None) -> str:
    """Source of a path: the explicit name, else the file or folder name."""
    return explicit or Path(path).resolve().name or "root"


def run_sources(inputs: dict[str, Any]) -> list[str]:
    """The sources an input touches, in order (texts go to ``source`` or 'inline').

    With neither paths nor texts (a worker sharing pending chunks), the given source if any.
    """
    names = [source_name(p, inputs.get("source")) for p in inputs.get("paths") or []]
    if inputs.get("texts") or inputs.get("records"):
        names.append(inputs.get("source") or "inline")
    if not names and inputs.get("source"):
        names.append(inputs["source"])
    return list(dict.fromkeys(names))


# -- nodes ----------------------------------------------------------------------------------
def prepare(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Resolve the extraction mode, the worker id and what to claim (and whether the next
    batch is extracted while one is stored); requeue failed chunks."""
    ctx = context_of(runtime)
    res = get_resources(ctx)
    scope = state.get("scope") or res.settings.scope
    sources = run_sources(state)
    claim_source = sources[0] if len(sources) == 1 else None
    requeued = 0
    if state.get("retry_failed"):
        with res.store.transaction() as conn:
            requeued = requeue_failed(conn, scope, claim_source)
    return {"mode": "llm" if res.llm_mode else "no-llm", "model": res.model_spec,
            "notice": res.notice, "worker": ctx.worker_id or local_worker_id(),
            "claim_scope": scope, "claim_source": claim_source, "chunks": {"requeued": requeued},
            "look_ahead": bool(res.llm_mode and ctx.look_ahead),
            "llm": {"calls": 0, "input_tokens": 0, "output_tokens": 0}}


def sync_documents(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Load, clean, chunk and store each document version; new chunks become pending work.

    Documents are streamed and stored in groups (:data:`SYNC_GROUP_DOCS` documents or
    :data:`SYNC_GROUP_CHARS` characters of text at most, or one larger document), so memory
    stays bounded by one group.
    """
    ctx = context_of(runtime)
    res = get_resources(ctx)
    tally = _SyncTally(res.store, state["claim_scope"], ctx, report=get_stream_writer())
    max_bytes = res.settings.max_upload_mb * 1024 * 1024
    for path in state.get("paths") or []:
        source = source_name(path, state.get("source"))
        for item in load_path(Path(path), max_bytes=max_bytes):
            tally.add(item, source)
    for n, text in enumerate(state.get("texts") or [], 1):
        try:
            item: LoadedDocument | LoadFailure = load_text(text, uri=f"inline-{n}")
        except ValueError as exc:
            item = LoadFailure(f"inline-{n}", str(exc))
        tally.add(item, state.get("source") or "inline")
    for rec in state.get("records") or []:
        try:
            item = load_text(rec["text"], uri=rec["uri"], title=rec.get("title"))
        except ValueError as exc:
            item = LoadFailure(rec["uri"], str(exc))
        tally.add(item, state.get("source") or "inline")
    tally.flush()
    res.store.flush_commits()  # the versions stored are on disk before any is claimed
    return {"documents": dict(tally.docs), "chunks": dict(tally.chunks),
            "removed": dict(tally.removed), "failures": tally.failures}


def claim_batch(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Claim the next pending chunks (an empty batch ends the run)."""
    ctx = context_of(runtime)
    store = get_resources(ctx).store
    batch = claim_chunks(store, state, ctx)
    # the run's last claim: documents a stopped run wrote but did not join are joined now
    joined = join_left_over(store, state["claim_scope"], state.get("claim_source")) if (
        not batch and ctx.short_forms) else []
    return {"batch": batch, "extractions": [], "validated": [], "resolved": {},
            "chunks": {"claimed": len(batch)}, "merges": joined}


def extract(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Extract the batch, ``concurrency`` chunks at a time (every call ends in this step).

    The mode chosen in ``prepare`` holds for the whole run: a model that becomes reachable
    mid-run (probes expire) does not switch a no-LLM run to the LLM halfway."""
    ctx = context_of(runtime)
    model = get_resources(ctx).chat_model if state.get("mode") == "llm" else None
    results = extract_batch(state["batch"], model, concurrency=ctx.concurrency)
    usage = {"calls": sum(r["llm_calls"] for r in results),
             "input_tokens": sum(r["input_tokens"] for r in results),
             "output_tokens": sum(r["output_tokens"] for r in results)}
    return {"extractions": results, "llm": usage}


def validate(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Drop injected, low-confidence, malformed items and dangling relations; count why."""
    ctx = context_of(runtime)
    scope_of = {c["id"]: c["scope"] for c in state["batch"]}
    validated = []
    for result in state["extractions"]:
        if result["extraction"] is None:
            continue
        checked = validate_extraction(Extraction.model_validate(result["extraction"]),
                                      min_confidence=ctx.min_confidence)
        dropped = Counter(checked.dropped)
        dropped["over_limit"] += result["over_limit"]
        dropped["malformed"] += result.get("malformed", 0)
        validated.append({
            "chunk_id": result["chunk_id"], "scope": scope_of[result["chunk_id"]],
            "entities": [e.model_dump() for e in checked.entities],
            "relations": [r.model_dump() for r in checked.relations],
            "dropped": {k: v for k, v in dropped.items() if v},
            "usage": {k: result[k] for k in ("llm_calls", "input_tokens", "output_tokens")}})
    return {"validated": validated}


def resolve(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Merge mentions into entities: exact names, then near duplicates of the same type (a
    document's short forms are joined to its full names once it is stored: ``write``)."""
    ctx = context_of(runtime)
    found = resolve_batch(get_resources(ctx).store, state["validated"], ctx.resolution_threshold)
    outcomes = []
    for chunk in state["validated"]:
        dropped = Counter(chunk["dropped"])
        dropped.update(found.dropped.get(chunk["chunk_id"], {}))
        outcomes.append({"chunk_id": chunk["chunk_id"], "entity_count": len(chunk["entities"]),
                         "relation_count": found.relation_counts.get(chunk["chunk_id"], 0),
                         "dropped": dict(dropped), **chunk["usage"]})
    return {"resolved": {"entities": found.entities, "relations": found.relations,
                         "outcomes": outcomes}, "merges": found.merges}


def write(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Embed what the store lacks, then one transaction: upsert the batch's graph and mark its
    chunks completed; compute the new entities' synonym edges; fail the chunks whose
    extraction failed; join the short forms of the documents the batch completed; store the
    batch's chunk vectors and instruction-like spans.

    The chunk texts are embedded on a thread of this step while the graph is written (the
    model and PostgreSQL then use the two cores at once); the thread ends inside the step.
    The vectors stay local to this step (the checkpointed state carries ids and texts only).
    """
    ctx = context_of(runtime)
    res = get_resources(ctx)
    vectors = embed_marked(res.embeddings, state["resolved"], ctx.embed_batch_size)
    with ThreadPoolExecutor(1, thread_name_prefix="chunk-vectors") as pool:
        chunk_vectors = pool.submit(chunk_vectors_of, res.embeddings, state["batch"],
                                    ctx.embed_batch_size)
        written = write_resolved(state, ctx, vectors)
        found = chunk_vectors.result()
    store_chunk_evidence(res.store, found)
    return written


def write_resolved(state: IndexingState, ctx: IndexingContext,
                   vectors: dict[str, list[float]], *, durable: bool = True) -> dict[str, Any]:
    """The part of ``write`` that reads and writes the graph (``vectors``: by entity and
    relation id, those :func:`embed_marked` computed): what must happen in claim order.
    ``durable=False``: its graph writes commit without waiting for the disk (the caller
    flushes them, ``KnowledgeStore.flush_commits``)."""
    res = get_resources(ctx)
    data = state["resolved"]
    outcomes = [ChunkOutcome(**o) for o in data["outcomes"]]
    # A stored entity's longer description (and its vector) is written by the entity
    # upsert itself, by the same rule (storage.graph_writes): one new row version of the
    # entity, and one entry in each of its indexes (HNSW included), not one for the
    # description and another for its new aliases or confidence
    res.store.write_graph([_entity_in(e, vectors.get(e["id"])) for e in data["entities"]],
                          [_relation_in(r, vectors.get(r["id"])) for r in data["relations"]],
                          completed=outcomes, durable=durable)
    # a new store's tables get planner statistics now, not at autovacuum's next visit (up
    # to a minute of batches planned without them: storage.planner_stats)
    res.store.analyze_new_tables()
    # Synonym edges of the batch's new entities, once committed: of two workers writing
    # near names at once, the later one's computation finds the other's entities.
    with res.store.transaction(durable=durable) as conn:
        synonyms.fill(conn, entity_ids=[e["id"] for e in data["entities"]])
    failures = _fail_chunks(res.store, state["batch"], state["extractions"])
    # documents this batch completed: their short forms joined into their full names
    joined = join_documents(res.store, sorted({c["document_id"] for c in state["batch"]
                                               if c.get("document_id")}), durable=durable) \
        if ctx.short_forms else []
    dropped: Counter[str] = Counter()
    for outcome in outcomes:
        dropped.update(outcome.dropped)
    return {"entities": len(data["entities"]), "relations": len(data["relations"]),
            "dropped": dict(dropped), "failures": failures, "merges": joined,
            "chunks": {"completed": len(outcomes), "failed": len(failures)}}


def store_chunk_evidence(store: KnowledgeStore, found: dict[str, list[float]]) -> None:
    """The batch's passages as retrievable evidence: only chunks still lacking a vector, so
    a rerun writes nothing and `krag reembed` repairs a run that died right here. Their
    instruction-like spans too, withheld from every reader of the passage."""
    with store.transaction() as conn:
        fill_chunk_evidence(conn, found, scan_chunk)


# -- helpers --------------------------------------------------------------------------------
def claim_chunks(store: KnowledgeStore, state: IndexingState, ctx: IndexingContext,
                 worker: str | None = None) -> list[dict[str, Any]]:
    """Claim pending chunks for this run (claims of dead local workers are freed first),
    recorded under ``worker`` (default: the run's worker id)."""
    with store.transaction() as conn:
        release_dead_local_claims(conn)
    work = store.claim_chunks(ctx.batch_size, worker or state["worker"],
                              scope=state["claim_scope"],
                              source=state.get("claim_source"), stale_after_s=ctx.stale_after_s)
    return [{"id": w.id, "document_id": w.document_id, "ordinal": w.ordinal, "text": w.text,
             "scope": w.scope, "source": w.source, "uri": w.uri} for w in work]


@dataclass
class _SyncTally:
    """Stores document versions and counts what happened to them."""

    store: KnowledgeStore
    scope: str
    ctx: IndexingContext
    docs: Counter[str] = field(default_factory=Counter)
    chunks: Counter[str] = field(default_factory=Counter)
    removed: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, str]] = field(default_factory=list)
    report: Callable[[dict[str, int]], None] | None = None
    """Gets, after each group, the documents and new chunks stored so far (the ingest
    service starts its worker processes once enough chunks wait for them)."""
    group: list[tuple[DocumentIn, list[str]]] = field(default_factory=list)
    group_chars: int = 0

    def add(self, item: LoadedDocument | LoadFailure, source: str) -> None:
        """Clean and chunk ``item``; its version is stored with the group it joins (the
        group is stored when full, :meth:`flush`)."""
        if isinstance(item, LoadFailure):
            return self._skip(item.uri, item.reason)
        text = clean_text(item.text)
        if not text.strip():
            return self._skip(item.uri, "no text left after cleaning; skipped")
        pieces = chunk_text(text, size=self.ctx.chunk_size, overlap=self.ctx.chunk_overlap)
        # a title is stored as found (a heading, HTML or PDF metadata): control characters
        # go, as cleaning removes them from the text (a NUL cannot be stored)
        title = CONTROL.sub("", item.title).strip() or None if item.title else None
        doc = DocumentIn(scope=self.scope, source=source, uri=item.uri, title=title,
                         content_hash=ids.content_hash(text), metadata=item.metadata)
        if any(d.id == doc.id for d, _ in self.group):
            self.flush()  # a later version of a document of this group: stored after it
        self.group.append((doc, pieces))
        self.group_chars += len(text)
        if len(self.group) >= SYNC_GROUP_DOCS or self.group_chars >= SYNC_GROUP_CHARS:
            self.flush()
        return None

    def flush(self) -> None:
        """Store the group's document versions in one transaction and count them."""
        if not self.group:
            return
        # not waiting for the disk on each group: the node flushes them all at its end
        for synced in self.store.sync_documents(self.group, durable=False):
            self.docs["loaded"] += 1
            self.docs["unchanged" if synced.unchanged else "changed"
                      if synced.kept_chunk_ids or synced.removed.chunks else "new"] += 1
            self.chunks["new"] += len(synced.new_chunk_ids)
            self.removed.update({"chunks": synced.removed.chunks,
                                 "entities": synced.removed.entities,
                                 "relations": synced.removed.relations})
        self.group, self.group_chars = [], 0
        if self.report is not None:
            self.report({"documents": self.docs["loaded"], "new_chunks": self.chunks["new"]})

    def _skip(self, uri: str, reason: str) -> None:
        self.docs["skipped"] += 1
        self.failures.append({"uri": uri, "reason": reason})


def chunk_vectors_of(embeddings: Embeddings, batch: list[dict[str, Any]],
                     batch_size: int) -> dict[str, list[float]]:
    """Vectors of the batch's chunk texts by chunk id."""
    return dict(zip([c["id"] for c in batch],
                    embed_texts(embeddings, [c["text"] for c in batch], batch_size),
                    strict=True))


def _fail_chunks(store: KnowledgeStore, batch: list[dict[str, Any]],
                 results: list[dict[str, Any]]) -> list[dict[str, str]]:
    uri_of = {c["id"]: c["uri"] for c in batch}
    failures = []
    for r in results:
        if r["error"] is not None:
            store.fail_chunk(r["chunk_id"], r["error"], r["llm_calls"])
            failures.append({"uri": uri_of[r["chunk_id"]], "chunk_id": r["chunk_id"],
                             "reason": r["error"]})
    return failures


def _entity_in(e: dict[str, Any], vector: list[float] | None) -> EntityIn:
    return EntityIn(name=e["name"], type=e["type"], scope=e["scope"], summary=e["summary"],
                    confidence=e["confidence"], embedding=vector,
                    chunk_ids=tuple(e["chunk_ids"]), aliases=tuple(e.get("aliases") or ()))


def _relation_in(r: dict[str, Any], vector: list[float] | None) -> RelationIn:
    return RelationIn(subject_id=r["subject_id"], predicate=r["predicate"],
                      object_id=r["object_id"], fact=r["fact"], scope=r["scope"],
                      confidence=r["confidence"], embedding=vector,
                      valid_at=parse_date(r["valid_at"]),
                      chunk_ids=tuple(r["chunk_ids"]), attribute=r.get("attribute"),
                      predicate_text=r.get("predicate_text"))
