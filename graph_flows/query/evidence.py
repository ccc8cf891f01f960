"""Recipe ``"ppr"``: passages as evidence, the question linked to facts, personalized
PageRank over the entity–passage graph (HippoRAG 2's design on our stack, issue 14).

The split recipe's candidates (LIKE / trigram / vector fallback, kept with their metrics)
run on their own thread beside this module's steps:

1. the question is linked to facts by embedding (storage.search.fact_vector); the ends of
   the top :data:`FACT_SEEDS` facts become entity seeds, each weighted by the fact's cosine
   (min-max scaled over the linked facts) divided by the number of passages the entity
   appears in;
2. passages are found by embedding (HNSW) and by full text (BM25 over the GIN-indexed
   ``tsv``, with the scope's cached statistics, rebuilt here when out of date); they seed
   PageRank with a small weight (ppr.PASSAGE_WEIGHT);
3. the bounded neighbourhood of the seeds comes from Postgres in one statement
   (storage.evidence.neighbourhood) with each entity's degree in the whole graph and the
   seeds' synonym edges (entities whose name vectors are nearly the same, HippoRAG's
   synonymy edges: resolution leaves "Kael" and "Orsina Kael" apart; stored at ingest by
   storage.synonyms, looked up for a seed whose are not computed yet), and
   personalized PageRank (damping ppr.DAMPING) runs on it, letting the mass of the edges
   left outside leak (so a cut never inflates the edges kept);
4. PageRank's top :data:`PASSAGE_LIMIT` passages by mass are the passages returned, in
   the order of graph_flows.query.passage_order: a mixture of their share of the mass and
   the question match of the dense and BM25 hits (both already fetched in step 2, so no
   statement more), the two kinds of evidence weighed alike (issue 24); then, their text
   fetched, the first document stays and each later place goes to the first passage
   that adds to those placed (the document of something named so far, or a name of the
   question not yet covered: passage_order.cover_order); entities and facts re-ranked by
   the mass of their nodes (facts: of both ends).

Weights and limits are the module constants; none was tuned on the evaluation questions
(docs/bench/HISTORY.md says which were measured and on what; the synonym threshold is the
most precise one for MiniLM name vectors on Re-DocRED's entity aliases, not MuSiQue's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from graph_flows.query import passage_order, ppr, scoring
from graph_flows.query.recipe_split import retrieve_split
from graph_flows.query.retrieval_base import (
    _POOL,
    Retrieved,
    SearchConfig,
    _embed,
    _Metrics,
    scope_chain,
    spawn_together,
)
from graph_flows.shared.threads import ContextThreadPool
from graph_flows.shared.untrusted import guard_passage
from storage import evidence, fulltext, search
from storage.models import as_row
from storage.request_memo import keep, peek

FACT_SEEDS = 5  # linked facts whose ends seed PageRank
LINKED_FACTS = 20  # facts fetched by question embedding (the rest may still join the facts)
DENSE_CHUNKS = 30  # passages fetched by embedding (seeds)
FULLTEXT_CHUNKS = 30  # passages fetched by BM25 (seeds)
FULLTEXT_WEIGHT = 0.5 * ppr.PASSAGE_WEIGHT
PER_ENTITY = 20  # passages (and relations of a seed) per entity in the neighbourhood
SYNONYMS = 5  # synonym edges per seed entity (nearest name vectors) ...
SYNONYM_MIN = 0.9  # ... at this cosine or more (the most precise on Re-DocRED's aliases);
# both within the stored bounds (storage.synonyms.PER_ENTITY, MIN_SIMILARITY)
MAX_EDGES = 5000  # neighbourhood edges of each kind (a safety bound)
PASSAGE_LIMIT = 10  # passages returned
EF_SEARCH = 100
NO_CHUNK_VECTORS = ("recipe 'ppr' needs chunk embeddings, which this store has none of yet; "
                    "answered with the 'split' recipe (run `krag reembed` to add them)")

# The split recipe's candidates run here, beside the PageRank steps: a thread of its own,
# not the search pool, since it waits on statements it puts on that pool.
_CANDIDATES = ContextThreadPool(max_workers=2, thread_name_prefix="krag-candidates")

Run = Callable[..., Any]
"""``run(name, fn, *args)``: the retrieval runner (metrics, retry, deadline; [] on failure)."""
Hood = Callable[[list[str], list[str]], list[evidence.Neighbourhood]]
"""``hood(seed entity ids, seed chunk ids)``: the neighbourhood's parts, to be merged."""


