"""The ingest use case: run the indexing graph here or in worker processes, with progress.

:func:`run_indexing` invokes the graph in this process with the request's resources
(:func:`graph_flows.shared.resources.use_resources`; the extraction model comes from
:mod:`graph_flows.indexing.resources`). :func:`ingest` is what `krag ingest` and the UI's
upload use: one worker runs the whole graph here; N workers (or no ``workers``: chosen
once the documents are stored, :func:`auto_workers`) first store the document
versions here (``extract=False``), then run :func:`run_indexing` in N worker processes (a
``multiprocessing`` spawn context: fresh interpreters that build their resources from the
environment and exit normally, so the embedded PostgreSQL handle is released; spawned, and
their models loaded, while the documents are still being stored: :class:`WorkerPool`) that
share the pending chunks through ``FOR UPDATE SKIP LOCKED``, while a thread polls the
database and reports progress through a callback. Nothing here prints: surfaces render the
callbacks.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import replace
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any

from graph_flows.indexing.context import MAX_WORKERS, IndexingContext
from graph_flows.indexing.inputs import check_input
from graph_flows.indexing.resources import (  # noqa: F401 - re-exported for callers
    RECURSION_LIMIT,
    IndexingResources,
    clear_model_cache,
    get_resources,
)
from graph_flows.shared import resources as runtime
from graph_flows.shared.embeddings import INTRA_OP_THREADS, limit_shared_threads
from graph_flows.shared.scoped import scope_access, whole_store_access
from graph_flows.shared.threads import in_context
from graph_flows.shared.untrusted import scan_chunk
from storage import fulltext, injection_spans, synonyms
from storage.claims import local_worker_id

if TYPE_CHECKING:

    from storage import KnowledgeStore

log = logging.getLogger(__name__)
_lock = threading.Lock()


# -- running --------------------------------------------------------------------------------
_active_runs = 0


def run_indexing(inputs: dict[str, Any], context: IndexingContext | None = None,
                 on_event: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Invoke the indexing graph in this process and return its output; ``on_event`` gets
    each event its nodes write to the custom stream (e.g. the document phase's count of
    new chunks so far, ``sync_documents``).

    A run that failed in this process (e.g. the database went away mid-batch) leaves its
    claims 'extracting' under this process's live worker id, which no other run takes over
    before ``stale_after_s``. So the first run to start while no other runs here puts such
    orphaned claims back to pending first.
    """
    global _active_runs
    from graph_flows.indexing.graph import graph

    context = context or IndexingContext()
    with _lock:
        first = _active_runs == 0
        _active_runs += 1
    try:
        if first:
            release_own_claims(context.worker_id)
        config = {"recursion_limit": RECURSION_LIMIT}
        if on_event is None:
            return graph.invoke(inputs, context=context, config=config)
        out: dict[str, Any] = {}
        for mode, data in graph.stream(inputs, context=context, config=config,
                                       stream_mode=["custom", "values"]):
            if mode == "custom":
                on_event(data)
            else:
                out = data
        return out
    finally:
        with _lock:
            _active_runs -= 1


def release_own_claims(worker_id: str | None = None) -> int:
    """Put chunks still claimed by this process's worker id back to pending (best effort:
    an unreachable database is reported by the run itself)."""
    try:
        store = runtime.get_resources().store
        with whole_store_access():  # this worker's claims, in whichever scope
            return store.release_worker_claims(worker_id or local_worker_id())
    except Exception:  # noqa: BLE001 - best effort, see above
        log.debug("releasing this process's claims failed", exc_info=True)
        return 0


Progress = Callable[[dict[str, int]], None]


# ``workers=None`` (the default): without an LLM, this many worker processes (at most one
# per core) once at least AUTO_MIN_CHUNKS chunks are pending; otherwise one. Two keep two
# cores busy (one worker extracts and embeds while the other resolves and writes in its
# store turn, graph_flows.indexing.in_order); more than two wait on the turns. Fewer chunks
# do not repay the start of the worker processes (about 5 s of CPU each for imports and
# models). With an LLM, calls in flight belong in ``concurrency`` of one process.
AUTO_WORKERS = 2
AUTO_MIN_CHUNKS = 512


