"""State of the indexing graph: what callers pass, what flows between nodes, what they get.

Values are plain JSON-friendly data (str, int, dict, list; dates as ISO 8601 strings) so
checkpointers and LangGraph Studio can store and show them. Embedding vectors are not
state: they are computed and written inside the ``write`` step. Per-batch keys are replaced
by each batch; run totals accumulate through the reducers named in their annotations.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

MAX_LISTED = 200  # merges / failures kept in the state (their totals are in counters)


def add_counts(left: dict[str, int], right: dict[str, int]) -> dict[str, int]:
    """Reducer: sum counters key by key."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        out[key] = out.get(key, 0) + value
    return out


def add_capped(left: list[Any], right: list[Any]) -> list[Any]:
    """Reducer: append, keeping at most MAX_LISTED items (the first ones)."""
    return (list(left or []) + list(right or []))[:MAX_LISTED]


class InputState(TypedDict):
    """What a caller passes to the indexing graph."""

    paths: NotRequired[list[str]]
    """Files or folders to ingest (.md, .txt, .pdf, .html, ...)."""
    texts: NotRequired[list[str]]
    """Texts to ingest directly (each becomes one document ``inline-<n>``)."""
    records: NotRequired[list[dict[str, str]]]
    """Documents given as ``{"uri", "text", "title"?}`` (the uri is the document's identity)."""
    source: NotRequired[str | None]
    """Source name for the documents. Unset: the file or folder name (``inline`` for texts)."""
    scope: NotRequired[str | None]
    """Knowledge scope (tenant/project). Unset: KRAG_SCOPE."""
    retry_failed: NotRequired[bool]
    """Also claim chunks whose extraction failed before."""
    extract: NotRequired[bool]
    """False: only store document versions (other workers extract). Default True."""


class OutputState(TypedDict):
    """What a run reports."""

    mode: str
    """'llm' (extraction model) or 'no-llm' (rule-based extractor)."""
    model: str
    """The extraction model spec used (or 'rules')."""
    notice: str | None
    """One line when running in no-LLM mode (why), else None."""
    documents: Annotated[dict[str, int], add_counts]
    """loaded, new, changed, unchanged, skipped."""
    chunks: Annotated[dict[str, int], add_counts]
    """new (stored for extraction), claimed, completed, failed."""
    removed: Annotated[dict[str, int], add_counts]
    """Chunks, entities and relations removed because only an old document version had them."""
    entities: Annotated[int, operator.add]
    """Entity mentions written (after resolution)."""
    relations: Annotated[int, operator.add]
    """Relations written."""
    dropped: Annotated[dict[str, int], add_counts]
    """Extracted items dropped by validation, by reason."""
    merges: Annotated[list[dict[str, str]], add_capped]
    """Merges by resolution (short forms and near duplicates): {name, into, type}, ``type``
    the merged name's (first MAX_LISTED); the names are kept as the entity's aliases."""
    failures: Annotated[list[dict[str, str]], add_capped]
    """Skipped files and failed chunks: {uri, chunk_id?, reason} (first MAX_LISTED)."""
    llm: Annotated[dict[str, int], add_counts]
    """LLM usage: calls, input_tokens, output_tokens."""


class IndexingState(InputState, OutputState):
    """Full state: input, output and the batch in flight."""

    worker: str
    """Worker id recorded on claims (``hostname:pid`` unless the context names one)."""
    claim_scope: str
    """Scope whose pending chunks this run claims."""
    claim_source: str | None
    """Source whose pending chunks this run claims (None: every source of the scope)."""
    look_ahead: bool
    """Extract the next batch while this one is stored (LLM mode with the context's
    ``look_ahead``; :mod:`graph_flows.indexing.ahead`)."""
    batch: list[dict[str, Any]]
    """Chunks claimed for this batch: {id, document_id, ordinal, text, scope, source, uri}."""
    extractions: list[dict[str, Any]]
    """Per chunk: {chunk_id, extraction | None, error, llm_calls, input_tokens, output_tokens}."""
    validated: list[dict[str, Any]]
    """Per chunk: {chunk_id, scope, entities, relations, dropped, usage}."""
    resolved: dict[str, Any]
    """{entities, relations, outcomes}: resolved ids and texts; those marked ``embed`` get
    their vectors in the ``write`` step (vectors are never part of the state)."""
