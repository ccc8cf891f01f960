"""Retrieval latency on a seeded synthetic graph: ours vs the literal seed recipe.

Usage::

    python -m bench.retrieval_latency --entities 100000 --relations 300000 --queries 240 \\
        [--recipe ppr] [--data-dir DIR | --database-url URL] [--reuse] [--literal-queries 50]
        [--defer-index] [--maintenance-work-mem 2GB] [--load-workers 2]
        [--no-prewarm] [--evict-cache]

Starts (or joins) the embedded PostgreSQL in its own data dir (default
``/tmp/krag-bench``, never in the repository), loads the graph of
:mod:`bench.synthetic` into database ``krag_bench_<size>`` (its documents and chunks with
their embeddings, instruction-like spans and full-text statistics too, as an ingest stores
them; ``--reuse`` keeps a database already loaded with the same parameters, and scans the
chunks of one loaded before the spans were stored, once; with ``--defer-index`` a
100k-entity load took 11 minutes on the 2 shared cores at load 12-15, see
HISTORY: retrieval_1m.md). A load interrupted midway is
resumed by the same command; a second run on the same database stops with one line (an
advisory lock held for the whole run). ``--no-prewarm --evict-cache --reuse`` is a cold
pass. Then, in
a process of its own spawned for the purpose (so its memory is a query process's, not the
generator's), warms up, and for every query's natural question does what the
``retrieve_knowledge`` node does: the heuristic analysis, ``search_terms``, the predicate
cues, :func:`graph_flows.query.retrieval.retrieve` with ``question=`` (the recipe of
``--recipe``, default the query graph's) and ``fact_sources``; then the ``build_context``
node (with the passages, when the recipe ranked some). The query embedding (real MiniLM) is
computed beforehand and timed on its own; the queries whose retrieval asked for it are
counted (``ppr``: all).

The report has retrieve_knowledge and build_context p50/p95/p99, every method's and (``ppr``)
every PageRank step's timings, how many queries ran another recipe than the one requested
(``ppr`` answers with ``split`` when the scope has no chunk vectors) and the query process's
RSS. Writes a markdown summary to stdout, ``docs/bench/retrieval_<size>.json`` and
``docs/bench/explain_<size>.txt`` (EXPLAIN (ANALYZE, BUFFERS) of each statement of one
multi-word query and of the slowest query).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import multiprocessing
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np
from sqlalchemy import event, text

from bench import synthetic
from bench.memory import rss_mb
from bench.synthetic import BenchQuery
from graph_flows.query import analyze, nodes, retrieval, scoring
from graph_flows.shared.heap import freeze_loaded
from graph_flows.shared.threads import ContextThreadPool
from storage import KnowledgeStore, search
from storage.access import WHOLE_STORE, use_access
from storage.engine import make_engine
from storage.roles import prepare_embedded
from storage.search import _E, _F

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "docs" / "bench"
EMBED_MODEL, EMBED_DIM = "local:minilm", 384
_POOL = ContextThreadPool(max_workers=4, thread_name_prefix="krag-bench-literal")


# -- helpers -----------------------------------------------------------------------------------
def size_label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def pct(values: Sequence[float]) -> dict[str, float]:
    """n, p50, p95, p99, mean, max (nearest-rank percentiles), rounded to 0.01."""
    if not values:
        return {"n": 0}
    s = sorted(values)

    def rank(p: float) -> float:
        return s[min(len(s) - 1, max(0, int(np.ceil(p / 100 * len(s))) - 1))]

    return {"n": len(s), "p50": round(rank(50), 2), "p95": round(rank(95), 2),
            "p99": round(rank(99), 2), "mean": round(statistics.fmean(s), 2),
            "max": round(s[-1], 2)}


def analysis_terms(query: str) -> tuple[list[str], list[str]]:
    """Terms and predicates exactly as ``nodes.retrieve_knowledge`` derives them."""
    q, hints = analyze.validate_input(query, None)
    terms = analyze.search_terms(analyze.heuristic_analysis(q, hints))
    predicates = analyze.question_predicates(q, terms)
    return terms, predicates


def search_config() -> retrieval.SearchConfig:
    """The node's SearchConfig for the default QueryContext."""
    ctx = nodes._ctx(None)
    return retrieval.SearchConfig(
        entity_limit=ctx.entity_limit, fact_limit=ctx.fact_limit, like_share=ctx.like_share,
        fallback_ratio=ctx.fallback_ratio, trigram_threshold=ctx.trigram_threshold,
        recipe=ctx.recipe, max_hops=ctx.max_hops)


class HashEmbedder:
    """Deterministic stand-in when the real model is not wanted (tests)."""

    model_name = "hash-random"

    def embed_query(self, text_: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text_.encode()).digest()[:8], "little")
        rng = np.random.default_rng(seed)
        v = rng.standard_normal(EMBED_DIM)
        return (v / np.linalg.norm(v)).tolist()


def asked(query: BenchQuery) -> str:
    """What the user sends for ``query``: its natural question (its text when it has none)."""
    return query.question or query.text


def embed_queries(queries: Sequence[BenchQuery], embedder: Any
                  ) -> tuple[list[list[float]], list[float]]:
    """One vector per query, each embedded alone and timed (after two warm-up calls)."""
    for q in queries[:2]:
        embedder.embed_query(asked(q))
    vecs, ms = [], []
    for q in queries:
        t = time.perf_counter()
        vecs.append(embedder.embed_query(asked(q)))
        ms.append((time.perf_counter() - t) * 1000)
    return vecs, ms


