"""Dump every question's query-graph result once, then study the answer's confidence and the
extractive sentence choice offline (issue 25).

Usage::

    KRAG_DATA_DIR=/tmp/eval25/krag KRAG_CHAT_MODEL=none python -m bench.confidence dump \\
        --questions ../shared/benchdata/multihop/questions.jsonl --scope eval-2ac78eb11230 \\
        --out /tmp/conf_nollm.json
    python -m bench.confidence score /tmp/conf_nollm.json --features /tmp/conf_features.jsonl

``dump`` runs the query graph (no LLM, as ``krag eval multihop`` does) for every question
and writes its result (facts, passages, rounds, answer, confidence) with the question's
answers. ``score`` re-answers every question from the dumped evidence with the current
extractive sentence choice (:func:`graph_flows.query.answer.extractive_answer`, pure) and
labels it with the current :func:`graph_flows.query.confidence.assess`, then prints
Ans@answer and the accuracy per label on all questions and on the development (even index)
and held-out (odd index) halves, and each question's features (``--features``).
Nothing goes into the repository.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.recording import dump_score_parser
from graph_flows.query import answer, confidence, extractive
from graph_flows.services.evaluation.data import read_questions
from graph_flows.services.evaluation.metrics import answer_in

KEEP = ("query", "analysis", "entity_hints", "facts", "passages", "rounds", "answer",
        "answer_mode", "citations", "answer_confidence")


def dump(args: argparse.Namespace) -> None:
    """Run the query graph for every question and write the results as JSON."""
    from graph_flows import query_flow
    from graph_flows.shared.resources import build_resources, use_resources
    from graph_flows.shared.scoped import scope_access
    from graph_flows.shared.settings import load_settings

    res = build_resources(load_settings(chat_model="none"))
    records = []
    try:
        with use_resources(res), scope_access(args.scope, res.store):
            for q in read_questions(args.questions):
                out = query_flow.invoke({"query": q.question, "scope": args.scope})
                records.append({k: out.get(k) for k in KEEP} | {"answers": list(q.answers)})
    finally:
        res.store.close()
    args.out.write_text(json.dumps(records, default=str))
    print(f"{len(records)} questions -> {args.out}")


def rescore(rec: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The extractive answer and its confidence from one record's dumped evidence, as
    generate_response gives them ("nothing relevant found" for a "none" label)."""
    names = [*(rec.get("analysis") or {}).get("entities", []), *(rec.get("entity_hints") or [])]
    facts, passages = rec.get("facts") or [], rec.get("passages") or []
    q = extractive.question(rec["query"], names)
    text, label = confidence.extractive_with_confidence(rec["query"], names, facts, passages, q)
    cited, _ = answer.citations(text, facts, passages)
    if label["label"] == "none":
        return answer.nothing_relevant_answer(label["reason"], []), {**label, "features": None}
    s = confidence.signals(q, rec["query"], text, cited, facts, passages, declined=False)
    return text, {**label, "features": s.__dict__}


def table(rows: list[tuple[str, bool]]) -> str:
    """``label n/correct`` for each label, in order."""
    n: Counter[str] = Counter(lab for lab, _ in rows)
    ok: Counter[str] = Counter(lab for lab, right in rows if right)
    return "  ".join(f"{lab} {ok[lab]}/{n[lab]}" for lab in confidence.LABELS)


def report(path: Path, features: Path | None) -> None:
    """Ans@answer and labels of the dumped answers and of the current code, per half;
    each question's signals to ``features``."""
    records = json.loads(path.read_text())
    halves: dict[str, Callable[[int], bool]] = {
        "all": lambda i: True, "dev (even)": lambda i: i % 2 == 0,
        "held-out (odd)": lambda i: i % 2 == 1}
    runs = {"current": [rescore(r) for r in records]}
    for half, keep in halves.items():
        idx = [i for i in range(len(records)) if keep(i)]
        before = [(records[i]["answer_confidence"]["label"],
                   answer_in(records[i]["answer"] or "", records[i]["answers"])) for i in idx]
        print(f"## {half} ({len(idx)} questions)")
        print(f"  dumped      : Ans@answer {sum(r for _, r in before)}  {table(before)}")
        for name, now in runs.items():
            after = [(now[i][1]["label"], answer_in(now[i][0], records[i]["answers"]))
                     for i in idx]
            print(f"  {name:12s}: Ans@answer {sum(r for _, r in after)}  {table(after)}")
    if features:
        with features.open("w") as out:
            for i, (rec, (text, conf)) in enumerate(zip(records, runs["current"],
                                                        strict=True)):
                out.write(json.dumps({
                    "i": i, "ok": answer_in(text, rec["answers"]), "label": conf["label"],
                    "features": conf.get("features"), "q": rec["query"],
                    "gold": rec["answers"], "answer": text}) + "\n")


def main() -> None:
    """Parse arguments; dump or score."""
    p, sub = dump_score_parser(__doc__.splitlines()[0])
    s = sub.add_parser("score")
    s.add_argument("dump", type=Path)
    s.add_argument("--features", type=Path, help="write each question's signals here")
    args = p.parse_args()
    if args.cmd == "dump":
        dump(args)
    else:
        report(args.dump, args.features)


if __name__ == "__main__":
    main()
