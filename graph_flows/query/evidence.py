"""Recipe ``"ppr"``: passages as evidence, the question linked to facts, personalized
PageRank over the entity–passage graph (HippoRAG 2's design on our stack, issue 14).

After the split recipe's candidates (LIKE / trigram / vector fallback, kept with their
metrics), this module:

1. links the whole question to facts by embedding (storage.search.fact_vector); the ends of
   the top :data:`FACT_SEEDS` facts become entity seeds, each weighted by the fact's cosine
   (min-max scaled over the linked facts) divided by the number of passages the entity
   appears in;
2. finds passages by embedding (HNSW) and by full text (BM25 over the GIN-indexed ``tsv``);
   they seed PageRank with a small weight (ppr.PASSAGE_WEIGHT);
3. pulls the bounded neighbourhood of the seeds from Postgres (storage.evidence) and runs
   personalized PageRank (damping ppr.DAMPING) on it;
4. ranks passages by PageRank mass; entities and facts are re-ranked by the mass of their
   nodes (facts: of both ends).

Weights and limits are the module constants; they were not tuned on the evaluation questions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import asdict
from typing import Any

from graph_flows.query import ppr, scoring
from storage import evidence, search

FACT_SEEDS = 5  # linked facts whose ends seed PageRank
LINKED_FACTS = 20  # facts fetched by question embedding (the rest may still join the facts)
DENSE_CHUNKS = 30  # passages fetched by embedding (seeds)
FULLTEXT_CHUNKS = 30  # passages fetched by BM25 (seeds)
FULLTEXT_WEIGHT = 0.5 * ppr.PASSAGE_WEIGHT
PER_ENTITY = 20  # passages per entity in the neighbourhood
MAX_EDGES = 5000  # neighbourhood edges of each kind
PASSAGE_LIMIT = 10  # passages returned
EF_SEARCH = 100

Run = Callable[..., Any]
"""``run(name, fn, *args)``: the retrieval runner (metrics, retry, deadline; [] on failure)."""
Spawn = Callable[..., "Future[Any]"]
"""``spawn(name, fn, *args)``: the same on the search pool, returning a future."""


def ranked(
    run: Run, spawn: Spawn, chain: Sequence[str], question: str, vector: list[float] | None,
    entities: list[dict[str, Any]], facts: list[dict[str, Any]], *,
    entity_limit: int, fact_limit: int, as_of: Any = None,
) -> tuple[list[dict], list[dict], list[dict], dict[str, Any]]:
    """Passages, entities and facts re-ranked by PageRank mass, and the recipe's metrics."""
    t0 = time.perf_counter()
    jobs = {"chunk_fulltext": spawn("chunk_fulltext", evidence.chunk_fulltext, chain,
                                    question, FULLTEXT_CHUNKS)}
    if vector is not None:
        jobs["fact_question"] = spawn("fact_question", search.fact_vector, chain, vector,
                                      LINKED_FACTS, as_of)
        jobs["chunk_vector"] = spawn("chunk_vector", evidence.chunk_vector, chain, vector,
                                     DENSE_CHUNKS, EF_SEARCH)
    got = {k: f.result() for k, f in jobs.items()}
    linked: list[search.FactHit] = got.get("fact_question", [])
    dense: list[evidence.ChunkHit] = got.get("chunk_vector", [])
    text_hits: list[evidence.ChunkHit] = got["chunk_fulltext"]
    top = linked[:FACT_SEEDS]
    scaled = ppr.min_max({h.fact.id: h.similarity for h in linked})
    seed_entities = list(dict.fromkeys(e for h in top for e in (h.fact.subject_id,
                                                                   h.fact.object_id)))
    counts = dict(run("entity_chunks", _counts, seed_entities))
    seed_chunks = list(dict.fromkeys([h.id for h in dense] + [h.id for h in text_hits]))
    hood = (run("neighbourhood", _hood, chain, seed_entities, seed_chunks, as_of)
            or [evidence.Neighbourhood([], [])])[0]
    seeds = ppr.combine(
        ppr.entity_seeds([(h.fact.subject_id, h.fact.object_id, scaled[h.fact.id])
                          for h in top], counts),
        ppr.passage_seeds({h.id: h.score for h in dense}),
        ppr.passage_seeds({h.id: h.score for h in text_hits}, FULLTEXT_WEIGHT))
    graph = ppr.build_graph(hood.mentions + hood.relations, nodes=seeds)
    mass = ppr.personalized_pagerank(graph, seeds)
    chunk_ids = {c for _, c in hood.mentions} | set(seed_chunks)
    order = [c for c, _ in ppr.rank(sorted(chunk_ids), mass)][:PASSAGE_LIMIT]
    passages = _passages(run, order, mass, dense, text_hits)
    ent_rows = _entities(run, chain, entities, seed_entities, mass, entity_limit)
    fact_rows = _facts(run, chain, facts, linked, ent_rows, mass, fact_limit)
    metrics = {"linked_facts": len(linked), "seed_entities": len(seed_entities),
               "seed_passages": len(seed_chunks), "graph_nodes": len(graph.nodes),
               "graph_edges": {"mentions": len(hood.mentions),
                               "relations": len(hood.relations)},
               "no_link": not top, "ppr_ms": round((time.perf_counter() - t0) * 1000, 2),
               "damping": ppr.DAMPING, "passage_weight": ppr.PASSAGE_WEIGHT}
    return passages, ent_rows, fact_rows, metrics