# -- ours --------------------------------------------------------------------------------------
def run_ours(engine: Any, scope: str, query: BenchQuery, vector: list[float],
             cfg: retrieval.SearchConfig) -> dict[str, Any]:
    """retrieve_knowledge's work for one query (embedding precomputed; ``embedded`` says
    whether retrieve asked for it), then build_context, on the query's question."""
    question = asked(query)
    embedded: list[bool] = []

    def embed() -> list[float]:
        embedded.append(True)
        return vector

    t0 = time.perf_counter()
    terms, predicates = analysis_terms(question)
    t1 = time.perf_counter()
    found = retrieval.retrieve(engine, scope, terms, predicates, cfg, embed, question=question)
    t2 = time.perf_counter()  # retrieve() now also attaches each fact's sources
    t3 = time.perf_counter()
    state = {"query": question, "scope": scope, "entities": found.entities,
             "facts": found.facts}
    if found.passages:  # as retrieve_knowledge hands them on
        state["passages"] = found.passages
    ctx_out = nodes.build_context(state, None)
    t4 = time.perf_counter()
    m = found.metrics
    got = {e["name"].casefold() for e in found.entities}
    ppr_info = m.get("ppr") or {}
    return {
        "kind": query.kind, "variant": query.variant, "query": question, "terms": terms,
        "recipe": m.get("recipe", cfg.recipe), "requested_recipe": cfg.recipe,
        "ppr_steps_ms": dict(ppr_info.get("steps_ms", {})),
        "ppr_graph_nodes": ppr_info.get("graph_nodes"),
        "passages": len(found.passages), "embedded": bool(embedded),
        "analyze_ms": (t1 - t0) * 1000, "retrieve_ms": (t2 - t1) * 1000,
        "sources_ms": (t3 - t2) * 1000, "knowledge_ms": (t3 - t0) * 1000,
        "build_context_ms": (t4 - t3) * 1000, "methods_ms": dict(m["ms"]),
        "results": dict(m["results"]), "errors": dict(m["errors"]),
        "fallback": bool(m["fallback"]["entities"] or m["fallback"]["facts"]),
        "fallback_entities": m["fallback"]["entities"], "fallback_facts": m["fallback"]["facts"],
        "entities": len(found.entities), "facts": len(found.facts),
        "mermaid_lines": ctx_out["mermaid"].count("\n") + 1,
        "hit": all(t.casefold() in got for t in query.targets) if query.targets else None,
    }


# -- the literal seed recipe -------------------------------------------------------------------
_LIT_ENTITY_TRGM = f"""
SELECT {_E}, greatest(similarity(e.name, :q), similarity(e.summary, :q)) AS sim
FROM entities e
WHERE e.scope = :s AND (e.name % :q OR e.summary % :q)
ORDER BY sim DESC LIMIT :n"""
_LIT_FACT_TRGM = f"""
SELECT {_F}, similarity(r.fact, :q) AS sim
FROM relations r
WHERE r.scope = :s AND r.fact % :q
ORDER BY sim DESC LIMIT :n"""


def lit_entity_trigram(conn: Any, scope: str, q: str, limit: int) -> list[Any]:
    return conn.execute(text(_LIT_ENTITY_TRGM), {"s": scope, "q": q, "n": limit}).all()


def lit_fact_trigram(conn: Any, scope: str, q: str, limit: int) -> list[Any]:
    return conn.execute(text(_LIT_FACT_TRGM), {"s": scope, "q": q, "n": limit}).all()


def literal_retrieve(engine: Any, scope: str, terms: Sequence[str],
                     cfg: retrieval.SearchConfig, vector: list[float]) -> dict[str, Any]:
    """The seed's recipe: name ILIKE (60 %), `%` at 0.1 on name+summary (40 %) ordered by
    similarity; the same on fact text; HNSW when under half the limit; then endpoints.
    The four text methods run concurrently, as ours do."""
    t0 = time.perf_counter()
    m = retrieval._Metrics()
    e_like, e_trgm = scoring.split_limit(cfg.entity_limit, cfg.like_share)
    f_like, f_trgm = scoring.split_limit(cfg.fact_limit, cfg.like_share)
    q = " ".join(terms)
    jobs: dict[str, tuple[Callable[..., list], tuple[Any, ...]]] = {
        "entity_like": (search.entity_like, (scope, terms, e_like)),
        "entity_trigram": (lit_entity_trigram, (scope, q, e_trgm)),
        "fact_like": (search.fact_like, (scope, terms, f_like)),
        "fact_trigram": (lit_fact_trigram, (scope, q, f_trgm)),
    }
    futures = {k: _POOL.submit(m.run, engine, k, fn, *args) for k, (fn, args) in jobs.items()}
    got = {k: f.result() for k, f in futures.items()}
    ents = {h.entity.id for h in got["entity_like"]} | {r.id for r in got["entity_trigram"]}
    facts = {h.fact.id: (h.fact.subject_id, h.fact.object_id) for h in got["fact_like"]}
    facts |= {r.id: (r.subject_id, r.object_id) for r in got["fact_trigram"]}
    fb_e = scoring.needs_fallback(len(ents), cfg.entity_limit, cfg.fallback_ratio)
    if fb_e:
        hits = m.run(engine, "entity_vector", search.entity_vector, scope, vector,
                     cfg.entity_limit)
        ents |= {h.entity.id for h in hits[: cfg.entity_limit - len(ents)]}
    fb_f = scoring.needs_fallback(len(facts), cfg.fact_limit, cfg.fallback_ratio)
    if fb_f:
        hits = m.run(engine, "fact_vector", search.fact_vector, scope, vector, cfg.fact_limit)
        facts |= {h.fact.id: (h.fact.subject_id, h.fact.object_id)
                  for h in hits[: cfg.fact_limit - len(facts)]}
    missing = {e for ends in facts.values() for e in ends} - ents
    m.run(engine, "endpoints", search.entities_by_ids, scope, sorted(missing))
    return {"ms": m.ms, "results": m.results, "errors": m.errors,
            "fallback": fb_e or fb_f, "total_ms": (time.perf_counter() - t0) * 1000,
            "entities": len(ents), "facts": len(facts)}


# -- EXPLAIN -----------------------------------------------------------------------------------
class _RecordingConn:
    """Records each search statement (``SELECT`` / ``WITH``, as the driver receives it:
    through ``conn.execute`` or ``storage.statements.fetch``, both of which fire
    ``before_cursor_execute``) with the function of ours that ran it and the
    transaction-local settings made before it on this connection (e.g. hnsw.ef_search), so
    EXPLAIN replays them; the rest (begin, rollback, ...) goes straight to the connection."""

    def __init__(self, conn: Any, calls: list) -> None:
        self._conn, self._calls = conn, calls
        self._setup: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def in_transaction(self) -> bool:
        # storage.access.set_local sends its settings with the BEGIN, where this recorder
        # cannot see them; "already begun" makes it send one set_config statement instead
        return True

    def exec_driver_sql(self, sql: str, *args: Any, **kwargs: Any) -> Any:
        if sql.lstrip().upper().startswith("SET LOCAL"):
            self._setup.append(sql)
        elif sql.lstrip().startswith("SELECT set_config(") and args:
            values = [str(v) for v in args[0]]
            self._setup += [f"SET LOCAL {name} = '{value}'"
                            for name, value in zip(values[::2], values[1::2], strict=True)]
        return self._conn.exec_driver_sql(sql, *args, **kwargs)

    def note(self, _conn: Any, _cursor: Any, statement: str, params: Any, _context: Any,
             _many: bool) -> None:
        """``before_cursor_execute``: keep a search statement (not a setting, not SHOW)."""
        head = statement.lstrip()
        first = head.split(None, 1)[0].upper() if head else ""
        if first in ("SELECT", "WITH") and not head.startswith("SELECT set_config("):
            self._calls.append((_caller(), statement, params, tuple(self._setup)))