def retrieve_ppr(
    engine: Any, m: _Metrics, t0: float, scope: str, terms: Sequence[str],
    predicates: Sequence[str], cfg: SearchConfig, embed_query: Callable[[], list[float]],
    as_of: Any, question: str,
) -> Retrieved:
    """The split recipe's candidates and, beside them, passages and facts ranked by PageRank;
    a scope without chunk vectors gets the split recipe's answer and a notice."""
    chain = scope_chain(engine, m, scope) or [scope]
    text_job, vector, dense_job, linked_job = start_searches(engine, m, chain, question,
                                                             embed_query, as_of)
    split_m = _Metrics(m.deadline)
    base_job = _CANDIDATES.submit(
        retrieve_split, engine, split_m, t0, scope, terms, predicates,
        replace(cfg, recipe="split"), embed_query if vector is None else lambda: vector,
        as_of, chain=chain,
        # PageRank is this recipe's multi-hop step: the candidates walk only when the
        # recipe falls back to split (no chunk vectors); measured without the walk: MuSiQue
        # R@5 the same, R@10 and Ans@ctx within noise, faster
        walk=lambda: dense_job is not None and not dense_job.result(),
        # the vector fallback for facts is the question linking's statement, run once
        fact_vector=None if linked_job is None else _facts_linked(linked_job, cfg.fact_limit),
        # the linked facts' ends and sources come with the candidates' (one statement each)
        extra=None if linked_job is None else _linked_ids(linked_job))
    ranked = ranked_passages(partial(m.run, engine), chain, dense_job, text_job, as_of,
                             linked_job, question)
    base = base_job.result()
    if ranked is not None and base.looked_up is not None:
        ranked.entity_rows, ranked.sources = base.looked_up.entities, base.looked_up.sources
    _merge_metrics(base.metrics, m)
    if ranked is None:  # no chunk vectors: a notice only when there are chunks to embed
        chunks, _ = m.run(engine, "chunk_coverage", evidence.embedding_coverage, chain) or (0, 0)
        base.metrics.update(recipe="split", requested_recipe="ppr",
                            notices=[NO_CHUNK_VECTORS] if chunks else [])
        return base
    start = time.perf_counter()
    entities = _entities(base.entities, ranked, cfg.entity_limit)
    facts = _facts(base.facts, ranked, entities, cfg.fact_limit)
    ranked.steps["merge"] = _ms(start)
    ranked.info["steps_ms"] = ranked.steps
    base.metrics.update(recipe="ppr", candidates="split", ppr=ranked.info,
                        total_ms=_ms(t0))
    return Retrieved(entities, facts, base.metrics, ranked.passages, vector=vector)


