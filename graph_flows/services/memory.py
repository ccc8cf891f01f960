"""Memory use cases on one scope: recall, remember and correct facts (plus kag_query).

What the MCP tools do, as plain Python: every anticipated failure (a limit, an unknown id, a
rejected fact, a bad date) is a :class:`~graph_flows.services.errors.RequestError` whose
text says what to change.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.embed import entity_text
from graph_flows.indexing.extraction.schema import ExtractedEntity, ExtractedRelation, Extraction
from graph_flows.indexing.extraction.types import normalize_attribute
from graph_flows.indexing.extraction.validation import validate_extraction
from graph_flows.query import analyze
from graph_flows.services import ask
from graph_flows.services.errors import RequestError
from graph_flows.services.records import iso
from graph_flows.shared.control_chars import control_message
from graph_flows.shared.dates import DateParseError, parse_date, require_date
from graph_flows.shared.reads import read_only_request
from graph_flows.shared.resources import get_resources
from graph_flows.shared.scoped import scope_access
from storage import EntityIn, RelationIn, facts, search

log = logging.getLogger(__name__)

MAX_RECALL = 100
MAX_REASON_CHARS = 1000
RECALL_MIN_SIMILARITY = 0.3
"""Vector hits of ``recall`` below this cosine similarity are noise (MiniLM), not matches."""

DROP_TEXT = {
    "injection": "it reads like instructions to a model (prompt injection), not a fact",
    "low_confidence": "its confidence is below the minimum of {min}",
    "bad_name": "the subject or object name is empty, has no letter or digit, or is over "
                "200 characters",
    "fragment": "the subject or object is a piece of a sentence, not a name (only a function "
                "word such as 'the')",
    "self_loop": "subject and object are the same entity",
    "unknown_endpoint": "its subject or object was rejected",
    "over_limit": "it exceeds the per-fact limits",
    "duplicate": "it duplicates itself",
}
"""Why validation dropped a caller's fact, by drop reason, in words."""

Prepared = tuple[list[EntityIn], RelationIn, dict[str, Any]]


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise RequestError(message)


def _plain(**fields: Any) -> None:
    """Each given text without control characters (a NUL cannot be stored), else a
    :class:`RequestError` naming the argument."""
    for name, value in fields.items():
        if isinstance(value, str) and (message := control_message(name, value)):
            raise RequestError(message)


def _date(value: str | None, field: str) -> Any:
    """``value`` as a datetime (None when empty); a non-date is a :class:`RequestError`."""
    try:
        return require_date(value, field=field)
    except DateParseError as exc:
        log.debug("bad %s refused: %s", field, exc)  # the surface logs it
        raise RequestError(str(exc)) from None


def _tool_scope(method: Callable[..., Any]) -> Callable[..., Any]:
    """A tool method runs with its scope's access (read it and its ancestors, write it)."""
    @functools.wraps(method)
    def run(self: KnowledgeTools, *args: Any, **kwargs: Any) -> Any:
        with scope_access(self.scope):
            return method(self, *args, **kwargs)
    return run


