"""Dump the ``ppr`` recipe's passage candidates with their signals, per question, so passage
orders (fusions of the graph's, the dense and the BM25 evidence) can be compared offline
(issue 24).

Usage::

    KRAG_DATA_DIR=/tmp/eval23/krag KRAG_CHAT_MODEL=none python -m bench.head_ranking dump \\
        --questions ../shared/benchdata/multihop/questions.jsonl --scope eval-2ac78eb11230 \\
        --out /tmp/head_nollm.pkl
    python -m bench.head_ranking score /tmp/head_nollm.pkl [/tmp/head_replay.pkl]

``dump`` runs ``analyze_query`` and ``retrieve_knowledge`` (recipe ``ppr``) for every
question and records, from inside the recipe (``evidence._pagerank`` wrapped, its result
unchanged): the PageRank graph and degrees, the linked-fact entities' seed weights, the
order the recipe returned, the top passages' title and text, the names of their
entities, every candidate passage's dense cosine, BM25 score and mass, the
document each candidate chunk belongs to, the rest of the list ``krag eval multihop`` scores
(fact sources, entity provenance) and the gold passages. Nothing goes into the repository.

``score`` replays orders from a dump (:func:`graph_flows.query.passage_order.head_order`,
then :func:`~graph_flows.query.passage_order.cover_order` over the passages' text as shipped,
the variants tried beside it, the plain PageRank order, and the recipe's dense top 30 as a
ranking of its own), scored as ``krag eval multihop`` scores (R@2/5/10, AllSupp@10, MRR),
on all questions, odd and even halves and by hop count.
"""

from __future__ import annotations

import argparse
import pickle
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from bench.recording import dump_score_parser
from graph_flows.query import evidence, extractive, nodes, passage_order, ppr
from graph_flows.query.context import QueryContext
from graph_flows.services.evaluation.data import read_questions
from graph_flows.services.evaluation.metrics import RetrievalScore
from graph_flows.services.evaluation.multihop import graph_passages, ranked_documents
from graph_flows.shared.resources import build_resources, use_resources
from graph_flows.shared.scoped import scope_access
from graph_flows.shared.settings import load_settings
from storage.evidence import chunk_rows
from storage.fulltext import entity_documents
from storage.search import entities_by_ids


def _recorder(sink: list[dict[str, Any]]) -> Callable[..., Any]:
    """``evidence._pagerank`` that also records its inputs and the mass it computed."""
    original = evidence._pagerank

    def recorded(out: Any, hood: Any, top: Any, dense: Any, text_hits: Any) -> Any:
        graph, order = original(out, hood, top, dense, text_hits)
        scaled = ppr.min_max({h.fact.id: h.similarity for h in out.linked})
        chunk_ids = sorted(set(hood.chunk_ids()) | {h.id for h in dense + text_hits})
        sink.append({
            "graph": graph, "degree": hood.degree, "order": order,
            "entity_seeds": ppr.entity_seeds(
                [(h.fact.subject_id, h.fact.object_id, scaled[h.fact.id]) for h in top],
                {e: hood.count(e) for e in out.seed_entities}),
            "dense": {h.id: h.score for h in dense},
            "text": {h.id: h.score for h in text_hits},
            "mass": {c: out.mass.get(c, 0.0) for c in chunk_ids}, "chunks": chunk_ids})
        return graph, order
    return recorded


