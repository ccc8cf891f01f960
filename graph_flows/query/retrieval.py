"""retrieve_knowledge: run the search methods concurrently inside Postgres, merge, score.

Entities: LIKE takes ``like_share`` of the limit, trigram (fuzzy names + summaries) the rest;
if together they found under ``fallback_ratio`` of the limit, HNSW KNN fills up. Facts: LIKE on
the fact text, trigram-ranked facts touching the retrieved entities, the same vector fallback.
A method that fails is reported in the metrics and the others carry on.

Multi-hop (``SearchConfig.max_hops`` > 1): a bounded recursive CTE (storage.multihop) walks
from the entities the question names exactly, along the question's predicates first; in the split
recipe the walk's best facts (any hop) take up to a quarter of the fact limit out of the
trigram share (unused slots go back to it).

Recipe ``"rrf"`` (``SearchConfig.recipe``): entities from LIKE, trigram, summary and vector
fused by Reciprocal Rank Fusion (k = 60); facts from LIKE, endpoint-trigram, vector and the
graph-distance list (facts within ``max_hops`` of the seeds, nearest first) fused the same
way, then MMR (lambda 0.7) drops near-duplicate facts. Every row in either recipe carries an
``agreement`` label (scoring.agreement).

Recipe ``"ppr"`` (graph_flows.query.evidence): the split recipe's candidates, then the question
linked to facts and passages, personalized PageRank over the entity–passage graph; the
result gains ``passages``. A scope without chunk embeddings degrades to ``split`` with a
notice (``krag reembed`` fills them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Any

from sqlalchemy.exc import DBAPIError

from graph_flows.query import evidence, scoring
from storage import evidence as evidence_sql
from storage import multihop, scopes, search

log = logging.getLogger(__name__)

# Two workers: the machine class we target has 2 cores; more threads only queue (measured).
_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="krag-search")
RECIPES = ("split", "rrf", "ppr")
RRF_K = 60
MMR_LAMBDA = 0.7
SEEDS = 5  # entities the graph walk starts from
FANOUT = 20  # facts followed out of each entity per hop


@dataclass(frozen=True, kw_only=True)
class SearchConfig:
    entity_limit: int = 15
    fact_limit: int = 20
    like_share: float = 0.6
    fallback_ratio: float = 0.5
    trigram_threshold: float = 0.1
    recipe: str = "split"  # one of RECIPES
    max_hops: int = 2  # 1..multihop.MAX_HOPS (measured best: docs/BENCHMARKS.md)


@dataclass
class Retrieved:
    entities: list[dict[str, Any]] = field(default_factory=list)
    facts: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    passages: list[dict[str, Any]] = field(default_factory=list)


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
        self.ms[name] = round((time.perf_counter() - start) * 1000, 2)
        self.results[name] = len(out)
        return out


def _with_retry(engine: Any, fn: Callable[..., list], args: tuple) -> list:
    """Run on a pooled connection; a connection the server dropped is replaced once."""
    for attempt in (1, 2):
        try:
            with engine.connect() as conn:
                return fn(conn, *args)
        except DBAPIError as exc:
            if attempt == 2 or not exc.connection_invalidated:
                raise
    raise AssertionError("unreachable")


def retrieve(
    engine: Any, scope: str, terms: Sequence[str], predicates: Sequence[str],
    cfg: SearchConfig, embed_query: Callable[[], list[float]], *,
    deadline: float | None = None, as_of: Any = None, question: str | None = None,
) -> Retrieved:
    """All retrieval for one query. ``embed_query`` is only called when a fallback runs.
    Facts are those valid at ``as_of`` (default: now). ``question`` (the whole question,
    default: the terms) is what the ``ppr`` recipe matches passages and facts against.

    ``deadline`` (``time.time()``): methods not started by then are skipped and listed in
    ``metrics["skipped"]`` (each statement is bounded by the engine's statement_timeout).
    """
    if cfg.recipe not in RECIPES:
        raise ValueError(f"recipe must be one of {', '.join(RECIPES)} (got {cfg.recipe!r})")
    if not 1 <= cfg.max_hops <= multihop.MAX_HOPS:
        raise ValueError(f"max_hops must be 1..{multihop.MAX_HOPS} (got {cfg.max_hops})")
    t0 = time.perf_counter()
    m = _Metrics(deadline)
    if cfg.recipe == "ppr":
        return _retrieve_ppr(engine, m, t0, scope, terms, predicates, cfg, embed_query, as_of,
                             question or " ".join(terms))
    if cfg.recipe == "rrf":
        return _retrieve_rrf(engine, m, t0, scope, terms, predicates, cfg, embed_query, as_of)
    # A scope sees its own data and its ancestors' (storage.scopes); from here on ``scope``
    # is that chain.
    scope = m.run(engine, "scope_chain", scopes.scope_chain, scope) or [scope]
    e_like, e_trgm = scoring.split_limit(cfg.entity_limit, cfg.like_share)
    f_like, f_trgm = scoring.split_limit(cfg.fact_limit, cfg.like_share)
    jobs = {
        "entity_like": (search.entity_like, scope, terms, e_like),
        "entity_trigram": (search.entity_fuzzy, scope, terms, e_trgm, cfg.trigram_threshold),
        "entity_summary": (search.entity_summary, scope, terms, e_trgm),
        "fact_like": (search.fact_like, scope, terms, f_like, as_of),
    }
    futures = {k: _POOL.submit(m.run, engine, k, fn, *args) for k, (fn, *args) in jobs.items()}
    got = {k: f.result() for k, f in futures.items()}
    entities = _merge_entities(got, e_like, e_trgm)
    vector: list[float] | None = None
    fallback_e = scoring.needs_fallback(len(entities), cfg.entity_limit, cfg.fallback_ratio)
    if fallback_e:
        vector = _embed(m, embed_query)
        if vector is not None:
            hits = m.run(engine, "entity_vector", search.entity_vector, scope, vector,
                         cfg.entity_limit)
            _add_entity_hits(entities, hits, cfg.entity_limit - len(entities))
    ids, seeds = list(entities), _seeds(entities)
    walk = None if cfg.max_hops < 2 or not seeds else _POOL.submit(
        m.run, engine, "fact_graph", _graph_hits, scope, seeds, cfg.max_hops,
        cfg.fact_limit, as_of, predicates)
    by_ends = m.run(engine, "fact_trigram", search.fact_by_endpoints, scope, ids, terms,
                    predicates, 2 * f_trgm, as_of)
    facts: dict[str, dict] = {}
    _add_fact_hits(facts, got["fact_like"], f_like)
    if walk is not None:  # the graph's best paths take up to a quarter, out of trigram's share
        before = len(facts)
        _add_fact_hits(facts, walk.result(), min(cfg.fact_limit // 4, f_trgm))
        f_trgm -= len(facts) - before
    _add_fact_hits(facts, by_ends, f_trgm)
    fallback_f = scoring.needs_fallback(len(facts), cfg.fact_limit, cfg.fallback_ratio)
    if fallback_f:
        vector = vector if vector is not None else _embed(m, embed_query)
        if vector is not None:
            hits = m.run(engine, "fact_vector", search.fact_vector, scope, vector,
                         cfg.fact_limit, as_of)
            _add_fact_hits(facts, hits, cfg.fact_limit - len(facts))
    result = _finish(engine, m, scope, entities, facts)
    result.metrics.update(
        scopes=list(scope), recipe="split", max_hops=cfg.max_hops,
        fallback={"entities": fallback_e, "facts": fallback_f},
        split={"entity_like": e_like, "entity_trigram": e_trgm, "fact_like": f_like,
               "fact_trigram": f_trgm},
        total_ms=round((time.perf_counter() - t0) * 1000, 2))
    return result


def _seeds(entities: dict[str, dict]) -> list[str]:
    """Where the graph walk starts: up to :data:`SEEDS` entities the question names exactly.
    None (no walk) when it names none: a walk from fuzzy or vector hits costs time and
    brings mostly noise (measured, docs/BENCHMARKS.md)."""
    exact = [i for i, row in entities.items() if row["name_match"] and row["similarity"] >= 1]
    return exact[:SEEDS]


def _graph_hits(conn: Any, scope: Any, seeds: list[str], max_hops: int, limit: int,
                as_of: Any, predicates: Sequence[str]) -> list[search.FactHit]:
    """The graph-distance list: facts within ``max_hops`` of ``seeds``, paths along the
    question's predicates first, then nearest first (storage.multihop).
    ``similarity`` is 1 / hop (1.0 for facts touching a seed)."""
    hops = multihop.neighbour_facts(conn, scope, seeds, max_hops, min(limit * 2,
                                    multihop.MAX_LIMIT), as_of=as_of, fanout=FANOUT,
                                    predicates=predicates)
    by_id = {h.fact.id: h for h in hops}
    ordered: dict[str, multihop.HopFact] = {}
    for h in hops:  # each fact right after the fact that leads to it: paths stay whole
        chain = [h]
        while chain[-1].via in by_id and chain[-1].via not in ordered and len(chain) <= 3:
            chain.append(by_id[chain[-1].via])
        for link in reversed(chain):
            ordered.setdefault(link.fact.id, link)
    return [search.FactHit(h.fact, "graph", 1.0 / h.hop) for h in ordered.values()]


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
    return {**asdict(hit.entity), "methods": set(), "name_match": False,
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
    return {**asdict(hit.fact), "methods": set(), "text_match": False, "similarity": 0.0,
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
            fused: dict[str, float] | None = None) -> Retrieved:
    """Endpoints, sources, scores and order. ``fused`` (rrf recipe): the fused score of each
    entity and fact id, which then orders the rows (dict order = fused order)."""
    missing = {f[k] for f in facts.values() for k in ("subject_id", "object_id")} - set(entities)
    ends = _POOL.submit(m.run, engine, "endpoints", search.entities_by_ids, scope,
                        sorted(missing))
    srcs = _POOL.submit(m.run, engine, "fact_sources", _sources, sorted(facts))
    known = {e.id: e for e in ends.result()}
    sources = dict(srcs.result())
    for f in list(facts.values()):  # every fact keeps both ends
        f["sources"] = sources.get(f["id"], [])
        for key in ("subject_id", "object_id"):
            if f[key] not in entities and f[key] not in known:
                facts.pop(f["id"], None)
    ent_rows = []
    for row in entities.values():
        row["score"] = scoring.entity_score(row["name_match"], row["summary_match"])
        ent_rows.append(row)
    if fused is None:
        ent_rows.sort(key=lambda r: (-r["score"], -r["similarity"], -r["confidence"],
                                     r["name"]))
    else:
        for row in ent_rows:
            row["fused"] = round(fused.get(row["id"], 0.0), 6)
    names = {r["id"]: r["name"] for r in ent_rows} | {e.id: e.name for e in known.values()}
    retrieved = {r["id"] for r in ent_rows}
    fact_rows = []
    for f in facts.values():
        f["score"] = scoring.fact_score(f["text_match"], f["subject_id"] in retrieved,
                                        f["object_id"] in retrieved)
        f["subject"], f["object"] = names[f["subject_id"]], names[f["object_id"]]
        fact_rows.append(f)
    if fused is None:
        fact_rows.sort(key=lambda r: (-r["score"], -r["similarity"], -r["confidence"],
                                      r["fact"]))
    else:
        for row in fact_rows:
            row["fused"] = round(fused.get(row["id"], 0.0), 6)
    for row in ent_rows + fact_rows:
        row["methods"] = sorted(row["methods"])
        row["agreement"] = scoring.agreement(row["methods"])
    ent_rows += [{**asdict(e), "methods": ["endpoint"], "score": 0, "similarity": 0.0,
                  "name_match": False, "summary_match": False,
                  "agreement": scoring.agreement(["endpoint"])} for e in known.values()]
    return Retrieved(ent_rows, fact_rows, {"results": m.results, "ms": m.ms,
                                           "errors": m.errors, "skipped": m.skipped})


# -- recipe "rrf" ------------------------------------------------------------------------------
def _fuse_entities(lists: dict[str, list[search.EntityHit]], limit: int) -> dict[str, dict]:
    """RRF over the per-method rankings; the top ``limit`` ids in fused order, all evidence."""
    fused = scoring.rrf([[h.entity.id for h in hits] for hits in lists.values()], RRF_K)
    top = sorted(fused, key=lambda i: -fused[i])[:limit]
    rows: dict[str, dict] = {}
    for hits in lists.values():
        for h in hits:
            if h.entity.id in fused:
                _note(rows.setdefault(h.entity.id, _entity_row(h)), h)
    return {i: rows[i] for i in top}


def _fuse_facts(lists: dict[str, list[search.FactHit]], limit: int) -> dict[str, dict]:
    """RRF over the fact lists, then MMR (fact sentences) down to ``limit``."""
    fused = scoring.rrf([[h.fact.id for h in hits] for hits in lists.values()], RRF_K)
    rows: dict[str, dict] = {}
    for hits in lists.values():
        _add_fact_hits(rows, hits, len(hits))
    top = max(fused.values(), default=1.0) or 1.0
    keep = scoring.mmr([(i, fused[i] / top, rows[i]["fact"]) for i in fused], limit,
                       MMR_LAMBDA)
    return {i: rows[i] for i in keep}


def _retrieve_rrf(
    engine: Any, m: _Metrics, t0: float, scope: str, terms: Sequence[str],
    predicates: Sequence[str], cfg: SearchConfig, embed_query: Callable[[], list[float]],
    as_of: Any,
) -> Retrieved:
    """Every method at the full limit, fused by rank (no split, no fallback threshold)."""
    scope = m.run(engine, "scope_chain", scopes.scope_chain, scope) or [scope]
    n_e, n_f = cfg.entity_limit, cfg.fact_limit
    jobs = {
        "entity_like": (search.entity_like, scope, terms, n_e),
        "entity_trigram": (search.entity_fuzzy, scope, terms, n_e, cfg.trigram_threshold),
        "entity_summary": (search.entity_summary, scope, terms, n_e),
        "fact_like": (search.fact_like, scope, terms, n_f, as_of),
    }
    futures = {k: _POOL.submit(m.run, engine, k, fn, *args) for k, (fn, *args) in jobs.items()}
    vector = _embed(m, embed_query)  # overlaps the lexical statements running in the pool
    vec_jobs = {} if vector is None else {
        "entity_vector": _POOL.submit(m.run, engine, "entity_vector", search.entity_vector,
                                      scope, vector, n_e),
        "fact_vector": _POOL.submit(m.run, engine, "fact_vector", search.fact_vector, scope,
                                    vector, n_f, as_of)}
    got = {k: f.result() for k, f in futures.items()}
    e_vec = vec_jobs["entity_vector"].result() if vec_jobs else []
    entities = _fuse_entities({"like": got["entity_like"], "trigram": got["entity_trigram"],
                               "summary": got["entity_summary"], "vector": e_vec}, n_e)
    e_fused = scoring.rrf([[h.entity.id for h in hits] for hits in (
        got["entity_like"], got["entity_trigram"], got["entity_summary"], e_vec)], RRF_K)
    seeds = _seeds(entities)
    walk = None if not seeds else _POOL.submit(
        m.run, engine, "fact_graph", _graph_hits, scope, seeds, cfg.max_hops, n_f, as_of,
        predicates)
    by_ends = m.run(engine, "fact_trigram", search.fact_by_endpoints, scope, list(entities),
                    terms, predicates, n_f, as_of)
    f_vec = vec_jobs["fact_vector"].result() if vec_jobs else []
    f_lists = {"like": got["fact_like"], "trigram": by_ends, "vector": f_vec,
               "graph": walk.result() if walk else []}
    facts = _fuse_facts(f_lists, n_f)
    f_fused = scoring.rrf([[h.fact.id for h in hits] for hits in f_lists.values()], RRF_K)
    result = _finish(engine, m, scope, entities, facts, {**e_fused, **f_fused})
    result.metrics.update(
        scopes=list(scope), recipe="rrf", max_hops=cfg.max_hops,
        fallback={"entities": False, "facts": False},
        rrf={"k": RRF_K, "mmr_lambda": MMR_LAMBDA},
        total_ms=round((time.perf_counter() - t0) * 1000, 2))
    return result


# -- recipe "ppr" ------------------------------------------------------------------------------
NO_CHUNK_VECTORS = ("recipe 'ppr' needs chunk embeddings, which this store has none of yet; "
                    "answered with the 'split' recipe (run `krag reembed` to add them)")


def _retrieve_ppr(
    engine: Any, m: _Metrics, t0: float, scope: str, terms: Sequence[str],
    predicates: Sequence[str], cfg: SearchConfig, embed_query: Callable[[], list[float]],
    as_of: Any, question: str,
) -> Retrieved:
    """The split recipe's candidates, then graph_flows.query.evidence ranks by PageRank."""
    chain = m.run(engine, "scope_chain", scopes.scope_chain, scope) or [scope]
    embedded = m.run(engine, "chunk_vectors",
                     lambda conn: [evidence_sql.has_chunk_embeddings(conn, chain)])
    cache: list[list[float]] = []

    def once() -> list[float]:
        if not cache:
            cache.append(embed_query())
        return cache[0]

    base = retrieve(engine, scope, terms, predicates, replace(cfg, recipe="split"), once,
                    deadline=m.deadline, as_of=as_of)
    if not any(embedded):
        _merge_metrics(base.metrics, m)
        base.metrics.update(recipe="split", requested_recipe="ppr", notices=[NO_CHUNK_VECTORS])
        return base
    vector = _embed(m, once)
    passages, entities, facts, info = evidence.ranked(
        partial(m.run, engine), partial(_POOL.submit, m.run, engine), chain, question, vector,
        base.entities, base.facts,
        entity_limit=cfg.entity_limit, fact_limit=cfg.fact_limit, as_of=as_of)
    _merge_metrics(base.metrics, m)
    base.metrics.update(recipe="ppr", candidates="split", ppr=info,
                        total_ms=round((time.perf_counter() - t0) * 1000, 2))
    return Retrieved(entities, facts, base.metrics, passages)


def _merge_metrics(metrics: dict[str, Any], m: _Metrics) -> None:
    """Add ``m``'s per-method results, timings, errors and skips to ``metrics``."""
    for key in ("results", "ms", "errors"):
        metrics[key].update(getattr(m, key))
    metrics["skipped"] += m.skipped
