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

Order: resolution depends on the order chunks are resolved in, so a run that goes on after
a lost connection must extract the chunks it claimed ahead where a clean run would, not
last. Each look-ahead claims under a tag of its own (``<worker>/<tag>``,
storage.claims.tagged), and cancelling puts back exactly that tag's claims, retried with
backoff: idempotent, so it also undoes a claim whose reply the lost connection swallowed.
When even that fails, the step raises :class:`ClaimsNotReleased`, which the retry policy
does not retry: the run stops, and the next run takes this process's claims back first
(graph_flows.services.ingest), so its chunks keep their place.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from tenacity import Retrying, stop_after_attempt, wait_exponential

from graph_flows.indexing.extraction.llm import extract_with_llm, structured
from graph_flows.indexing.nodes import Ctx, claim_chunks, context_of, resolve, validate, write
from graph_flows.indexing.resources import get_resources
from graph_flows.indexing.state import IndexingState
from graph_flows.shared.threads import ContextThreadPool
from storage.claims import tagged

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

Batch = list[dict[str, Any]]
RELEASE_ATTEMPTS = 4  # putting the claims back: at once, then after 0.25, 0.5 and 1 s


class ClaimsNotReleased(RuntimeError):
    """Chunks claimed ahead could not be put back to pending (not retried by the step)."""


class NextBatch:
    """Claim (``claim(worker)``, under a tag of ``worker``) and extract the next batch with
    ``concurrency`` calls in flight, on threads of the step that created it; :meth:`result`
    or :meth:`cancel` ends it; ``release(worker)`` puts a tag's claims back to pending."""

    def __init__(self, claim: Callable[[str], Batch], release: Callable[[str], Any],
                 worker: str, model: BaseChatModel, concurrency: int) -> None:
        self._stop = threading.Event()
        self._tag = tagged(worker)
        self._release = release
        self._claiming = False
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
        self._claiming = True
        batch = claim(self._tag)
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

    def cancel(self) -> None:
        """Start no further call, wait for those in flight, and put the chunks claimed
        ahead back to pending (retried; :class:`ClaimsNotReleased` when that fails)."""
        self._stop.set()
        try:
            self._future.result()
        except Exception:  # noqa: BLE001 - the step is failing already; its error is reported
            log.debug("the look-ahead of a failed step failed too", exc_info=True)
        finally:
            self._pool.shutdown(wait=True)
        if not self._claiming:
            return
        try:
            for attempt in Retrying(stop=stop_after_attempt(RELEASE_ATTEMPTS), reraise=True,
                                    wait=wait_exponential(multiplier=0.25, max=1.0)):
                with attempt:
                    self._release(self._tag)
        except Exception as exc:
            cause = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else \
                type(exc).__name__
            raise ClaimsNotReleased(
                f"the chunks claimed ahead could not be put back to pending ({cause}); run "
                "the ingest again: it takes this process's claims back first") from exc


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
        ahead = NextBatch(lambda worker: claim_chunks(res.store, state, ctx, worker),
                          res.store.release_worker_claims, state["worker"], res.chat_model,
                          ctx.concurrency)
    try:
        current: dict[str, Any] = dict(state)
        current.update(validate(current, runtime))
        resolved = resolve(current, runtime)
        current.update(resolved)
        written = write(current, runtime)
    except BaseException:
        if ahead is not None:
            ahead.cancel()
        raise
    try:
        batch, extractions = ahead.result() if ahead is not None else ([], [])
    except Exception:  # noqa: BLE001 - ``claim_batch`` claims (and retries) again
        log.warning("claiming or extracting the next batch ahead failed; claiming it again",
                    exc_info=True)
        if ahead is not None:
            ahead.cancel()
        batch, extractions = [], []
    except BaseException:
        if ahead is not None:
            ahead.cancel()
        raise
    usage = {key: sum(r[field] for r in extractions) for key, field in
             (("calls", "llm_calls"), ("input_tokens", "input_tokens"),
              ("output_tokens", "output_tokens"))}
    chunks = dict(written.get("chunks") or {})
    chunks["claimed"] = chunks.get("claimed", 0) + len(batch)
    merges = [*resolved.get("merges", []), *written.get("merges", [])]
    return {**written, "chunks": chunks, "merges": merges, "batch": batch,
            "extractions": extractions, "validated": [], "resolved": {}, "llm": usage}