def check_workers(workers: int | None) -> None:
    """``workers`` None (automatic) or within 1..MAX_WORKERS, else a one-line ValueError."""
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, int) \
            or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers must be a whole number from 1 to {MAX_WORKERS} (worker "
                         f"processes of this ingest; more machines can share the database); "
                         f"got {workers!r}")


def auto_workers(llm_mode: bool, pending: int, cores: int | None = None) -> int:
    """Worker processes of an ingest given no ``workers`` (see AUTO_WORKERS)."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    if llm_mode or pending < AUTO_MIN_CHUNKS:
        return 1
    return max(1, min(AUTO_WORKERS, cores))


def ingest(
    inputs: dict[str, Any], context: IndexingContext, *, workers: int | None = None,
    on_progress: Progress | None = None, poll_s: float = 0.5, defer_index: bool = False,
) -> dict[str, Any]:
    """Run an ingest as `krag ingest` does (see the module docstring).

    ``workers``: worker processes; None chooses (:func:`auto_workers`: without an LLM, two
    on a machine of two cores or more for a load of AUTO_MIN_CHUNKS chunks or more).

    ``defer_index``: drop the HNSW vector indexes while extracting and rebuild them at the
    end (much faster for large loads; vector search scans meanwhile). Every ingest ends by
    (re)creating missing vector indexes, so a killed deferred run is repaired by the next.

    A bad input is the indexing graph's own one-line ``InvalidIndexingInputError``, raised
    here before anything starts (:func:`graph_flows.indexing.inputs.check_input`).
    """
    check_input(inputs)
    check_workers(workers)
    res = get_resources(context)
    scope = inputs.get("scope") or res.settings.scope
    with scope_access(scope, res.store):
        return _ingest(inputs, context, res, scope, workers, on_progress, poll_s, defer_index)


def _ingest(inputs: dict[str, Any], context: IndexingContext, res: Any, scope: str,
            workers: int, on_progress: Progress | None, poll_s: float, defer_index: bool,
            ) -> dict[str, Any]:
    """:func:`ingest` with the scope's access installed."""
    from graph_flows.indexing.nodes import run_sources

    sources = run_sources(inputs)
    poller = _Poller(res.store, scope, sources, on_progress, poll_s) if on_progress else None
    if poller:
        poller.start()
    if defer_index:
        res.store.drop_vector_indexes()
    stack = ExitStack()
    try:
        if workers == 1:
            return {**run_indexing(inputs, context), "workers": 1}
        if not res.llm_mode and not context.extraction_model:
            # the workers build their resources from the environment: they extract as this
            # process decided (e.g. `krag eval multihop` ingests without an LLM whatever
            # KRAG_CHAT_MODEL says)
            context = replace(context, extraction_model="none")
        pool = WorkerPool(workers or auto_workers(res.llm_mode, AUTO_MIN_CHUNKS), context)
        stack.callback(pool.close)
        if workers is not None:
            pool.start()  # the workers load their models while the documents are stored

        def on_event(event: Any) -> None:  # enough new chunks for the automatic workers
            if isinstance(event, dict) and event.get("new_chunks", 0) >= AUTO_MIN_CHUNKS:
                pool.start()

        # the document versions first (and failed chunks requeued), then the workers
        out = run_indexing({**inputs, "extract": False}, context,
                           on_event=on_event if workers is None and pool.size > 1 else None)
        claim_source = sources[0] if len(sources) == 1 else None
        if workers is None:
            workers = auto_workers(res.llm_mode, pending_chunks(res.store, scope, sources))
        out["workers"] = workers

        def extract_here() -> dict[str, Any]:  # what is pending, in this process
            return run_indexing({"scope": scope, "source": claim_source}, context)

        if workers == 1:
            pool.close()
            return merge_outputs(out, extract_here())
        parts = pool.run(scope, claim_source)
        for part in parts:
            out = merge_outputs(out, part)
        if any(part.get("worker_failed") for part in parts):
            # a worker died (its pool stops the others): this process takes the dead
            # workers' claims back and extracts what is left
            log.warning("an ingest worker failed; extracting the rest in this process")
            out = merge_outputs(out, extract_here())
        out.pop("worker_failed", None)
        return out
    finally:
        stack.close()
        res.store.create_vector_indexes()
        refresh_term_stats(res.store, scope)
        fill_synonyms(res.store, scope)
        fill_injection_spans(res.store, scope)
        if poller:
            poller.stop()


