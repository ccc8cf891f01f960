"""Query analysis: entities mentioned and intent, by LLM or by a transparent heuristic."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from graph_flows.shared.control_chars import control_message
from graph_flows.shared.dates import DateParseError, require_date
from graph_flows.shared.graph_input import GraphInputError
from graph_flows.shared.scoped import check_scope
from graph_flows.shared.untrusted import question_message
from storage import InvalidInputError

MAX_QUERY_BYTES = 10_000
MAX_ENTITY_HINTS = 50
MAX_TERMS = 12
Intent = Literal["factual", "relationship", "summary", "exploration"]

_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its
itself just me more most my myself no nor not now of off on once only or other our ours
ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were
what when where which while who whom why will with would you your yours yourself yourselves
tell explain describe show give list please know anything everything something thing things
does did use used using uses much many related relation relationship relationships
connected connection between summary summarize summarise overview explore kind kinds
""".split())  # noqa: SIM905
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»]{2,200})[\"“”«»]")
_CAPITALISED = re.compile(
    r"\b([A-Z][\w'’\-.]*(?:\s+(?:of|de|von|van|the|and|for|&)?\s*[A-Z0-9][\w'’\-.]*)+)")
_WORD = re.compile(r"[\w][\w\-+.#']*[\w+#]|\w", re.UNICODE)


class QueryAnalysis(BaseModel):
    """Structured output asked of the analysis model."""

    entities: list[str] = Field(default_factory=list, description=(
        "Names of people, organisations, technologies, places or concepts the question is "
        "about, exactly as written in the question."))
    keywords: list[str] = Field(default_factory=list, description=(
        "Other important content words (no stopwords)."))
    intent: Intent = Field(default="factual", description=(
        "factual: a specific fact; relationship: how things relate; summary: an overview; "
        "exploration: browse what is known."))


class InvalidQueryError(GraphInputError):
    """A query input breaks a documented limit; the message names the limit."""


def _refuse(message: str | None) -> None:
    if message:
        raise InvalidQueryError(message)


def validate_input(query: Any, entity_hints: Any) -> tuple[str, list[str]]:
    """Check the query and hints against the limits (control characters refused:
    graph_flows.shared.control_chars); return them cleaned."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidQueryError("query is empty: ask a question (1 to 10,000 bytes).")
    if len(query.encode("utf-8")) > MAX_QUERY_BYTES:
        raise InvalidQueryError(
            f"query is {len(query.encode('utf-8')):,} bytes; the limit is 10,000 bytes.")
    _refuse(control_message("query", query))
    if entity_hints is not None and not isinstance(entity_hints, list | tuple):
        raise InvalidQueryError("entity_hints must be a list of names.")
    hints = list(entity_hints or [])
    if len(hints) > MAX_ENTITY_HINTS:
        raise InvalidQueryError(
            f"{len(hints)} entity hints given; the limit is {MAX_ENTITY_HINTS}.")
    if not all(isinstance(h, str) for h in hints):
        raise InvalidQueryError("entity hints must be strings.")
    for n, hint in enumerate(hints, 1):
        _refuse(control_message(f"entity hint {n}", hint))
    return query.strip(), [h.strip()[:200] for h in hints if h.strip()]


def check_request(value: dict[str, Any]) -> None:
    """The query graph's input at its entry, before any node: the query and hints
    (:func:`validate_input`), the scope's name and the ``as_of`` date, each refused in one
    line (:class:`InvalidQueryError`)."""
    validate_input(value.get("query"), value.get("entity_hints"))
    scope = value.get("scope")
    if scope is not None and not isinstance(scope, str):
        raise InvalidQueryError(f"scope must be a scope name, got {str(scope)[:40]!r}.")
    if scope:
        try:
            check_scope(scope)
        except InvalidInputError as exc:
            raise InvalidQueryError(str(exc)) from None
    try:
        require_date(value.get("as_of"), field="as_of")
    except DateParseError as exc:
        raise InvalidQueryError(str(exc)) from None


def intent_from_cues(query: str) -> Intent:
    q = query.casefold()
    if re.search(r"\b(relat\w*|connect\w*|between|link\w*|interact\w*|depend\w*)\b", q):
        return "relationship"
    if re.search(r"\b(summar\w*|overview|outline|in short|about)\b", q):
        return "summary"
    if re.search(r"\b(explore|list|what else|show me|everything|all (the )?\w+)\b", q):
        return "exploration"
    return "factual"


_CONNECTORS = frozenset({"of", "de", "von", "van", "the", "and", "for", "&"})


def _segments(words: list[str]) -> list[str]:
    """The parts of a name joined by connectors, for when the phrase is not one name: "CEO of
    Berora Software" -> "CEO", "Berora Software" (single words only when an acronym)."""
    parts: list[list[str]] = [[]]
    for w in words:
        if w.casefold() in _CONNECTORS:
            parts.append([])
        else:
            parts[-1].append(w)
    if len(parts) < 2:
        return []
    return [" ".join(p) for p in parts if len(p) > 1 or (len(p) == 1 and p[0].isupper()
                                                          and len(p[0]) > 1)]