def start_searches(engine: Any, m: _Metrics, chain: Sequence[str], question: str,
                   embed_query: Callable[[], list[float]], as_of: Any, *,
                   together: bool = True,
                   ) -> tuple[Future[list[evidence.ChunkHit]], list[float] | None,
                   Future[list[evidence.ChunkHit]] | None, Future[list[search.FactHit]] | None]:
    """The passage searches :func:`ranked_passages` waits for, started on the search pool
    (round 1 and a follow-up alike): the full-text search, the question's vector, and its
    two nearest-neighbour searches in one transaction (passages first: PageRank waits for
    them first). The facts' candidate list is the passages': at the default 40, approximate
    search missed nearest facts (MuSiQue R@5 +.005 to +.017 at 100, measured on four
    graphs). ``together=False``: the two in transactions of their own, side by side (each
    result as soon as it is there; one transaction more). ``(text_job, vector, dense_job,
    linked_job)``; no vector: the last three None."""
    text_job = _POOL.submit(m.run, engine, "chunk_fulltext", _fulltext, chain, question,
                            FULLTEXT_CHUNKS)
    vector = _embed(m, embed_query)
    if vector is None:
        return text_job, None, None, None
    jobs = (("chunk_vector", evidence.chunk_vector, chain, vector, DENSE_CHUNKS, EF_SEARCH),
            ("fact_question", search.fact_vector, chain, vector, LINKED_FACTS, as_of,
             EF_SEARCH))
    if together:
        dense_job, linked_job = spawn_together(engine, m, jobs)
    else:
        dense_job, linked_job = (_POOL.submit(m.run, engine, *job) for job in jobs)
    return text_job, vector, dense_job, linked_job


@dataclass
class Ranked:
    """What the PageRank steps found: passages in order, the mass of every node, the linked
    facts and the rows fetched for them (with the candidates'), the recipe's metrics and
    per-step milliseconds."""

    passages: list[dict[str, Any]] = field(default_factory=list)
    mass: dict[str, float] = field(default_factory=dict)
    linked: list[search.FactHit] = field(default_factory=list)
    seed_entities: list[str] = field(default_factory=list)
    entity_rows: dict[str, search.Entity] = field(default_factory=dict)
    sources: dict[str, list] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, float] = field(default_factory=dict)


def ranked_passages(run: Run, chain: Sequence[str],
                    dense_job: Future[list[evidence.ChunkHit]] | None,
                    text_job: Future[list[evidence.ChunkHit]], as_of: Any,
                    linked_job: Future[list[search.FactHit]] | None, question: str,
                    read_hood: Hood | None = None) -> Ranked | None:
    """Steps 1-4 of the module docstring, the passage and fact searches being under way
    (``dense_job``, ``linked_job``: None when the question has no vector). ``read_hood``:
    how the neighbourhood's parts are read (default: one statement). None: the scope has
    no chunk vectors."""
    out, start = Ranked(), time.perf_counter()
    dense: list[evidence.ChunkHit] = [] if dense_job is None else dense_job.result()
    if dense_job is not None and not dense:
        text_job.cancel()
        return None
    out.linked = [] if linked_job is None else linked_job.result()
    top = out.linked[:FACT_SEEDS]
    out.seed_entities = list(dict.fromkeys(
        e for h in top for e in (h.fact.subject_id, h.fact.object_id)))
    text_hits: list[evidence.ChunkHit] = text_job.result()
    out.steps["search"] = _ms(start)
    seed_chunks = list(dict.fromkeys([h.id for h in dense] + [h.id for h in text_hits]))
    # both sides in one statement: fetched apart, the entities both reach (a seed named in
    # a seed passage, their neighbours) had their passages and counts read twice
    hood_start = time.perf_counter()
    parts = run("neighbourhood", _hood, chain, out.seed_entities, seed_chunks, as_of) \
        if read_hood is None else read_hood(out.seed_entities, seed_chunks)
    hood = evidence.merge_neighbourhoods(parts, MAX_EDGES)
    out.steps["neighbourhood"] = _ms(hood_start)
    start = time.perf_counter()
    graph, order = _pagerank(out, hood, top, dense, text_hits)
    out.steps["pagerank"] = _ms(start)
    start = time.perf_counter()
    out.passages = passage_order.cover_order(
        _passages(run, order, out.mass, dense, text_hits), question)
    shown = [p["id"] for p in out.passages]
    placed = frozenset(shown)
    order = shown + [c for c in order if c not in placed]
    out.steps["rows"] = _ms(start)
    out.info = {"linked_facts": len(out.linked), "seed_entities": len(out.seed_entities),
                "seed_passages": len(seed_chunks),
                "graph_nodes": int(np.unique(graph.src).size),
                "graph_edges": {"mentions": len(hood.mention),
                                "relations": len(hood.relation),
                                "synonyms": len(hood.synonym)},
                "ranked": order, "no_link": not top, "damping": ppr.DAMPING,
                "passage_weight": ppr.PASSAGE_WEIGHT}
    return out


