"""Shared parts of the retrieval recipes: the search pool, the per-method runner (metrics,
retry, deadline), the configuration and result types, and the merging of hits into entity
and fact rows (graph_flows.query.retrieval dispatches to the recipes)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import DBAPIError

from graph_flows.query import scoring
from graph_flows.shared.threads import ContextThreadPool
from storage import scopes, search
from storage.models import as_row

log = logging.getLogger(__name__)

# The search pool: each method is one statement on a pooled connection of its own.
# Four: on two cores more statements at once only slow each other (eight measured slower
# for the ppr recipe on MuSiQue).
_POOL = ContextThreadPool(max_workers=4, thread_name_prefix="krag-search")
RECIPES = ("split", "rrf", "ppr")


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    entity_limit: int = 15
    fact_limit: int = 20
    like_share: float = 0.6
    fallback_ratio: float = 0.5
    trigram_threshold: float = 0.1
    recipe: str = "split"  # one of RECIPES
    max_hops: int = 2  # 1..multihop.MAX_HOPS (measured best: docs/bench/HISTORY.md, multi-hop)


@dataclass
class Retrieved:
    entities: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    passages: list[dict[str, Any]] = field(default_factory=list)
    looked_up: Lookups | None = None
    """The rows fetched for ``_finish``'s ``extra`` ids (a recipe built on this one)."""
    vector: list[float] | None = None
    """The query's embedding when the recipe computed it (recipe ``ppr``): a later round
    of the same request searching the same words reuses it."""


@dataclass(frozen=True)
class Lookups:
    """Entity rows and fact sources fetched in ``_finish``'s two statements, for the ids
    its rows needed and the ``extra`` ids asked by a recipe built on it (one statement each
    instead of two)."""

    entities: dict[str, search.Entity] = field(default_factory=dict)
    sources: dict[str, list] = field(default_factory=dict)


Extra = Callable[[], tuple[Sequence[str], Sequence[str]]]
"""``extra()``: (entity ids, fact ids) to fetch beside ``_finish``'s own (may block)."""
Job = tuple[Any, ...]
"""``(name, fn, *args)``: a search method for :meth:`_Metrics.run_together`."""


