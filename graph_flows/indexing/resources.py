"""Resources of one indexing run: store, embedder and the extraction model.

Nodes never build clients. They call :func:`get_resources` with the run context; it takes
settings, store and embedder from the request's :mod:`graph_flows.shared.resources` and adds
the extraction model: the context's ``extraction_model``, else KRAG_EXTRACTION_MODEL /
KRAG_CHAT_MODEL, built at temperature 0 without streaming, or ``None`` with a notice (no-LLM
mode) when the model is ``none`` or unreachable. The run context stays plain data.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.shared import resources as runtime
from graph_flows.shared.settings import Settings

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

    from storage import KnowledgeStore

RECURSION_LIMIT = 1_000_000  # six steps per batch; a large corpus has thousands of batches
_lock = threading.Lock()
_models: dict[tuple[str, str, float], tuple[Any, str | None]] = {}


@dataclass
class IndexingResources:
    """What the nodes of one run use."""

    settings: Settings
    store: KnowledgeStore
    embeddings: Embeddings
    chat_model: BaseChatModel | None
    model_spec: str
    notice: str | None

    @property
    def llm_mode(self) -> bool:
        return self.chat_model is not None


def get_resources(ctx: IndexingContext | None = None) -> IndexingResources:
    """Store, embedder and extraction model for a run (cached per process)."""
    ctx = ctx or IndexingContext()
    shared = runtime.get_resources()
    settings = shared.settings
    spec = ctx.extraction_model or settings.effective_extraction_model
    override = shared.chat_override
    if override is None:
        chat, notice = _chat_for(settings, spec)
    elif override == runtime.NO_LLM:
        chat, notice = None, "Running in no-LLM mode (rule-based extractor)."
    else:
        chat, notice = override, None
    return IndexingResources(settings, shared.store, shared.embeddings, chat,
                             spec if chat is not None else "rules", notice)


def _chat_for(settings: Settings, spec: str) -> tuple[BaseChatModel | None, str | None]:
    """The extraction model (temperature 0, not streaming), or None + notice (no-LLM).

    The probe runs first on its own so ``resolve_chat_model`` does not also log the notice:
    it is reported once, in the run's output (and printed by `krag ingest`).
    """
    from graph_flows.shared.providers import cached_probe_chat, make_chat_model, resolve_chat_model

    where = (settings.openai_base_url or "") if spec.startswith("openai:") \
        else settings.ollama_host
    key = (spec, where, settings.llm_timeout_s)  # a model keeps the timeout it was built with
    with _lock:
        if key not in _models:
            cached_probe_chat(spec, settings)
            resolution = resolve_chat_model(settings, spec)
            model = make_chat_model(spec, settings, temperature=0.0, streaming=False) \
                if resolution.llm_mode else None
            notice = None if model is not None else (
                f"{resolution.notice} Extracting with the rule-based extractor.")
            _models[key] = (model, notice)
        return _models[key]


def clear_model_cache() -> None:
    """Forget cached extraction models (tests, or to re-probe after starting a server)."""
    with _lock:
        _models.clear()