def _pagerank(out: Ranked, hood: evidence.Neighbourhood, top: list[search.FactHit],
              dense: list[evidence.ChunkHit], text_hits: list[evidence.ChunkHit],
              ) -> tuple[ppr.Graph, list[str]]:
    """Seeds, the graph, PageRank (its mass into ``out.mass``) and the passages in order:
    PageRank's top :data:`PASSAGE_LIMIT`, ordered by the graph's and the question-match
    evidence together (graph_flows.query.passage_order)."""
    scaled = ppr.min_max({h.fact.id: h.similarity for h in out.linked})
    seeds = ppr.combine(
        ppr.entity_seeds([(h.fact.subject_id, h.fact.object_id, scaled[h.fact.id])
                          for h in top], {e: hood.count(e) for e in out.seed_entities}),
        ppr.passage_seeds({h.id: h.score for h in dense}),
        ppr.passage_seeds({h.id: h.score for h in text_hits}, FULLTEXT_WEIGHT))
    graph = ppr.indexed_graph(hood.nodes, np.concatenate(
        [hood.mention, hood.relation, hood.synonym]), dict(hood.index), extra=seeds)
    out.mass = ppr.personalized_pagerank(graph, seeds, degrees=hood.degree)
    chunk_ids = sorted(set(hood.chunk_ids()) | {h.id for h in dense + text_hits})
    top = [c for c, _ in ppr.rank(chunk_ids, out.mass, PASSAGE_LIMIT)]
    return graph, passage_order.head_order(
        top, chunk_ids, out.mass, {h.id: h.score for h in dense},
        {h.id: h.score for h in text_hits})


def _linked_ids(job: Future[list[search.FactHit]],
                ) -> Callable[[], tuple[list[str], list[str]]]:
    """The linked facts' ends and ids (their rows and sources are fetched with the
    candidates')."""
    def ids() -> tuple[list[str], list[str]]:
        hits = job.result()
        return ([i for h in hits for i in (h.fact.subject_id, h.fact.object_id)],
                [h.fact.id for h in hits])
    return ids


def _facts_linked(job: Future[list[search.FactHit]], limit: int,
                  ) -> Callable[[], list[search.FactHit]]:
    """The split candidates' fact fallback served by the question-linking statement
    (the same nearest facts to the question's vector)."""
    return lambda: job.result()[:limit]


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _merge_metrics(metrics: dict[str, Any], m: _Metrics) -> None:
    """Add ``m``'s per-method results, timings, errors and skips to ``metrics``."""
    for key in ("results", "ms", "errors"):
        metrics[key].update(getattr(m, key))
    metrics["skipped"] += m.skipped


def _fulltext(conn: Any, chain: Sequence[str], question: str, limit: int,
              ) -> list[evidence.ChunkHit]:
    """BM25 passages, the scopes' full-text statistics rebuilt first when out of date (when
    none is, they are all there: BM25 uses them without asking again). Found fresh (or all
    rebuilt) once in a read-only request, they are not asked again in it (a follow-up
    round's search: storage.request_memo)."""
    fresh = ("term_stats_fresh", tuple(chain))
    if peek(fresh) or not (stale := fulltext.stale_term_stats(conn, chain)):
        keep(fresh, True)
        return evidence.chunk_fulltext(conn, chain, question, limit, cached=True)
    conn.rollback()
    if set(stale) <= set(fulltext.ensure_term_stats(conn, chain)):
        keep(fresh, True)
    return evidence.chunk_fulltext(conn, chain, question, limit)


