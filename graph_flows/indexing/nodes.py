"""Node functions of the indexing graph. Each reads the context, does one thing and returns
only the state keys it changed. Resources come from :func:`runner.get_resources`."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.documents.clean import clean_text
from graph_flows.indexing.documents.loaders import LoadedDocument, LoadFailure, load_path, load_text
from graph_flows.indexing.embed import embed_resolved
from graph_flows.indexing.extraction.llm import AHEAD, extract_batch
from graph_flows.indexing.extraction.schema import Extraction
from graph_flows.indexing.extraction.validation import validate_extraction
from graph_flows.indexing.resolve import resolve_batch
from graph_flows.indexing.resources import get_resources
from graph_flows.indexing.state import IndexingState
from storage import ChunkOutcome, DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids
from storage.claims import local_worker_id, release_dead_local_claims, requeue_failed
from storage.resolution import prefer_longer_summaries

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
    if inputs.get("texts"):
        names.append(inputs.get("source") or "inline")
    if not names and inputs.get("source"):
        names.append(inputs["source"])
    return list(dict.fromkeys(names))


# -- nodes ----------------------------------------------------------------------------------
def prepare(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Resolve the extraction mode, the worker id and what to claim; requeue failed chunks."""
    ctx = context_of(runtime)
    res = get_resources(ctx)
    scope = state.get("scope") or res.settings.scope
    sources = run_sources(state)
    claim_source = sources[0] if len(sources) == 1 else None
    requeued = requeue_failed(res.store.engine, scope, claim_source) \
        if state.get("retry_failed") else 0
    return {"mode": "llm" if res.llm_mode else "no-llm", "model": res.model_spec,
            "notice": res.notice, "worker": ctx.worker_id or local_worker_id(),
            "run_id": uuid.uuid4().hex,
            "claim_scope": scope, "claim_source": claim_source, "chunks": {"requeued": requeued},
            "llm": {"calls": 0, "input_tokens": 0, "output_tokens": 0}}