def dump(args: argparse.Namespace) -> None:
    """Run the recipe for every question and pickle the records."""
    questions = read_questions(args.questions)
    res = build_resources(load_settings(chat_model="none"))
    sink: list[dict[str, Any]] = []
    evidence._pagerank = _recorder(sink)  # type: ignore[assignment]
    records = []
    try:
        with use_resources(res), scope_access(args.scope, res.store):
            for q in questions:
                runtime = SimpleNamespace(context=QueryContext(recipe="ppr"))
                state: dict[str, Any] = {"query": q.question, "scope": args.scope}
                start = time.perf_counter()
                for node in (nodes.analyze_query, nodes.retrieve_knowledge):
                    state |= node(state, runtime)  # type: ignore[arg-type]
                ms = (time.perf_counter() - start) * 1000
                rec = sink.pop()
                ids = [e["id"] for e in state.get("entities") or [] if e.get("id")]
                with res.store.connect() as conn:
                    docs = ranked_documents(conn, state)
                    full = graph_passages(state, entity_documents(conn, ids), docs)
                    rec["uri"] = {r["id"]: r["uri"] for r in chunk_rows(
                        conn, sorted(set(rec["chunks"]) | set(rec["dense"])))}
                    rec["entity_names"] = {e.id: e.name for e in entities_by_ids(
                        conn, [args.scope], _neighbours(rec["graph"], rec["order"]))}
                rec |= {"question": q.question, "gold": list(q.gold), "full": full,
                        "tail": [d for d in full if d not in set(docs)], "ms": ms,
                        "rows": {p["id"]: {"title": p.get("title") or "",
                                           "text": p.get("text") or ""}
                                 for p in state.get("passages") or []},
                        "analysis": state.get("analysis")}
                records.append(rec)
    finally:
        res.store.close()
    with open(args.out, "wb") as f:
        pickle.dump(records, f)
    print(f"{len(records)} questions -> {args.out}")


def _neighbours(graph: ppr.Graph, chunks: Sequence[str]) -> list[str]:
    """The non-chunk nodes joined by an edge to any of ``chunks`` (their entities)."""
    ends = {graph.index[c] for c in chunks if c in graph.index}
    near = {int(d) for s, d in zip(graph.src.tolist(), graph.dst.tolist(), strict=True)
            if s in ends}
    return sorted(n for n in (graph.nodes[i] for i in near) if not n.startswith("chk_"))


def _docs(rec: dict[str, Any], chunks: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(rec["uri"][c] for c in chunks if c in rec["uri"]))


def methods() -> dict[str, Callable[[dict[str, Any]], list[str]]]:
    """Passage orders (chunk ids) of one dump record: PageRank's, the dense retriever's,
    and PageRank's top passages re-ordered by the shipped mixture
    (:func:`graph_flows.query.passage_order.head_order`) and by the variants tried."""
    def plain(rec: dict[str, Any]) -> list[str]:
        return [c for c, _ in ppr.rank(rec["chunks"], rec["mass"])]

    def dense(rec: dict[str, Any]) -> list[str]:
        return sorted(rec["dense"], key=lambda c: -rec["dense"][c])

    def head(graph_weight: float = passage_order.GRAPH_WEIGHT, bm25: bool = True,
             ) -> Callable[[dict[str, Any]], list[str]]:
        def order(rec: dict[str, Any]) -> list[str]:
            return passage_order.head_order(plain(rec)[:evidence.PASSAGE_LIMIT],
                                            rec["chunks"], rec["mass"], rec["dense"],
                                            rec["text"] if bm25 else {}, graph_weight)
        return order

    def thirds(w_graph: float, w_dense: float, w_text: float,
               ) -> Callable[[dict[str, Any]], list[str]]:
        """A mixture of the three distributions (dense and BM25 apart, not a product)."""
        def order(rec: dict[str, Any]) -> list[str]:
            top = plain(rec)[:evidence.PASSAGE_LIMIT]
            graph = passage_order.mass_shares(top, rec["mass"], rec["chunks"])
            d = passage_order.standardised_softmax(rec["dense"])
            t = passage_order.standardised_softmax(rec["text"])
            fused = [w_graph * graph[c] + w_dense * d.get(c, 0.0) + w_text * t.get(c, 0.0)
                     for c in top]
            return [top[i] for i in np.argsort(-np.asarray(fused), kind="stable")]
        return order

    def cover(rec: dict[str, Any]) -> list[str]:
        """The head order, then passage_order.cover_order over the passages' text."""
        top = head()(rec)
        rows = [{"id": c, "uri": rec["uri"].get(c), **rec["rows"].get(c, {})} for c in top]
        return [r["id"] for r in passage_order.cover_order(rows, rec["question"])]

    def greedy(link: bool, novel: str, kept: int = passage_order.KEPT_DOCUMENTS,
               ) -> Callable[[dict[str, Any]], list[str]]:
        """Variants of cover_order: titles linked or not, a novel question ``names`` or
        ``words`` stem or none (""), ``kept`` head documents."""
        def order(rec: dict[str, Any]) -> list[str]:
            top, uri = head()(rec), rec["uri"]
            q = extractive.question(rec["question"])
            target = {"names": q.names, "words": q.all, "": frozenset()}[novel]
            text = {c: extractive.terms(" ".join(rec["rows"].get(c, {}).values()))
                    for c in top}
            title = {c: extractive.terms(rec["rows"].get(c, {}).get("title", ""))
                     for c in top}
            placed, rest = [], list(top)
            while rest and (len({uri.get(p) for p in placed}) < kept
                            or uri.get(rest[0]) in {uri.get(p) for p in placed}):
                placed.append(rest.pop(0))
            while rest:
                said = frozenset().union(*(text[p] for p in placed))
                context = said | extractive.terms(rec["question"])
                pick = next((c for c in rest if (
                    link and title[c] and title[c] <= context
                    and title[c] not in [title[p] for p in placed])
                    or (text[c] & target) - said), rest[0])
                placed.append(pick)
                rest.remove(pick)
            return placed
        return order

    return {"ppr": plain, "dense": dense, "head order": head(), "shipped": cover,
            "cover: titles only": greedy(True, ""),
            "cover: names only": greedy(False, "names"),
            "cover: words only": greedy(False, "words"),
            "cover: titles | words": greedy(True, "words"),
            "cover: 2 documents kept": greedy(True, "names", 2),
            "match: dense only": head(bm25=False), "match only": head(0.0),
            "mixture 1/3 each": thirds(1 / 3, 1 / 3, 1 / 3),
            "mixture 1/2 1/4 1/4": thirds(1 / 2, 1 / 4, 1 / 4)}


