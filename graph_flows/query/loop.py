"""The query loop's bookkeeping: rounds, their stop reasons, merging a follow-up round's
evidence into the evidence so far, and the checks a planned sub-question must pass.

A round is a dict (``QueryState.rounds``): ``round`` (1, 2, ...), ``query`` (what was
searched), ``why`` (the question itself, or the planner's reason), ``by`` ('question',
'llm' or 'rules': who asked), ``bridge`` (the entity the follow-up follows, or ""),
``added`` (new passages, facts and entities it brought), ``ms`` (its retrieval time),
``calls`` / ``tokens`` (planner calls spent deciding after it) and ``stop`` (why the loop
ended after it; None when another round followed). A no-LLM round from hop-1 passages
(graph_flows.query.second_hop) also has ``hops``: per hop-1 passage its title (``passage``)
and ``uri``, how it belongs to the question (``belongs``), the ``bridge`` chosen, ``why``,
the ``document`` placed right after it and the ``tail``: the titles of the passages that
hedge the choice at the start of the tail (:func:`merge_hops`).

Merging keeps round 1's head: the passages of the first ``head`` documents (and the first
``head`` facts and entities) of the evidence so far keep their places; after them the
follow-up's items and the earlier evidence's rest alternate, the follow-up's first (it was
asked because the evidence was short), duplicates dropped. A merged list never loses an
item the earlier list ranked within its limit, unless the limit itself cuts it.

An unplanned (no-LLM) follow-up is a guess (:func:`merge_guess`), so it may bring in only
its best new document (:data:`RULES_NEW`): the passages of the first document it ranked
that the evidence does not hold, in the place of the evidence's last document, and the facts
those passages are sources of, with their ends, after the evidence's own. A guess then
costs round 1 at most its last place in the passage ranking, and a follow-up query built for
one missing hop finds that hop, when it finds it, at its top.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from itertools import zip_longest
from typing import Any, TypeVar

from graph_flows.query import extractive

T = TypeVar("T")

MAX_ROUNDS = 4
LLM_HEAD = 2  # round 1's passages (facts, entities) a planned follow-up never displaces
RULES_HEAD = 5  # ... and an unplanned (no-LLM) one: it only fills the tail
RULES_NEW = 1  # documents an unplanned follow-up may bring in: its best new one

# stop reasons (the text users see in `rounds`)
SUFFICIENT = "the planner found the evidence sufficient"
MAX_REACHED = "max_rounds reached"
DEADLINE = "the request deadline came first"
NO_PLANNER = "no planner model, and the no-LLM follow-up is off"
NO_PASSAGES = "recipe {recipe!r} ranks no passages: one round"
NOTHING_FOUND = "the question found no passages to follow"
EMPTY = "the planner gave no sub-question"
REPEATED = "the planner repeated an earlier search"
NOTHING_NEW = "the planner's sub-question names nothing new"
FOUND_NOTHING = "the follow-up found nothing new"
COVERED = "the top passages cover every part of the question"
NO_BRIDGE = "part of the question is not covered, but no bridge entity to follow"
HOP1_COVERED = "the passages of what the question names cover every part of it"
FOLLOWED = "every hop-1 passage was followed"
PLANNER_FAILED = "the planner failed ({error})"

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def check_rounds(value: Any) -> str | None:
    """The one-line error of a bad ``max_rounds`` (None when it is fine)."""
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 1 <= value <= MAX_ROUNDS:
        return f"max_rounds must be 1..{MAX_ROUNDS} (got {value!r}); 1 turns the loop off"
    return None


def new_round(number: int, query: str, why: str, by: str, bridge: str = "") -> dict[str, Any]:
    """A round record before its retrieval has run."""
    return {"round": number, "query": query, "why": why, "by": by, "bridge": bridge,
            "added": {"passages": 0, "facts": 0, "entities": 0}, "ms": 0.0,
            "calls": 0, "tokens": 0, "stop": None}


def _key(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def check_sub_question(sub_question: str, bridge: str, asked: Sequence[str]) -> str | None:
    """Why a planned sub-question ends the loop (empty, a repeat of an earlier search, or
    nothing in it that the searches so far did not name), or None when it may run."""
    if not _key(sub_question):
        return EMPTY
    if _key(sub_question) in {_key(q) for q in asked}:
        return REPEATED
    known = frozenset().union(*(extractive.terms(q) for q in asked))
    if not (extractive.terms(sub_question) | extractive.terms(bridge)) - known:
        return NOTHING_NEW
    return None


def interleave(old: Sequence[T], new: Sequence[T], key: Callable[[T], Hashable], head: int,
               limit: int | None = None) -> list[T]:
    """``old``'s first ``head`` items, then ``new`` and ``old``'s rest alternately (``new``
    first), duplicates (by ``key``) dropped, at most ``limit`` items."""
    out: list[T] = []
    seen: set[Hashable] = set()

    def take(item: T | None) -> None:
        if item is None:
            return
        k = key(item)
        if k not in seen:
            seen.add(k)
            out.append(item)

    for item in old[:head]:
        take(item)
    for pair in zip_longest(new, old[head:]):
        for item in pair:
            take(item)
    return out if limit is None else out[:limit]


def _by_id(row: dict[str, Any]) -> Hashable:
    return row["id"]


def _same(item: Any) -> Hashable:
    return item


def merge_evidence(state: dict[str, Any], found: dict[str, Any], head: int, *,
                   entity_limit: int, fact_limit: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The state keys after merging a planned follow-up round's retrieval ``found`` (the
    keys ``entities``, ``facts``, ``passages``, ``search_metrics``) into the evidence so far,
    and the counts of what it added."""
    old_p, new_p = state.get("passages") or [], found.get("passages") or []
    old_f, new_f = state.get("facts") or [], found.get("facts") or []
    # the head counts sources, as a reader (and a recall measure) does: the passages of
    # round 1's first ``head`` documents keep their places
    kept = source_head(old_p, head)
    passages = interleave(old_p, new_p, _by_id, kept)
    facts = interleave(old_f, new_f, _by_id, head, fact_limit)
    entities = _merge_entities(state.get("entities") or [], found.get("entities") or [],
                               facts, head, entity_limit)
    metrics = dict(state.get("search_metrics") or {})
    old_rank = (metrics.get("ppr") or {}).get("ranked") or []
    new_rank = ((found.get("search_metrics") or {}).get("ppr") or {}).get("ranked") or []
    if old_rank or new_rank:
        metrics["ppr"] = {**(metrics.get("ppr") or {}),
                          "ranked": interleave(old_rank, new_rank, _same, kept)}
    added = {"passages": _added(old_p, passages), "facts": _added(old_f, facts),
             "entities": _added(state.get("entities") or [], entities)}
    return {"passages": passages, "facts": facts, "entities": entities,
            "search_metrics": metrics}, added