def _hood(conn: Any, chain: Sequence[str], entity_ids: list[str], chunk_ids: list[str],
          as_of: Any) -> list[evidence.Neighbourhood]:
    """One part of the neighbourhood, merged with the other by the caller."""
    return [evidence.neighbourhood_part(conn, chain, entity_ids, chunk_ids,
                                        per_entity=PER_ENTITY, as_of=as_of,
                                        synonyms=SYNONYMS, synonym_min=SYNONYM_MIN)]


def _passages(run: Run, order: list[str], mass: dict[str, float],
              dense: list[evidence.ChunkHit], text_hits: list[evidence.ChunkHit],
              ) -> list[dict[str, Any]]:
    """Chunk rows in PageRank order with their score and the methods that found them."""
    methods: dict[str, list[str]] = {}
    for h in dense + text_hits:
        methods.setdefault(h.id, []).append(h.method)
    rows = [guard_passage(row) for row in run("passages", evidence.chunk_rows, order)]
    return [{**row, "score": round(mass.get(row["id"], 0.0), 6),
             "methods": sorted(methods.get(row["id"], []) + ["graph"])} for row in rows]


def _entities(entities: list[dict], ranked: Ranked, limit: int) -> list[dict[str, Any]]:
    """The candidates plus the linked facts' entities, by mass (candidates keep their
    order among equals); endpoint-only rows stay last."""
    known = {e["id"] for e in entities}
    rows = [dict(e) for e in entities]
    for i in ranked.seed_entities:
        ent = ranked.entity_rows.get(i)
        if i in known or ent is None:
            continue
        rows.append({**as_row(ent), "methods": ["fact_link"], "score": 0, "similarity": 0.0,
                     "name_match": False, "summary_match": False,
                     "agreement": scoring.agreement(["fact_link"])})
    for r in rows:
        r["mass"] = round(ranked.mass.get(r["id"], 0.0), 6)
    main = [r for r in rows if r.get("methods") != ["endpoint"]]
    ends = [r for r in rows if r.get("methods") == ["endpoint"]]
    main = [r for _, r in sorted(enumerate(main), key=lambda p: (-p[1]["mass"], p[0]))]
    return main[:limit] + ends


def _facts(facts: list[dict], ranked: Ranked, entities: list[dict], limit: int,
           ) -> list[dict[str, Any]]:
    """Candidate facts plus question-linked facts, by the mass of their two ends."""
    rows = {f["id"]: dict(f) for f in facts}
    names = {e["id"]: e["name"] for e in entities}
    for f in rows.values():
        names.setdefault(f["subject_id"], f["subject"])
        names.setdefault(f["object_id"], f["object"])
    names |= {i: e.name for i, e in ranked.entity_rows.items() if i not in names}
    for h in ranked.linked:
        if h.fact.id in rows or h.fact.subject_id not in names \
                or h.fact.object_id not in names:
            continue
        rows[h.fact.id] = {
            **as_row(h.fact), "methods": ["vector"], "text_match": False,
            "similarity": h.similarity, "hop": None, "score": 0,
            "agreement": scoring.agreement(["vector"]),
            "sources": ranked.sources.get(h.fact.id, []),
            "subject": names[h.fact.subject_id], "object": names[h.fact.object_id]}
    for h in ranked.linked:
        row = rows.get(h.fact.id)
        if row is not None:
            row["linked"] = round(h.similarity, 6)
    mass = ranked.mass
    for f in rows.values():
        f["mass"] = round(mass.get(f["subject_id"], 0.0) + mass.get(f["object_id"], 0.0), 6)
    order = sorted(enumerate(rows.values()),
                   key=lambda p: (-p[1]["mass"], -p[1].get("linked", 0.0), p[0]))
    return [f for _, f in order][:limit]
