"""Resources of one indexing run: store, embedder and the extraction model.

Nodes never build clients. They call :func:`get_resources` with the run context; it takes
settings, store and embedder from the request's :mod:`graph_flows.shared.resources` and adds
the extraction model: the context's ``extraction_model``, else KRAG_EXTRACTION_MODEL /
KRAG_CHAT_MODEL, built by the one model factory (:mod:`graph_flows.shared.providers`) at
temperature 0 without streaming, or ``None`` with a notice (no-LLM mode) when the model is
``none`` or unreachable. The model is cached on the request's resources, not here; the run
context stays plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graph_flows.indexing.context import IndexingContext
from graph_flows.shared import providers
from graph_flows.shared import resources as runtime
from graph_flows.shared.settings import Settings

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.language_models import BaseChatModel

    from storage import KnowledgeStore

RECURSION_LIMIT = 1_000_000  # six steps per batch; a large corpus has thousands of batches
RULES_NOTICE = "Running in no-LLM mode (rule-based extractor)."


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
    """Store, embedder and extraction model for a run.

    The no-LLM notice is not logged here: it is reported once, in the run's output (and
    printed by `krag ingest`).
    """
    ctx = ctx or IndexingContext()
    shared = runtime.get_resources()
    spec = ctx.extraction_model or shared.settings.effective_extraction_model
    resolution = shared.chat_resolution(spec, temperature=0.0, streaming=False, quiet=True)
    chat = resolution.model
    if shared.chat_override == runtime.NO_LLM:
        notice: str | None = RULES_NOTICE
    elif chat is None:
        notice = f"{resolution.notice} Extracting with the rule-based extractor."
    else:
        notice = None
    return IndexingResources(shared.settings, shared.store, shared.embeddings, chat,
                             spec if chat is not None else "rules", notice)


def clear_model_cache() -> None:
    """Forget cached reachability probes, so the next run probes its model again (tests, or
    after starting a model server; probes also expire on their own)."""
    providers.clear_probe_cache()
