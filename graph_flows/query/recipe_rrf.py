"""Recipe ``"rrf"``: entities from LIKE, trigram, summary and vector fused by Reciprocal Rank
Fusion (k = 60); facts from LIKE, endpoint-trigram, vector and the graph-distance list
(facts within ``max_hops`` of the seeds, nearest first) fused the same way, then MMR (lambda
0.7) drops near-duplicate facts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_flows.query import scoring
from graph_flows.query.recipe_split import _graph_hits, _seeds
from graph_flows.query.retrieval_base import (
    _POOL,
    Retrieved,
    SearchConfig,
    _add_fact_hits,
    _embed,
    _entity_row,
    _finish,
    _lexical_jobs,
    _Metrics,
    _note,
    scope_chain,
)
from storage import search

RRF_K = 60
MMR_LAMBDA = 0.7


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


def retrieve_rrf(
    engine: Any, m: _Metrics, t0: float, scope: str, terms: Sequence[str],
    predicates: Sequence[str], cfg: SearchConfig, embed_query: Callable[[], list[float]],
    as_of: Any,
) -> Retrieved:
    """Every method at the full limit, fused by rank (no split, no fallback threshold)."""
    scope = scope_chain(engine, m, scope) or [scope]
    n_e, n_f = cfg.entity_limit, cfg.fact_limit
    lexical = _lexical_jobs(engine, m, scope, terms, cfg, (n_e, n_e, n_f), as_of)
    vector = _embed(m, embed_query)  # overlaps the lexical statements running in the pool
    vec_jobs = {} if vector is None else {
        "entity_vector": _POOL.submit(m.run, engine, "entity_vector", search.entity_vector,
                                      scope, vector, n_e),
        "fact_vector": _POOL.submit(m.run, engine, "fact_vector", search.fact_vector, scope,
                                    vector, n_f, as_of)}
    got = lexical()
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
