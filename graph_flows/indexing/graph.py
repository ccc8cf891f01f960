"""The indexing graph: documents -> clean chunks -> extraction -> validation -> resolution ->
embeddings and writes to PostgreSQL, one claimed batch at a time.

    prepare -> sync_documents -> claim_batch -> extract -> validate -> resolve -> write
                                      ^                 |                        |
                                      |                 +-> store_and_extract_next (LLM mode)
                                      |                 +-> store_in_order (no-LLM mode)
                                      +------------------------------------------+

``sync_documents`` stores each document version (unchanged documents add no work). The loop
then claims pending chunks in batches (``FOR UPDATE SKIP LOCKED``, so several workers share
them) and writes each batch's graph in the same transaction that marks its chunks completed:
a run killed at any point loses at most its batch in flight, which is claimed again.

``extract`` runs the batch's LLM calls ``concurrency`` at a time on a pool that lives only
inside that step, so no call outlives it and nothing about a run is kept outside its state:
a run that fails in ``resolve`` or ``write`` leaves nothing calling the LLM.

With an LLM, ``store_and_extract_next`` replaces validate -> resolve -> write: it runs them
while claiming and extracting the next batch on threads it owns
(:mod:`graph_flows.indexing.ahead`), then loops on that batch, so the model is not idle
while a batch is stored. The look-ahead ends inside that step too: a step failing while it
stores stops it (no call starts after the failure) and puts the chunks claimed ahead back.

Without an LLM, ``store_in_order`` replaces validate -> resolve -> write: it embeds the
batch, then resolves and writes it in the scope's store turn, after every batch claimed
before it (:mod:`graph_flows.indexing.in_order`), so worker processes sharing a scope keep
the cores busy and still build the graph one process builds.

``write`` embeds the new or changed texts and writes them with the graph (embedding and
writing are one node so vectors never enter the state, which a checkpointer such as
``langgraph dev`` stores after every step: the state carries ids and texts only). A ``write``
that fails after embedding is retried or its batch claimed again, and embeds again.

Invoke with ``graph_flows.services.ingest.run_indexing(inputs, IndexingContext(...))`` (it
sets a recursion limit fit for thousands of batches) or
``graph.invoke(inputs, context=..., config=...)``. An input key :class:`InputState` does not
declare, a value of the wrong type, a control character in a path or name, or an input with
nothing to ingest is an :class:`~graph_flows.indexing.inputs.InvalidIndexingInputError` (a
``ValueError``) at the run's entry, before anything is stored
(:func:`graph_flows.indexing.inputs.check_input`,
:func:`graph_flows.shared.graph_input.refuse_unknown_keys`).
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.types import RetryPolicy
from sqlalchemy.exc import DBAPIError, OperationalError

from graph_flows.indexing.ahead import store_and_extract_next
from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.in_order import store_in_order
from graph_flows.indexing.inputs import InvalidIndexingInputError, check_input
from graph_flows.indexing.nodes import (
    claim_batch,
    extract,
    prepare,
    resolve,
    sync_documents,
    validate,
    write,
)
from graph_flows.indexing.resources import RECURSION_LIMIT
from graph_flows.indexing.state import IndexingState, InputState, OutputState
from graph_flows.shared.graph_input import refuse_unknown_keys
from graph_flows.shared.scoped import scoped_node
from storage import DatabaseUnavailableError


# -- routers --------------------------------------------------------------------------------
def after_sync(state: IndexingState) -> Literal["claim_batch", "__end__"]:
    """Extract now, or stop after storing documents (workers will extract)."""
    return "claim_batch" if state.get("extract", True) else END


def after_claim(state: IndexingState) -> Literal["extract", "__end__"]:
    """Another batch, or done when nothing is left to claim."""
    return "extract" if state["batch"] else END


def after_extract(
    state: IndexingState,
) -> Literal["validate", "store_and_extract_next", "store_in_order"]:
    """Store the batch while the next one is extracted (LLM mode), in its store turn
    (no-LLM mode: workers share the cores), or step by step."""
    if state.get("look_ahead"):
        return "store_and_extract_next"
    return "store_in_order" if state.get("mode") == "no-llm" else "validate"


def after_store(state: IndexingState) -> Literal["store_and_extract_next", "claim_batch"]:
    """The batch extracted ahead is stored next; none (nothing was pending, or the claim
    ahead failed): ``claim_batch`` claims again or ends the run."""
    return "store_and_extract_next" if state["batch"] else "claim_batch"


def lost_connection(exc: Exception) -> bool:
    """A database connection that died under a node (server restart, pg_terminate_backend),
    or another transient server-side error (SQLSTATE classes 08, 40, 57: OperationalError)."""
    return isinstance(exc, DatabaseUnavailableError | OperationalError) or (
        isinstance(exc, DBAPIError) and bool(exc.connection_invalidated))


# The nodes of the batch loop are safe to run again (claims and writes are transactions;
# writes are upserts), so a dropped connection costs a retry on a fresh one, not the run.
DB_RETRY = RetryPolicy(max_attempts=3, initial_interval=0.5, retry_on=lost_connection)

# -- assembly -------------------------------------------------------------------------------
builder = StateGraph(IndexingState, context_schema=IndexingContext,
                     input_schema=InputState, output_schema=OutputState)
# each node reads and writes the store with its run's scope's access (graph_flows.shared.scoped)
_in_scope = scoped_node(lambda state: state.get("claim_scope") or state.get("scope"))
for node in (prepare, sync_documents, validate):
    builder.add_node(_in_scope(node))
for node in (claim_batch, extract, resolve, write, store_and_extract_next, store_in_order):
    builder.add_node(_in_scope(node), retry_policy=DB_RETRY)
builder.add_edge(START, "prepare")
builder.add_edge("prepare", "sync_documents")
builder.add_conditional_edges("sync_documents", after_sync)
builder.add_conditional_edges("claim_batch", after_claim)
builder.add_conditional_edges("extract", after_extract)
builder.add_conditional_edges("store_and_extract_next", after_store)
for a, b in (("validate", "resolve"), ("resolve", "write"), ("write", "claim_batch"),
             ("store_in_order", "claim_batch")):
    builder.add_edge(a, b)

graph = refuse_unknown_keys(builder.compile(name="indexing"), InputState,
                            InvalidIndexingInputError, check_input).with_config(
    recursion_limit=RECURSION_LIMIT)