def pending_chunks(store: Any, scope: str, sources: Sequence[str]) -> int:
    """Chunks of the scope (and sources) waiting for extraction."""
    return sum(row.chunks.get("pending", 0)
               for row in store.source_stats(scope, list(sources) or None))


def refresh_term_stats(store: Any, scope: str) -> None:
    """Rebuild the scope's full-text (BM25) statistics now that its chunks changed, so the
    first query does not pay for it (best effort: queries rebuild stale ones themselves)."""
    try:
        with store.connect() as conn:
            fulltext.ensure_term_stats(conn, [scope], max_age_s=0)
    except Exception:  # noqa: BLE001 - logged; retrieval falls back to rebuilding
        log.warning("refreshing the full-text statistics of %s failed", scope, exc_info=True)


def fill_synonyms(store: Any, scope: str) -> None:
    """Compute the synonym edges of the scope's entities still without them: left by a
    load with the vector indexes dropped, or stored before schema revision 0011 (best
    effort: queries look up those of such entities themselves)."""
    try:
        with store.transaction() as conn:
            synonyms.fill(conn, scope_names=[scope])
    except Exception:  # noqa: BLE001 - logged; retrieval looks them up instead
        log.warning("computing the synonym edges of %s failed", scope, exc_info=True)


def fill_injection_spans(store: Any, scope: str) -> None:
    """Store the instruction-like spans of the scope's chunks not scanned yet: stored
    before schema revision 0012, or written outside a batch (best effort: queries scan
    such chunks themselves before showing them)."""
    try:
        with store.transaction() as conn:
            injection_spans.fill(conn, scan_chunk, scope_names=[scope])
    except Exception:  # noqa: BLE001 - logged; retrieval scans them instead
        log.warning("scanning the chunks of %s for instruction-like text failed", scope,
                    exc_info=True)


class WorkerPool:
    """An ingest's ``size`` worker processes (spawned interpreters). :meth:`start` spawns them
    and each loads its models (:func:`warm_worker`) while this process still stores the
    documents; :meth:`run` hands them the extraction. The start of a worker (imports, spaCy,
    the ONNX session: about 5 s of CPU) no longer waits for the document phase to end
    (HISTORY: ingest_docphase.md). Nothing is spawned before :meth:`start` or :meth:`run`;
    :meth:`close` ends the processes (a pool started for workers the ingest then does not
    use costs their start only)."""

    def __init__(self, size: int, context: IndexingContext) -> None:
        self.size = size
        self.context = replace(context, worker_id=None)  # each records its own <host>:<pid>
        self.threads = worker_threads(size)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Spawn the processes now (idempotent); each loads its models as it starts."""
        with self._lock:
            if self._pool is not None:
                return
            self._pool = ProcessPoolExecutor(
                max_workers=self.size, mp_context=get_context("spawn"),
                initializer=warm_worker, initargs=(self.threads, self.context))
            for _ in range(self.size):  # a process is spawned for each task no idle one takes
                self._pool.submit(int)

    def run(self, scope: str, source: str | None) -> list[dict[str, Any]]:
        """Run :func:`worker_run` in every process to completion; their outputs (a worker
        that failed or died is reported as a failure, its output marked ``worker_failed``;
        a process that dies breaks the pool, which stops the others)."""
        self.start()
        assert self._pool is not None
        futures = [self._pool.submit(worker_run, scope, source, self.context, self.threads)
                   for _ in range(self.size)]
        outputs = []
        for i, future in enumerate(futures, 1):
            try:
                outputs.append(future.result())
            except Exception as exc:  # noqa: BLE001 - reported in the run's failures
                log.warning("ingest worker %d failed", i, exc_info=True)
                outputs.append({"worker_failed": True,
                                "failures": [{"uri": f"worker {i}",
                                              "reason": f"{type(exc).__name__}: {exc}"}]})
        return outputs

    def close(self) -> None:
        """End the processes (idempotent)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def warm_worker(threads: int, context: IndexingContext) -> None:
    """Start of a worker process: its embedding threads, then its resources and models
    loaded (the extraction model of ``context``, the local embedder, spaCy without an LLM),
    so its first batch does not wait for them. A failure here breaks the pool, reported by
    :meth:`WorkerPool.run` like a worker's death."""
    from graph_flows.indexing.graph import graph  # noqa: F401 - the graph's modules
    from graph_flows.shared.nlp import load_nlp

    limit_shared_threads(threads)
    res = get_resources(context)
    load = getattr(res.embeddings, "load", None)
    if callable(load):
        load()
    if not res.llm_mode:
        load_nlp()


