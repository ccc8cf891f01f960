"""Recipe ``"split"`` (the seed's design): LIKE takes ``like_share`` of each limit, trigram
(fuzzy names + summaries) the rest; if together they found under ``fallback_ratio`` of the
limit, HNSW KNN fills up. Facts: LIKE on the fact text, trigram-ranked facts touching the
retrieved entities, the same vector fallback.

Multi-hop (``SearchConfig.max_hops`` > 1): a bounded recursive CTE (storage.multihop) walks
from the entities the question names exactly, along the question's predicates first; the
walk's best facts (any hop) take up to a quarter of the fact limit out of the trigram share
(unused slots go back to it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_flows.query import scoring
from graph_flows.query.retrieval_base import (
    _POOL,
    Extra,
    Retrieved,
    SearchConfig,
    _add_entity_hits,
    _add_fact_hits,
    _embed,
    _finish,
    _lexical_jobs,
    _merge_entities,
    _Metrics,
    scope_chain,
)
from storage import multihop, search

SEEDS = 5  # entities the graph walk starts from
FANOUT = 20  # facts followed out of each entity per hop


def retrieve_split(
    engine: Any, m: _Metrics, t0: float, scope: str, terms: Sequence[str],
    predicates: Sequence[str], cfg: SearchConfig, embed_query: Callable[[], list[float]],
    as_of: Any, *, chain: Sequence[str] | None = None,
    fact_vector: Callable[[], list[search.FactHit]] | None = None,
    walk: Callable[[], bool] | None = None, extra: Extra | None = None,
) -> Retrieved:
    """The split recipe (see the module docstring); ``t0`` is when the request started.
    ``chain``: the scope's chain when the caller has it already; ``fact_vector``: the nearest
    facts to the question's vector when the caller fetches them anyway (the fallback then
    uses them instead of its own statement); ``walk``: asked, once the first methods are
    done, whether to run the multi-hop walk at all (default: when ``max_hops`` > 1);
    ``extra``: more ids whose rows the caller needs, fetched with the endpoints and sources
    (``Retrieved.looked_up``)."""
    # A scope sees its own data and its ancestors' (storage.scopes); from here on ``scope``
    # is that chain.
    scope = list(chain) if chain else (
        scope_chain(engine, m, scope) or [scope])
    e_like, e_trgm = scoring.split_limit(cfg.entity_limit, cfg.like_share)
    f_like, f_trgm = scoring.split_limit(cfg.fact_limit, cfg.like_share)
    got = _lexical_jobs(engine, m, scope, terms, cfg, (e_like, e_trgm, f_like), as_of)()
    entities = _merge_entities(got, e_like, e_trgm)
    vector: list[float] | None = None
    fallback_e = scoring.needs_fallback(len(entities), cfg.entity_limit, cfg.fallback_ratio)
    if fallback_e:
        vector = _embed(m, embed_query)
        if vector is not None:
            hits = m.run(engine, "entity_vector", search.entity_vector, scope, vector,
                         cfg.entity_limit)
            _add_entity_hits(entities, hits, cfg.entity_limit - len(entities))
    facts, fallback_f, f_trgm = _facts(engine, m, scope, terms, predicates, cfg, entities,
                                       got["fact_like"], (f_like, f_trgm), vector,
                                       embed_query, as_of, fact_vector, walk)
    result = _finish(engine, m, scope, entities, facts, extra=extra)
    result.metrics.update(
        scopes=list(scope), recipe="split", max_hops=cfg.max_hops,
        fallback={"entities": fallback_e, "facts": fallback_f},
        split={"entity_like": e_like, "entity_trigram": e_trgm, "fact_like": f_like,
               "fact_trigram": f_trgm},
        total_ms=round((time.perf_counter() - t0) * 1000, 2))
    return result


def _facts(
    engine: Any, m: _Metrics, scope: Any, terms: Sequence[str], predicates: Sequence[str],
    cfg: SearchConfig, entities: dict[str, dict], like_hits: list[search.FactHit],
    shares: tuple[int, int], vector: list[float] | None,
    embed_query: Callable[[], list[float]], as_of: Any,
    shared_vector: Callable[[], list[search.FactHit]] | None = None,
    walk_wanted: Callable[[], bool] | None = None,
) -> tuple[dict[str, dict], bool, int]:
    """Facts: LIKE hits, the walk's best (multi-hop), endpoint-trigram hits, then the vector
    fallback; with whether it ran and the trigram share left."""
    f_like, f_trgm = shares
    ids, seeds = list(entities), _seeds(entities)
    wanted = cfg.max_hops >= 2 and bool(seeds) and (walk_wanted is None or walk_wanted())
    walk = None if not wanted else _POOL.submit(
        m.run, engine, "fact_graph", _graph_hits, scope, seeds, cfg.max_hops,
        cfg.fact_limit, as_of, predicates)
    by_ends = m.run(engine, "fact_trigram", search.fact_by_endpoints, scope, ids, terms,
                    predicates, 2 * f_trgm, as_of)
    facts: dict[str, dict] = {}
    _add_fact_hits(facts, like_hits, f_like)
    if walk is not None:  # the graph's best paths take up to a quarter, out of trigram's share
        before = len(facts)
        _add_fact_hits(facts, walk.result(), min(cfg.fact_limit // 4, f_trgm))
        f_trgm -= len(facts) - before
    _add_fact_hits(facts, by_ends, f_trgm)
    fallback_f = scoring.needs_fallback(len(facts), cfg.fact_limit, cfg.fallback_ratio)
    if fallback_f and shared_vector is not None:
        _add_fact_hits(facts, _shared(m, "fact_vector", shared_vector),
                       cfg.fact_limit - len(facts))
    elif fallback_f:
        vector = vector if vector is not None else _embed(m, embed_query)
        if vector is not None:
            hits = m.run(engine, "fact_vector", search.fact_vector, scope, vector,
                         cfg.fact_limit, as_of)
            _add_fact_hits(facts, hits, cfg.fact_limit - len(facts))
    return facts, fallback_f, f_trgm


def _shared(m: _Metrics, name: str, hits: Callable[[], list[search.FactHit]],
            ) -> list[search.FactHit]:
    """Hits another step fetched, recorded under ``name`` like a statement of this recipe."""
    return m.record(name, time.perf_counter(), hits())


def _seeds(entities: dict[str, dict]) -> list[str]:
    """Where the graph walk starts: up to :data:`SEEDS` entities the question names exactly.
    None (no walk) when it names none: a walk from fuzzy or vector hits costs time and
    brings mostly noise (measured, docs/bench/HISTORY.md, "Multi-hop and fused ranking")."""
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
