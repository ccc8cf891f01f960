"""How the query loop's merge ranks what its rounds found, with the replayed (perfect)
planner of `krag eval multihop --planner replay`.

Usage::

    KRAG_DATA_DIR=/tmp/eval23/krag KRAG_CHAT_MODEL=none python -m bench.loop_merge \\
        --corpus ../shared/benchdata/multihop/corpus.jsonl \\
        --questions ../shared/benchdata/multihop/questions.jsonl [--max-rounds 4] [--json]

Runs every question through the query graph as the eval does (the replay planner server,
analysis and answer without a model) on the eval's scope, records each round's own passage
ranking (the documents of ``search_metrics["ppr"]["ranked"]`` of that round's retrieval,
passed through unchanged) and the merged one, then scores, on the same captured rounds,
R@2/5/10 and AllSupp@10 of: the merged ranking the graph returned, round 1 alone, the first
``n`` rounds merged as the loop merges (graph_flows.query.loop.interleave, round 1's head of
``LLM_HEAD`` kept), and a round-robin merge (round 1's head, then rank by rank every
follow-up round's item, newest round first, then round 1's next); and where the gold
passages missing from the merged top 5 stood in their best round. Scores count the ranked
passages only (the eval appends fact and entity documents after them).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path
from typing import Any

from bench.recording import recorded_searches
from graph_flows.query import loop
from graph_flows.services.evaluation.data import Question, read_questions
from graph_flows.services.evaluation.multihop import LoopOptions, eval_scope, ranked_documents
from graph_flows.services.evaluation.planner_replay import PlanBook
from graph_flows.services.evaluation.replay import ReplayServer
from graph_flows.shared.resources import Resources, build_resources, use_resources
from graph_flows.shared.scoped import scope_access
from graph_flows.shared.settings import load_settings

Merge = Callable[[list[list[str]]], list[str]]


def _unique(items: Sequence[str | None]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i is not None))


def loop_merge(rounds: list[list[str]], upto: int = loop.MAX_ROUNDS) -> list[str]:
    """The rounds merged one after the other as the loop merges them."""
    merged = rounds[0]
    for found in rounds[1:upto]:
        merged = loop.interleave(merged, found, lambda d: d, loop.LLM_HEAD)
    return merged


def round_robin(rounds: list[list[str]]) -> list[str]:
    """Round 1's head, then rank by rank the follow-ups' items (newest first) and round 1's
    next item."""
    first, follows = rounds[0], rounds[1:][::-1]
    out: list[str | None] = list(first[:loop.LLM_HEAD])
    for items in zip_longest(*follows, first[loop.LLM_HEAD:]):
        out += items
    return _unique(out)


def capture(res: Resources, scope: str, questions: Sequence[Question],
            max_rounds: int) -> list[dict[str, Any]]:
    """Per question: the gold passages, each round's documents and the merged documents."""
    from graph_flows import query_flow

    out = []
    with recorded_searches() as seen:
        for q in questions:
            seen.clear()
            result = query_flow.invoke({"query": q.question, "scope": scope},
                                       context=LoopOptions("replay", max_rounds).context())
            with res.store.connect() as conn:
                rounds = [_unique(ranked_documents(conn, f)) for f in seen]
                merged = _unique(ranked_documents(conn, result))
            out.append({"gold": list(q.gold), "rounds": rounds, "merged": merged})
    return out


def score(rows: Sequence[dict[str, Any]], merge: Merge) -> dict[str, float]:
    """R@2/5/10 and AllSupp@10 of ``merge`` over the captured rows."""
    recall = {k: 0.0 for k in (2, 5, 10)}
    whole = 0
    for row in rows:
        ranked, gold = merge(row["rounds"]), set(row["gold"])
        for k in recall:
            recall[k] += len(gold & set(ranked[:k])) / len(gold)
        whole += gold <= set(ranked[:10])
    n = len(rows) or 1
    return {**{f"R@{k}": round(v / n, 3) for k, v in recall.items()},
            "AllSupp@10": round(whole / n, 3)}


def misses(rows: Sequence[dict[str, Any]], k: int = 5) -> dict[str, int]:
    """Where the gold passages the merged ranking leaves out of its top ``k`` stood in the
    round that ranked them best (rank 1, 2, 3-5, 6-10, lower, or in no round)."""
    out = {"golds": 0, f"in merged top {k}": 0}
    for row in rows:
        for gold in row["gold"]:
            out["golds"] += 1
            if gold in row["merged"][:k]:
                out[f"in merged top {k}"] += 1
                continue
            best = min((r.index(gold) + 1 for r in row["rounds"] if gold in r), default=0)
            band = ("in no round" if not best else "best round rank 1" if best == 1 else
                    "best round rank 2" if best == 2 else "best round rank 3-5" if best <= 5
                    else "best round rank 6-10" if best <= 10 else "best round rank >10")
            out[band] = out.get(band, 0) + 1
    return out


def main() -> None:
    """Capture the rounds and print the scores of each merge."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--max-rounds", type=int, default=loop.MAX_ROUNDS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = read_questions(args.questions)
    scope = eval_scope(args.corpus, "rules")
    res = build_resources(load_settings(chat_model="none"))
    try:
        with ReplayServer(PlanBook(questions)) as server:
            settings = res.settings.model_copy(update={
                "openai_base_url": server.base_url, "openai_api_key": None})
            planning = replace(res, settings=settings, chat_override=None, _chat_cache={})
            with use_resources(planning), scope_access(scope, planning.store):
                rows = capture(planning, scope, questions, args.max_rounds)
    finally:
        res.store.close()
    report = {"graph (merged as returned)": score(
        [{**row, "rounds": [row["merged"]]} for row in rows], lambda r: r[0]),
        "round 1 alone": score(rows, lambda r: r[0])}
    for n in range(2, args.max_rounds + 1):
        report[f"loop merge, first {n} rounds"] = score(rows, lambda r, n=n: loop_merge(r, n))
    report["round-robin, all rounds"] = score(rows, round_robin)
    report["golds missing from the merged top 5"] = misses(rows)  # type: ignore[assignment]
    if args.json:
        print(json.dumps({"scope": scope, "questions": len(rows), "scores": report}))
        return
    for name, row in report.items():
        print(f"{name:32s} {row}")


if __name__ == "__main__":
    main()