def merge_guess(state: dict[str, Any], found: dict[str, Any],
                ) -> tuple[dict[str, Any], dict[str, int]]:
    """:func:`merge_evidence` for an unplanned (no-LLM) follow-up: only its best new
    document comes in (:func:`admit`, :data:`RULES_NEW`), in the place of the evidence's
    last document (which moves after it, never into round 1's first :data:`RULES_HEAD`
    documents); its facts and their ends' rows are added after the evidence's own."""
    old_p = state.get("passages") or []
    found = admit(found, {_source(p) for p in old_p}, RULES_NEW)
    new_p = found.get("passages") or []
    at = max(source_head(old_p, RULES_HEAD), _last_source(old_p))
    passages = [*old_p[:at], *new_p, *old_p[at:]]
    old_f = state.get("facts") or []
    known_f = {f["id"] for f in old_f}
    facts = [*old_f, *(f for f in found.get("facts") or [] if f["id"] not in known_f)]
    entities = _append_entities(state.get("entities") or [], found.get("entities") or [])
    metrics = dict(state.get("search_metrics") or {})
    old_rank = (metrics.get("ppr") or {}).get("ranked") or []
    if old_rank:  # the same move in the ranking (round 1's passages in order)
        moved = old_p[at]["id"] if at < len(old_p) else None
        cut = old_rank.index(moved) if moved in old_rank else len(old_rank)
        metrics["ppr"] = {**metrics["ppr"], "ranked": [
            *old_rank[:cut], *(p["id"] for p in new_p), *old_rank[cut:]]}
    added = {"passages": len(new_p), "facts": _added(old_f, facts),
             "entities": _added(state.get("entities") or [], entities)}
    return {"passages": passages, "facts": facts, "entities": entities,
            "search_metrics": metrics}, added


