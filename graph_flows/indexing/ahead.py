"""The next batch, claimed and extracted while the current one is stored (LLM mode).

With a remote model, a batch's LLM calls are most of its time, and validating, resolving,
embedding and writing it leaves the model idle: at 8 calls in flight and 200 ms to 1 s per
call, that gap between batches cost a third of the ideal rate. :class:`NextBatch` claims
and extracts batch N+1 on its own thread while the step that started it stores batch N.

Its lifetime is that one step (``store_and_extract_next`` in
:mod:`graph_flows.indexing.graph`): the step waits for it before returning, so no call
outlives the step and nothing about the run is kept outside the graph state. When storing
batch N fails, :meth:`NextBatch.cancel` stops it: no call starts after that (at most the
``concurrency`` calls already in flight finish), the step waits for them, and the claimed
chunks go back to pending, so a failed run leaves nothing calling the model and nothing
claimed that a later run would not take.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from graph_flows.indexing.extraction.llm import extract_with_llm, structured
from graph_flows.indexing.nodes import Ctx, claim_chunks, context_of, resolve, validate, write
from graph_flows.indexing.resources import get_resources
from graph_flows.indexing.state import IndexingState
from graph_flows.shared.threads import ContextThreadPool

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

Batch = list[dict[str, Any]]


class NextBatch:
    """Claim (``claim()``) and extract the next batch with ``concurrency`` calls in flight,
    on threads of the step that created it; :meth:`result` or :meth:`cancel` ends it."""

    def __init__(self, claim: Callable[[], Batch], model: BaseChatModel,
                 concurrency: int) -> None:
        self._stop = threading.Event()
        self._claimed: Batch = []
        self._concurrency = max(1, concurrency)
        self._runnable = structured(model)
        self._pool = ContextThreadPool(max_workers=1, thread_name_prefix="extract-ahead")
        self._future = self._pool.submit(self._run, claim)

    @property
    def stopped(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._stop.is_set()

    def _run(self, claim: Callable[[], Batch]) -> tuple[Batch, list[dict[str, Any]]]:
        if self._stop.is_set():
            return [], []
        batch = claim()
        self._claimed = batch
        if not batch or self._stop.is_set():
            return batch, []
        workers = min(self._concurrency, len(batch))
        with ContextThreadPool(max_workers=workers, thread_name_prefix="extract-ahead") as pool:
            futures = [pool.submit(self._extract, chunk) for chunk in batch]
            results = [f.result() for f in futures]
        if self._stop.is_set():
            return batch, []
        return batch, [asdict(r) for r in results if r is not None]

    def _extract(self, chunk: dict[str, Any]) -> Any:
        """One chunk, unless the step was cancelled before its call started."""
        if self._stop.is_set():
            return None
        return extract_with_llm(self._runnable, chunk)

    def result(self) -> tuple[Batch, list[dict[str, Any]]]:
        """The claimed batch and its extractions (order kept), once every call ended;
        raises what the claim raised. Interrupted (Ctrl-C), no further call starts."""
        try:
            return self._future.result()
        except BaseException:
            self._stop.set()
            raise
        finally:
            self._pool.shutdown(wait=True)

    def cancel(self, release: Callable[[list[str]], Any]) -> None:
        """Start no further call, wait for those in flight, and put the claimed chunks back
        to pending with ``release(chunk_ids)`` (best effort: a database that is gone leaves
        them claimed under this process's id, which its next run takes back)."""
        self._stop.set()
        try:
            self._future.result()
        except Exception:  # noqa: BLE001 - the step is failing already; its error is reported
            log.debug("the look-ahead of a failed step failed too", exc_info=True)
        finally:
            self._pool.shutdown(wait=True)
        ids = [chunk["id"] for chunk in self._claimed]
        if not ids:
            return
        try:
            release(ids)
        except Exception:  # noqa: BLE001 - best effort, see above
            log.warning("could not put %d chunks claimed ahead back to pending", len(ids),
                        exc_info=True)


# -- the graph step -------------------------------------------------------------------------
def store_and_extract_next(state: IndexingState, runtime: Ctx) -> dict[str, Any]:
    """Validate, resolve and write the extracted batch (the ``validate``, ``resolve`` and
    ``write`` nodes, in this order) while the next batch is claimed and extracted
    (:class:`NextBatch`); the next batch and its extractions become the state's batch.

    A failure while storing cancels the look-ahead (no call starts after it, the chunks
    claimed ahead go back to pending) and is raised, so the step's retry policy or the run
    handles it as the ``write`` node's would."""
    ctx = context_of(runtime)
    res = get_resources(ctx)
    if res.chat_model is None:  # the model went away: store this batch alone
        ahead: NextBatch | None = None
    else:
        ahead = NextBatch(lambda: claim_chunks(res.store, state, ctx), res.chat_model,
                          ctx.concurrency)
    try:
        current: dict[str, Any] = dict(state)
        current.update(validate(current, runtime))
        resolved = resolve(current, runtime)
        current.update(resolved)
        written = write(current, runtime)
    except BaseException:
        if ahead is not None:
            ahead.cancel(res.store.release_chunks)
        raise
    try:
        batch, extractions = ahead.result() if ahead is not None else ([], [])
    except Exception:  # noqa: BLE001 - ``claim_batch`` claims (and retries) again
        log.warning("claiming or extracting the next batch ahead failed; claiming it again",
                    exc_info=True)
        if ahead is not None:
            ahead.cancel(res.store.release_chunks)
        batch, extractions = [], []
    except BaseException:
        if ahead is not None:
            ahead.cancel(res.store.release_chunks)
        raise
    usage = {key: sum(r[field] for r in extractions) for key, field in
             (("calls", "llm_calls"), ("input_tokens", "input_tokens"),
              ("output_tokens", "output_tokens"))}
    chunks = dict(written.get("chunks") or {})
    chunks["claimed"] = chunks.get("claimed", 0) + len(batch)
    return {**written, "chunks": chunks, "merges": resolved.get("merges", []),
            "batch": batch, "extractions": extractions, "validated": [], "resolved": {},
            "llm": usage}