def heuristic_analysis(query: str, hints: list[str]) -> dict[str, Any]:
    """Quoted phrases and capitalised multi-word names whole; other words minus stopwords."""
    entities: list[str] = [m.strip() for m in _QUOTED.findall(query)]
    rest = _QUOTED.sub(" ", query)
    for match in _CAPITALISED.findall(rest):
        words = match.strip(" .'’-").split()
        while words and words[0].casefold() in _STOPWORDS:  # "Is Harris Corp" -> "Harris Corp"
            words.pop(0)
        if len(words) > 1 or (words and words[0].casefold() not in _STOPWORDS):
            entities.append(" ".join(words))
            entities += _segments(words)
    rest = _CAPITALISED.sub(" ", rest)
    keywords = [w for w in _WORD.findall(rest) if w.casefold() not in _STOPWORDS
                and (len(w) > 2 or w.isupper())]
    return {"entities": _dedupe(hints + entities), "keywords": _dedupe(keywords),
            "intent": intent_from_cues(query), "method": "heuristic"}


def llm_analysis(model: Any, query: str, hints: list[str], prompt: str) -> dict[str, Any]:
    """Ask the model for a :class:`QueryAnalysis`; raises on any failure."""
    result = model.with_structured_output(QueryAnalysis).invoke(
        [("system", prompt), ("human", question_message(query))])
    if isinstance(result, dict):
        result = QueryAnalysis.model_validate(result)
    return {"entities": _dedupe(hints + [e for e in result.entities if e.strip()]),
            "keywords": _dedupe([k for k in result.keywords if k.strip()]),
            "intent": result.intent, "method": "llm"}


_RELATION_WORDS = {"uses": "uses", "use": "uses", "using": "uses", "used": "uses",
                   "contains": "contains", "contain": "contains", "contained": "contains",
                   "includes": "contains", "include": "contains", "part": "part_of",
                   "belong": "part_of", "belongs": "part_of", "defines": "defines",
                   "define": "defines", "defined": "defines", "mentions": "mentions",
                   "mention": "mentions", "mentioned": "mentions", "relate": "relates_to",
                   "relates": "relates_to", "related": "relates_to"}


def question_predicates(query: str, terms: list[str]) -> list[str]:
    """Relation types the question's words name ("uses", "belongs" -> uses, part_of), from
    the question and the search terms; they boost matching facts and guide the graph walk."""
    words = _WORD.findall(query.casefold()) + [w for t in terms
                                               for w in _WORD.findall(t.casefold())]
    return sorted({_RELATION_WORDS[w] for w in words if w in _RELATION_WORDS})


def search_terms(analysis: dict[str, Any]) -> list[str]:
    """Terms to search for, at most MAX_TERMS: whole entity names, keywords, then the
    distinctive words of multi-word names ("Edgar Codd" also finds "Edgar F. Codd")."""
    entities = list(analysis.get("entities", []))
    words = [w for e in entities if " " in e.strip() for w in _WORD.findall(e)
             if len(w) >= 4 and w.casefold() not in _STOPWORDS]
    return _dedupe(entities + list(analysis.get("keywords", [])) + words)[:MAX_TERMS]


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.casefold().strip()
        if key and key not in seen:
            seen.add(key)
            out.append(item.strip())
    return out