def merge_hops(state: dict[str, Any], places: Sequence[tuple[str, dict[str, Any]]],
               facts: Sequence[dict[str, Any]], entities: Sequence[dict[str, Any]],
               tail: Sequence[dict[str, Any]] = (),
               ) -> tuple[dict[str, Any], dict[str, int]]:
    """The evidence after a follow-up from hop-1 passages (graph_flows.query.second_hop):
    each ``(chunk id, bridge passage row)`` of ``places`` puts the bridge's passage right
    after the passages of that chunk's document (a hop-1 passage, or a bridge's passage
    placed before it), in the passages and in the ranking (moved up when it was lower, left
    where it was when already higher); each row of ``tail`` (a weaker guess) goes to the
    start of the tail, after the first :data:`RULES_HEAD` documents (left where it is when
    already higher); ``facts`` and ``entities`` are added after the evidence's own."""
    passages = list(state.get("passages") or [])
    metrics = dict(state.get("search_metrics") or {})
    ranked = list((metrics.get("ppr") or {}).get("ranked") or [])
    docs = {p["id"]: _source(p) for p in passages}
    for hop_id, row in places:
        row = _held(passages, row)
        docs[row["id"]] = _source(row)
        passages = _ranked_score(_place(passages, hop_id, row, _by_id, _source), row["id"])
        ranked = _place(ranked, hop_id, row["id"], _same, docs.get)
    for row in reversed(tail):  # each at the tail's start: they end in their order
        row = _held(passages, row)
        docs[row["id"]] = _source(row)
        passages = _ranked_score(_at_tail(passages, row, _by_id, _source), row["id"])
        ranked = _at_tail(ranked, row["id"], _same, docs.get)
    if metrics.get("ppr"):
        metrics["ppr"] = {**metrics["ppr"], "ranked": ranked}
    old_f = state.get("facts") or []
    known_f = {f["id"] for f in old_f}
    merged_f = [*old_f, *(f for f in facts if f["id"] not in known_f)]
    merged_e = _append_entities(state.get("entities") or [], entities)
    added = {"passages": _added(state.get("passages") or [], passages),
             "facts": _added(old_f, merged_f),
             "entities": _added(state.get("entities") or [], merged_e)}
    return {"passages": passages, "facts": merged_f, "entities": merged_e,
            "search_metrics": metrics}, added


def _held(passages: Sequence[dict[str, Any]], row: dict[str, Any]) -> dict[str, Any]:
    """``row``, or the evidence's own row of that passage when already retrieved (it moves,
    keeping its own score, with the methods of both)."""
    held = next((p for p in passages if p.get("id") == row["id"]), None)
    if held is None:
        return row
    return {**held, "methods": [*dict.fromkeys([*(held.get("methods") or []),
                                               *(row.get("methods") or [])])]}


def _at_tail(items: list[T], item: T, key: Callable[[T], Hashable],
             doc: Callable[[T], Hashable]) -> list[T]:
    """``items`` with ``item`` first after the items of the first :data:`RULES_HEAD`
    documents (by ``doc``), unless already at or before that place."""
    keys = [key(i) for i in items]
    seen: set[Hashable] = set()
    at = len(items)
    for n, i in enumerate(items):
        d = doc(i)
        d = ("item", key(i)) if d is None else d  # a ranked chunk the evidence does not hold
        if d not in seen and len(seen) == RULES_HEAD:
            at = n
            break
        seen.add(d)
    mine = key(item)
    if mine in keys[:at + 1]:
        return items
    return [*items[:at], item, *(i for i in items[at:] if key(i) != mine)]


