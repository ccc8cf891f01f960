"""What the Streamlit pages call: resources, streamed queries, uploads, explore look-ups.

The work is done by the use cases in :mod:`graph_flows.services` (ask, uploads, scopes,
explore); this module adapts them to Streamlit's script model. No Streamlit here (the pages
cache and render). Graph runs happen in a worker thread that hands tokens / progress to the
caller through a queue, so only the script thread ever touches Streamlit.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from graph_flows.services import ask, explore, sources, uploads, warm
from graph_flows.services import scopes as scope_service
from graph_flows.services.errors import first_line, is_user_error, log_failure
from graph_flows.services.scopes import chain_of  # noqa: F401 - the pages' API
from graph_flows.services.uploads import check_upload, safe_filename  # noqa: F401 - same
from graph_flows.shared.heap import freeze_loaded
from graph_flows.shared.reads import note_write
from graph_flows.shared.resources import Resources, build_resources, use_resources
from graph_flows.shared.settings import Settings, load_settings

log = logging.getLogger(__name__)
_DONE = object()


def settings_key(settings: Settings) -> str:
    """Cache key of the resources: the settings that pick the database and the models."""
    return "|".join(str(x) for x in (settings.database_url, settings.data_dir,
                                     settings.embedding_model, settings.embedding_dim,
                                     settings.chat_model, settings.ollama_host,
                                     settings.openai_base_url))


def open_resources(_key: str) -> Resources:
    """Resources for the current environment (``_key`` only separates cache entries), warmed
    by one no-LLM question through the query graph (graph_flows.services.warm: the models
    load here, while the page opens, not on the user's first question); the objects loaded
    so far are then frozen out of garbage collection (graph_flows.shared.heap: the server
    process keeps them for its life)."""
    resources = build_resources(load_settings())
    timings = {**warm.warm_models(resources.settings), **warm.warm_query(resources)}
    log.info("resources warmed (seconds): %s", timings)
    freeze_loaded()
    return resources


def friendly_error(exc: BaseException) -> str:
    """One line for the user, never a traceback: a refusal of their input as it is worded,
    anything else with its kind."""
    first = first_line(exc)[:300]
    if is_user_error(exc):
        return first
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


# -- chat ---------------------------------------------------------------------------------
@dataclass
class QueryRun:
    """A query graph run in a thread; iterate :meth:`tokens`, then read result / error."""

    payload: dict[str, Any]
    resources: Resources | None
    result: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    streamed: bool = False

    def tokens(self) -> Iterator[str]:
        """Tokens as the graph streams them (markdown images neutralised)."""
        q: queue.Queue[Any] = queue.Queue()
        # the worker runs in the page's context: its session reads its own writes
        worker = threading.Thread(target=contextvars.copy_context().run,
                                  args=(self._work, q), daemon=True, name="krag-query")
        worker.start()
        prev = ""
        while (item := q.get()) is not _DONE:
            safe = neutralise_images(item, prev)
            prev = item[-1:] or prev
            self.streamed = True
            yield safe
        worker.join()
        if not self.streamed and self.result.get("answer"):
            self.streamed = True
            yield neutralise_images(self.result["answer"])

    def _work(self, q: queue.Queue[Any]) -> None:
        try:
            if self.resources is None:
                raise RuntimeError("the knowledge base is not available")
            with use_resources(self.resources):
                self.result = ask.run_query_streaming(self.payload, {}, q.put)
        except Exception as exc:  # noqa: BLE001 - shown to the user as one line, logged
            log_failure(log, "query", exc)
            self.error = friendly_error(exc)
        finally:
            q.put(_DONE)


def neutralise_images(token: str, prev: str = "") -> str:
    """Escape ``![`` so markdown in answers cannot load remote images."""
    token = token.replace("![", "!\\[")
    if prev.endswith("!") and token.startswith("["):
        token = "\\" + token
    return token


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$&:\"'=^])")


def md_escape(value: Any) -> str:
    """Untrusted text as inert markdown: every markdown/HTML/LaTeX character escaped."""
    return _MD_SPECIAL.sub(r"\\\1", " ".join(str(value).split()))


# -- knowledge base -----------------------------------------------------------------------
def scope_chains(resources: Resources) -> dict[str, list[str]]:
    """Every known scope mapped to its chain (:func:`graph_flows.services.scopes.scope_chains`)."""
    return scope_service.scope_chains(resources.store, resources.settings.scope)


def scopes(resources: Resources) -> list[str]:
    """Names of every known scope (see :func:`scope_chains`)."""
    return list(scope_chains(resources))


# -- upload -------------------------------------------------------------------------------
def ingest_files(
    files: list[tuple[str, bytes]], scope: str, resources: Resources,
    on_progress: Callable[[float, str], None] | None = None,
) -> dict[str, Any]:
    """Ingest uploaded files (:func:`graph_flows.services.uploads.ingest_uploads`) in a worker
    thread; ``on_progress(fraction, text)`` is called in the caller's thread. Returns the run
    output (``failures`` and the stored ``files`` names included)."""
    q: queue.Queue[Any] = queue.Queue()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["out"] = uploads.ingest_uploads(files, scope, resources, on_progress=q.put)
            note_write()  # written by worker processes too: the session reads the primary
        except Exception as exc:  # noqa: BLE001 - reported as one line
            log_failure(log, "ingest", exc)
            box["error"] = friendly_error(exc)
        finally:
            q.put(_DONE)

    worker = threading.Thread(target=contextvars.copy_context().run, args=(work,),
                              daemon=True, name="krag-ingest")
    worker.start()
    while (snap := q.get()) is not _DONE:
        total = max(snap.get("total", 0), 1)
        done = snap.get("completed", 0) + snap.get("failed", 0)
        if on_progress:
            on_progress(min(done / total, 1.0),
                        f"{done}/{snap.get('total', 0)} chunks, "
                        f"{snap.get('entities', 0)} entities, "
                        f"{snap.get('relations', 0)} relations")
    worker.join()
    if "error" in box:
        raise RuntimeError(box["error"])
    return box["out"]


# -- explore ------------------------------------------------------------------------------
def find_entities(resources: Resources, scope: str, term: str, limit: int = 10) -> list[Any]:
    """Entities of ``scope`` or its ancestors matching ``term`` (services.explore)."""
    return explore.find_entities(resources.store, scope, term, limit)


def neighbourhood(resources: Resources, scope: str, entity_id: str,
                  limit: int = 30) -> dict[str, Any]:
    """An entity, its facts and its neighbours (services.explore)."""
    return explore.neighbourhood(resources.store, scope, entity_id, limit)


def fact_documents(resources: Resources, scope: str, fact_ids: list[str]
                   ) -> dict[str, list[dict[str, str]]]:
    """The documents each fact of ``scope`` was extracted from (services.sources)."""
    return sources.fact_documents(resources.store, scope, fact_ids)


def scope_counts(resources: Resources, scope: str) -> dict[str, int]:
    """Documents, chunks, entities and relations of ``scope`` (services.sources)."""
    return sources.scope_counts(resources.store, scope)