def sync_documents(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Load, clean, chunk and store each document version; new chunks become pending work.

    Documents are streamed one at a time (memory stays bounded by one document or part).
    """
    ctx = context_of(runtime)
    res = get_resources(ctx)
    tally = _SyncTally(res.store, state["claim_scope"], ctx)
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
    return {"documents": dict(tally.docs), "chunks": dict(tally.chunks),
            "removed": dict(tally.removed), "failures": tally.failures}


def claim_batch(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Take the batch claimed ahead by ``extract``, or claim the next pending chunks."""
    ctx = context_of(runtime)
    batch = AHEAD.claimed(state["run_id"])
    if batch is None:
        batch = _claim(get_resources(ctx).store, state, ctx)
    if not batch:
        AHEAD.close(state["run_id"])
    return {"batch": batch, "extractions": [], "validated": [], "resolved": {}, "embedded": {},
            "chunks": {"claimed": len(batch)}}


def extract(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Extract the batch, ``concurrency`` chunks at a time. With an LLM, the next batch is
    claimed and queued first, so its calls overlap this batch's remaining work."""
    ctx = context_of(runtime)
    res = get_resources(ctx)
    run_id, batch = state["run_id"], state["batch"]
    if res.chat_model is None:
        results = extract_batch(batch, None, concurrency=ctx.concurrency)
    else:
        if not AHEAD.is_next(run_id, batch):
            AHEAD.submit(run_id, batch, res.chat_model, ctx.concurrency)
        upcoming = _claim(res.store, state, ctx)
        if upcoming:
            AHEAD.submit(run_id, upcoming, res.chat_model, ctx.concurrency)
        results = AHEAD.collect(run_id, batch)
        if results is None:  # not queued (cannot happen after submit; kept as a safe path)
            results = extract_batch(batch, res.chat_model, concurrency=ctx.concurrency)
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
        validated.append({
            "chunk_id": result["chunk_id"], "scope": scope_of[result["chunk_id"]],
            "entities": [e.model_dump() for e in checked.entities],
            "relations": [r.model_dump() for r in checked.relations],
            "dropped": {k: v for k, v in dropped.items() if v},
            "usage": {k: result[k] for k in ("llm_calls", "input_tokens", "output_tokens")}})
    return {"validated": validated}


def resolve(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Merge mentions into entities (exact, then near duplicates of the same type)."""
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


def embed(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Embed new entities ("name: description") and facts, batched."""
    ctx = context_of(runtime)
    embedded = embed_resolved(get_resources(ctx).embeddings, state["resolved"],
                              ctx.embed_batch_size)
    return {"embedded": embedded}


def write(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """One transaction: upsert the batch's graph and mark its chunks completed; fail the rest."""
    store = get_resources(context_of(runtime)).store
    data = state["embedded"]
    outcomes = [ChunkOutcome(**o) for o in data["outcomes"]]
    # Longer descriptions of stored entities first: idempotent, so a crash before the graph
    # write below only means the chunks are extracted again, with the same result.
    prefer_longer_summaries(store.engine, [(e["id"], e["summary"], e.get("embedding"))
                                           for e in data["entities"] if e["longer_summary"]])
    store.write_graph([_entity_in(e) for e in data["entities"]],
                      [_relation_in(r) for r in data["relations"]], completed=outcomes)
    failures = _fail_chunks(store, state["batch"], state["extractions"])
    dropped: Counter[str] = Counter()
    for outcome in outcomes:
        dropped.update(outcome.dropped)
    return {"entities": len(data["entities"]), "relations": len(data["relations"]),
            "dropped": dict(dropped), "failures": failures,
            "chunks": {"completed": len(outcomes), "failed": len(failures)}}


# -- helpers --------------------------------------------------------------------------------
def _claim(store: KnowledgeStore, state: IndexingState,
           ctx: IndexingContext) -> list[dict[str, Any]]:
    """Claim pending chunks for this run (claims of dead local workers are freed first)."""
    release_dead_local_claims(store.engine)
    work = store.claim_chunks(ctx.batch_size, state["worker"], scope=state["claim_scope"],
                              source=state.get("claim_source"), stale_after_s=ctx.stale_after_s)
    return [{"id": w.id, "document_id": w.document_id, "text": w.text, "scope": w.scope,
             "source": w.source, "uri": w.uri} for w in work]


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

    def add(self, item: LoadedDocument | LoadFailure, source: str) -> None:
        if isinstance(item, LoadFailure):
            return self._skip(item.uri, item.reason)
        text = clean_text(item.text)
        if not text.strip():
            return self._skip(item.uri, "no text left after cleaning; skipped")
        pieces = chunk_text(text, size=self.ctx.chunk_size, overlap=self.ctx.chunk_overlap)
        doc = DocumentIn(scope=self.scope, source=source, uri=item.uri, title=item.title,
                         content_hash=ids.content_hash(text), metadata=item.metadata)
        synced = self.store.sync_document(doc, pieces)
        self.docs["loaded"] += 1
        self.docs["unchanged" if synced.unchanged else "changed"
                  if synced.kept_chunk_ids or synced.removed.chunks else "new"] += 1
        self.chunks["new"] += len(synced.new_chunk_ids)
        self.removed.update({"chunks": synced.removed.chunks,
                             "entities": synced.removed.entities,
                             "relations": synced.removed.relations})
        return None

    def _skip(self, uri: str, reason: str) -> None:
        self.docs["skipped"] += 1
        self.failures.append({"uri": uri, "reason": reason})


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


def _entity_in(e: dict[str, Any]) -> EntityIn:
    return EntityIn(name=e["name"], type=e["type"], scope=e["scope"], summary=e["summary"],
                    confidence=e["confidence"], embedding=e.get("embedding"),
                    chunk_ids=tuple(e["chunk_ids"]))


def _relation_in(r: dict[str, Any]) -> RelationIn:
    return RelationIn(subject_id=r["subject_id"], predicate=r["predicate"],
                      object_id=r["object_id"], fact=r["fact"], scope=r["scope"],
                      confidence=r["confidence"], embedding=r.get("embedding"),
                      valid_at=datetime.fromisoformat(r["valid_at"]) if r["valid_at"] else None,
                      chunk_ids=tuple(r["chunk_ids"]), attribute=r.get("attribute"))
