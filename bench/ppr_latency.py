"""Per-node and per-step latency of the query graph's retrieval recipes on an ingested scope,
with the passage recall of the same runs.

Usage::

    KRAG_DATA_DIR=/tmp/evalG KRAG_CHAT_MODEL=none python -m bench.ppr_latency \\
        --questions ../shared/benchdata/multihop/questions.jsonl --scope eval-0ecbd479d6cb \\
        [--recipes ppr,split,ppr+rules] [--offset 0] [--limit 100] [--json]

Runs ``analyze_query``, ``retrieve_knowledge`` and ``build_context`` (the nodes themselves,
no answer step) for every question, the recipes alternating question by question so machine
noise falls on both alike, after a few warm-up questions. Prints p50 / p95 of each node and of
each step the recipe records in ``search_metrics["ms"]`` (for ``ppr``: candidates, fact
linking, passage search, neighbourhood fetch, PageRank, passage fetch), and R@2/5/10 and
Ans@ctx scored as ``krag eval multihop`` scores them (graph_flows.services.evaluation).
A recipe ``ppr+rules`` runs the query loop with the no-LLM follow-up (:func:`run_one`): each
round's own time, per kind of follow-up round, and its ratio to round 1 per question.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from graph_flows.query import nodes
from graph_flows.query.context import QueryContext
from graph_flows.services.evaluation.data import read_questions
from graph_flows.services.evaluation.metrics import RetrievalScore, answer_in, percentile
from graph_flows.services.evaluation.multihop import graph_passages, ranked_documents
from graph_flows.shared.heap import freeze_loaded
from graph_flows.shared.reads import read_only
from graph_flows.shared.resources import build_resources, use_resources
from graph_flows.shared.scoped import scope_access
from graph_flows.shared.settings import load_settings
from storage.fulltext import entity_documents

WARMUP = 3


def run_one(question: str, scope: str, recipe: str) -> tuple[dict[str, Any], dict[str, float]]:
    """The nodes for one question: the merged state and each node's milliseconds.

    ``recipe`` is a recipe name, or ``<recipe>+rules`` for the bounded loop with the no-LLM
    follow-up (``max_rounds`` 2): then ``retrieve_knowledge`` is the time of every round
    and of assess_evidence between them, and ``retrieve_knowledge.2_rounds`` the same for the
    questions that took a second round; ``round.N`` is round N's own retrieval time as its
    record in ``rounds`` gives it (the cost of one round), ``round.N.<kind>`` the same per
    kind of follow-up round (``hops``: from hop-1 passages, graph_flows.query.second_hop;
    ``rules``: the weaker guess, graph_flows.query.guess_search) and ``ratio.<kind>`` that
    round's time over round 1's in the same question. The question runs as one read-only
    request (graph_flows.shared.reads), as ``krag ask``, the UI and MCP run it: what a
    request reads once (storage.request_memo) is read once here too."""
    name, _, loop = recipe.partition("+")
    ctx = QueryContext(recipe=name, no_llm_follow_up=loop == "rules",
                       max_rounds=2 if loop else 1)
    runtime = SimpleNamespace(context=ctx, stream_writer=lambda _event: None)
    state: dict[str, Any] = {"query": question, "scope": scope}
    with read_only():  # one read-only request, as the ask service runs a question
        ms = _nodes(state, runtime, loop)
    return state, ms


def _nodes(state: dict[str, Any], runtime: Any, loop: str) -> dict[str, float]:
    """Run the nodes on ``state`` (updated in place): each node's milliseconds and each
    round's (:func:`run_one`)."""
    ms: dict[str, float] = {}
    for node in (nodes.analyze_query, nodes.retrieve_knowledge, nodes.build_context):
        start = time.perf_counter()
        state |= node(state, runtime)  # type: ignore[arg-type]
        while node is nodes.retrieve_knowledge and loop:
            state |= nodes.assess_evidence(state, runtime)  # type: ignore[arg-type]
            if not state.get("follow_up"):
                break
            state |= node(state, runtime)  # type: ignore[arg-type]
        ms[node.__name__] = (time.perf_counter() - start) * 1000
    if len(state.get("rounds") or []) > 1:
        ms["retrieve_knowledge.2_rounds"] = ms["retrieve_knowledge"]
    rounds = state.get("rounds") or []
    for r in rounds:  # each round's own retrieval (its record's ms)
        ms[f"round.{r['round']}"] = float(r.get("ms") or 0.0)
        if r["round"] > 1:
            kind = "hops" if r.get("hops") else r.get("by") or "other"
            ms[f"round.{r['round']}.{kind}"] = ms[f"round.{r['round']}"]
            if rounds[0].get("ms"):
                ms[f"ratio.{kind}"] = ms[f"round.{r['round']}"] / float(rounds[0]["ms"])
    return ms


