"""Typed state of the query graph: a narrow input, the full state, a narrow output."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Required

from typing_extensions import TypedDict


class QueryInput(TypedDict, total=False):
    """What callers pass."""

    query: Required[str]
    """The question."""
    scope: str
    """Knowledge scope to search (default: the configured scope). Unknown -> nothing."""
    entity_hints: list[str]
    """Entity names the caller already knows are relevant (at most 50)."""
    as_of: str
    """ISO date or datetime: answer from the facts valid then (default: now)."""


class QueryState(QueryInput, total=False):
    """Everything the nodes read and write."""

    deadline: float
    """Wall-clock time (``time.time()``) by which the whole query must be answered: set by
    analyze_query from ``request_timeout_s``; later steps skip or cut work past it."""
    analysis: dict[str, Any]
    """entities, keywords, intent, method ('llm' | 'heuristic'), error."""
    entities: list[dict[str, Any]]
    """Retrieved entities, most relevant first: id, name, type, summary, score, methods."""
    facts: list[dict[str, Any]]
    """Retrieved facts, most relevant first, each labelled F1..Fn, with both endpoints."""
    search_metrics: dict[str, Any]
    """Results and milliseconds per method, fallback flags, total milliseconds, errors."""
    passages: list[dict[str, Any]]
    """Recipe 'ppr' only: ranked chunks (id, text, uri, title, source, score, methods),
    labelled P1..Pn in build_context."""
    passages_text: str
    """The <passages> section (recipe 'ppr' only)."""
    definitions: str
    """The <definitions> section given to the answer model."""
    facts_text: str
    """The <facts> section."""
    mermaid: str
    """Mermaid diagram: the cited facts and the paths between the question's entities."""
    answer: str
    """The final answer text."""
    answer_mode: str
    """'llm', 'extractive' (no-LLM mode or LLM failure) or 'empty' (nothing retrieved)."""
    citations: list[dict[str, Any]]
    """What the answer cites: facts (label, fact_id, fact text, sources) and passages
    (label, passage_id, text, document_id, uri, title, source)."""
    answer_confidence: dict[str, str]
    """label ('high' | 'medium' | 'low' | 'none') and a one-sentence reason: how likely the
    answer is right, from the names its evidence covers, whether it holds a thing of the kind
    asked for, whether that thing's sentence states the relation asked and other documents
    agree, or whether a later sentence reaches it past a bridge
    (graph_flows.query.confidence); 'none' when nothing relevant was found or the answer
    model said the knowledge base does not hold the answer."""
    rounds: list[dict[str, Any]]
    """The retrieval rounds (graph_flows.query.loop): per round the query searched, why,
    who asked, the bridge entity, what it added, milliseconds, planner calls and tokens,
    and the reason the loop stopped after it (None when another round followed)."""
    follow_up: dict[str, Any] | None
    """The next round's query (``query``, ``why``, ``by``, ``bridge``) chosen by
    assess_evidence, and for the no-LLM follow-up from hop-1 passages their chunk ids
    (``hops``) and the words they leave uncovered (``uncovered``); None when the loop is
    done."""
    errors: Annotated[list[str], operator.add]
    """Degradations the user should know about (never stack traces)."""


class QueryOutput(TypedDict, total=False):
    """What callers get back."""

    query: str
    answer: str
    answer_mode: str
    citations: list[dict[str, Any]]
    answer_confidence: dict[str, str]
    facts: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    mermaid: str
    definitions: str
    facts_text: str
    passages: list[dict[str, Any]]
    passages_text: str
    analysis: dict[str, Any]
    search_metrics: dict[str, Any]
    rounds: list[dict[str, Any]]
    errors: list[str]


class LoopState(QueryState, total=False):
    """What retrieve_knowledge reads: the state and a channel of the loop's own (not in
    the output; assess_evidence empties it when the loop ends, so the last values a
    surface streams hold no vector)."""

    question_vector: list[float]
    """The question's embedding, from round 1 (recipe 'ppr'): a follow-up from hop-1
    passages matches the bridge's passages against the same question without embedding it
    again."""
