"""What a no-LLM follow-up round costs (issue 41.4): it searches only what decides what it
brings in, and reuses round 1's work. Statements are counted on the real PostgreSQL (every
statement any engine sends), the embedder's calls on the real MiniLM; the corpus is the
query loop's two-hop one (tests/loop_corpus.py)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from graph_flows import query_flow
from graph_flows.query import loop, nodes
from graph_flows.query.context import QueryContext
from graph_flows.query.graph import graph
from graph_flows.shared.embeddings import MiniLMEmbeddings
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore
from storage.replicas import read_only
from tests.evidence_corpus import P2, QUESTION
from tests.loop_corpus import seed_two_hop

_EMBEDDER = MiniLMEmbeddings()
# the split recipe's candidate searches: names, aliases and summaries by LIKE and trigram,
# fact text by LIKE and word similarity
_CANDIDATE_SQL = ("ILIKE", "similarity(")


class CountingEmbeddings:
    """The real embedder, keeping every text it was asked to embed as a query."""

    def __init__(self, inner: MiniLMEmbeddings) -> None:
        self.inner, self.queries = inner, []
        self.model_name, self.dim = inner.model_name, inner.dim

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self.inner.embed_query(text)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)


@pytest.fixture
def res(store: KnowledgeStore) -> Iterator[Resources]:
    seed_two_hop(store, _EMBEDDER)
    settings = Settings(_env_file=None, chat_model="none", database_url=None)
    resources = Resources(settings=settings, store=store,
                          embeddings=CountingEmbeddings(_EMBEDDER))  # type: ignore[arg-type]
    with use_resources(resources):
        yield resources


@contextmanager
def statements(connections: list[Any] | None = None) -> Iterator[list[str]]:
    """Every SQL statement sent while inside (any engine, any thread); ``connections``
    gets the DBAPI connection each was sent on."""
    seen: list[str] = []
    lock = threading.Lock()

    def note(conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
        with lock:
            seen.append(sql)
            if connections is not None:
                connections.append(conn.connection.dbapi_connection)

    event.listen(Engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", note)


def _round_one(scope: str = "default") -> tuple[dict[str, Any], Any]:
    runtime = SimpleNamespace(context=QueryContext(recipe="ppr", max_rounds=2),
                              stream_writer=lambda _e: None)
    state: dict[str, Any] = {"query": QUESTION, "scope": scope}
    state |= nodes.analyze_query(state, runtime)  # type: ignore[arg-type]
    state |= nodes.retrieve_knowledge(state, runtime)  # type: ignore[arg-type]
    return state, runtime


_STALE_CHECK = "LEFT JOIN chunk_scope_stats t ON t.scope = s.scope"  # fulltext._STALE
RULES = {"query": "Orsina Kael childhood", "by": "rules", "bridge": "Orsina Kael",
         "why": "not covered by the top passages: childhood"}


def test_a_rule_round_skips_the_candidate_searches_and_admits_what_the_whole_search_did(
        res: Resources) -> None:
    state, runtime = _round_one()
    with statements() as first:
        _round_one()
    with statements() as rule:
        guess = nodes.retrieve_knowledge({**state, "follow_up": RULES},  # type: ignore
                                         runtime)
    # the whole retrieval of the follow-up, merged the way the rule round merges it
    whole = nodes._search(QueryContext(recipe="ppr"), state, RULES["query"],  # type: ignore
                          {"entities": ["Orsina Kael"], "keywords": ["childhood"]})
    merged, added = loop.merge_guess(dict(state), whole)
    assert [p["id"] for p in guess["passages"]] == [p["id"] for p in merged["passages"]]
    assert guess["search_metrics"]["ppr"]["ranked"] == merged["search_metrics"]["ppr"]["ranked"]
    assert guess["rounds"][-1]["added"]["passages"] == added["passages"] == 1
    assert P2 in [p["uri"] for p in guess["passages"]]
    # no candidate search, no scope lookup (round 1's chain), fewer statements in all
    assert not [s for s in rule if any(k in s for k in _CANDIDATE_SQL)]
    assert [s for s in first if any(k in s for k in _CANDIDATE_SQL)]
    assert not [s for s in rule if "RECURSIVE chain" in s]
    assert len(rule) <= len(first) - 5


def test_a_hop_round_reuses_round_one_s_question_vector(res: Resources) -> None:
    out = query_flow.invoke({"query": QUESTION}, context={"max_rounds": 2})
    assert [h["bridge"] for r in out["rounds"] for h in r.get("hops") or []] == ["Orsina Kael"]
    assert res.embeddings.queries.count(QUESTION) == 1  # round 1 embedded it, once
    assert "question_vector" not in out  # a vector never leaves the graph ...
    *_, (_, final) = graph.stream({"query": QUESTION}, context={"max_rounds": 2},
                                  stream_mode=["values"])
    assert final.get("question_vector") is None  # ... nor ends in the values surfaces read


def test_a_hop_round_is_three_statements_two_after_another(res: Resources) -> None:
    state, runtime = _round_one()
    state |= nodes.assess_evidence(state, runtime)  # type: ignore[arg-type]
    assert state["follow_up"]["hops"]
    asked = len(res.embeddings.queries)
    conns: list[Any] = []
    with statements(conns) as hop:
        out = nodes.retrieve_knowledge(state, runtime)  # type: ignore[arg-type]
    assert out["rounds"][-1]["hops"][0]["bridge"] == "Orsina Kael"
    assert len(res.embeddings.queries) == asked  # the question is not embedded again
    # the entities the hop-1 passage mentions with their passages (one statement), then the
    # passages titled by the chosen bridge's name (second_hop.placed) and, beside it on a
    # connection of its own, the facts of the passages the round may place
    assert len(hop) == 3 and not [s for s in hop if any(k in s for k in _CANDIDATE_SQL)]
    mentioned = next(i for i, s in enumerate(hop) if "entity_provenance" in s)
    titled = next(i for i, s in enumerate(hop) if "phraseto_tsquery" in s)
    facts = next(i for i, s in enumerate(hop) if "relation_provenance" in s)
    assert conns[mentioned] is conns[titled] and conns[facts] is not conns[titled]


def test_a_rule_round_in_round_one_s_request_repeats_none_of_its_checks(
        res: Resources) -> None:
    """Run as one read-only request (as ``krag ask`` runs a question), the rule round does
    not ask again whether the scope's full-text statistics are fresh (round 1 found them
    so, or rebuilt them: storage.request_memo), runs its two vector searches side by side
    (the bridge's side of the graph waits only for the facts), and ranks exactly what it
    ranks in a request of its own."""
    with read_only():
        state, runtime = _round_one()
        conns: list[Any] = []
        with statements(conns) as rule:
            guess = nodes.retrieve_knowledge({**state, "follow_up": RULES},  # type: ignore
                                             runtime)
    with read_only(), statements() as alone:  # a request of its own: the check runs
        apart = nodes.retrieve_knowledge({**state, "follow_up": RULES},  # type: ignore
                                         runtime)
    assert [s for s in alone if _STALE_CHECK in s]
    assert not [s for s in rule if _STALE_CHECK in s]
    assert len(rule) == len(alone) - 1
    dense = next(i for i, s in enumerate(rule) if "c.embedding <=>" in s)
    linked = next(i for i, s in enumerate(rule) if "r.embedding <=>" in s)
    assert conns[dense] is not conns[linked]
    assert guess["passages"] == apart["passages"] and guess["facts"] == apart["facts"]
    assert guess["search_metrics"]["ppr"]["ranked"] == apart["search_metrics"]["ppr"]["ranked"]
    assert P2 in [p["uri"] for p in guess["passages"]]


def test_the_latency_bench_runs_a_question_as_one_request(res: Resources) -> None:
    """bench.ppr_latency times a question as ``krag ask`` runs it: one read-only request
    for all its nodes and rounds, so what a request reads once is read once there too."""
    from bench import ppr_latency

    with statements() as seen:
        state, ms = ppr_latency.run_one(QUESTION, "default", "ppr+rules")
    assert len(state["rounds"]) == 2 and ms["round.2.hops"] > 0
    assert sum("FROM pg_class" in s and "reltuples" in s for s in seen) <= 2  # per table


def test_a_rule_round_reads_the_bridge_s_side_of_the_graph_only(res: Resources) -> None:
    """The rule round's neighbourhood is the linked facts' ends' (their relations, synonyms
    and passages); the entities of the passages its text matched are not read (round 1
    reads both sides)."""
    state, runtime = _round_one()
    seen: list[tuple[list, list]] = []

    def note(_conn: Any, _cursor: Any, sql: str, params: Any, *_args: Any) -> None:
        if "WITH seed AS" in sql:
            seen.append((list(params["ids"]), list(params["chunks"])))

    event.listen(Engine, "before_cursor_execute", note)
    try:
        _round_one()
        first = list(seen)
        seen.clear()
        guess = nodes.retrieve_knowledge({**state, "follow_up": RULES},  # type: ignore
                                         runtime)
    finally:
        event.remove(Engine, "before_cursor_execute", note)
    assert len(first) == 1 and first[0][0] and first[0][1]
    assert len(seen) == 1 and seen[0][0] and seen[0][1] == []
    assert guess["rounds"][-1]["added"]["passages"] == 1
    assert P2 in [p["uri"] for p in guess["passages"]]