def steps(metrics: dict[str, Any]) -> dict[str, float]:
    """The recipe's per-step milliseconds (search methods and the ppr recipe's own)."""
    out = {f"sql.{k}": float(v) for k, v in metrics.get("ms", {}).items()}
    for k, v in (metrics.get("ppr") or {}).get("steps_ms", {}).items():
        out[f"ppr.{k}"] = float(v)
    return out


def summary(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """p50 / p95 / max of each timed name (milliseconds to 0.1, ratios to 0.001)."""
    return {k: {"p50": round(percentile(v, 50), _digits(k)),
                "p95": round(percentile(v, 95), _digits(k)),
                "max": round(max(v), _digits(k)), "n": len(v)}
            for k, v in sorted(times.items())}


def _digits(name: str) -> int:
    return 3 if name.startswith("ratio.") else 1


def main() -> None:
    """Parse arguments, run the questions, print the report."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--scope", required=True)
    p.add_argument("--recipes", default="ppr,split")
    p.add_argument("--offset", type=int, default=0, help="skip this many questions")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    recipes = args.recipes.split(",")
    questions = read_questions(args.questions)[args.offset:]
    questions = questions[:args.limit] if args.limit else questions
    res = build_resources(load_settings(chat_model="none"))
    freeze_loaded()  # as a serving process does once loaded (graph_flows.shared.heap)
    times = {r: defaultdict(list) for r in recipes}
    scores = {r: RetrievalScore() for r in recipes}
    try:
        with use_resources(res), scope_access(args.scope, res.store):
            for q in questions[:WARMUP]:
                for r in recipes:
                    run_one(q.question, args.scope, r)
            for q in questions:
                for r in recipes:
                    state, ms = run_one(q.question, args.scope, r)
                    for k, v in (ms | steps(state.get("search_metrics", {}))).items():
                        times[r][k].append(v)
                    ids = [e["id"] for e in state.get("entities") or [] if e.get("id")]
                    with res.store.connect() as conn:
                        ranked = graph_passages(state, entity_documents(conn, ids),
                                                ranked_documents(conn, state))
                    built = "\n".join(state.get(k, "") for k in (
                        "definitions", "facts_text", "passages_text"))
                    scores[r].add(ranked, q.gold, answer_in(built, q.answers),
                                  ms["retrieve_knowledge"])
    finally:
        res.store.close()
    report = {r: {"quality": scores[r].as_dict(), "ms": summary(times[r]),
                  "raw_ms": {k: [round(x, 2) for x in times[r][k]]
                             for k in ("retrieve_knowledge", "build_context")}}
              for r in recipes}
    if args.json:
        print(json.dumps(report))
        return
    for r in recipes:
        qual = report[r]["quality"]
        print(f"## {r}: " + "  ".join(f"{k} {qual[k]:.3f}" for k in (
            "R@2", "R@5", "R@10", "AllSupp@10", "MRR", "Ans@ctx")))
        for name, s in report[r]["ms"].items():
            d = _digits(name)
            print(f"  {name:32s} p50 {s['p50']:7.{d}f}  p95 {s['p95']:7.{d}f}  "
                  f"max {s['max']:7.{d}f}  n {s['n']}")


if __name__ == "__main__":
    main()
