"""A rule-extracted batch stored in claim order: what no-LLM workers share the cores with.

Without an LLM a batch's cost is CPU: spaCy and the rules (``extract``), the MiniLM vectors
of its chunk texts, names and facts, and PostgreSQL's writes. Several worker processes
(``krag ingest --workers N``) keep several cores busy, but resolution reads what is stored
(the stored entity wins over a near duplicate; a document's short forms are joined once it
is complete; synonym edges are a k-NN over stored names), so each batch must be resolved
and written after every batch claimed before it for the graph to be the one one process
builds. :func:`store_in_order` therefore:

1. validates the batch and embeds, before its turn, what does not depend on other batches:
   its chunk texts (on a thread, joined inside the step) and its names and facts
   (:func:`graph_flows.indexing.embed.embed_candidates`);
2. takes the scope's store turn (:func:`storage.turns.store_turn`: once no earlier claimed
   chunk is held by another worker) and resolves and writes the graph in it
   (``resolve`` and :func:`graph_flows.indexing.nodes.write_resolved`);
3. stores the chunk vectors and instruction-like spans after the turn (they read nothing
   other batches write).

One worker takes each turn at once; with two, one worker's extraction and embedding overlap
the other's resolution and writes.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from graph_flows.indexing.embed import embed_candidates, embed_marked
from graph_flows.indexing.nodes import (
    Ctx,
    chunk_vectors_of,
    context_of,
    resolve,
    store_chunk_evidence,
    validate,
    write_resolved,
)
from graph_flows.indexing.resources import get_resources
from graph_flows.indexing.state import IndexingState

log = logging.getLogger(__name__)


def store_in_order(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Validate, embed, then resolve and write the extracted batch in its store turn (see
    the module docstring); the ``validate -> resolve -> write`` result."""
    ctx = context_of(runtime)
    res = get_resources(ctx)
    batch = state["batch"]
    current: dict[str, Any] = dict(state)
    current.update(validate(current, runtime))
    with ThreadPoolExecutor(1, thread_name_prefix="chunk-vectors") as pool:
        chunk_vectors = pool.submit(chunk_vectors_of, res.embeddings, batch,
                                    ctx.embed_batch_size)
        ready = embed_candidates(res.embeddings, current["validated"], ctx.embed_batch_size)
        first = min((c["document_id"], c["ordinal"]) for c in batch)
        with res.store.store_turn(scope=state["claim_scope"], source=state.get("claim_source"),
                                  first=first, worker=state["worker"],
                                  stale_after_s=ctx.stale_after_s) as turn:
            resolved = resolve(current, runtime)
            current.update(resolved)
            vectors = embed_marked(res.embeddings, current["resolved"], ctx.embed_batch_size,
                                   ready)
            # the turn's commits do not wait for the disk (an fsync each, ~8 ms of the
            # turn on the test VM); flushed below, after the turn, before the step returns
            written = write_resolved(current, ctx, vectors, durable=False)
        log.debug("store turn of %d chunks: waited %.3f s, %d looks", len(batch),
                  turn.waited_s, turn.looks)
        found = chunk_vectors.result()
    store_chunk_evidence(res.store, found)
    res.store.flush_commits()
    return {**written, "merges": [*resolved.get("merges", []), *written.get("merges", [])]}
