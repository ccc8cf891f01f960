"""What the Streamlit pages call: resources, streamed queries, uploads, explore look-ups.

No Streamlit here (the pages cache and render); every function is plain Python, testable
without a browser. Graph runs happen in a worker thread that hands tokens / progress to the
caller through a queue, so only the script thread ever touches Streamlit.
"""

from __future__ import annotations

import logging
import queue
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text

from graph_flows.shared.resources import Resources, build_resources, use_resources
from graph_flows.shared.settings import Settings, load_settings

log = logging.getLogger("krag.ui")
_DONE = object()


def settings_key(settings: Settings) -> str:
    """Cache key of the resources: the settings that pick the database and the models."""
    return "|".join(str(x) for x in (settings.database_url, settings.data_dir,
                                     settings.embedding_model, settings.embedding_dim,
                                     settings.chat_model, settings.ollama_host,
                                     settings.openai_base_url))


def open_resources(_key: str) -> Resources:
    """Resources for the current environment (``_key`` only separates cache entries)."""
    return build_resources(load_settings())


def friendly_error(exc: BaseException) -> str:
    """One line for the user: the error's kind and first line, never a traceback."""
    from graph_flows.query.analyze import InvalidQueryError

    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, InvalidQueryError):
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
        worker = threading.Thread(target=self._work, args=(q,), daemon=True, name="krag-query")
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
        from ui.cli import ask

        try:
            if self.resources is None:
                raise RuntimeError("the knowledge base is not available")
            with use_resources(self.resources):
                self.result = ask.run_query_streaming(self.payload, {}, q.put)
        except Exception as exc:  # noqa: BLE001 - shown to the user as one line, logged
            log.warning("query failed", exc_info=True)
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
    """Every known scope (declared, holding documents or entities, or the configured default),
    sorted by name, mapped to its chain: the scope, then its ancestors, nearest first."""
    from storage.scopes import list_scopes

    with resources.store.engine.connect() as conn:
        parents = dict(list_scopes(conn))
        held = conn.execute(text("SELECT DISTINCT scope FROM entities")).scalars().all()
    names = sorted({resources.settings.scope, *parents, *held})
    return {name: chain_of(name, parents) for name in names}


def chain_of(scope: str, parents: dict[str, str | None]) -> list[str]:
    """``scope`` followed by its ancestors in ``parents`` (stops at a repeat or the depth cap)."""
    from storage.scopes import MAX_DEPTH

    chain = [scope]
    while (parent := parents.get(chain[-1])) and parent not in chain and len(chain) < MAX_DEPTH:
        chain.append(parent)
    return chain


def scopes(resources: Resources) -> list[str]:
    """Names of every known scope (see :func:`scope_chains`)."""
    return list(scope_chains(resources))


# -- upload -------------------------------------------------------------------------------
def check_upload(name: str, size: int, settings: Settings) -> str | None:
    """Why an upload is refused, or None when it is acceptable."""
    from graph_flows.indexing.documents.loaders import SUPPORTED_SUFFIXES

    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        return (f"{name}: unsupported file type '{suffix or 'none'}' "
                f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    if size > settings.max_upload_mb * 1024 * 1024:
        return (f"{name}: {size / 1024 / 1024:.1f} MB is over the "
                f"{settings.max_upload_mb} MB limit (KRAG_MAX_UPLOAD_MB)")
    if size == 0:
        return f"{name}: the file is empty"
    return None


def safe_filename(name: str) -> str:
    """A plain file name for an uploaded file (no directories, no odd characters)."""
    base = Path(name.replace("\\", "/")).name
    stem, suffix = Path(base).stem, Path(base).suffix.lower()
    stem = re.sub(r"[^A-Za-z0-9._ -]+", "_", stem).strip(" .") or "upload"
    return stem[:100] + suffix


def ingest_files(
    files: list[tuple[str, bytes]], scope: str, resources: Resources,
    on_progress: Callable[[float, str], None] | None = None,
) -> dict[str, Any]:
    """Ingest uploaded files with the indexing graph; ``on_progress(fraction, text)``
    is called in the caller's thread. Returns the run output (``failures`` included)."""
    from graph_flows.indexing.context import IndexingContext
    from graph_flows.services import ingest as runner

    q: queue.Queue[Any] = queue.Queue()
    box: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="krag-upload-") as tmp:
        paths = []
        for name, data in files:
            path = Path(tmp) / safe_filename(name)
            path.write_bytes(data)
            paths.append(str(path))

        def work() -> None:
            try:
                with use_resources(resources):
                    box["out"] = runner.ingest(
                        {"paths": paths, "scope": scope}, IndexingContext(),
                        on_progress=q.put, poll_s=0.3)
            except Exception as exc:  # noqa: BLE001 - reported as one line
                log.warning("ingest failed", exc_info=True)
                box["error"] = friendly_error(exc)
            finally:
                q.put(_DONE)

        worker = threading.Thread(target=work, daemon=True, name="krag-ingest")
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
    """Entities of ``scope`` or its ancestors whose name matches ``term`` (exact, substring,
    then trigram-fuzzy)."""
    from storage import search
    from storage.ids import normalize_name
    from storage.scopes import scope_chain

    term = term.strip()[:200]
    if not term:
        return []
    with resources.store.engine.connect() as conn:
        scope = scope_chain(conn, scope)  # own scope and its ancestors, like a query
        hits = search.entity_exact(conn, scope, [normalize_name(term)])
        hits += search.entity_like(conn, scope, [term], limit)
        hits += search.entity_fuzzy(conn, scope, [term], limit)
    seen: dict[str, Any] = {}
    for hit in hits:
        seen.setdefault(hit.entity.id, hit.entity)
    return list(seen.values())[:limit]


def neighbourhood(resources: Resources, scope: str, entity_id: str,
                  limit: int = 30) -> dict[str, Any]:
    """An entity, its facts (with both endpoint names) and its neighbours."""
    from storage import search
    from storage.scopes import scope_chain

    with resources.store.engine.connect() as conn:
        scope = scope_chain(conn, scope)  # own scope and its ancestors, like a query
        (entity,) = search.entities_by_ids(conn, scope, [entity_id]) or (None,)
        if entity is None:
            return {}
        facts = [h.fact for h in search.fact_by_endpoints(conn, scope, [entity_id], [], [],
                                                          limit)]
        ids = {f.subject_id for f in facts} | {f.object_id for f in facts} | {entity_id}
        names = {e.id: e for e in search.entities_by_ids(conn, scope, list(ids))}
    rows = [{"id": f.id, "subject_id": f.subject_id, "object_id": f.object_id,
             "predicate": f.predicate, "fact": f.fact,
             "subject": names[f.subject_id].name if f.subject_id in names else "?",
             "object": names[f.object_id].name if f.object_id in names else "?"}
            for f in facts]
    neighbours = [names[i] for i in dict.fromkeys(
        f.object_id if f.subject_id == entity_id else f.subject_id for f in facts)
        if i in names and i != entity_id]
    return {"entity": entity, "facts": rows, "neighbours": neighbours}