def score(records: list[dict[str, Any]], order: Callable[[dict[str, Any]], list[str]],
          pick: Callable[[int, dict[str, Any]], bool], limit: int = evidence.PASSAGE_LIMIT,
          tail: bool = True) -> dict[str, float]:
    """Scores of one order over the picked questions (the top ``limit`` chunks as documents,
    then the rest of what the eval scores, as the eval does)."""
    s = RetrievalScore()
    for i, rec in enumerate(records):
        if not pick(i, rec):
            continue
        docs = _docs(rec, order(rec)[:limit])
        s.add(list(dict.fromkeys(docs + (rec["tail"] if tail else []))), rec["gold"], False,
              0.0)
    d = s.as_dict()
    return {k: d[k] for k in ("R@2", "R@5", "R@10", "AllSupp@10", "MRR")} | {"n": len(s.rr)}


def report(paths: Sequence[Path]) -> None:
    """Print every method's scores on each dump: all, odd, even, by hops."""
    picks: dict[str, Callable[[int, dict[str, Any]], bool]] = {
        "all": lambda i, r: True, "odd": lambda i, r: i % 2 == 1,
        "even": lambda i, r: i % 2 == 0}
    for hops in (2, 3, 4):
        picks[f"{hops}hop"] = (lambda h: lambda i, r: len(r["gold"]) == h)(hops)
    for path in paths:
        with open(path, "rb") as f:
            records = pickle.load(f)
        print(f"# {path} ({len(records)} questions)")
        for part, pick in picks.items():
            print(f"## {part}")
            for name, fn in methods().items():
                limit = 30 if name == "dense" else evidence.PASSAGE_LIMIT
                sc = score(records, fn, pick, limit, tail=name != "dense")
                print(f"  {name:18s} " + " ".join(
                    f"{k} {v:.3f}" if k != "n" else f"n {v}" for k, v in sc.items()))


def main() -> None:
    """Parse arguments; dump or score."""
    p, sub = dump_score_parser(__doc__.splitlines()[0])
    s = sub.add_parser("score")
    s.add_argument("dumps", type=Path, nargs="+")
    args = p.parse_args()
    if args.cmd == "dump":
        dump(args)
    else:
        report(args.dumps)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
