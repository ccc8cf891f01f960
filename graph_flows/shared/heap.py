"""The garbage collector in a long-running query process.

A query process holds about 170,000 container objects once its modules and models are
loaded (LangGraph, LangChain, SQLAlchemy, psycopg, pydantic and the embedder), none of which
is ever garbage. CPython's full collection walks every one of them: about 120 ms on a
2-core VM, and each question's short-lived rows and tuples set one off every 15-20
questions, so one question in twenty waited on it (docs/bench/HISTORY.md, issue 14, fifth
session). Frozen once loading is done (``gc.freeze``), they are left out of every later
collection; objects made afterwards are collected as before.

Called where a process starts serving (the process default resources, the web UI's cached
resources, ``krag eval`` and the latency benchmarks), never at import.
"""

from __future__ import annotations

import gc
import logging

log = logging.getLogger(__name__)


def freeze_loaded() -> int:
    """Collect once, then move every object alive now into the collector's permanent
    generation (later full collections skip them). Returns how many objects are frozen.

    Garbage that forms a reference cycle among frozen objects later is never reclaimed, so
    call this once loading is done, not per request."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.debug("garbage collector: %d loaded objects frozen", frozen)
    return frozen
