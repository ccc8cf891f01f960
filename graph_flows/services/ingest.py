"""Resources of the indexing graph (store, embedder, extraction model) and ways to run it.

**Resources.** Nodes never build clients. They call :func:`get_resources` with the run
context; it takes settings, store and embedder from the shared process-wide
:mod:`graph_flows.shared.resources` (built lazily from Settings, cached; nothing happens at import,
so ``langgraph dev`` imports ``graph`` with no side effects) and adds the extraction model:
the context's ``extraction_model``, else KRAG_EXTRACTION_MODEL / KRAG_CHAT_MODEL, built at
temperature 0 without streaming, or ``None`` with a notice (no-LLM mode) when the model is
``none`` or unreachable at start. The run context stays plain serialisable data.

Tests and embedding applications use the same hook as the query graph::

    from graph_flows.shared.resources import NO_LLM, Resources, use_resources

    with use_resources(Resources(settings, store, embeddings, chat_override=fake_model)):
        runner.run_indexing({"texts": ["..."]}, IndexingContext(concurrency=2))

``chat_override=NO_LLM`` forces no-LLM mode; ``chat_override=None`` resolves the model from
settings (e.g. the real Ollama client against a test server).

**Running.** :func:`run_indexing` invokes the graph in this process. :func:`ingest` is what
`krag ingest` uses: one worker runs the whole graph here; N workers first store the document
versions here (``extract=False``), then start N ``krag ingest-worker`` processes that share
the pending chunks through ``FOR UPDATE SKIP LOCKED``, while a thread polls the database for
the progress bar.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.indexing.resources import (  # noqa: F401 - re-exported for callers
    RECURSION_LIMIT,
    IndexingResources,
    clear_model_cache,
    get_resources,
)
from graph_flows.shared import resources as runtime

if TYPE_CHECKING:

    from storage import KnowledgeStore

_lock = threading.Lock()


# -- running --------------------------------------------------------------------------------
_active_runs = 0


def run_indexing(inputs: dict[str, Any], context: IndexingContext | None = None) -> dict[str, Any]:
    """Invoke the indexing graph in this process and return its output.

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
        return graph.invoke(inputs, context=context,
                            config={"recursion_limit": RECURSION_LIMIT})
    finally:
        with _lock:
            _active_runs -= 1


def release_own_claims(worker_id: str | None = None) -> int:
    """Put chunks still claimed by this process's worker id back to pending (best effort:
    an unreachable database is reported by the run itself)."""
    from sqlalchemy import text

    from storage.claims import local_worker_id

    try:
        with runtime.get_resources().store.transaction() as conn:
            return conn.execute(text(
                "UPDATE extraction_status SET status = 'pending', worker = NULL, "
                "updated_at = now() WHERE status = 'extracting' AND worker = :w"),
                {"w": worker_id or local_worker_id()}).rowcount
    except Exception:  # noqa: BLE001 - best effort, see above
        return 0


Progress = Callable[[dict[str, int]], None]


def ingest(
    inputs: dict[str, Any], context: IndexingContext, *, workers: int = 1,
    on_progress: Progress | None = None, poll_s: float = 0.5, defer_index: bool = False,
) -> dict[str, Any]:
    """Run an ingest as `krag ingest` does (see the module docstring).

    ``defer_index``: drop the HNSW vector indexes while extracting and rebuild them at the
    end (much faster for large loads; vector search scans meanwhile). Every ingest ends by
    (re)creating missing vector indexes, so a killed deferred run is repaired by the next.
    """
    from graph_flows.indexing.nodes import run_sources
    from storage import vectors

    res = get_resources(context)
    scope = inputs.get("scope") or res.settings.scope
    sources = run_sources(inputs)
    poller = _Poller(res.store, scope, sources, on_progress, poll_s) if on_progress else None
    if poller:
        poller.start()
    if defer_index:
        vectors.drop_vector_indexes(res.store.engine)
    try:
        if workers <= 1:
            return run_indexing(inputs, context)
        out = run_indexing({**inputs, "extract": False}, context)
        claim_source = sources[0] if len(sources) == 1 else None
        for part in spawn_workers(workers, scope, claim_source, context):
            out = merge_outputs(out, part)
        return out
    finally:
        vectors.create_vector_indexes(res.store.engine)
        if poller:
            poller.stop()


def spawn_workers(
    n: int, scope: str, source: str | None, context: IndexingContext
) -> list[dict[str, Any]]:
    """Run ``n`` `krag ingest-worker` processes to completion; their JSON outputs."""
    cmd = [sys.executable, "-m", "ui.cli.app", "ingest-worker", "--scope", scope,
           "--context", json.dumps({k: v for k, v in asdict(context).items()
                                    if k != "worker_id"})]
    if source:
        cmd += ["--source", source]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    outputs = []
    for proc in procs:
        stdout, _ = proc.communicate()
        lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
        if proc.returncode != 0 or not lines:
            outputs.append({"failures": [{"uri": f"worker pid {proc.pid}",
                                          "reason": f"exited with code {proc.returncode}"}]})
            continue
        outputs.append(json.loads(lines[-1]))
    return outputs


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


class _Poller:
    """Background thread reporting chunk/graph progress of some sources from the database."""

    def __init__(self, store: KnowledgeStore, scope: str, sources: Sequence[str],
                 callback: Progress, interval: float) -> None:
        self.store, self.scope, self.callback, self.interval = store, scope, callback, interval
        self.sources = list(sources) or None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ingest-progress", daemon=True)
        self._base_calls: int | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()  # final numbers

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        from storage.stats import source_stats

        try:
            rows = source_stats(self.store.engine, self.scope, self.sources)
        except Exception:  # noqa: BLE001 - progress is best effort, the run reports errors
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
