"""The search of a no-LLM rule round (graph_flows.query.follow_up's weaker guess): what
loop.merge_guess takes from a search, and nothing more.

A rule round brings in one document (loop.admit): the passages of the first document of the
follow-up's passage ranking that the evidence does not hold, the facts that document states
and the rows of their ends. The ranking is the ppr recipe's (graph_flows.query.evidence:
the follow-up linked to facts, dense and BM25 passages as seeds, personalized PageRank, the
same order and cover placement) on the *bridge's side* of the graph only: the ends of the
linked facts (the bridge the follow-up names, the things its facts relate it to), their
relations, synonyms and passages, with the follow-up's dense and BM25 passages as seeds of
their own. Left out is the other side round 1 reads: the entities the 30 + 30 matched
passages mention and every other passage of each (storage.evidence.neighbourhood's seed
chunks). That side is the step from a passage the text matched to a passage it does not
match through an entity they share: a hop. The follow-up needs none: the rule made the hop
when it named the bridge ("<bridge> <uncovered words>"), and what is left is a lookup of
the bridge's passage saying those words. Both ways that passage is found stay: as a
passage of an entity the follow-up's facts link (found under another name or other words
than the follow-up's: "Kael grew up near the docks" for "Orsina Kael childhood"), and by
its text (BM25 and dense: found however the extractor stored the bridge's name, which a
search of the bridge entity's own passages alone missed, docs/bench/HISTORY.md).

Its statements: BM25 and the embedding at once, then the two nearest-neighbour searches
side by side (passages; facts), the bridge's side as soon as the facts are there (while
the passage searches may still run), the chosen rows, and beside them the linked facts'
end rows and sources. What round 1 read in the same read-only request is not read again
(storage.request_memo: the scopes' full-text statistics being fresh); the scope's chain is
round 1's (``search_metrics["scopes"]``). Left out too are the split recipe's candidates
(LIKE and trigram on names, summaries and fact texts): they rank entities and facts for a
reader of the whole evidence, which round 1 did for the question.

Measured in docs/bench/HISTORY.md (issue 41, 2026-11-29, the rule round on the bridge's
side): against the whole neighbourhood on both MuSiQue graphs.
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
from graph_flows.shared.threads import in_context
from storage import evidence, search


def retrieve_guess(engine: Any, chain: Sequence[str], question: str, cfg: SearchConfig,
                   embed_query: Callable[[], list[float]], *, deadline: float | None = None,
                   as_of: Any = None) -> Retrieved:
    """The passages the ppr recipe ranks for ``question`` in the scopes ``chain`` on the
    bridge's side of the graph, the linked facts (with their sources) and the seed entities
    (module docstring)."""
    t0 = time.perf_counter()
    m = _Metrics(deadline)
    text_job, vector, dense_job, linked_job = recipe.start_searches(
        engine, m, chain, question, embed_query, as_of, together=False)
    rows_job = None if linked_job is None else recipe._CANDIDATES.submit(
        _linked_rows, engine, m, chain, linked_job)
    ranked = recipe.ranked_passages(
        partial(m.run, engine), chain, dense_job, text_job, as_of, linked_job, question,
        bridge_side(engine, m, chain, as_of, linked_job))
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
    ranked.info["neighbourhood"] = "bridge side"
    metrics |= {"recipe": "ppr", "ppr": ranked.info, "total_ms": recipe._ms(t0)}
    return Retrieved(entities, facts, metrics, ranked.passages, vector=vector)


def bridge_side(engine: Any, m: _Metrics, chain: Sequence[str], as_of: Any,
                linked_job: Future[list[search.FactHit]] | None) -> recipe.Hood:
    """The neighbourhood of the linked facts' ends alone (module docstring), read on the
    search pool as soon as the facts are there; the seed passages join PageRank as seeds
    (graph_flows.query.evidence._pagerank), their entities are not read. No vector: none."""
    if linked_job is None:
        return lambda _seeds, _chunks: []
    started: Future[tuple[list[str], Future[list]]] = Future()

    def start(job: Future[list[search.FactHit]]) -> None:
        try:
            seeds = seed_entities(job.result())
            started.set_result((seeds, _POOL.submit(
                m.run, engine, "neighbourhood", recipe._hood, chain, seeds, [], as_of)))
        except BaseException as exc:  # noqa: BLE001 - read() raises it, never waits forever
            started.set_exception(exc)

    # run where the facts search ends, in the request's context (its scoped access)
    linked_job.add_done_callback(in_context(start))

    def read(seeds: list[str], _chunks: list[str]) -> list[evidence.Neighbourhood]:
        ahead, side = started.result()
        if ahead != seeds:  # never expected: the seeds are the same facts' ends
            return m.run(engine, "neighbourhood", recipe._hood, chain, seeds, [], as_of)
        return side.result()
    return read


def seed_entities(linked: Sequence[search.FactHit]) -> list[str]:
    """The PageRank seeds of the linked facts, as graph_flows.query.evidence takes them: the
    ends of the first :data:`~graph_flows.query.evidence.FACT_SEEDS`, in order."""
    return list(dict.fromkeys(e for h in linked[:recipe.FACT_SEEDS]
                              for e in (h.fact.subject_id, h.fact.object_id)))


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
