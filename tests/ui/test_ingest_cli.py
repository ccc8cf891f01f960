"""`krag ingest / status / remove / reembed` against the test database.

Subprocesses where the process is the point (a run killed with SIGKILL, worker processes);
the other commands run in-process through ``ui.cli.app.main`` (each Python start costs
seconds when bytecode is not cached).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared import providers
from graph_flows.shared.resources import NO_LLM, Resources, build_resources, use_resources
from graph_flows.shared.settings import Settings
from graph_flows.testing.fakes import ContentLLMServer, document_in_body
from graph_flows.testing.llm_server import LLMServer
from storage import KnowledgeStore
from tests.pg_fixtures import url_rows
from tests.procs import run_cli as cli

SAMPLE = Path(__file__).resolve().parents[2] / "graph_flows" / "sample_corpus"


FAKE_EMBED = "openai:fake-embed"  # served by the test server: no model to load in children


@pytest.fixture
def server() -> Iterator[ContentLLMServer]:
    with ContentLLMServer(dim=384) as s:
        yield s


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for key in [k for k in os.environ if k.startswith("KRAG_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)  # no stray .env
    monkeypatch.setenv("COLUMNS", "160")
    # Child processes (a killed run, workers) may cache bytecode, outside the repository:
    # without a cache every Python start compiles the whole stack again (seconds).
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(Path(tempfile.gettempdir()) / "krag-pycache"))
    providers.clear_probe_cache()
    runner.clear_model_cache()
    yield
    runner.clear_model_cache()


def llm_env(db_url: str, tmp_path: Path, server: LLMServer) -> dict[str, str]:
    """Environment of child processes: extraction and embeddings from the test server."""
    return {"KRAG_DATABASE_URL": db_url, "KRAG_DATA_DIR": str(tmp_path / ".krag"),
            "KRAG_CHAT_MODEL": "openai:gpt-4o-mini", "KRAG_EMBEDDING_MODEL": FAKE_EMBED,
            "KRAG_EMBEDDING_DIM": "384", "KRAG_OPENAI_BASE_URL": server.openai_url,
            "KRAG_OPENAI_API_KEY": "sk-test"}


def krag_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "ui.cli.app", *args]



def resources(store: KnowledgeStore, chat: Any = NO_LLM, **cfg: Any) -> Resources:
    return Resources(Settings(_env_file=None, **cfg), store,
                     DeterministicFakeEmbedding(size=384), chat_override=chat)


def query(db_url: str, sql: str) -> list[tuple[Any, ...]]:
    return url_rows(db_url, sql)


def snapshot(db_url: str) -> dict[str, Any]:
    """Everything a resumed run must reproduce exactly."""
    return {
        "entities": query(db_url, "SELECT id, name, type, summary FROM entities ORDER BY id"),
        "relations": query(db_url, "SELECT id, subject_id, object_id, predicate, fact "
                                   "FROM relations ORDER BY id"),
        "entity_prov": query(db_url, "SELECT * FROM entity_provenance ORDER BY 1, 2"),
        "relation_prov": query(db_url, "SELECT * FROM relation_provenance ORDER BY 1, 2"),
        "chunks": query(db_url, "SELECT c.id, s.status, s.entity_count, s.relation_count, "
                                "s.llm_calls FROM chunks c JOIN extraction_status s "
                                "ON s.chunk_id = c.id ORDER BY c.id"),
    }


def copy_corpus(tmp_path: Path, names: tuple[str, ...]) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in names:
        shutil.copy(SAMPLE / name, folder / name)
    return folder


# -- bad input ------------------------------------------------------------------------------
def test_missing_path_is_a_one_line_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "ingest", str(tmp_path / "nope.md"))
    assert code == 2
    assert err.strip().splitlines() == [f"error: no such file or folder: {tmp_path / 'nope.md'}"]


@pytest.mark.parametrize(("option", "value", "said"), [
    ("--workers", "0", "greater than or equal to 1"),
    ("--workers", "-2", "greater than or equal to 1"),
    ("--workers", "65", "less than or equal to 64"),
    ("--workers", "many", "should be a valid integer"),
    ("--concurrency", "0", "greater than or equal to 1"),
    ("--concurrency", "100000", "less than or equal to 256"),
    ("--batch-size", "-1", "greater than or equal to 1"),
    ("--batch-size", "10000000", "less than or equal to 4096"),
])
def test_worker_limits_are_one_line_errors(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str, value: str,
        said: str) -> None:
    (tmp_path / "a.md").write_text("# A\n\nAda Lovelace wrote the first program.\n")
    code, out, err = cli(capsys, "ingest", str(tmp_path / "a.md"), option, value)
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and option in lines[0] and said in lines[0], err


def test_worker_limits_hold_below_the_cli() -> None:
    """The service and the run context (Studio, flow.invoke) refuse them too, in one line."""
    for kwargs in ({"concurrency": 0}, {"concurrency": 257}, {"batch_size": 4097},
                   {"batch_size": True}):
        with pytest.raises(ValueError, match=r"^\w+ must be a whole number from 1 to \d+"):
            IndexingContext(**kwargs)
    for workers in (0, -1, 65):
        with pytest.raises(ValueError, match="^workers must be a whole number from 1 to 64"):
            runner.ingest({"texts": ["x"]}, IndexingContext(), workers=workers)


def test_workers_share_the_cores_between_their_embedding_threads() -> None:
    assert runner.worker_threads(2, cores=2) == 1
    assert runner.worker_threads(3, cores=2) == 1
    assert runner.worker_threads(2, cores=8) == 2  # never more than one process alone uses
    assert runner.worker_threads(1, cores=2) == 2


def test_the_default_worker_count() -> None:
    """No ``workers``: two processes without an LLM once enough chunks are pending (one per
    core at most), else one; with an LLM one."""
    big = runner.AUTO_MIN_CHUNKS
    assert runner.auto_workers(False, big, cores=2) == 2
    assert runner.auto_workers(False, big, cores=16) == runner.AUTO_WORKERS == 2
    assert runner.auto_workers(False, big, cores=1) == 1
    assert runner.auto_workers(False, big - 1, cores=2) == 1
    assert runner.auto_workers(True, 100 * big, cores=2) == 1
    runner.check_workers(None)  # automatic: no error


def test_automatic_workers_start_while_the_documents_are_stored(
        empty_db_url: str, tmp_path: Path, server: ContentLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``workers`` and enough new chunks: the worker processes are spawned (and load
    their models) while the documents are still being stored, not after; they then extract
    every chunk. A small ingest spawns none and extracts here."""
    from graph_flows.indexing import nodes

    for key, value in {**llm_env(empty_db_url, tmp_path, server),
                       "KRAG_CHAT_MODEL": "none"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(nodes, "SYNC_GROUP_DOCS", 1)
    monkeypatch.setattr(runner, "AUTO_MIN_CHUNKS", 3)
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    stored_at_start: list[int] = []
    real_start = runner.WorkerPool.start

    def start(pool: runner.WorkerPool) -> None:
        if pool._pool is None:
            stored_at_start.append(query(empty_db_url, "SELECT count(*) FROM documents")[0][0])
        real_start(pool)

    monkeypatch.setattr(runner.WorkerPool, "start", start)
    texts = [f"Report {i}: Alice Smith met Bob Jones in Paris in {1990 + i}." for i in range(8)]
    res = build_resources()  # this process on the database its workers read from the env
    try:
        with use_resources(res):
            out = runner.ingest({"texts": texts, "source": "big"}, IndexingContext())
            small = runner.ingest(
                {"texts": texts[:1] + ["Carol Diaz lives in Rome."], "source": "small"},
                IndexingContext())
    finally:
        res.store.close()
    assert out["workers"] == 2 and out["chunks"]["completed"] == 8
    assert stored_at_start and stored_at_start[0] < len(texts)
    assert len(query(empty_db_url, "SELECT DISTINCT worker FROM extraction_status")) >= 1
    assert small["workers"] == 1 and len(stored_at_start) == 1


def test_progress_polls_take_a_bounded_share_of_the_time(
        store: KnowledgeStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The progress poll's counts grow with the store: the poller waits after each poll at
    least its own time over POLL_BUDGET (asked for every 0 s here, it would otherwise poll
    the whole time), and its last poll on stop still reports."""
    assert runner.poll_wait(0.5, 0.001) == 0.5
    assert runner.poll_wait(0.5, 0.1) == pytest.approx(0.1 / runner.POLL_BUDGET - 0.1)
    busy: list[float] = []
    real = store.source_stats

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            busy.append(time.perf_counter() - started)

    monkeypatch.setattr(store, "source_stats", timed)
    snaps: list[dict[str, int]] = []
    poller = runner._Poller(store, "default", [], snaps.append, 0.0)
    started = time.perf_counter()
    poller.start()
    time.sleep(1.5)
    poller.stop()
    elapsed = time.perf_counter() - started
    assert len(busy) >= 2 and len(snaps) == len(busy)
    assert sum(busy[:-1]) <= 1.5 * runner.POLL_BUDGET * elapsed + max(busy), busy


def test_bad_files_are_reported_and_skipped(
        capsys: pytest.CaptureFixture[str], store: KnowledgeStore, tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nAndrew Kane created pgvector in 2021.\n")
    (folder / "empty.md").write_text("")
    (folder / "blob.txt").write_bytes(b"\x00\x01\x02binary\x00" * 50)
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    with use_resources(resources(store)):
        code, out, err = cli(capsys, "ingest", str(folder), "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["documents"]["new"] == 1 and report["documents"]["skipped"] == 3
        reasons = {Path(f["uri"]).name: f["reason"] for f in report["failures"]}
        assert set(reasons) == {"empty.md", "blob.txt", "image.png"}
        assert "empty" in reasons["empty.md"] and "unsupported" in reasons["image.png"]
        assert err.strip() == "Running in no-LLM mode (rule-based extractor)."
        code, out, _ = cli(capsys, "ingest", str(folder))
    assert code == 0 and "1 unchanged, 3 skipped" in out and "image.png" in out
    assert "no-LLM (rule-based)" in out


# -- kill -9 and resume ---------------------------------------------------------------------
def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def completed_chunks(db_url: str) -> int:
    try:
        return query(db_url, "SELECT count(*) FROM extraction_status "
                             "WHERE status = 'completed'")[0][0]
    except Exception:  # noqa: BLE001 - schema not created yet
        return 0


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_graph_as_a_clean_run(
        db_url: str, empty_db_url: str, tmp_path: Path, server: ContentLLMServer) -> None:
    corpus = copy_corpus(tmp_path, ("01-relational-origins.md", "02-postgres-lineage.md"))
    killed_url, clean_url = empty_db_url, db_url
    server.latency = 0.3
    proc = subprocess.Popen(
        krag_cmd("ingest", str(corpus), "--concurrency", "2", "--batch-size", "4"),
        env={**os.environ, **llm_env(killed_url, tmp_path, server)}, cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for(lambda: completed_chunks(killed_url) >= 8 or proc.poll() is not None, 120,
             "two completed batches")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
    left = dict(query(killed_url, "SELECT status, count(*) FROM extraction_status GROUP BY 1"))
    assert left.get("extracting", 0) > 0 or left.get("pending", 0) > 0, left

    server.latency = 0.0
    cfg = {"chat_model": "openai:gpt-4o-mini", "openai_base_url": server.openai_url,
           "openai_api_key": "sk-test"}
    ctx = IndexingContext(concurrency=2, batch_size=4)
    for url, model in ((killed_url, FAKE_EMBED), (clean_url, "local:minilm")):
        store = KnowledgeStore.open(url, embedding_model=model, embedding_dim=384)
        try:  # resume the killed run; a clean run on another database
            with use_resources(resources(store, None, **cfg)):
                out = runner.run_indexing({"paths": [str(corpus)]}, ctx)
                assert out["mode"] == "llm" and not out["failures"], out
        finally:
            store.close()

    got, want = snapshot(killed_url), snapshot(clean_url)
    assert {row[1] for row in got["chunks"]} == {"completed"}
    assert {row[4] for row in got["chunks"]} == {1}  # one recorded LLM call per chunk
    assert len(got["entities"]) > 20 and len(got["relations"]) > 5
    for key in want:
        assert got[key] == want[key], key


# -- several workers ------------------------------------------------------------------------
def gate_until_chat_requests(server: LLMServer, n: int) -> Any:
    """A fault hook holding every chat request until the server has received ``n`` of them
    (at most 120 s): with ``n`` above one process's calls in flight, no process finishes a
    batch before another one has claimed chunks too."""
    def gate(req: Any) -> None:
        if req.path == "/v1/chat/completions":
            deadline = time.monotonic() + 120
            while (len(server.bodies("/v1/chat/completions")) < n
                   and time.monotonic() < deadline):
                time.sleep(0.02)
    return gate


@pytest.mark.slow
def test_two_workers_share_chunks_without_duplicate_extraction(
        empty_db_url: str, tmp_path: Path, server: ContentLLMServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    db_url = empty_db_url
    for key, value in llm_env(db_url, tmp_path, server).items():
        monkeypatch.setenv(key, value)  # for the worker processes
    corpus = copy_corpus(tmp_path, ("03-full-text-search.md", "04-knowledge-graphs.md"))
    # Both get a share whatever the load: a worker has at most `concurrency` (2) calls in
    # flight, so the third request comes from the other one (a latency alone was a race:
    # under load the second spawned interpreter started after the first had taken every
    # chunk, ~4 s at 0.3 s a call)
    server.fault = gate_until_chat_requests(server, 3)
    store = KnowledgeStore.open(db_url, embedding_model=FAKE_EMBED, embedding_dim=384)
    snaps: list[dict[str, int]] = []
    try:
        with use_resources(resources(store, None, openai_base_url=server.openai_url,
                                     chat_model="openai:gpt-4o-mini", openai_api_key="k")):
            out = runner.ingest({"paths": [str(corpus)]},
                                IndexingContext(batch_size=3, concurrency=2), workers=2,
                                on_progress=snaps.append, poll_s=0.2)
    finally:
        store.close()
    chunks = query(db_url, "SELECT count(*) FROM chunks")[0][0]
    assert out["chunks"]["new"] == chunks == out["chunks"]["completed"]
    assert len(server.bodies("/v1/chat/completions")) == chunks == out["llm"]["calls"]
    assert len(query(db_url, "SELECT DISTINCT worker FROM extraction_status")) == 2
    assert query(db_url, "SELECT max(attempts) FROM extraction_status")[0][0] == 1
    assert snaps[-1]["completed"] == chunks == snaps[-1]["total"]
    assert snaps[-1]["llm_calls"] == chunks and snaps[-1]["entities"] > 0


@pytest.mark.slow
def test_two_krag_ingest_processes_build_the_one_process_graph(
        db_url: str, empty_db_url: str, tmp_path: Path, server: ContentLLMServer) -> None:
    """Two `krag ingest` processes (as on two machines: own data dirs, one database URL) on
    the same corpus: the graph one process builds, every chunk extracted once."""
    corpus = copy_corpus(tmp_path, ("03-full-text-search.md", "04-knowledge-graphs.md"))
    args = ("ingest", str(corpus), "--concurrency", "2", "--batch-size", "4", "--json")
    one_url, two_url = db_url, empty_db_url  # the two processes also migrate it at once
    # the template database records MiniLM; the ids do not depend on the embedding model
    env = {**os.environ, **llm_env(one_url, tmp_path, server),
           "KRAG_EMBEDDING_MODEL": "local:minilm"}
    done = subprocess.run(krag_cmd(*args), env=env, cwd=tmp_path, capture_output=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    one_calls = len(server.bodies("/v1/chat/completions"))
    server.requests.clear()

    server.fault = gate_until_chat_requests(server, 3)  # one process has 2 calls in flight
    procs = []
    for i in (1, 2):
        env = {**os.environ, **llm_env(two_url, tmp_path / f"machine-{i}", server)}
        procs.append(subprocess.Popen(krag_cmd(*args), env=env, cwd=tmp_path,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err.decode()[-2000:]
        reports.append(json.loads(out))

    chunks = query(two_url, "SELECT count(*) FROM chunks")[0][0]
    assert chunks > 8 and one_calls == chunks  # more than two batches to share
    completed = [r["chunks"]["completed"] for r in reports]
    assert sum(completed) == chunks and min(completed) > 0, completed
    assert len(query(two_url, "SELECT DISTINCT worker FROM extraction_status")) == 2
    # each chunk extracted once: one request per chunk text on the server, one call recorded
    documents = Counter(document_in_body(body)
                        for body in server.bodies("/v1/chat/completions"))
    assert len(documents) == chunks and set(documents.values()) == {1}
    assert query(two_url, "SELECT max(attempts) FROM extraction_status")[0][0] == 1
    got, want = snapshot(two_url), snapshot(one_url)
    assert len(want["entities"]) > 20 and len(want["relations"]) > 5
    for key in want:
        assert got[key] == want[key], key


@pytest.mark.slow
def test_no_llm_workers_build_the_one_process_graph(
        empty_db_url: str, other_empty_db_url: str, tmp_path: Path,
        server: ContentLLMServer) -> None:
    """Without an LLM, `krag ingest --workers 2` (two spawned processes taking store turns,
    graph_flows.indexing.in_order) stores exactly what `--workers 1` stores: entities with
    their names, summaries and aliases, relations, both provenance tables, synonym edges."""
    corpus = copy_corpus(tmp_path, tuple(p.name for p in sorted(SAMPLE.glob("*.md"))))
    server.latency = 0.1  # each batch waits on its embedding calls: both workers get work
    reports, graphs = [], []
    for url, workers in ((empty_db_url, "1"), (other_empty_db_url, "2")):
        env = {**os.environ, **llm_env(url, tmp_path / f"w{workers}", server),
               "KRAG_CHAT_MODEL": "none"}
        done = subprocess.run(krag_cmd("ingest", str(corpus), "--workers", workers,
                                       "--batch-size", "2", "--json"),
                              env=env, cwd=tmp_path, capture_output=True, timeout=900)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        reports.append(json.loads(done.stdout))
        graphs.append({**snapshot(url), "aliases": query(
            url, "SELECT id, aliases FROM entities ORDER BY id"), "synonyms": query(
            url, "SELECT * FROM entity_synonyms ORDER BY 1, 2")})
    one, two = graphs
    assert [r["mode"] for r in reports] == ["no-llm", "no-llm"]
    assert [r["workers"] for r in reports] == [1, 2]
    chunks = len(one["chunks"])
    assert chunks > 10 and reports[1]["chunks"]["completed"] == chunks
    assert len(query(other_empty_db_url, "SELECT DISTINCT worker FROM extraction_status")) == 2
    assert query(other_empty_db_url, "SELECT max(attempts) FROM extraction_status")[0][0] == 1
    assert len(one["entities"]) > 100 and len(one["synonyms"]) > 0
    assert any(aliases for _, aliases in one["aliases"])  # short forms joined, as aliases
    for key in one:
        assert two[key] == one[key], key


@pytest.mark.slow
def test_a_no_llm_worker_killed_midway_leaves_no_chunk_behind(
        empty_db_url: str, tmp_path: Path, server: ContentLLMServer) -> None:
    """SIGKILL of one of two no-LLM workers: the other takes its claims back (it waits on no
    dead worker's turn) and completes every chunk; the run reports the dead worker."""
    import psutil

    corpus = copy_corpus(tmp_path, tuple(p.name for p in sorted(SAMPLE.glob("*.md"))))
    server.latency = 0.3  # slow batches: the kill lands mid-run
    env = {**os.environ, **llm_env(empty_db_url, tmp_path, server), "KRAG_CHAT_MODEL": "none"}
    proc = subprocess.Popen(krag_cmd("ingest", str(corpus), "--workers", "2", "--batch-size",
                                     "2", "--json"), env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: completed_chunks(empty_db_url) >= 4 or proc.poll() is not None, 300,
             "two completed batches")
    workers = [c for c in psutil.Process(proc.pid).children(recursive=True)
               if "spawn_main" in " ".join(c.cmdline())]
    assert len(workers) == 2, [c.cmdline() for c in workers]
    workers[0].kill()
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err.decode()[-2000:]
    report = json.loads(out)
    assert any("worker" in f["uri"] for f in report["failures"]), report["failures"]
    left = dict(query(empty_db_url, "SELECT status, count(*) FROM extraction_status GROUP BY 1"))
    assert set(left) == {"completed"}, left
    # at most three tries of a chunk: the killed worker's, the surviving worker's (it takes
    # the dead worker's claims back while it waits for its turn; the broken pool then stops
    # it, possibly mid-batch) and this process's, which finishes the rest
    assert query(empty_db_url, "SELECT max(attempts) FROM extraction_status")[0][0] <= 3


# -- status, remove, reembed ----------------------------------------------------------------
def test_status_remove_and_reembed(capsys: pytest.CaptureFixture[str], db_url: str,
                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = copy_corpus(tmp_path, ("05-vector-search.md", "06-graph-rag.md"))
    store = KnowledgeStore.open(db_url, embedding_model="local:minilm", embedding_dim=384)
    try:
        with use_resources(resources(store)):
            # a bulk load: no synonym lookups while the vector indexes are gone, then all
            assert cli(capsys, "ingest", str(corpus), "--defer-index")[0] == 0
            code, out, _ = cli(capsys, "status", "--json")
            status = json.loads(out)
            (row,) = status["sources"]
            assert row["source"] == "corpus" and row["documents"] == 2 and row["entities"] > 20
            assert row["chunks"]["completed"] > 0 and status["embedding_model"] == "local:minilm"
            code, out, _ = cli(capsys, "status")
            assert "corpus" in out and "Embedding model: local:minilm (384-d)" in out
    finally:
        store.close()
    # the ingest left fresh BM25 statistics: the first query does not rebuild them
    assert query(db_url, "SELECT sum(chunks) FROM chunk_scope_stats")[0][0] \
        == query(db_url, "SELECT count(*) FROM chunks")[0][0] > 0
    # and every entity's synonym edges, computed once the indexes were back
    pending = ("SELECT count(*) FROM entities e WHERE NOT EXISTS (SELECT 1 FROM "
               "entity_synonyms_computed c WHERE c.entity_id = e.id)")
    assert query(db_url, pending)[0][0] == 0
    (computed,) = query(db_url, "SELECT max(computed_at) FROM entity_synonyms_computed")[0]

    with LLMServer(dim=16) as emb_server:
        for key, value in {"KRAG_DATABASE_URL": db_url, "KRAG_EMBEDDING_DIM": "16",
                           "KRAG_EMBEDDING_MODEL": "openai:test-embed",
                           "KRAG_OPENAI_BASE_URL": emb_server.openai_url,
                           "KRAG_OPENAI_API_KEY": "k"}.items():
            monkeypatch.setenv(key, value)
        code, out, err = cli(capsys, "reembed", "--batch-size", "50")
        assert code == 0, err
        assert "Re-embedded" in out and "to openai:test-embed (16-d)" in out
        assert f"synonym edges of {row['entities']} entities" in out
    # computed again from the new vectors
    assert query(db_url, pending)[0][0] == 0
    assert query(db_url, "SELECT min(computed_at) FROM entity_synonyms_computed")[0][0] \
        > computed
    assert query(db_url, "SELECT count(*) FROM entities WHERE vector_dims(embedding) = 16")[0][0] \
        == row["entities"]
    assert query(db_url, "SELECT count(*) FROM relations WHERE embedding IS NULL")[0][0] == 0
    assert query(db_url, "SELECT count(*) FROM chunks WHERE vector_dims(embedding) = 16")[0][0] \
        == query(db_url, "SELECT count(*) FROM chunks")[0][0] > 0
    assert query(db_url, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE '%hnsw'")[0][0] \
        == 3

    store = KnowledgeStore.open(db_url, embedding_model="openai:test-embed", embedding_dim=16)
    try:
        with use_resources(resources(store)):
            code, out, err = cli(capsys, "remove", "corpus")
            assert code == 0, err
            assert "Removed source 'corpus': 2 documents" in out
            assert query(db_url, "SELECT count(*) FROM entities")[0][0] == 0
            code, _, err = cli(capsys, "remove", "corpus")
            assert code == 2 and "no source 'corpus'" in err
    finally:
        store.close()