class _Metrics:
    def __init__(self, deadline: float | None = None) -> None:
        self.ms: dict[str, float] = {}
        self.results: dict[str, int] = {}
        self.errors: dict[str, str] = {}
        self.skipped: list[str] = []
        self.deadline = deadline

    def spent(self, name: str) -> bool:
        """True (and ``name`` recorded as skipped) when the request budget is used up."""
        if self.deadline is not None and time.time() >= self.deadline:
            self.skipped.append(name)
            return True
        return False

    def run(self, engine: Any, name: str, fn: Callable[..., list], *args: Any) -> list:
        if self.spent(name):
            return []
        start = time.perf_counter()
        try:
            out = _with_retry(engine, fn, args)
        except Exception as exc:  # degrade: report the method, keep the others
            log.warning("search method %s failed and was skipped", name, exc_info=True)
            self.errors[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            out = []
        return self.record(name, start, out)

    def run_together(self, engine: Any, jobs: Sequence[Job]) -> list[list]:
        """Each ``(name, fn, *args)`` of ``jobs`` as :meth:`run` would, but one after the
        other in one transaction on one pooled connection: one checkout, ``BEGIN`` and
        ``COMMIT`` for all (each transaction costs ~0.3 ms of this process's CPU and ~0.1
        ms of the server's, more than a small search itself). A job whose name finds the
        budget spent is skipped; when the transaction fails, each job runs again on its
        own (:meth:`run`), so one method's error never costs the others their rows."""
        live = [job for job in jobs if not self.spent(job[0])]
        outs: dict[str, list] = {}

        def body(conn: Any) -> dict[str, tuple[float, list]]:
            done = {}
            for name, fn, *args in live:
                start = time.perf_counter()
                out = fn(conn, *args)
                done[name] = (round((time.perf_counter() - start) * 1000, 2), out)
            return done

        try:
            for name, (ms, out) in _with_retry(engine, body, ()).items():
                self.ms[name], self.results[name], outs[name] = ms, len(out), out
        except Exception:
            log.warning("search methods %s failed together; run apart",
                        ", ".join(job[0] for job in live), exc_info=True)
            outs = {name: self.run(engine, name, fn, *args) for name, fn, *args in live}
        return [outs.get(job[0], []) for job in jobs]

    def record(self, name: str, start: float, out: list) -> list:
        """Note ``name``'s milliseconds since ``start`` and its result count; ``out``."""
        self.ms[name] = round((time.perf_counter() - start) * 1000, 2)
        self.results[name] = len(out)
        return out


def _lexical_jobs(engine: Any, m: _Metrics, scope: Any, terms: Sequence[str],
                  cfg: SearchConfig, limits: tuple[int, int, int], as_of: Any,
                  ) -> Callable[[], dict[str, list]]:
    """The four lexical methods every recipe starts with, on the search pool: name LIKE,
    fuzzy names and summaries (trigram) and fact LIKE, at ``limits`` = (name LIKE, trigram,
    fact LIKE) rows; returns the call that waits for their hits, by method.

    Two transactions of two statements each, side by side (four before, one each): the
    pool runs at most four statements at once and a question's passage searches hold
    three of its threads at this moment, so four transactions waited for each other
    anyway. The fuzzy search leads its pair: its trigram threshold rides on that
    transaction's ``BEGIN`` (:func:`storage.access.set_local`) and no statement after it
    uses the ``%`` operator it sets."""
    like_n, trigram_n, fact_n = limits
    pairs = (
        (("entity_like", search.entity_like, scope, terms, like_n),
         ("entity_summary", search.entity_summary, scope, terms, trigram_n)),
        (("entity_trigram", search.entity_fuzzy, scope, terms, trigram_n,
          cfg.trigram_threshold),
         ("fact_like", search.fact_like, scope, terms, fact_n, as_of)),
    )
    futures = [(jobs, _POOL.submit(m.run_together, engine, jobs)) for jobs in pairs]

    def hits() -> dict[str, list]:
        return {job[0]: out for jobs, future in futures
                for job, out in zip(jobs, future.result(), strict=True)}
    return hits


def spawn_together(engine: Any, m: _Metrics, jobs: Sequence[Job]) -> list[Future[list]]:
    """:meth:`_Metrics.run_together` on the search pool: one transaction for ``jobs``, a
    future of each job's hits (in ``jobs`` order), set when the group is done."""
    parts: list[Future[list]] = [Future() for _ in jobs]

    def done(group: Future[list[list]]) -> None:
        exc = group.exception()
        for i, part in enumerate(parts):
            if exc is not None:
                part.set_exception(exc)
            else:
                part.set_result(group.result()[i])
    _POOL.submit(m.run_together, engine, jobs).add_done_callback(done)
    return parts


def _with_retry(engine: Any, fn: Callable[..., list], args: tuple) -> list:
    """Run on a pooled connection; a connection the server dropped is replaced once.

    The read-only transaction is ended by COMMIT, not by the ROLLBACK a connection gets on
    its way back to the pool: psycopg forgets its prepared statements on every ROLLBACK, and
    kept they spare the server parsing the same statements again (and let the
    neighbourhood run its generic plan)."""
    for attempt in (1, 2):
        try:
            with engine.connect() as conn:
                out = fn(conn, *args)
                conn.commit()
                return out
        except DBAPIError as exc:
            if attempt == 2 or not exc.connection_invalidated:
                raise
    raise AssertionError("unreachable")


def scope_chain(engine: Any, m: _Metrics, scope: str) -> list[str]:
    """``scope`` and its ancestors: the request's own read of it when it has one (no
    transaction opened for it), else read (an empty list when the read failed)."""
    return scopes.known_chain(scope) or m.run(engine, "scope_chain", scopes.scope_chain, scope)


def _sources(conn: Any, fact_ids: list[str]) -> list[tuple[str, list]]:
    return list(search.fact_sources(conn, fact_ids).items())


def _embed(m: _Metrics, embed_query: Callable[[], list[float]]) -> list[float] | None:
    if m.spent("embed_query"):
        return None
    start = time.perf_counter()
    try:
        return embed_query()
    except Exception as exc:
        log.warning("embedding the query failed; vector search skipped", exc_info=True)
        m.errors["embed_query"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        return None
    finally:
        m.ms["embed_query"] = round((time.perf_counter() - start) * 1000, 2)


def _entity_row(hit: search.EntityHit) -> dict[str, Any]:
    return {**as_row(hit.entity), "methods": set(), "name_match": False,
            "summary_match": False, "similarity": 0.0}


def _note(row: dict[str, Any], hit: search.EntityHit) -> None:
    row["methods"].add(hit.method)
    row["name_match"] |= hit.field == "name"
    row["summary_match"] |= hit.field == "summary"
    row["similarity"] = max(row["similarity"], hit.similarity)


def _add_entity_hits(out: dict[str, dict], hits: list[search.EntityHit], new_max: int) -> None:
    """Merge hits: known entities gain evidence; at most ``new_max`` new ones are added."""
    added = 0
    for h in hits:
        if h.entity.id in out:
            _note(out[h.entity.id], h)
        elif added < new_max:
            out[h.entity.id] = _entity_row(h)
            _note(out[h.entity.id], h)
            added += 1


def _merge_entities(got: dict[str, list], like_n: int, trgm_n: int) -> dict[str, dict]:
    """LIKE hits (exact names first) fill the LIKE share, trigram hits their own share."""
    out: dict[str, dict] = {}
    _add_entity_hits(out, got["entity_like"], like_n)
    _add_entity_hits(out, got["entity_trigram"] + got["entity_summary"], trgm_n)
    return out


def _fact_row(hit: search.FactHit) -> dict[str, Any]:
    return {**as_row(hit.fact), "methods": set(), "text_match": False, "similarity": 0.0,
            "hop": None}


def _add_fact_hits(out: dict[str, dict], hits: list[search.FactHit], new_max: int) -> None:
    added = 0
    for h in hits:
        row = out.get(h.fact.id)
        if row is None:
            if added >= new_max:
                continue
            row = out[h.fact.id] = _fact_row(h)
            added += 1
        row["methods"].add(h.method)
        if h.method == "graph":  # similarity is 1 / hop: graph distance, not text
            hop = round(1 / h.similarity)
            row["hop"] = hop if row["hop"] is None else min(row["hop"], hop)
            continue
        row["similarity"] = max(row["similarity"], h.similarity)
        row["text_match"] |= h.method == "like" or h.similarity >= 0.6


def _finish(engine: Any, m: _Metrics, scope: str, entities: dict, facts: dict,
            fused: dict[str, float] | None = None, extra: Extra | None = None) -> Retrieved:
    """Endpoints, sources, scores and order. ``fused`` (rrf recipe): the fused score of each
    entity and fact id, which then orders the rows (dict order = fused order). ``extra``:
    more entity and fact ids to fetch in the same two statements (``Retrieved.looked_up``)."""
    missing = {f[k] for f in facts.values() for k in ("subject_id", "object_id")} - set(entities)
    more_entities, more_facts = extra() if extra is not None else ((), ())
    # one transaction for both lookups (two small statements; they were two transactions)
    fetched, found_sources = m.run_together(engine, (
        ("endpoints", search.entities_by_ids, scope, sorted(missing | set(more_entities))),
        ("fact_sources", _sources, sorted(set(facts) | set(more_facts)))))
    known = {e.id: e for e in fetched if e.id in missing}
    sources = dict(found_sources)
    for f in list(facts.values()):  # every fact keeps both ends
        f["sources"] = sources.get(f["id"], [])
        for key in ("subject_id", "object_id"):
            if f[key] not in entities and f[key] not in known:
                facts.pop(f["id"], None)
    ent_rows = []
    for row in entities.values():
        row["score"] = scoring.entity_score(row["name_match"], row["summary_match"])
        ent_rows.append(row)
    _order(ent_rows, fused, "name")
    names = {r["id"]: r["name"] for r in ent_rows} | {e.id: e.name for e in known.values()}
    retrieved = {r["id"] for r in ent_rows}
    fact_rows = []
    for f in facts.values():
        f["score"] = scoring.fact_score(f["text_match"], f["subject_id"] in retrieved,
                                        f["object_id"] in retrieved)
        f["subject"], f["object"] = names[f["subject_id"]], names[f["object_id"]]
        fact_rows.append(f)
    _order(fact_rows, fused, "fact")
    for row in ent_rows + fact_rows:
        row["methods"] = sorted(row["methods"])
        row["agreement"] = scoring.agreement(row["methods"])
    ent_rows += [{**as_row(e), "methods": ["endpoint"], "score": 0, "similarity": 0.0,
                  "name_match": False, "summary_match": False,
                  "agreement": scoring.agreement(["endpoint"])} for e in known.values()]
    return Retrieved(ent_rows, fact_rows, {"results": m.results, "ms": m.ms,
                                           "errors": m.errors, "skipped": m.skipped},
                     looked_up=Lookups({e.id: e for e in fetched}, sources))




def _order(rows: list[dict[str, Any]], fused: dict[str, float] | None, tie: str) -> None:
    """Without ``fused``: sort ``rows`` by score, similarity, confidence, then ``tie``; with
    it: keep their (fused) order and note each row's fused score."""
    if fused is None:
        rows.sort(key=lambda r: (-r["score"], -r["similarity"], -r["confidence"], r[tie]))
        return
    for row in rows:
        row["fused"] = round(fused.get(row["id"], 0.0), 6)
