"""Request-scoped resources (issue 12): two concurrent requests with different stores never
see each other's resources, nor the process default, whatever order they enter and leave.

The interleaving is the reproduction of the old process-global override: A enters, B enters,
A runs and leaves while B is between nodes of its query, then B finishes its query and runs
an indexing run. Each store is wrapped so the test sees which request used which store."""

from __future__ import annotations

import operator
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from graph_flows import query_flow
from graph_flows.indexing.context import IndexingContext
from graph_flows.services.ingest import run_indexing
from graph_flows.shared import resources as runtime
from graph_flows.shared.resources import NO_LLM, Resources, get_resources, use_resources
from graph_flows.shared.settings import Settings
from storage import KnowledgeStore
from tests.pg_fixtures import TEST_DIM, TEST_MODEL, _admin, with_database
from tests.query_fixtures import _EMBEDDER

WAIT_S = 60


class TaggedStore:
    """The real store, recording the tag of every request that touches it."""

    def __init__(self, store: Any, tag: str, uses: list[tuple[str, str]]) -> None:
        self._store, self._tag, self._uses = store, tag, uses

    def __getattr__(self, name: str) -> Any:
        self._uses.append((self._tag, threading.current_thread().name))
        if self._store is None:
            raise AssertionError(f"a request used the process default store ({name})")
        return getattr(self._store, name)


@pytest.fixture
def other_store(pg_server_url: str, pg_template: str) -> Iterator[KnowledgeStore]:
    """A second fresh database (the `store` fixture holds the first)."""
    name = f"krag_t_{uuid.uuid4().hex[:12]}"
    with _admin(pg_server_url) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {pg_template} STRATEGY FILE_COPY")
    store = KnowledgeStore.open(with_database(pg_server_url, name),
                                embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    try:
        yield store
    finally:
        store.close()
        with _admin(pg_server_url) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def request_resources(store: Any, tag: str, uses: list[tuple[str, str]]) -> Resources:
    settings = Settings(_env_file=None, chat_model="none", database_url=None)
    return Resources(settings, TaggedStore(store, tag, uses), _EMBEDDER, chat_override=NO_LLM)


def run_threads(*targets: Callable[[], None]) -> None:
    """Run each target on its own thread; re-raise the first failure here."""
    errors: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test thread
                errors.append(exc)
        return run

    threads = [threading.Thread(target=guarded(t), name=f"request-{t.__name__}")
               for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S * 3)
    assert not any(t.is_alive() for t in threads), "a request thread hung"
    if errors:
        raise errors[0]


def test_concurrent_requests_keep_their_own_store(
        seeded_store: KnowledgeStore, other_store: KnowledgeStore,
        monkeypatch: pytest.MonkeyPatch) -> None:
    uses: list[tuple[str, str]] = []
    # The process default ("from the environment") must never be reached by a request.
    poison = Resources(Settings(_env_file=None, chat_model="none"),
                       TaggedStore(None, "default", uses), _EMBEDDER, chat_override=NO_LLM)
    monkeypatch.setattr(runtime, "_default", poison)
    res_a = request_resources(seeded_store, "A", uses)
    res_b = request_resources(other_store, "B", uses)
    a_in, b_in, b_mid, a_out = (threading.Event() for _ in range(4))
    out: dict[str, Any] = {}

    def request_a() -> None:
        with use_resources(res_a):
            a_in.set()
            assert b_in.wait(WAIT_S)
            out["A"] = query_flow.invoke({"query": "What does the Analytical Engine use?"})
            out["A_sees"] = get_resources()
            assert b_mid.wait(WAIT_S)
        a_out.set()

    def request_b() -> None:
        assert a_in.wait(WAIT_S)
        with use_resources(res_b):
            b_in.set()
            final: dict[str, Any] = {}
            for i, (mode, chunk) in enumerate(query_flow.stream(
                    {"query": "What does the Analytical Engine use?"},
                    stream_mode=["updates", "values"])):
                if mode == "values":
                    final = chunk
                if i == 1:  # analyze_query done: let A leave before the other nodes run
                    b_mid.set()
                    assert a_out.wait(WAIT_S)
            out["B"] = final
            out["B_indexing"] = run_indexing(
                {"texts": ["Grace Hopper wrote the first compiler at Remington Rand."],
                 "source": "hopper"}, IndexingContext(batch_size=4))
            out["B_sees"] = get_resources()

    run_threads(request_a, request_b)
    assert out["A_sees"] is res_a and out["B_sees"] is res_b
    assert {tag for tag, _ in uses} == {"A", "B"}, uses  # never the default
    assert {tag for tag, thread in uses if thread == "request-request_a"} == {"A"}
    assert {tag for tag, thread in uses if thread == "request-request_b"} == {"B"}
    assert out["A"]["facts"] and out["A"]["answer_mode"] == "extractive"
    assert out["B"]["answer_mode"] == "empty" and not out["B"]["facts"]
    assert [s.source for s in other_store.source_stats()] == ["hopper"]
    assert "hopper" not in [s.source for s in seeded_store.source_stats()]


class _Fan(TypedDict, total=False):
    seen: Annotated[list[tuple[int, int]], operator.add]


def test_parallel_nodes_run_with_the_request_resources(
        seeded_store: KnowledgeStore, other_store: KnowledgeStore) -> None:
    """LangGraph runs parallel nodes on pool threads with a copy of the caller's context."""
    def node(state: _Fan) -> _Fan:
        return {"seen": [(id(get_resources()), threading.get_ident())]}

    builder = StateGraph(_Fan)
    for name in ("left", "right"):
        builder.add_node(name, node)
        builder.add_edge(START, name)
        builder.add_edge(name, END)
    graph = builder.compile()
    uses: list[tuple[str, str]] = []
    res_a = request_resources(seeded_store, "A", uses)
    res_b = request_resources(other_store, "B", uses)
    barrier = threading.Barrier(2)
    seen: dict[str, list[tuple[int, int]]] = {}
    callers: dict[str, int] = {}

    def run(tag: str, res: Resources) -> Callable[[], None]:
        def request() -> None:
            callers[tag] = threading.get_ident()
            with use_resources(res):
                barrier.wait(WAIT_S)
                for _ in range(20):
                    seen.setdefault(tag, []).extend(graph.invoke({"seen": []})["seen"])
        request.__name__ = f"fan_{tag}"
        return request

    run_threads(run("A", res_a), run("B", res_b))
    assert {r for r, _ in seen["A"]} == {id(res_a)} and {r for r, _ in seen["B"]} == {id(res_b)}
    threads = {t for _, t in seen["A"] + seen["B"]}
    assert threads - set(callers.values()), "no node ran on a pool thread"