def _caller() -> str:
    """The function of ours that ran the statement being recorded: the first frame outside
    the libraries, ``storage.statements`` and the recorder."""
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        ours = "site-packages" not in path and not path.endswith(
            ("storage/statements.py", "storage/access.py", "storage/engine.py"))
        if ours and not (path == __file__ and frame.f_code.co_name == "note"):
            return frame.f_code.co_name
        frame = frame.f_back
    return "?"


class RecordingEngine:
    """Engine stand-in that records every statement the search functions execute."""

    def __init__(self, source: Any) -> None:
        self.source = source  # anything with connect(): an Engine or a KnowledgeStore
        self.calls: list[tuple[str, str, Any, tuple[str, ...]]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def connect(self) -> Iterator[_RecordingConn]:
        with self.source.connect() as conn:
            rec = _RecordingConn(conn, self.calls)
            event.listen(conn, "before_cursor_execute", rec.note)
            try:
                yield rec
            finally:
                event.remove(conn, "before_cursor_execute", rec.note)


def _short(params: Any) -> str:
    def fmt(v: Any) -> str:
        s = repr(v)
        return s if len(s) <= 120 else s[:117] + "..."
    return ", ".join(f"{k}={fmt(v)}" for k, v in (params or {}).items())


def explain_calls(engine: Any, calls: Sequence[tuple[str, str, Any, tuple[str, ...]]],
                  title: str) -> str:
    out = [f"=== {title} ==="]
    for caller, sql, params, setup in calls:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET LOCAL statement_timeout = 120000")
            for line in setup:
                conn.exec_driver_sql(line)
            plan = [r[0] for r in conn.exec_driver_sql(  # the driver's text: %(name)s
                "EXPLAIN (ANALYZE, BUFFERS) " + sql, params or {}).all()]
        out += [f"--- {caller}", "SQL: " + " ".join(sql.split()),
                "params: " + _short(params), *(f"setup: {x}" for x in setup), *plan, ""]
    return "\n".join(out)


def explain_report(engine: Any, scope: str, query: BenchQuery, vector: list[float],
                   cfg: retrieval.SearchConfig, literal: bool = True) -> str:
    """EXPLAIN (ANALYZE, BUFFERS) of every statement our retrieval (and, optionally, the
    literal recipe) runs for ``query``; the vector methods from a run with forced fallback."""
    question = asked(query)
    terms, predicates = analysis_terms(question)
    rec = RecordingEngine(engine)
    retrieval.retrieve(rec, scope, terms, predicates, cfg, lambda: vector, question=question)
    forced = RecordingEngine(engine)
    retrieval.retrieve(forced, scope, terms, predicates, replace(cfg, fallback_ratio=1.01),
                       lambda: vector, question=question)
    calls = sorted(rec.calls, key=lambda c: c[0])
    seen = {c[0] for c in calls}
    calls += [c for c in forced.calls
              if c[0] in {"entity_vector", "fact_vector"} and c[0] not in seen]
    head = (f"query [{query.kind}]: {question!r}\nrecipe: {cfg.recipe}\nterms: {terms}\n"
            f"predicates: {predicates}\n")
    parts = [head, explain_calls(engine, calls, "ours (storage/search.py)")]
    if literal:
        lit = RecordingEngine(engine)
        literal_retrieve(lit, scope, terms, cfg, vector)
        parts.append(explain_calls(engine, sorted(lit.calls, key=lambda c: c[0]),
                                   "literal seed recipe"))
    return "\n".join(parts)


# -- the benchmark -----------------------------------------------------------------------------
def _rate(hits: Sequence[bool | None]) -> float | None:
    known = [h for h in hits if h is not None]
    return round(sum(known) / len(known), 3) if known else None


def _summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    methods = sorted({k for r in records for k in r["methods_ms"]})
    kinds = sorted({r["kind"] for r in records}, key=synthetic.QUERY_KINDS.index)
    steps = sorted({k for r in records for k in r["ppr_steps_ms"]})
    other = [r for r in records if r["recipe"] != r["requested_recipe"]]
    return {
        "recipe": {"requested": sorted({r["requested_recipe"] for r in records}),
                   "ran": {k: sum(r["recipe"] == k for r in records)
                           for k in sorted({r["recipe"] for r in records})},
                   "other_than_requested": len(other),
                   "other_rate": round(len(other) / len(records), 3),
                   "examples": [r["query"] for r in other][:5]},
        "ppr_steps_ms": {k: pct([r["ppr_steps_ms"][k] for r in records
                                 if k in r["ppr_steps_ms"]]) for k in steps},
        "mean_passages": round(statistics.fmean([r["passages"] for r in records]), 1),
        "mean_ppr_graph_nodes": round(statistics.fmean(
            [r["ppr_graph_nodes"] for r in records if r["ppr_graph_nodes"] is not None]
            or [0]), 1),
        "embedded": sum(r["embedded"] for r in records),
        "retrieve_knowledge_ms": pct([r["knowledge_ms"] for r in records]),
        "retrieve_ms": pct([r["retrieve_ms"] for r in records]),
        "retrieve_knowledge_with_embedding_ms": pct([r["knowledge_with_embed_ms"]
                                                     for r in records]),
        "build_context_ms": pct([r["build_context_ms"] for r in records]),
        "analyze_ms": pct([r["analyze_ms"] for r in records]),
        "sources_ms": pct([r["sources_ms"] for r in records]),
        "per_method_ms": {
            m: {**pct([r["methods_ms"][m] for r in records if m in r["methods_ms"]]),
                "mean_results": round(statistics.fmean(
                    [r["results"].get(m, 0) for r in records if m in r["methods_ms"]]), 1)}
            for m in methods},
        "per_kind_ms": {
            k: {**pct([r["knowledge_ms"] for r in records if r["kind"] == k]),
                "fallback": sum(r["fallback"] for r in records if r["kind"] == k),
                "mean_entities": round(statistics.fmean(
                    [r["entities"] for r in records if r["kind"] == k]), 1),
                "mean_facts": round(statistics.fmean(
                    [r["facts"] for r in records if r["kind"] == k]), 1),
                "hit_rate": _rate([r["hit"] for r in records if r["kind"] == k])}
            for k in kinds},
        "fallback": {"queries": sum(r["fallback"] for r in records),
                     "entities": sum(r["fallback_entities"] for r in records),
                     "facts": sum(r["fallback_facts"] for r in records),
                     "rate": round(sum(r["fallback"] for r in records) / len(records), 3)},
        "errors": sum(bool(r["errors"]) for r in records),
        "error_examples": [r["errors"] for r in records if r["errors"]][:5],
        "empty": sum(r["entities"] == 0 and r["facts"] == 0 for r in records),
    }


def server_cpu_s(engine: Any) -> float | None:
    """User + system CPU seconds used so far by the PostgreSQL server ``engine`` talks to
    (its postmaster and every process it runs), when that server runs on this machine and
    psutil is there; None otherwise. Read before and after a pass, the difference is the
    server's share of the pass's work (a 2-core machine shared with other work can stretch
    wall-clock time; CPU time it cannot)."""
    try:
        import psutil

        with engine.connect() as conn:
            pid = conn.execute(text("SELECT pg_backend_pid()")).scalar()
        postmaster = psutil.Process(pid).parent()
        procs = [postmaster, *postmaster.children()]
        total = 0.0
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                t = proc.cpu_times()
                total += t.user + t.system
        return total
    except Exception:  # a remote server, no psutil, no permission: not measured
        return None


def benchmark(
    engine: Any, scope: str, queries: Sequence[BenchQuery], *, embedder: Any = None,
    literal_queries: int = 50, warmup: Sequence[BenchQuery] = (),
    explain_path: Path | None = None, log: Any = None, recipe: str | None = None,
    max_hops: int | None = None,
) -> dict[str, Any]:
    """Run ours over ``queries`` (and the literal recipe over a stratified subset, paired
    with ours query by query); return the report dict."""
    say = log or (lambda *_: None)
    embedder = embedder or HashEmbedder()
    cfg = search_config()
    cfg = replace(cfg, recipe=recipe or cfg.recipe, max_hops=max_hops or cfg.max_hops)
    report: dict[str, Any] = {"queries": len(queries),
                              "query_kinds": {k: sum(q.kind == k for q in queries)
                                              for k in synthetic.QUERY_KINDS},
                              "config": asdict(cfg),
                              "embedder": getattr(embedder, "model_name", type(embedder).__name__)}
    vectors, embed_ms = embed_queries(queries, embedder)
    report["embedding_ms"] = pct(embed_ms)
    report["rss_before_queries"] = rss_mb()
    for q in warmup:
        run_ours(engine, scope, q, embedder.embed_query(asked(q)), cfg)
    report["loadavg_start"] = [round(x, 2) for x in os.getloadavg()]
    server0, cpu0 = server_cpu_s(engine), time.process_time()
    t0 = time.perf_counter()
    records = []
    for q, v, e_ms in zip(queries, vectors, embed_ms, strict=True):
        r = run_ours(engine, scope, q, v, cfg)
        r["embed_ms"] = e_ms
        r["knowledge_with_embed_ms"] = r["knowledge_ms"] + (e_ms if r["embedded"] else 0.0)
        records.append(r)
    report["ours_wall_s"] = round(time.perf_counter() - t0, 2)
    cpu, server1 = time.process_time() - cpu0, server_cpu_s(engine)
    report["ours_cpu"] = {
        "query_process_s": round(cpu, 3),
        "server_s": None if server0 is None or server1 is None else round(server1 - server0, 3),
        "per_query_ms": round(1000 * (cpu + (server1 or 0.0) - (server0 or 0.0))
                              / len(records), 2) if records else None}
    report["loadavg_after_ours"] = [round(x, 2) for x in os.getloadavg()]
    report["ours"] = _summary(records)
    say(f"ours: {report['ours']['retrieve_knowledge_ms']}")
    # literal recipe, paired with ours on the same queries (ratios within one run)
    if literal_queries > 0:
        by_kind: dict[str, list[int]] = {}
        for i, q in enumerate(queries):
            by_kind.setdefault(q.kind, []).append(i)
        picked: list[int] = []
        while len(picked) < min(literal_queries, len(queries)):
            for idx in by_kind.values():
                if idx and len(picked) < literal_queries:
                    picked.append(idx.pop(0))
        lit_rows, paired = [], []
        t1 = time.perf_counter()
        for n, i in enumerate(sorted(picked)):
            q, v = queries[i], vectors[i]
            terms, _ = analysis_terms(asked(q))
            lit = literal_retrieve(engine, scope, terms, cfg, v)
            lit["kind"] = q.kind
            lit_rows.append(lit)
            paired.append(run_ours(engine, scope, q, v, cfg))
            if n % 10 == 9:
                say(f"literal {n + 1}/{len(picked)} ({time.perf_counter() - t1:.0f} s)")
        methods = sorted({k for r in lit_rows for k in r["ms"]})
        report["literal"] = {
            "queries": len(lit_rows),
            "total_ms": pct([r["total_ms"] for r in lit_rows]),
            "ours_same_queries_ms": pct([r["knowledge_ms"] for r in paired]),
            "ours_retrieve_same_queries_ms": pct([r["retrieve_ms"] for r in paired]),
            "per_method_ms": {m: pct([r["ms"][m] for r in lit_rows if m in r["ms"]])
                              for m in methods},
            "per_kind_ms": {k: pct([r["total_ms"] for r in lit_rows if r["kind"] == k])
                            for k in synthetic.QUERY_KINDS},
            "fallback": sum(r["fallback"] for r in lit_rows),
            "errors": sum(bool(r["errors"]) for r in lit_rows),
            "error_examples": [r["errors"] for r in lit_rows if r["errors"]][:3],
            "wall_s": round(time.perf_counter() - t1, 2),
        }
        say(f"literal: {report['literal']['total_ms']}")
    report["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    report["rss_after_queries"] = rss_mb()
    report["slowest"] = [
        {k: r[k] for k in ("kind", "query", "terms", "knowledge_ms", "methods_ms", "results",
                           "ppr_steps_ms", "ppr_graph_nodes")}
        for r in sorted(records, key=lambda r: -r["knowledge_ms"])[:8]]
    report["records"] = [
        {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}
        for r in records]
    if explain_path is not None:
        rep = next((q for q in queries if q.kind == "multiword"), queries[0])
        slow = max(records, key=lambda r: r["knowledge_ms"])
        slow_q = next(q for q in queries if asked(q) == slow["query"])
        parts = [explain_report(engine, scope, rep, vectors[queries.index(rep)], cfg)]
        if slow_q is not rep:
            parts.append("\n\n##### slowest query of the run (ours only)\n")
            parts.append(explain_report(engine, scope, slow_q,
                                        vectors[queries.index(slow_q)], cfg, literal=False))
        explain_path.parent.mkdir(parents=True, exist_ok=True)
        explain_path.write_text("\n".join(parts))
        report["explain_file"] = str(explain_path.relative_to(REPO)
                                     if explain_path.is_relative_to(REPO) else explain_path)
    return report


# -- database ----------------------------------------------------------------------------------
def with_database(url: str, dbname: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{dbname}"))


def open_store(superuser_url: str, **kwargs: Any) -> KnowledgeStore:
    """The store on the database of ``superuser_url`` as the product opens it: the
    application's role (bound by the row-level security policies), migrated by the owner
    (:func:`storage.roles.prepare_embedded`)."""
    import psycopg

    app_url, owner_url = prepare_embedded(superuser_url)
    with psycopg.connect(superuser_url, autocommit=True) as admin:  # for prewarm()
        if admin.execute("SELECT 1 FROM pg_available_extensions "
                         "WHERE name = 'pg_prewarm'").fetchone():
            admin.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    return KnowledgeStore.open(app_url, owner_url=owner_url, embedding_model=EMBED_MODEL,
                               embedding_dim=EMBED_DIM, **kwargs)


def compare_rls(app_engine: Any, bypass_engine: Any, scope: str,
                queries: Sequence[BenchQuery], vectors: Sequence[list[float]],
                cfg: retrieval.SearchConfig, passes: int, say: Any) -> dict[str, Any]:
    """retrieve_knowledge's time per question with the policies (the application's role,
    the request's access installed) and without (a superuser connection: the planner adds
    no policy at all), alternated question by question, the order flipped every question
    and every pass; also how many questions found other entities or facts either way."""
    runs: dict[str, list[float]] = {"with_policies": [], "without_policies": []}
    per_pass, differ = [], 0
    for p in range(passes):
        start = {k: len(v) for k, v in runs.items()}
        for i, (q, v) in enumerate(zip(queries, vectors, strict=True)):
            order = [("with_policies", app_engine), ("without_policies", bypass_engine)]
            if (i + p) % 2:
                order.reverse()
            got = {}
            for key, engine in order:
                r = run_ours(engine, scope, q, v, cfg)
                runs[key].append(r["knowledge_ms"])
                got[key] = (r["entities"], r["facts"], r["passages"])
            differ += got["with_policies"] != got["without_policies"]
        per_pass.append({k: pct(v[start[k]:]) for k, v in runs.items()})
        say(f"rls pass {p + 1}/{passes}: " + ", ".join(
            f"{k} p95 {per_pass[-1][k]['p95']}" for k in runs))
    both = {k: pct(v) for k, v in runs.items()}
    return {"passes": passes, "questions_per_pass": len(queries),
            "alternation": "per question; order flipped every question and every pass",
            **{f"{k}_ms": v for k, v in both.items()},
            "p50_ratio": round(both["with_policies"]["p50"] / both["without_policies"]["p50"], 3),
            "p95_ratio": round(both["with_policies"]["p95"] / both["without_policies"]["p95"], 3),
            "per_pass": per_pass, "questions_with_other_results": differ}


GENERATOR = 2
"""Version of the synthetic data a loaded database holds (2: the chunks of chunk_layout)."""


def load_params(entities: int, relations: int, seed: int = 42, batch_size: int = 10_000
                ) -> dict[str, Any]:
    """What a loaded ``krag_bench_<size>`` database is tagged with; ``prepare_database``
    reuses one only when these match (every benchmark that reuses it builds them here)."""
    return {"entities": entities, "relations": relations, "seed": seed,
            "batch_size": batch_size, "generator": GENERATOR}


class LoaderBusy(RuntimeError):
    """Another loader holds the database being loaded."""


@contextlib.contextmanager
def loader_lock(server_url: str, dbname: str) -> Iterator[None]:
    """Hold the server's advisory lock of ``dbname``'s load for the duration, or raise
    :class:`LoaderBusy` at once when another loader (another process, another machine on
    the same server) holds it: a second loader never drops or writes a database the first
    is loading."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        key = f"krag-bench-load:{dbname}"
        got = admin.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))",
                            (key,)).fetchone()
        if not (got and got[0]):
            holder = admin.execute(
                "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
                "AND ((l.classid::bigint << 32) | l.objid::bigint) = "
                "hashtextextended(%s, 0)", (key,)).fetchone()
            who = f" (server backend pid {holder[0]})" if holder else ""
            raise LoaderBusy(
                f"another loader is loading {dbname} on this server{who}; wait for it to "
                "finish (then --reuse it) or use another --data-dir")
        try:
            yield
        finally:
            admin.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))


def prepare_database(server_url: str, dbname: str, params: dict[str, Any], reuse: bool,
                     graph: synthetic.SyntheticGraph, log: Any, *, defer_index: bool = False,
                     maintenance_work_mem: str = "1GB", workers: int = 2,
                     ) -> tuple[KnowledgeStore, dict]:
    """Open ``dbname`` (loading the graph unless ``reuse`` finds it loaded with ``params``;
    ``defer_index`` and ``maintenance_work_mem`` as :func:`synthetic.load_graph` takes them).

    Under :func:`loader_lock`. A database an interrupted load of the same ``params`` left
    is resumed (:class:`synthetic.LoadProgress`), not dropped."""
    with loader_lock(server_url, dbname):
        return _prepare(server_url, dbname, params, reuse, graph, log,
                        defer_index=defer_index, maintenance_work_mem=maintenance_work_mem,
                        workers=workers)


def _prepare(server_url: str, dbname: str, params: dict[str, Any], reuse: bool,
             graph: synthetic.SyntheticGraph, log: Any, *, defer_index: bool,
             maintenance_work_mem: str, workers: int) -> tuple[KnowledgeStore, dict]:
    import psycopg

    url = with_database(server_url, dbname)
    with psycopg.connect(server_url, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                               (dbname,)).fetchone() is not None
    progress = None
    if exists:
        store = open_store(url)
        with store.connect() as conn:
            stored = conn.execute(text(
                "SELECT value FROM krag_meta WHERE key = 'bench_params'")).scalar()
        if reuse and stored and json.loads(stored)["params"] == params:
            record = json.loads(stored)
            log(f"reusing {dbname} (loaded {record['loaded_at']})")
            # a graph loaded before the synonym edges were stored (migration 0011) gets them
            log(f"synonym edges: {synthetic.fill_synonyms(store, synthetic.SCOPE):.1f} s")
            if "injection_spans_s" not in record["load"]:
                # loaded before the loader stored the chunks' spans: scanned once, recorded
                record["load"]["injection_spans_s"] = round(synthetic.fill_injection_spans(
                    store, synthetic.SCOPE, workers=workers, rebuild=True,
                    maintenance_work_mem=maintenance_work_mem, log=log), 2)
                log(f"injection spans: {record['load']['injection_spans_s']} s")
                with store.transaction() as conn:
                    conn.execute(text("UPDATE krag_meta SET value = :v "
                                      "WHERE key = 'bench_params'"),
                                 {"v": json.dumps(record)})
            return store, {**record["load"], "reused": True}
        progress = synthetic.LoadProgress(store, params)
        if not progress.state or stored:
            progress = None
            store.close()
    if progress is None:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{dbname}"')
        store = open_store(url)
        progress = synthetic.LoadProgress(store, params)
    log(f"loading {params['entities']:,} entities / {params['relations']:,} relations "
        f"into {dbname}")
    load = synthetic.load_graph(store, graph, batch_size=params["batch_size"], log=log,
                                defer_index=defer_index, workers=workers,
                                maintenance_work_mem=maintenance_work_mem, progress=progress)
    load["generate_s"] = graph.stats["generate_s"]
    load["defer_index"] = defer_index
    load["maintenance_work_mem"] = maintenance_work_mem
    with store.transaction() as conn:
        conn.execute(text(
            "INSERT INTO krag_meta (key, value) VALUES ('bench_params', :v) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"),
            {"v": json.dumps({"params": params, "load": load,
                              "loaded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})})
    progress.finish()
    return store, {**load, "reused": False}


def database_facts(store: KnowledgeStore) -> dict[str, Any]:
    with store.connect() as conn:
        settings = dict(conn.execute(text(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
            "('shared_buffers', 'work_mem', 'effective_cache_size', 'max_parallel_workers', "
            "'max_parallel_workers_per_gather', 'random_page_cost', 'jit')")).all())
        sizes = dict(conn.execute(text(
            "SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relname IN ('entities', 'relations', 'entity_words', 'chunks', "
            "'entity_provenance', 'relation_provenance')")).all())
        idx = dict(conn.execute(text(
            "SELECT indexrelname, pg_size_pretty(pg_relation_size(indexrelid)) "
            "FROM pg_stat_user_indexes WHERE relname IN ('entities', 'relations', "
            "'entity_words', 'chunks') ORDER BY 1")).all())
        return {"server_version": conn.execute(text("SHOW server_version")).scalar(),
                "settings": settings, "table_sizes": sizes, "index_sizes": idx,
                "database_size": conn.execute(text(
                    "SELECT pg_size_pretty(pg_database_size(current_database()))")).scalar(),
                "counts": store.counts()}


PREWARMED = ("entities", "relations", "chunks", "documents", "entity_provenance",
             "relation_provenance", "entity_words", "chunk_term_stats", "chunk_scope_stats",
             "scopes")


def prewarm(store: KnowledgeStore) -> dict[str, Any]:
    """Read the tables the queries touch, and all their indexes, into the OS page cache
    (``pg_prewarm``, read mode) before the query process starts, so the measured pass is a
    server that has been answering for a while, whatever ran on the machine before: these
    VMs hand idle page cache back to the host within minutes, and the first ~60 queries of
    a cold pass spent 100-180 ms reading the relations' HNSW index from disk. Returns the
    blocks read per relation and the seconds, or why it was skipped."""
    started = time.perf_counter()
    with store.connect(autocommit=True) as conn:
        if not conn.execute(text("SELECT EXISTS (SELECT 1 FROM pg_available_extensions "
                                 "WHERE name = 'pg_prewarm')")).scalar():
            return {"skipped": "pg_prewarm is not available on this server"}
        if not conn.execute(text(
                "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_prewarm')")
                ).scalar():
            return {"skipped": "pg_prewarm is not installed in this database (a superuser "
                    "can: CREATE EXTENSION pg_prewarm; open_store() does)"}
        rows = conn.execute(text("""
            SELECT c.relname, pg_prewarm(c.oid, 'read') AS blocks
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'i')
              AND (c.relname = ANY(:t) OR c.oid IN (
                   SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
                   WHERE t.relname = ANY(:t) AND t.relnamespace = n.oid))
            ORDER BY c.relname"""), {"t": list(PREWARMED)}).all()
    return {"blocks": {r.relname: int(r.blocks) for r in rows},
            "seconds": round(time.perf_counter() - started, 2)}


def machine() -> dict[str, Any]:
    cpu = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    commit = "?"
    with contextlib.suppress(Exception):
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    return {"nproc": os.cpu_count(), "cpu": cpu, "memory": mem,
            "python": platform.python_version(), "commit": commit,
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


# -- output ------------------------------------------------------------------------------------
def _row(name: str, p: dict[str, float], *extra: Any) -> str:
    if not p.get("n"):
        return f"| {name} | 0 | – | – | – |" + "".join(f" {e} |" for e in extra)
    return (f"| {name} | {p['n']} | {p['p50']} | {p['p95']} | {p['p99']} |"
            + "".join(f" {e} |" for e in extra))


def markdown(rep: dict[str, Any]) -> str:
    o, m = rep["ours"], rep["machine"]
    lines = [
        f"### {rep['label']}: {rep['params']['entities']:,} entities / "
        f"{rep['params']['relations']:,} relations, {rep['queries']} queries",
        "",
        f"{m['date']}, commit {m['commit']}, {m['nproc']} cores ({m['cpu']}), {m['memory']}; "
        f"load average {rep['loadavg_start']} → {rep['loadavg_end']} (shared machine). "
        f"Load: {rep['load'].get('total_s', '?')} s"
        f"{' (reused database)' if rep['load'].get('reused') else ''}; "
        f"database {rep['database']['database_size']}.",
        "",
        "| ms | n | p50 | p95 | p99 |", "|---|---|---|---|---|",
        _row("retrieve_knowledge (analysis + retrieve + sources)", o["retrieve_knowledge_ms"]),
        _row("retrieve() alone", o["retrieve_ms"]),
        _row("retrieve_knowledge + MiniLM query embedding when retrieve asked for it",
             o["retrieve_knowledge_with_embedding_ms"]),
        _row("query embedding alone (MiniLM, every query)", rep["embedding_ms"]),
        _row("build_context", o["build_context_ms"]),
    ]
    if "literal" in rep:
        lit = rep["literal"]
        lines += [_row(f"literal seed recipe ({lit['queries']} queries)", lit["total_ms"]),
                  _row("ours on the same queries, same pass", lit["ours_same_queries_ms"])]
    if "rls" in rep:
        r = rep["rls"]
        lines += ["", f"Row-level security ({r['passes']} passes x {r['questions_per_pass']} "
                  f"questions, {r['alternation']}): p95 ratio **{r['p95_ratio']}**, p50 "
                  f"ratio {r['p50_ratio']}; questions with other results either way: "
                  f"{r['questions_with_other_results']}.", "",
                  "| ms | n | p50 | p95 | p99 |", "|---|---|---|---|---|",
                  _row("with the policies (application's role)", r["with_policies_ms"]),
                  _row("without (superuser: no policy applied)", r["without_policies_ms"])]
    rec = o["recipe"]
    lines += ["", f"Recipe requested: {', '.join(rec['requested'])}; ran: "
              + ", ".join(f"{k} {v}" for k, v in rec["ran"].items())
              + f" (other than requested: {rec['other_than_requested']}). Query embedded by "
              f"retrieve: {o['embedded']} of {rep['queries']}. Mean passages "
              f"{o['mean_passages']}, mean PageRank graph nodes {o['mean_ppr_graph_nodes']}."]
    if o["ppr_steps_ms"]:
        lines += ["", "ppr steps (ms, `search_metrics[\"ppr\"][\"steps_ms\"]`):", "",
                  "| step | n | p50 | p95 | p99 |", "|---|---|---|---|---|"]
        lines += [_row(k, v) for k, v in o["ppr_steps_ms"].items()]
    lines += ["", f"Fallback (vector search ran): {o['fallback']['queries']} of "
              f"{rep['queries']} queries ({o['fallback']['rate']:.0%}; entities "
              f"{o['fallback']['entities']}, facts {o['fallback']['facts']}). "
              f"Errors: {o['errors']}. Queries with nothing retrieved: {o['empty']}.",
              "", "Per method (ms, `metrics[\"ms\"]`, only queries where it ran):", "",
              "| method | n | p50 | p95 | p99 | mean results |", "|---|---|---|---|---|---|"]
    lines += [_row(k, v, v.get("mean_results", "")) for k, v in o["per_method_ms"].items()]
    lines += ["", "Per query kind (retrieve_knowledge ms):", "",
              "| kind | n | p50 | p95 | p99 | fallback | mean entities | mean facts "
              "| target found |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [_row(k, v, v["fallback"], v["mean_entities"], v["mean_facts"],
                   "–" if v["hit_rate"] is None else f"{v['hit_rate']:.0%}")
              for k, v in o["per_kind_ms"].items()]
    if "literal" in rep:
        lines += ["", "Literal recipe per method (ms):", "",
                  "| method | n | p50 | p95 | p99 |", "|---|---|---|---|---|"]
        lines += [_row(k, v) for k, v in rep["literal"]["per_method_ms"].items()]
        lines += ["", "Literal recipe per query kind (ms):", "",
                  "| kind | n | p50 | p95 | p99 |", "|---|---|---|---|---|"]
        lines += [_row(k, v) for k, v in rep["literal"]["per_kind_ms"].items()]
    rss = rep["rss_after_queries"]
    where = ("a process of its own, spawned after the load: store, embedding model and the "
             "queries only" if rep.get("query_process") else
             "includes generating/loading the graph when not reused")
    lines += ["", f"Query process memory ({where}): RSS {rss.get('rss_mb', '?')} MB after "
              f"the queries, max RSS {rss['maxrss_mb']} MB; RSS before the queries "
              f"{rep['rss_before_queries'].get('rss_mb', '?')} MB.", ""]
    return "\n".join(lines)


# -- CLI ---------------------------------------------------------------------------------------
_MEMORY = re.compile(r"[1-9][0-9]*(kB|MB|GB)")


def check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the command line's numbers (one line), or None."""
    limits = (("--entities", args.entities, 10, 10_000_000),
              ("--relations", args.relations, 1, 30_000_000),
              ("--queries", args.queries, 1, 100_000),
              ("--batch-size", args.batch_size, 1, 1_000_000),
              ("--load-workers", args.load_workers, 1, 8))
    for flag, value, lo, hi in limits:
        if not lo <= value <= hi:
            return f"{flag} {value}: give a whole number from {lo:,} to {hi:,}"
    if args.relations > args.entities * (args.entities - 1) * len(synthetic.PREDICATES):
        return (f"--relations {args.relations}: more facts than {args.entities} entities can "
                "have; give fewer relations or more entities")
    if not _MEMORY.fullmatch(args.maintenance_work_mem):
        return (f"--maintenance-work-mem {args.maintenance_work_mem!r}: give a size such as "
                "512MB or 6GB")
    return None


def log(msg: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def evict_page_cache(data_dir: Path) -> dict[str, Any]:
    """Ask the OS to drop ``data_dir``'s files from its page cache (``posix_fadvise``
    DONTNEED: clean pages of these files only, nothing else on the machine), so the next
    server started there reads from disk: a cold pass. Meaningless while a server runs on
    it (its shared_buffers stay warm): call before starting one."""
    files = size = 0
    for path in Path(data_dir).rglob("*"):
        if not path.is_file():
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            files, size = files + 1, size + os.fstat(fd).st_size
        finally:
            os.close(fd)
    return {"files": files, "mb": round(size / 2**20, 1)}


@contextlib.contextmanager
def bench_server(data_dir: Path, database_url: str | None) -> Iterator[str]:
    """The admin URL of ``database_url``, or of an embedded PostgreSQL started in
    ``data_dir`` for the duration (stopped on exit, also after SIGTERM)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # release the embedded handle
    if database_url is not None:
        yield database_url
        return
    from storage import start_embedded, stop_embedded

    url = start_embedded(data_dir)
    try:
        yield url
    finally:
        stop_embedded(data_dir)


def query_process(url: str, queries: Sequence[BenchQuery], warmup: Sequence[BenchQuery],
                  hash_embedder: bool, options: dict[str, Any]) -> dict[str, Any]:
    """:func:`benchmark` in a process of its own (spawned): what it holds is what a query
    process holds (store, embedding model, the queries), not the generated graph, so its
    ``rss_after_queries`` is the query process's memory. It connects as the application's
    role with the synthetic scope's access, as a request does; ``rls_passes`` adds
    :func:`compare_rls` against a superuser connection to ``url``."""
    if hash_embedder:
        embedder: Any = HashEmbedder()
    else:
        from graph_flows.shared.embeddings import MiniLMEmbeddings

        embedder = MiniLMEmbeddings()
    rls_passes = options.pop("rls_passes", 0)
    store = open_store(url)
    freeze_loaded()  # as a serving process does once loaded (graph_flows.shared.heap)
    try:
        with use_access(store.access_for(synthetic.SCOPE)):
            app_engine = store.search_engine(60_000)
            rep = benchmark(app_engine, synthetic.SCOPE, queries,
                            embedder=embedder, warmup=warmup, log=log, **options)
            if rls_passes:
                rep["rls"] = _compare(url, app_engine, queries, warmup, embedder, rls_passes,
                                      options.get("recipe"), options.get("max_hops"))
    finally:
        store.close()
    rep["query_process"] = {"pid": os.getpid(), "spawned": True}
    return rep


def _compare(url: str, app_engine: Any, queries: Sequence[BenchQuery],
             warmup: Sequence[BenchQuery], embedder: Any, passes: int, recipe: str | None,
             max_hops: int | None) -> dict[str, Any]:
    """:func:`compare_rls` with a superuser engine on ``url`` (warmed up like the other)."""
    bypass = make_engine(url, statement_timeout_ms=60_000, pre_ping=False)
    try:
        cfg = search_config()
        cfg = replace(cfg, recipe=recipe or cfg.recipe, max_hops=max_hops or cfg.max_hops)
        vectors, _ = embed_queries(queries, embedder)
        for q in warmup:
            run_ours(bypass, synthetic.SCOPE, q, embedder.embed_query(asked(q)), cfg)
        return compare_rls(app_engine, bypass, synthetic.SCOPE, queries, vectors, cfg,
                           passes, log)
    finally:
        bypass.dispose()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.retrieval_latency",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--relations", type=int, default=300_000)
    ap.add_argument("--queries", type=int, default=240)
    ap.add_argument("--literal-queries", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batch-size", type=int, default=10_000)
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--data-dir", type=Path, default=Path("/tmp/krag-bench"),
                       help="embedded PostgreSQL data dir (default /tmp/krag-bench)")
    where.add_argument("--database-url", help="an existing server (admin URL)")
    ap.add_argument("--reuse", action="store_true",
                    help="keep a database already loaded with the same parameters")
    ap.add_argument("--defer-index", action="store_true",
                    help="drop every secondary index of the graph's tables for the load and "
                    "build them once after it (storage.deferred_indexes)")
    ap.add_argument("--maintenance-work-mem", default="1GB",
                    help="maintenance_work_mem of the index builds after the load (the HNSW "
                    "build is much slower once its graph no longer fits; ~2.5 kB a vector)")
    ap.add_argument("--load-workers", type=int, default=2,
                    help="threads writing the load's batches (1-8)")
    ap.add_argument("--no-explain", action="store_true")
    ap.add_argument("--no-prewarm", action="store_true",
                    help="measure with whatever the OS page cache holds (see prewarm())")
    ap.add_argument("--evict-cache", action="store_true",
                    help="a cold pass: drop the data dir's files from the OS page cache before "
                    "starting its server (with --reuse --no-prewarm; the server must not be "
                    "running already)")
    ap.add_argument("--hash-embedder", action="store_true",
                    help="random query vectors instead of MiniLM (no model needed)")
    ap.add_argument("--out-dir", type=Path, default=OUT_DIR)
    ap.add_argument("--recipe", choices=retrieval.RECIPES, default=None,
                    help="SearchConfig.recipe for retrieve() (default: the query graph's)")
    ap.add_argument("--max-hops", type=int, default=None, choices=(1, 2, 3),
                    help="SearchConfig.max_hops for retrieve() (default: the query graph's)")
    ap.add_argument("--rls-passes", type=int, default=0,
                    help="then this many passes with and without the row-level security "
                    "policies, alternated per question (compare_rls)")
    args = ap.parse_args(argv)
    wrong = check_args(args)
    if wrong:
        print(f"error: {wrong}", file=sys.stderr)
        return 2
    label = size_label(args.entities)
    params = load_params(args.entities, args.relations, args.seed, args.batch_size)
    evicted = None
    if args.evict_cache and args.database_url is None:
        from storage.embedded import cluster_dir

        if (cluster_dir(args.data_dir) / "postmaster.pid").exists():
            print(f"error: --evict-cache: a server runs on {args.data_dir} (its buffers stay "
                  "warm); stop what holds it first, or leave --evict-cache out", file=sys.stderr)
            return 2
        evicted = evict_page_cache(args.data_dir)
        log(f"evicted from the page cache: {evicted}")
    with bench_server(args.data_dir, args.database_url) as server_url, \
            use_access(WHOLE_STORE), \
            contextlib.ExitStack() as held:  # the load and its maintenance span the store
        try:  # before generating: a second run stops at once (and never drops the
            # database this one loads or queries)
            held.enter_context(loader_lock(server_url, f"krag_bench_{label}"))
        except LoaderBusy as busy:
            print(f"error: {busy}", file=sys.stderr)
            return 2
        graph = synthetic.generate_graph(args.entities, args.relations, args.seed)
        log(f"generated graph in {graph.stats['generate_s']} s: {graph.stats}")
        queries = synthetic.generate_queries(graph, args.queries)
        warmup = synthetic.generate_queries(graph, args.warmup, seed=args.seed + 5000)
        store, load = _prepare(server_url, f"krag_bench_{label}", params, args.reuse,
                               graph, log, defer_index=args.defer_index,
                               maintenance_work_mem=args.maintenance_work_mem,
                               workers=args.load_workers)
        log(f"load: {load}")
        warmed = {"skipped": "--no-prewarm"} if args.no_prewarm else prewarm(store)
        log(f"prewarm: {warmed.get('seconds', warmed.get('skipped'))}")
        graph_stats = graph.stats
        del graph  # the query process neither needs nor holds it
        args.out_dir.mkdir(parents=True, exist_ok=True)
        options = {"literal_queries": args.literal_queries,
                   "explain_path": None if args.no_explain
                   else args.out_dir / f"explain_{label}.txt",
                   "recipe": args.recipe, "max_hops": args.max_hops,
                   "rls_passes": args.rls_passes}
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            rep = pool.submit(query_process, with_database(server_url, f"krag_bench_{label}"),
                              queries, warmup, args.hash_embedder, options).result()
        rep.update(label=label, params=params, load=load, graph=graph_stats, prewarm=warmed,
                   evicted=evicted,
                   machine=machine(), database=database_facts(store),
                   command="python -m bench.retrieval_latency " + " ".join(
                       sys.argv[1:] if argv is None else argv))
        store.close()
    out = args.out_dir / f"retrieval_{label}.json"
    out.write_text(json.dumps(rep, indent=1, default=str))
    print(markdown(rep))
    log(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