def worker_threads(workers: int, cores: int | None = None) -> int:
    """Intra-op threads of each worker's local embedding model: the cores shared out, at
    least one and at most the model's own default (``INTRA_OP_THREADS``). Two workers on
    two cores each embed on one thread: the same vectors for 8 % less CPU than two threads
    each (limit_shared_threads)."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    return max(1, min(INTRA_OP_THREADS, cores // max(1, workers)))


def worker_run(scope: str, source: str | None, context: IndexingContext,
               threads: int | None = None) -> dict[str, Any]:
    """One worker process: claim and extract pending chunks of ``scope`` (and ``source``)
    with resources from the environment, the local embedding model on ``threads`` intra-op
    threads when given; the run output as plain JSON data."""
    if threads is not None:
        limit_shared_threads(threads)
    out = run_indexing({"scope": scope, "source": source}, context)
    return json.loads(json.dumps(out, default=str))


def merge_outputs(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Combine two run outputs: counters summed, lists concatenated, mode kept from ``a``."""
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict):
            merged = dict(out.get(key) or {})
            for k, v in value.items():
                merged[k] = merged.get(k, 0) + v
            out[key] = merged
        elif isinstance(value, list):
            out[key] = list(out.get(key) or []) + value
        elif isinstance(value, int) and not isinstance(value, bool):
            out[key] = int(out.get(key) or 0) + value
        else:
            out.setdefault(key, value)
    return out


# The progress poll's share of the wall-clock at most: its statements count the scope's
# chunks and graph (joins over the provenance), which grow with the store; polled every
# 0.5 s they were a fifth of the embedded server's CPU in a full-corpus ingest (522 polls,
# 71 s of 257 s: HISTORY: ingest_17.md). The wait after a poll is at least the poll's own
# time divided by this.
POLL_BUDGET = 0.02


def poll_wait(interval: float, cost_s: float, budget: float = POLL_BUDGET) -> float:
    """Seconds to wait after a progress poll that took ``cost_s``: ``interval``, or longer
    so that polling takes at most ``budget`` of the time."""
    return max(interval, cost_s / budget - cost_s)


class _Poller:
    """Background thread reporting chunk/graph progress of some sources from the database,
    every ``interval`` seconds or less often when a poll is slow (:func:`poll_wait`)."""

    def __init__(self, store: KnowledgeStore, scope: str, sources: Sequence[str],
                 callback: Progress, interval: float) -> None:
        self.store, self.scope, self.callback, self.interval = store, scope, callback, interval
        self.sources = list(sources) or None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=in_context(self._run), name="ingest-progress",
                                        daemon=True)
        self._base_calls: int | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()  # final numbers

    def _run(self) -> None:
        wait = self.interval
        while not self._stop.wait(wait):
            started = time.perf_counter()
            self.poll()
            wait = poll_wait(self.interval, time.perf_counter() - started)

    def poll(self) -> None:
        try:
            rows = self.store.source_stats(self.scope, self.sources)
        except Exception:  # noqa: BLE001 - progress is best effort, the run reports errors
            log.debug("progress poll failed", exc_info=True)
            return
        snap = {"total": 0, "completed": 0, "failed": 0, "pending": 0, "extracting": 0,
                "entities": 0, "relations": 0, "llm_calls": 0}
        for row in rows:
            snap["total"] += row.total_chunks
            for status, count in row.chunks.items():
                snap[status] += count
            snap["entities"] += row.entities
            snap["relations"] += row.relations
            snap["llm_calls"] += row.llm_calls
        if self._base_calls is None:
            self._base_calls = snap["llm_calls"]
        snap["llm_calls"] -= self._base_calls
        self.callback(snap)
