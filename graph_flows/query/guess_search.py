"""The search of a no-LLM rule round (graph_flows.query.follow_up's weaker guess): what
loop.merge_guess takes from a search, and nothing more.

A rule round brings in one document (loop.admit): the passages of the first document of the
follow-up's passage ranking that the evidence does not hold, the facts that document states
and the rows of their ends. The ranking is the ppr recipe's own
(graph_flows.query.evidence.ranked_passages: the follow-up linked to facts, dense and BM25
passages, their neighbourhood and PageRank, the same statements with the same arguments), so
the document admitted is the one the whole retrieval admitted. What round 1 read in the same
read-only request is not read again (storage.request_memo: the passages' rows, the scopes'
full-text statistics being fresh). Left out are the split
recipe's candidates (LIKE and trigram on entity names, summaries and fact texts, the facts
touching those entities, their ends and sources: six to eight statements, half the round's
database time, on the same two cores as the ranking's): they rank entities and facts for a
reader of the whole evidence, which round 1 did for the question. The facts the admitted
document brings are the follow-up's linked facts it states (the facts the PageRank seeds come
from), their rows and sources fetched beside the PageRank steps. The scope's chain is
round 1's (``search_metrics["scopes"]``).

Measured in docs/bench/HISTORY.md (issue 41, the follow-up round's cost): retrieval, answers
and confidence the same as the whole retrieval's on both MuSiQue graphs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import partial
from typing import Any

from graph_flows.query import evidence as recipe
from graph_flows.query.retrieval_base import (
    _POOL,
    Retrieved,
    SearchConfig,
    _Metrics,
)
from storage import search


def retrieve_guess(engine: Any, chain: Sequence[str], question: str, cfg: SearchConfig,
                   embed_query: Callable[[], list[float]], *, deadline: float | None = None,
                   as_of: Any = None) -> Retrieved:
    """The passages the ppr recipe ranks for ``question`` in the scopes ``chain``, the
    linked facts (with their sources) and the seed entities (module docstring)."""
    t0 = time.perf_counter()
    m = _Metrics(deadline)
    text_job, vector, dense_job, linked_job = recipe.start_searches(
        engine, m, chain, question, embed_query, as_of)  # as round 1 starts them
    rows_job = None if linked_job is None else recipe._CANDIDATES.submit(
        _linked_rows, engine, m, chain, linked_job)
    ranked = recipe.ranked_passages(partial(m.run, engine), chain, dense_job, text_job,
                                    as_of, linked_job, question)
    metrics: dict[str, Any] = {"results": m.results, "ms": m.ms, "errors": m.errors,
                               "skipped": m.skipped, "scopes": list(chain)}
    if ranked is None:  # the chunk vectors are gone since round 1: nothing to rank
        metrics["total_ms"] = recipe._ms(t0)
        return Retrieved(metrics=metrics)
    if rows_job is not None:
        ranked.entity_rows, ranked.sources = rows_job.result()
    start = time.perf_counter()
    entities = recipe._entities([], ranked, cfg.entity_limit)
    facts = recipe._facts([], ranked, entities, cfg.fact_limit)
    ranked.steps["merge"] = recipe._ms(start)
    ranked.info["steps_ms"] = ranked.steps
    metrics |= {"recipe": "ppr", "ppr": ranked.info, "total_ms": recipe._ms(t0)}
    return Retrieved(entities, facts, metrics, ranked.passages, vector=vector)


def _linked_rows(engine: Any, m: _Metrics, chain: Sequence[str],
                 linked_job: Future[list[search.FactHit]],
                 ) -> tuple[dict[str, search.Entity], dict[str, list]]:
    """The linked facts' end rows and sources, two statements side by side once the facts
    are known."""
    hits = linked_job.result()
    ends = sorted({i for h in hits for i in (h.fact.subject_id, h.fact.object_id)})
    rows = _POOL.submit(m.run, engine, "endpoints", search.entities_by_ids, chain, ends)
    sources = m.run(engine, "fact_sources", _sources, [h.fact.id for h in hits])
    return {e.id: e for e in rows.result()}, dict(sources)


def _sources(conn: Any, fact_ids: list[str]) -> list[tuple[str, list]]:
    return list(search.fact_sources(conn, fact_ids).items())
