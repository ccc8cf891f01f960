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

Recipe ``"ppr"`` (graph_flows.query.evidence): the split recipe's candidates, and beside them
the question linked to facts and passages, personalized PageRank over the entity–passage
graph; the result gains ``passages``. A scope without chunk embeddings degrades to ``split``
with a notice (``krag reembed`` fills them).

Each recipe lives in its own module (recipe_split, recipe_rrf, evidence); their shared parts
(search pool, per-method runner, row merging) in retrieval_base. This module keeps the public
names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_flows.query.evidence import retrieve_ppr
from graph_flows.query.recipe_rrf import retrieve_rrf
from graph_flows.query.recipe_split import retrieve_split
from graph_flows.query.retrieval_base import RECIPES, Retrieved, SearchConfig, _Metrics
from storage import multihop

__all__ = ["RECIPES", "Retrieved", "SearchConfig", "_Metrics", "retrieve"]


def retrieve(
    engine: Any, scope: str, terms: Sequence[str], predicates: Sequence[str],
    cfg: SearchConfig, embed_query: Callable[[], list[float]], *,
    deadline: float | None = None, as_of: Any = None, question: str | None = None,
) -> Retrieved:
    """All retrieval for one query. ``embed_query`` is only called when a fallback runs
    (recipe ``split``). Facts are those valid at ``as_of`` (default: now). ``question`` (the
    whole question, default: the terms) is what the ``ppr`` recipe matches passages and
    facts against.

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
        return retrieve_ppr(engine, m, t0, scope, terms, predicates, cfg, embed_query, as_of,
                            question or " ".join(terms))
    recipe = retrieve_rrf if cfg.recipe == "rrf" else retrieve_split
    return recipe(engine, m, t0, scope, terms, predicates, cfg, embed_query, as_of)