def _counts(conn: Any, ids: list[str]) -> list[tuple[str, int]]:
    return list(evidence.entity_chunk_counts(conn, ids).items())


def _hood(conn: Any, chain: Sequence[str], entity_ids: list[str], chunk_ids: list[str],
          as_of: Any) -> list[evidence.Neighbourhood]:
    return [evidence.neighbourhood(conn, chain, entity_ids, chunk_ids, per_entity=PER_ENTITY,
                                   max_edges=MAX_EDGES, as_of=as_of)]


def _passages(run: Run, order: list[str], mass: dict[str, float],
              dense: list[evidence.ChunkHit], text_hits: list[evidence.ChunkHit],
              ) -> list[dict[str, Any]]:
    """Chunk rows in PageRank order with their score and the methods that found them."""
    methods: dict[str, list[str]] = {}
    for h in dense + text_hits:
        methods.setdefault(h.id, []).append(h.method)
    rows = run("passages", evidence.chunk_rows, order)
    return [{**row, "score": round(mass.get(row["id"], 0.0), 6),
             "methods": sorted(methods.get(row["id"], []) + ["graph"])} for row in rows]


def _entities(run: Run, chain: Sequence[str], entities: list[dict], seeds: list[str],
              mass: dict[str, float], limit: int) -> list[dict[str, Any]]:
    """The candidates plus the linked facts' entities, by mass (candidates keep their
    order among equals); endpoint-only rows stay last."""
    known = {e["id"] for e in entities}
    new = [i for i in seeds if i not in known]
    rows = [dict(e) for e in entities]
    for ent in run("seed_entities", search.entities_by_ids, chain, new):
        rows.append({**asdict(ent), "methods": ["fact_link"], "score": 0, "similarity": 0.0,
                     "name_match": False, "summary_match": False,
                     "agreement": scoring.agreement(["fact_link"])})
    for r in rows:
        r["mass"] = round(mass.get(r["id"], 0.0), 6)
    main = [r for r in rows if r.get("methods") != ["endpoint"]]
    ends = [r for r in rows if r.get("methods") == ["endpoint"]]
    main = [r for _, r in sorted(enumerate(main), key=lambda p: (-p[1]["mass"], p[0]))]
    return main[:limit] + ends


def _facts(run: Run, chain: Sequence[str], facts: list[dict], linked: list[search.FactHit],
           entities: list[dict], mass: dict[str, float], limit: int) -> list[dict[str, Any]]:
    """Candidate facts plus question-linked facts, by the mass of their two ends."""
    rows = {f["id"]: dict(f) for f in facts}
    names = {e["id"]: e["name"] for e in entities}
    for f in rows.values():
        names.setdefault(f["subject_id"], f["subject"])
        names.setdefault(f["object_id"], f["object"])
    new = [h for h in linked if h.fact.id not in rows]
    missing = sorted({i for h in new for i in (h.fact.subject_id, h.fact.object_id)}
                     - set(names))
    names |= {e.id: e.name for e in run("fact_ends", search.entities_by_ids, chain, missing)}
    sources = dict(run("linked_sources", _sources, [h.fact.id for h in new]))
    for h in new:
        if h.fact.subject_id in names and h.fact.object_id in names:
            rows[h.fact.id] = {
                **asdict(h.fact), "methods": ["vector"], "text_match": False,
                "similarity": h.similarity, "hop": None, "score": 0,
                "agreement": scoring.agreement(["vector"]), "sources": sources.get(h.fact.id, []),
                "subject": names[h.fact.subject_id], "object": names[h.fact.object_id]}
    for h in linked:
        row = rows.get(h.fact.id)
        if row is not None:
            row["linked"] = round(h.similarity, 6)
    for f in rows.values():
        f["mass"] = round(mass.get(f["subject_id"], 0.0) + mass.get(f["object_id"], 0.0), 6)
    order = sorted(enumerate(rows.values()),
                   key=lambda p: (-p[1]["mass"], -p[1].get("linked", 0.0), p[0]))
    return [f for _, f in order][:limit]


def _sources(conn: Any, fact_ids: list[str]) -> list[tuple[str, list]]:
    return list(search.fact_sources(conn, fact_ids).items())