def _ranked_score(passages: list[dict[str, Any]], chunk_id: str) -> list[dict[str, Any]]:
    """``passages`` with the placed one's score no higher than the passage before it: its
    own score comes from another search (the bridge's), and a reader sorting by score must
    meet the passages in the order placed."""
    at = next((i for i, p in enumerate(passages) if p.get("id") == chunk_id), 0)
    if at == 0:
        return passages
    before, mine = passages[at - 1].get("score"), passages[at].get("score")
    if before is None or (mine is not None and mine <= before):
        return passages
    return [*passages[:at], {**passages[at], "score": before}, *passages[at + 1:]]


def _place(items: list[T], hop_id: str, item: T, key: Callable[[T], Hashable],
           doc: Callable[[T], Hashable]) -> list[T]:
    """``items`` with ``item`` right after the run of items that starts at the one keyed
    ``hop_id`` and shares its document (``doc``), unless ``item`` is already before that
    place; ``items`` unchanged without ``hop_id``."""
    keys = [key(i) for i in items]
    if hop_id not in keys:
        return items
    at = keys.index(hop_id) + 1
    while at < len(items) and doc(items[at]) == doc(items[at - 1]) is not None:
        at += 1
    mine = key(item)
    if mine in keys[:at]:
        return items
    rest = [i for i in items[at:] if key(i) != mine]
    return [*items[:at], item, *rest]


def _last_source(passages: Sequence[dict[str, Any]]) -> int:
    """Where the passages of the last document begin (len for none)."""
    if not passages:
        return 0
    last = _source(passages[-1])
    return next(n for n, p in enumerate(passages) if _source(p) == last)


def _source(passage: dict[str, Any]) -> Hashable:
    return passage.get("document_id") or passage.get("uri") or passage["id"]


def admit(found: dict[str, Any], known: set[Hashable], sources: int) -> dict[str, Any]:
    """``found`` cut to the passages of its first ``sources`` documents not in ``known``,
    the facts with a source among those documents and the entities at those facts' ends."""
    passages: list[dict[str, Any]] = []
    chosen: set[Hashable] = set()
    for p in found.get("passages") or []:
        doc = _source(p)
        if doc not in known and (doc in chosen or len(chosen) < sources):
            chosen.add(doc)
            passages.append(p)
    uris = {p.get("uri") for p in passages}
    facts = [f for f in found.get("facts") or []
             if any(s.get("uri") in uris for s in f.get("sources") or [])]
    ends = {f[k] for f in facts for k in ("subject_id", "object_id")}
    return {**found, "passages": passages, "facts": facts,
            "entities": [e for e in found.get("entities") or [] if e["id"] in ends]}


def source_head(passages: Sequence[dict[str, Any]], head: int) -> int:
    """How many leading passages hold the first ``head`` distinct documents (a document
    split into several chunks counts once)."""
    seen: set[Any] = set()
    for n, p in enumerate(passages):
        doc = _source(p)
        if doc not in seen:
            if len(seen) == head:
                return n
            seen.add(doc)
    return len(passages)


def _added(old: Sequence[dict[str, Any]], merged: Sequence[dict[str, Any]]) -> int:
    known = {r["id"] for r in old}
    return sum(1 for r in merged if r["id"] not in known)


def _main(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("methods") != ["endpoint"]]


def _append_entities(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]],
                     ) -> list[dict[str, Any]]:
    """Every entity row of the evidence so far, then the new ones (retrieved rows before
    endpoint rows, as in both lists): what an admitted document's facts name is added,
    nothing the earlier rounds found is dropped."""
    known = {r["id"] for r in old}
    extra = [r for r in new if r["id"] not in known]
    ends = [r for r in old if r.get("methods") == ["endpoint"]]
    return [*_main(old), *_main(extra), *ends,
            *(r for r in extra if r.get("methods") == ["endpoint"])]


def _merge_entities(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]],
                    facts: Sequence[dict[str, Any]], head: int, limit: int,
                    ) -> list[dict[str, Any]]:
    """Retrieved entities interleaved (round 1's head kept) up to ``limit``, then the rows
    of the kept facts' ends that are not among them (endpoint rows stay last)."""
    kept = interleave(_main(old), _main(new), _by_id, head, limit)
    shown = {r["id"] for r in kept}
    ends = {f[k] for f in facts for k in ("subject_id", "object_id")}
    rows = {r["id"]: r for r in [*new, *old] if r["id"] in ends and r["id"] not in shown}
    return kept + list(rows.values())