class KnowledgeTools:
    """kag_query, recall, remember and correct bound to one scope; ``read_only`` refuses
    remember and correct (a read-only MCP token) before anything is read or written."""

    def __init__(self, scope: str | None = None, *, read_only: bool = False) -> None:
        self._scope = scope
        self.read_only = read_only

    def _writable(self, tool: str) -> None:
        _check(not self.read_only, f"{tool} refused: this token is read-only (kag_query and "
               "recall only); `krag token create` without --read-only makes one that writes.")

    @property
    def scope(self) -> str:
        """The scope every tool reads and writes (default: the configured scope)."""
        return self._scope or get_resources().settings.scope

    @read_only_request
    @_tool_scope
    def kag_query(self, query: str, entities: list[str] | None = None,
                  include_relations: bool = True, max_hops: int = 1, limit: int = 20,
                  source_id: str | None = None, recipe: str | None = None,
                  max_rounds: int | None = None) -> dict[str, Any]:
        """See :func:`graph_flows.services.ask.kag_query`; an unknown ``source_id`` is a
        :class:`RequestError` (not an empty result that reads like "nothing known")."""
        _plain(source_id=source_id)
        if source_id is not None and source_id.strip():
            with get_resources().store.connect() as conn:
                known = facts.scope_sources(conn, self.scope)
            _check(source_id.strip() in known,
                   f"no source {source_id.strip()[:80]!r} in scope {self.scope!r}; known "
                   f"sources: {', '.join(known[:20]) or 'none'} (`krag status` lists them).")
        return ask.kag_query(self.scope, query, entities, include_relations, max_hops, limit,
                             source_id, recipe, max_rounds)

    # -- recall ----------------------------------------------------------------------------
    @read_only_request
    @_tool_scope
    def recall(self, query: str, limit: int = 10, as_of: str | None = None) -> dict[str, Any]:
        """Facts matching ``query`` (text LIKE + vector), valid now or at ``as_of``."""
        _check(1 <= limit <= MAX_RECALL, f"limit must be 1..{MAX_RECALL}, got {limit}.")
        try:
            query, _ = analyze.validate_input(query, [])
        except analyze.InvalidQueryError as exc:
            raise RequestError(str(exc)) from None
        when = _date(as_of, "as_of")
        res, scope = get_resources(), self.scope
        terms = analyze.search_terms(analyze.heuristic_analysis(query, [])) or [query[:200]]
        errors: list[str] = []
        try:
            vector = res.embeddings.embed_query(query)
        except Exception as exc:  # degrade to text matches only
            log.warning("recall: embedding the query failed", exc_info=True)
            errors.append(f"embedding the query failed ({type(exc).__name__}); "
                          "text matches only")
            vector = None
        with res.store.connect() as conn:
            kept, scores = _recall_hits(conn, scope, terms, vector, limit, when)
            names = {e.id: e.name for e in search.entities_by_ids(
                conn, scope, sorted({i for f in kept for i in (f.subject_id, f.object_id)}))}
            sources = search.fact_sources(conn, [f.id for f in kept])
        out = [{"id": f.id, "subject": names.get(f.subject_id, ""), "predicate": f.predicate,
                "predicate_text": f.predicate_text, "object": names.get(f.object_id, ""),
                "fact": f.fact,
                "confidence": f.confidence, "valid_at": iso(f.valid_at),
                "invalid_at": iso(f.invalid_at), "score": round(scores[f.id], 4),
                "sources": sources.get(f.id, [])} for f in kept]
        return {"scope": scope, "query": query, "as_of": iso(when), "facts": out,
                "total": len(out), "errors": errors}

    # -- remember --------------------------------------------------------------------------
    @_tool_scope
    def remember(
        self, subject: str, predicate: str, object: str, fact: str,  # noqa: A002
        subject_type: str | None = None, object_type: str | None = None,
        confidence: float = 0.9, valid_at: str | None = None, attribute: str | None = None,
    ) -> dict[str, Any]:
        """Store a caller's fact (validated like extracted knowledge) with MCP provenance.

        The predicate is kept as stated (``predicate_text``) and mapped to a relation type
        (``predicate``) as a label; a given type is kept (an entity of the same name and type
        is reused), an omitted one reuses a stored entity of that name of any type, else
        ``concept``. Without ``valid_at`` the fact's start is unknown (None), not "now"."""
        self._writable("remember")
        if attribute is not None and attribute.strip():
            _check(normalize_attribute(attribute) is not None,
                   f"attribute {attribute[:40]!r} is not a property name: use snake_case "
                   "letters, digits and underscores (at most 40), e.g. 'ceo'.")
        ents, relation, info = self.prepare(subject, predicate, object, fact, subject_type,
                                            object_type, confidence, valid_at, attribute)
        with get_resources().store.transaction() as conn:
            fact_id = facts.remember_fact(conn, self.scope, ents, relation, relation.fact)
            closed = facts.superseded_by(conn, fact_id)
            stored = facts.get_fact(conn, self.scope, fact_id)
        # An undated fact that replaced another value is valid from that moment (supersede).
        when = iso(stored.fact.valid_at) if stored else info["valid_at"]
        return {"stored": True, "fact_id": fact_id, "scope": self.scope,
                **info, "valid_at": when, "superseded": closed}

    def prepare(
        self, subject: str, predicate: str, object_: str, fact: str, subject_type: str | None,
        object_type: str | None, confidence: float, valid_at: str | None,
        attribute: str | None = None,
    ) -> Prepared:
        """Validate like extracted knowledge, resolve to stored entities, embed."""
        _plain(subject=subject, predicate=predicate, object=object_, fact=fact,
               subject_type=subject_type, object_type=object_type, attribute=attribute)
        _check(isinstance(fact, str) and bool(fact.strip()), "fact must be a non-empty sentence.")
        _date(valid_at, "valid_at")
        min_conf = IndexingContext().min_confidence
        ex = Extraction(
            entities=[ExtractedEntity(name=subject, type=subject_type or "concept",
                                      confidence=confidence),
                      ExtractedEntity(name=object_, type=object_type or "concept",
                                      confidence=confidence)],
            relations=[ExtractedRelation(subject=subject, predicate=predicate, object=object_,
                                         fact=fact, confidence=confidence,
                                         valid_at=valid_at or None, attribute=attribute)])
        result = validate_extraction(ex, min_confidence=min_conf)
        if not result.relations:
            raise RequestError(rejection(result.dropped, min_conf))
        rel = result.relations[0]
        res, scope = get_resources(), self.scope
        chosen = _stored_entities(scope, result.entities, (
            (rel.subject, subject_type), (rel.object, object_type)))
        vectors: list[list[float] | None] = [None, None, None]
        warnings: list[str] = []
        try:
            vectors = res.embeddings.embed_documents(
                [entity_text(chosen[0][0]), entity_text(chosen[1][0]), rel.fact])
        except Exception as exc:  # stored without vectors; `krag reembed` fills them
            log.warning("remember: embedding failed", exc_info=True)
            warnings.append(f"embedding failed ({type(exc).__name__}); stored without vectors")
        ents = [EntityIn(name, type_, scope, "", conf, vec)
                for (name, type_, conf), vec in zip(chosen, vectors[:2], strict=True)]
        relation = RelationIn(ents[0].id, rel.predicate, ents[1].id, rel.fact, scope,
                              rel.confidence, vectors[2], valid_at=parse_date(rel.valid_at),
                              attribute=rel.attribute, predicate_text=rel.predicate_text)
        info = {"subject": ents[0].name, "subject_type": ents[0].type,
                "predicate": rel.predicate, "predicate_text": rel.predicate_text,
                "object": ents[1].name, "object_type": ents[1].type, "fact": rel.fact,
                "confidence": rel.confidence,
                "valid_at": iso(relation.valid_at), "attribute": rel.attribute,
                "adjusted": {k: v for k, v in result.dropped.items() if k not in DROP_TEXT},
                "warnings": warnings}
        return ents, relation, info

    # -- correct ---------------------------------------------------------------------------
    @_tool_scope
    def correct(
        self, fact_id: str, reason: str = "", replacement: str | None = None
    ) -> dict[str, Any]:
        """Invalidate a fact (kept in history), optionally storing the corrected sentence."""
        self._writable("correct")
        _plain(fact_id=fact_id, reason=reason, replacement=replacement)
        fact_id = (fact_id or "").strip()
        _check(0 < len(fact_id) <= 200, "fact_id must be a fact id such as 'rel_…' "
               "(kag_query and recall return them).")
        reason = " ".join(str(reason or "").split())[:MAX_REASON_CHARS]
        res, scope = get_resources(), self.scope
        with res.store.connect() as conn:
            old = facts.get_fact(conn, scope, fact_id)
        _check(old is not None, f"no fact {fact_id!r} in scope {scope!r}; kag_query and "
               "recall return the ids of existing facts.")
        prepared = None
        if replacement is not None and replacement.strip():
            prepared = self.prepare(old.subject, old.fact.predicate_text or old.fact.predicate,
                                    old.object, replacement,
                                    old.subject_type, old.object_type, 0.9, None, old.attribute)
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
            "invalid_at": iso(invalid_at), "fact": old.fact.fact, "reason": reason,
            "replacement_id": new_id}
        if prepared is not None:
            out["replacement"] = prepared[2]
        return out


