"""KragRetriever: krag's passage retrieval as a LangChain ``BaseRetriever``."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from pydantic import Field, PrivateAttr

from graph_flows.integrations.handle import Handle, open_handle
from graph_flows.services import passages as service
from graph_flows.services.ask import check_rounds
from graph_flows.services.errors import RequestError
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings

METADATA = ("id", "document_id", "uri", "title", "source", "scope", "score", "rank",
            "facts", "entities", "methods", "withheld", "section", "document")


class KragRetriever(BaseRetriever):
    """The passages krag's query graph ranks for a question, as ``Document``s.

    ``KragRetriever(scope=None, k=4, recipe=None, max_rounds=None, as_of=None)``:
    ``invoke(query)`` (or ``invoke(query, k=2)``) runs the query graph's analysis and
    retrieval loop, no answer model (:func:`graph_flows.services.passages.ranked_passages`),
    and returns its first ``k`` ranked passages: ``page_content`` is the passage text with
    instruction-like spans withheld and tags neutralised (as MCP ``kag_query`` gives it);
    ``metadata`` has ``id``, ``document_id``, ``uri``, ``title``, ``source``, ``scope``
    (the document's), ``score`` (PageRank mass), ``rank`` (1..), ``facts`` and
    ``entities`` (the retrieved ones extracted from the passage: what linked it),
    ``methods`` and ``withheld`` (spans withheld), ``section`` (the passage's heading path)
    and ``document`` (its document's short name). Recipe ``ppr`` (the default) ranks at
    most ten passages per round (:data:`graph_flows.query.evidence.PASSAGE_LIMIT`), so a
    ``k`` above what was ranked returns fewer.

    ``scope`` (default ``KRAG_SCOPE``) is read with that scope's access (row-level security:
    the scope and its ancestors), as MCP reads it. The database comes from ``settings``
    (default: the environment, ``KRAG_DATABASE_URL`` or the embedded PostgreSQL), opened
    here and closed by :meth:`close` or a ``with`` block; ``resources`` lends open resources
    instead (the caller closes them).

    Bad arguments (``k`` outside 1..100, an unknown or invalid scope, a recipe that is
    unknown or ranks no passages, ``as_of`` that is not a date, ``max_rounds`` outside 1..4)
    are one-line ``ValueError``\\s naming the argument, at construction (``k`` of a call,
    when it is wrong, at the call).

    Async: krag's storage layer is synchronous (SQLAlchemy over psycopg, no async engine),
    so ``ainvoke`` runs the same retrieval in LangChain's executor
    (``langchain_core.runnables.config.run_in_executor``, the caller's context variables
    copied): the event loop keeps running meanwhile, but a cancelled call finishes its
    retrieval in the background.
    """

    scope: str | None = None
    k: int = 4
    recipe: str | None = None
    max_rounds: int | None = None
    as_of: str | None = None
    settings: Settings | None = Field(default=None, exclude=True, repr=False)
    resources: Resources | None = Field(default=None, exclude=True, repr=False)
    _handle: Handle | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        data = _checked(data)
        super().__init__(**data)
        self._handle = open_handle(self.settings, self.resources)
        try:
            res = self._handle.resources
            with use_resources(res):
                self.scope = service.check_scope_known(res.store,
                                                       self.scope or res.settings.scope)
        except BaseException:
            self._handle.close()
            raise

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        k = service.check_k(kwargs.pop("k", self.k))
        if kwargs:
            raise RequestError(f"unknown argument {sorted(kwargs)[0][:40]!r}; "
                               "KragRetriever.invoke takes k.")
        with use_resources(self._open().resources):
            out = service.ranked_passages(self.scope, query, k, recipe=self.recipe,
                                          max_rounds=self.max_rounds, as_of=self.as_of)
        return [Document(page_content=p["text"], id=p["id"],
                         metadata={key: p.get(key) for key in METADATA})
                for p in out["passages"]]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # no async storage engine: the sync retrieval in an executor thread (see the class)
        return await run_in_executor(None, self._get_relevant_documents, query,
                                     run_manager=run_manager.get_sync(), **kwargs)

    def _open(self) -> Handle:
        if self._handle is None or self._handle.closed:
            raise RequestError("this KragRetriever is closed; create a new one.")
        return self._handle

    def close(self) -> None:
        """Close the database this retriever opened (and release the embedded PostgreSQL
        handle when it started it); borrowed ``resources`` stay open."""
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> KragRetriever:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _checked(data: dict[str, Any]) -> dict[str, Any]:
    """The constructor's arguments, checked (one-line ``ValueError``s) and normalised."""
    out = dict(data)
    if "k" in out:
        service.check_k(out["k"])
    if out.get("scope") is not None:
        service.check_scope_name(out["scope"])
    service.check_recipe(out.get("recipe"))
    if out.get("max_rounds") is not None:
        check_rounds(out["max_rounds"])
    out["as_of"] = service.check_as_of(out.get("as_of"))
    return out
