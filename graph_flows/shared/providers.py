"""The one factory turning model strings (``ollama:<m>``, ``openai:<m>``, ``local:minilm``,
``none``) into LangChain objects, and the no-LLM fallback. Spec parsing lives in
:mod:`graph_flows.shared.model_specs`, the reachability probes in
:mod:`graph_flows.shared.probes`; both are re-exported here.

Every chat model of the code base comes from :func:`make_chat_model` (through
:func:`resolve_chat_model`, which probes first; the request's
:class:`~graph_flows.shared.resources.Resources` caches what it resolved). LangChain's
``init_chat_model`` lives in the ``langchain`` package, which krag does not depend on; the
two vendor classes are built directly. Probe results are cached for a short while
(:data:`PROBE_TTL_OK_S`, :data:`PROBE_TTL_FAILED_S`), so a model server started after krag
is found without a restart.

Vendor packages are imported lazily inside the functions. The OpenAI API key is never put
into a message, a log record or a probe detail.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from langchain_core.embeddings import Embeddings

from graph_flows.shared.embeddings import shared_minilm
from graph_flows.shared.model_specs import (  # noqa: F401 - part of this module's API
    OPENAI_DEFAULT_BASE,
    SPEC_HELP,
    ProviderError,
    describe_error,
    openai_base,
    openai_key,
    parse_spec,
)
from graph_flows.shared.probes import (  # noqa: F401 - part of this module's API
    PROBE_TTL_FAILED_S,
    PROBE_TTL_OK_S,
    ProbeResult,
    cached_probe_chat,
    clear_probe_cache,
    probe_chat,
    probe_embeddings,
)
from graph_flows.shared.settings import Settings
from storage.engine import mask_password

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)

KNOWN_EMBEDDING_DIMS: dict[str, int] = {
    "local:minilm": 384,
    "ollama:nomic-embed-text": 768,
    "ollama:mxbai-embed-large": 1024,
    "ollama:all-minilm": 384,
    "openai:text-embedding-3-small": 1536,
    "openai:text-embedding-3-large": 3072,
    "openai:text-embedding-ada-002": 1536,
}


@dataclass(frozen=True)
class ChatResolution:
    """The chat model to use, or ``None`` with a notice when running in no-LLM mode."""

    model: BaseChatModel | None
    spec: str
    llm_mode: bool
    notice: str | None


# -- factories ---------------------------------------------------------------------------
def make_chat_model(
    spec: str, settings: Settings, *, temperature: float | None = None, streaming: bool = True,
    timeout_s: float | None = None,
) -> BaseChatModel | None:
    """Build the chat model for ``spec``; ``none`` gives ``None``.

    ``streaming`` maps to ``ChatOpenAI(streaming=...)``; langchain-ollama always streams
    on the wire and aggregates for ``invoke``. ``timeout_s`` (what is left of a request's
    budget) bounds the client's connect and every read below ``llm_timeout_s`` and turns off
    retries, so the HTTP call ends with its request instead of running on.
    """
    provider, model = parse_spec(spec)
    if provider == "none":
        return None
    timeout = settings.llm_timeout_s if timeout_s is None else \
        max(min(timeout_s, settings.llm_timeout_s), 0.01)
    if provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=model, base_url=settings.ollama_host, temperature=temperature,
            client_kwargs={"timeout": timeout},
        )
    import httpx
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(  # an httpx.Timeout is unhashable: the client is this model's own
        model=model, api_key=openai_key(settings, spec), base_url=openai_base(settings),
        timeout=timeout if timeout_s is None else httpx.Timeout(timeout),
        max_retries=1 if timeout_s is None else 0, stream_usage=True,
        temperature=temperature, streaming=streaming,
    )


class ModelEmbeddings(Embeddings):
    """Delegates to a vendor embedder; adds ``model_name`` (the spec) and a lazy ``dim``."""

    def __init__(self, inner: Embeddings, settings: Settings) -> None:
        self.inner = inner
        self.model_name = settings.embedding_model
        self._settings = settings
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Vector dimension (configured, known, or probed once)."""
        if self._dim is None:
            self._dim = embedding_dimension(self._settings, self.inner)
        return self._dim

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents through the vendor client."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed one query through the vendor client."""
        return self.inner.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents`."""
        return await self.inner.aembed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query`."""
        return await self.inner.aembed_query(text)


def make_embeddings(settings: Settings) -> Embeddings:
    """Embedder for ``settings.embedding_model``; exposes ``.model_name`` and ``.dim``."""
    provider, model = parse_spec(settings.embedding_model, allow_local=True)
    if provider == "local":
        return shared_minilm()
    if provider == "ollama":
        from langchain_ollama import OllamaEmbeddings

        inner: Embeddings = OllamaEmbeddings(
            model=model, base_url=settings.ollama_host,
            client_kwargs={"timeout": settings.embedding_timeout_s},
        )
    else:
        from langchain_openai import OpenAIEmbeddings

        inner = OpenAIEmbeddings(
            model=model, api_key=openai_key(settings, settings.embedding_model),
            base_url=openai_base(settings), check_embedding_ctx_length=False,
            timeout=settings.embedding_timeout_s, max_retries=1,
        )
    return ModelEmbeddings(inner, settings)


def _known_dim(spec: str) -> int | None:
    return KNOWN_EMBEDDING_DIMS.get(spec.removesuffix(":latest"))


def embedding_dimension(settings: Settings, embeddings: Embeddings | None = None) -> int:
    """``settings.embedding_dim``, else the known-model table, else embed a probe string."""
    if settings.embedding_dim:
        return settings.embedding_dim
    known = _known_dim(settings.embedding_model)
    if known:
        return known
    emb = embeddings or make_embeddings(settings)
    emb = getattr(emb, "inner", emb)
    try:
        return len(emb.embed_query("dimension probe"))
    except Exception as exc:  # noqa: BLE001 - any client failure becomes one line
        log.warning("embedding dimension probe of %s failed", settings.embedding_model,
                    exc_info=True)
        raise ProviderError(
            f"cannot determine the dimension of {settings.embedding_model} "
            f"({describe_error(exc)}); set KRAG_EMBEDDING_DIM"
        ) from None


# -- resolution with a notice once per probe ---------------------------------------------
def _notice(spec: str, settings: Settings, probe: ProbeResult) -> str:
    provider, _ = parse_spec(spec)
    if probe.kind == "disabled":
        return "Running in no-LLM mode (KRAG_CHAT_MODEL=none)."
    if provider == "ollama":
        where = mask_password(settings.ollama_host.rstrip("/"))
        hint = "Start Ollama or set KRAG_CHAT_MODEL."
    else:
        where = mask_password(openai_base(settings))
        hint = "Check KRAG_OPENAI_BASE_URL / KRAG_OPENAI_API_KEY or set KRAG_CHAT_MODEL."
    if probe.kind == "unreachable":
        what = f"is {probe.detail}"
    elif probe.kind == "missing":
        what, hint = f"is not available at {where} ({probe.detail})", "Or set KRAG_CHAT_MODEL."
    else:
        what = f"is unusable ({probe.detail})"
    return f"Chat model {spec} {what}; running in no-LLM mode. {hint}"


def resolve_chat_model(
    settings: Settings, spec: str | None = None, *, temperature: float | None = None,
    streaming: bool = True, timeout_s: float | None = None, quiet: bool = False,
) -> ChatResolution:
    """The chat model for ``spec`` (default ``settings.chat_model``), or no-LLM mode.

    The model is built by :func:`make_chat_model` (``temperature``, ``streaming``,
    ``timeout_s``). The no-LLM notice is logged when a probe is fresh, unless ``quiet`` (the
    caller reports it itself). Raises ProviderError for a malformed spec; an unreachable
    model is not an error.
    """
    spec = (spec or settings.chat_model).strip()
    probe, fresh = cached_probe_chat(spec, settings)
    if probe.ok:
        model = make_chat_model(spec, settings, temperature=temperature, streaming=streaming,
                                timeout_s=timeout_s)
        return ChatResolution(model, spec, True, None)
    notice = _notice(spec, settings, probe)
    if fresh and not quiet:
        log.log(logging.INFO if probe.kind == "disabled" else logging.WARNING, "%s", notice)
    return ChatResolution(None, spec, False, notice)