def _stored_entities(
    scope: str, entities: list[ExtractedEntity], ends: tuple[tuple[str, str | None], ...]
) -> list[tuple[str, str, float]]:
    """(name, type, confidence) of each end (validated name, type the caller gave or None):
    the stored entity of that name and given type, or of that name and any type when none was
    given; else the validated one."""
    by_name = {e.name: e for e in entities}
    chosen = []
    with get_resources().store.connect() as conn:
        for name, given in ends:
            ent = by_name[name]
            typed = bool(given and given.strip())
            stored = facts.find_entity(conn, scope, ent.name, ent.type if typed else None)
            chosen.append((*(stored or (ent.name, ent.type)), ent.confidence))
    return chosen


def rejection(dropped: dict[str, int], min_conf: float) -> str:
    """One line saying why validation rejected a caller's fact."""
    reasons = [r for r in DROP_TEXT if dropped.get(r)]
    primary = [r for r in reasons if r != "unknown_endpoint"] or reasons
    text = "; ".join(DROP_TEXT[r].format(min=min_conf) for r in primary)
    return f"remember rejected the fact: {text or 'it failed validation'} (dropped: {dropped})."


def _recall_hits(conn: Any, scope: str, terms: list[str], vector: list[float] | None,
                 limit: int, when: Any) -> tuple[list[Any], dict[str, float]]:
    """Facts by text (score 1) plus vector similarity, best first; both searches already
    keep only facts valid ``when`` (SQL)."""
    pool = min(400, 4 * limit)
    scores: dict[str, float] = {}
    rows: dict[str, Any] = {}
    for hit in search.fact_like(conn, scope, terms, pool, when):
        rows[hit.fact.id], scores[hit.fact.id] = hit.fact, 1.0
    if vector is not None:
        for hit in search.fact_vector(conn, scope, vector, pool, when):
            if hit.fact.id in rows or hit.similarity >= RECALL_MIN_SIMILARITY:
                rows.setdefault(hit.fact.id, hit.fact)
                scores[hit.fact.id] = scores.get(hit.fact.id, 0.0) + hit.similarity
    kept = sorted(rows.values(), key=lambda f: (-scores[f.id], -f.confidence, f.id))[:limit]
    return kept, scores
