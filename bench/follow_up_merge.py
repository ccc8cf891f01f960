"""The no-LLM follow-up round (issue 24): when it should run and how its passages should join
round 1's, compared offline on captured rounds.

Usage::

    KRAG_DATA_DIR=/tmp/eval25/krag KRAG_CHAT_MODEL=none python -m bench.follow_up_merge dump \\
        --questions ../shared/benchdata/multihop/questions.jsonl --scope eval-2ac78eb11230 \\
        --out /tmp/follow_nollm.json
    python -m bench.follow_up_merge score /tmp/follow_nollm.json [/tmp/follow_replay.json]

``dump`` runs every question through the query graph with the no-LLM follow-up on and two
rounds (``no_llm_follow_up``, ``max_rounds`` 2: the real assessment, follow-up query and
merge) and records, per retrieval round, its passages' documents with their PageRank mass
and the methods that found them, the round record (query, bridge, stop reason), the merged
ranking the graph returned and the gold passages. ``score`` replays merges of the captured
rounds and scores them as ``krag eval multihop`` scores the passage ranking (R@2/5/10,
AllSupp@10), on all questions and on the odd and even halves. Nothing goes into the
repository.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.recording import dump_score_parser, recorded_searches
from graph_flows.query import loop
from graph_flows.services.evaluation.data import read_questions
from graph_flows.services.evaluation.multihop import LoopOptions, ranked_documents
from graph_flows.shared.resources import build_resources, use_resources
from graph_flows.shared.scoped import scope_access
from graph_flows.shared.settings import load_settings
from storage.evidence import chunk_rows

Row = dict[str, Any]
Merge = Callable[[Row], list[str]]


def _documents(conn: Any, found: dict[str, Any]) -> list[list[Any]]:
    """The round's ranked passages as ``[document, mass]``, first chunk of a document
    first (the eval scores documents)."""
    mass = {p["id"]: float(p.get("score") or 0.0) for p in found.get("passages") or []}
    ranked = ((found.get("search_metrics") or {}).get("ppr") or {}).get("ranked") or []
    out: dict[str, float] = {}
    for row in chunk_rows(conn, ranked):
        out[row["uri"]] = out.get(row["uri"], 0.0) + mass.get(row["id"], 0.0)
    return [[uri, m] for uri, m in out.items()]


def dump(args: argparse.Namespace) -> None:
    """Run every question with the no-LLM follow-up and write the rounds as JSON."""
    from graph_flows import query_flow

    questions = read_questions(args.questions)
    res = build_resources(load_settings(chat_model="none"))
    rows = []
    context = LoopOptions("none", 2, True).context()
    try:
        with recorded_searches() as seen, use_resources(res), \
                scope_access(args.scope, res.store):
            for q in questions:
                seen.clear()
                result = query_flow.invoke({"query": q.question, "scope": args.scope},
                                           context=context)
                with res.store.connect() as conn:
                    rows.append({
                        "question": q.question, "gold": list(q.gold),
                        "rounds": [_documents(conn, f) for f in seen],
                        "merged": list(dict.fromkeys(ranked_documents(conn, result))),
                        "records": [{k: r.get(k) for k in ("query", "bridge", "stop", "added")}
                                    for r in result.get("rounds") or []]})
    finally:
        res.store.close()
    Path(args.out).write_text(json.dumps(rows))
    print(f"{len(rows)} questions -> {args.out}")


def _uris(pairs: Sequence[Sequence[Any]]) -> list[str]:
    return [p[0] for p in pairs]


def round_one(row: Row) -> list[str]:
    """No follow-up."""
    return _uris(row["rounds"][0])


def as_returned(row: Row) -> list[str]:
    """The merged ranking the query graph returned."""
    return list(row["merged"])


def interleave(new_documents: int | None) -> Merge:
    """The loop's merge (graph_flows.query.loop.interleave after round 1's first
    ``RULES_HEAD`` documents), the follow-up bringing in its first ``new_documents``
    documents that are not in that head (None: all it ranked, the merge before
    ``loop.RULES_NEW``)."""
    def merge(row: Row) -> list[str]:
        first = _uris(row["rounds"][0])
        if len(row["rounds"]) < 2:
            return first
        new = _uris(row["rounds"][1])
        if new_documents is not None:
            new = [u for u in new if u not in first[:loop.RULES_HEAD]][:new_documents]
        return loop.interleave(first, new, lambda d: d, loop.RULES_HEAD)
    return merge


def mass_mixture(head: int) -> Merge:
    """Round 1's first ``head`` documents, then the rest by the sum of the two rounds'
    mass shares (a document both rounds find gains; each round's shares sum to one over
    its ranked documents)."""
    def merge(row: Row) -> list[str]:
        first = _uris(row["rounds"][0])
        if len(row["rounds"]) < 2:
            return first
        score: dict[str, float] = {}
        for ranked in row["rounds"][:2]:
            total = sum(m for _, m in ranked) or 1.0
            for uri, m in ranked:
                score[uri] = score.get(uri, 0.0) + m / total
        rest = sorted((u for u in score if u not in first[:head]), key=lambda u: -score[u])
        return first[:head] + rest
    return merge


def agreement_only(row: Row) -> list[str]:
    """Round 1's order, documents the follow-up also ranked lifted within round 1's tail
    (nothing new enters)."""
    first = _uris(row["rounds"][0])
    if len(row["rounds"]) < 2:
        return first
    second = set(_uris(row["rounds"][1]))
    head = first[:loop.RULES_HEAD]
    tail = first[loop.RULES_HEAD:]
    return head + [u for u in tail if u in second] + [u for u in tail if u not in second]


MERGES: dict[str, Merge] = {
    "as the graph returned": as_returned,
    "round 1 only": round_one,
    "interleave, all it found": interleave(None),
    "interleave, best new document": interleave(1),
    "interleave, best 2 new documents": interleave(2),
    "mass mixture, head 5": mass_mixture(5),
    "mass mixture, head 2": mass_mixture(2),
    "mass mixture, head 0": mass_mixture(0),
    "agreement only": agreement_only,
}


def score(rows: Sequence[Row], merge: Merge) -> dict[str, float]:
    """R@2/5/10 and AllSupp@10 of ``merge``."""
    recall = {k: 0.0 for k in (2, 5, 10)}
    whole = 0
    for row in rows:
        ranked, gold = merge(row), set(row["gold"])
        for k in recall:
            recall[k] += len(gold & set(ranked[:k])) / len(gold)
        whole += gold <= set(ranked[:10])
    n = len(rows) or 1
    return {**{f"R@{k}": round(v / n, 3) for k, v in recall.items()},
            "AllSupp@10": round(whole / n, 3)}


def report(args: argparse.Namespace) -> None:
    """Score every merge on each dump, all questions and both halves."""
    for path in args.dumps:
        rows = json.loads(Path(path).read_text())
        ran = sum(len(r["rounds"]) > 1 for r in rows)
        print(f"\n{path}: {len(rows)} questions, {ran} with a follow-up")
        parts = {"all": rows, "odd": rows[1::2], "even": rows[0::2]}
        for name, merge in MERGES.items():
            cells = "  ".join(f"{part}: " + " ".join(f"{v:.3f}" for v in score(r, merge).values())
                              for part, r in parts.items())
            print(f"  {name:30s} {cells}")


def main() -> None:
    """``dump`` or ``score`` (see the module docstring)."""
    parser, sub = dump_score_parser(__doc__.split("\n\n")[0])
    s = sub.add_parser("score")
    s.add_argument("dumps", nargs="+", type=Path)
    args = parser.parse_args()
    dump(args) if args.cmd == "dump" else report(args)


if __name__ == "__main__":
    main()
