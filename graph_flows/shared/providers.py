"""The one factory turning model strings (``ollama:<m>``, ``openai:<m>``, ``local:minilm``,
``none``) into LangChain objects, plus reachability probes and the no-LLM fallback.

Vendor packages are imported lazily inside the functions. The OpenAI API key is never put
into a message, a log record or a probe detail.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from graph_flows.shared.settings import Settings, mask_url

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger("krag")

OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
KNOWN_EMBEDDING_DIMS: dict[str, int] = {
    "local:minilm": 384,
    "ollama:nomic-embed-text": 768,
    "ollama:mxbai-embed-large": 1024,
    "ollama:all-minilm": 384,
    "openai:text-embedding-3-small": 1536,
    "openai:text-embedding-3-large": 3072,
    "openai:text-embedding-ada-002": 1536,
}
SPEC_HELP = "expected 'ollama:<model>', 'openai:<model>' or 'none'"


class ProviderError(ValueError):
    """A model spec or provider configuration is unusable; ``str()`` is one line."""


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of a reachability probe. ``kind``: ok, disabled, unreachable, missing, error."""

    ok: bool
    detail: str
    kind: str = "ok"


@dataclass(frozen=True)
class ChatResolution:
    """The chat model to use, or ``None`` with a notice when running in no-LLM mode."""

    model: BaseChatModel | None
    spec: str
    llm_mode: bool
    notice: str | None


# -- specs -------------------------------------------------------------------------------
def parse_spec(spec: str, *, allow_local: bool = False) -> tuple[str, str]:
    """Split ``provider:model``; ``none`` gives ``("none", "")``. Raises ProviderError."""
    spec = (spec or "").strip()
    if spec == "none" and not allow_local:
        return "none", ""
    provider, sep, model = spec.partition(":")
    ok = {"ollama", "openai"} | ({"local"} if allow_local else set())
    if not sep or provider not in ok or not model or (provider == "local" and model != "minilm"):
        help_ = "expected 'local:minilm', 'ollama:<model>' or 'openai:<model>'" if allow_local \
            else SPEC_HELP
        raise ProviderError(f"unknown model spec {spec!r}: {help_}")
    return provider, model


def _openai_base(settings: Settings) -> str:
    return (settings.openai_base_url or OPENAI_DEFAULT_BASE).rstrip("/")


def _openai_key(settings: Settings, spec: str) -> str:
    if settings.openai_api_key and settings.openai_api_key.get_secret_value():
        return settings.openai_api_key.get_secret_value()
    if settings.openai_base_url:
        return "not-needed"
    raise ProviderError(f"{spec} needs KRAG_OPENAI_API_KEY (or KRAG_OPENAI_BASE_URL)")


# -- factories ---------------------------------------------------------------------------
def make_chat_model(
    spec: str, settings: Settings, *, temperature: float | None = None, streaming: bool = True
) -> BaseChatModel | None:
    """Build the chat model for ``spec``; ``none`` gives ``None``.

    ``streaming`` maps to ``ChatOpenAI(streaming=...)``; langchain-ollama always streams
    on the wire and aggregates for ``invoke``.
    """
    provider, model = parse_spec(spec)
    if provider == "none":
        return None
    if provider == "ollama":
        from langchain_ollama import ChatOllama

        return ChatOllama(
            model=model, base_url=settings.ollama_host, temperature=temperature,
            client_kwargs={"timeout": settings.llm_timeout_s},
        )
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model, api_key=_openai_key(settings, spec), base_url=_openai_base(settings),
        timeout=settings.llm_timeout_s, max_retries=1, stream_usage=True,
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


_minilm_lock = threading.Lock()
_minilm: Any = None


def _shared_minilm() -> Embeddings:
    """One MiniLMEmbeddings per process (the ONNX session is thread-safe)."""
    global _minilm
    with _minilm_lock:
        if _minilm is None:
            from graph_flows.shared.embeddings import MiniLMEmbeddings

            _minilm = MiniLMEmbeddings()
        return _minilm


def make_embeddings(settings: Settings) -> Embeddings:
    """Embedder for ``settings.embedding_model``; exposes ``.model_name`` and ``.dim``."""
    provider, model = parse_spec(settings.embedding_model, allow_local=True)
    if provider == "local":
        return _shared_minilm()
    if provider == "ollama":
        from langchain_ollama import OllamaEmbeddings

        inner: Embeddings = OllamaEmbeddings(
            model=model, base_url=settings.ollama_host,
            client_kwargs={"timeout": settings.embedding_timeout_s},
        )
    else:
        from langchain_openai import OpenAIEmbeddings

        inner = OpenAIEmbeddings(
            model=model, api_key=_openai_key(settings, settings.embedding_model),
            base_url=_openai_base(settings), check_embedding_ctx_length=False,
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
        raise ProviderError(
            f"cannot determine the dimension of {settings.embedding_model} "
            f"({_describe_error(exc)}); set KRAG_EMBEDDING_DIM"
        ) from None


# -- probes ------------------------------------------------------------------------------
def _describe_error(exc: BaseException) -> str:
    import httpx

    text = str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in text.lower() else "cannot connect"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


def _get_json(url: str, settings: Settings, headers: dict[str, str] | None = None) -> Any:
    import httpx

    resp = httpx.get(url, headers=headers or {}, timeout=settings.probe_timeout_s)
    resp.raise_for_status()
    return resp.json()


def _ollama_model_listed(model: str, tags: Any) -> bool:
    want = model if ":" in model else f"{model}:latest"
    names = {m.get("name") or m.get("model") for m in (tags or {}).get("models", [])}
    return want in names or model in names


def _probe_ollama(model: str, settings: Settings) -> ProbeResult:
    host = settings.ollama_host.rstrip("/")
    shown = mask_url(host)
    try:
        tags = _get_json(f"{host}/api/tags", settings)
    except Exception as exc:  # noqa: BLE001
        return ProbeResult(False, f"unreachable at {shown} ({_describe_error(exc)})",
                           "unreachable")
    if not _ollama_model_listed(model, tags):
        return ProbeResult(False, f"model {model} not pulled; run: ollama pull {model}",
                           "missing")
    return ProbeResult(True, f"ollama:{model} available at {shown}")


def _probe_openai(model: str, settings: Settings, spec: str) -> ProbeResult:
    base = _openai_base(settings)
    shown = mask_url(base)
    try:
        key = _openai_key(settings, spec)
        data = _get_json(f"{base}/models", settings, {"Authorization": f"Bearer {key}"})
    except ProviderError as exc:
        return ProbeResult(False, str(exc), "error")
    except Exception as exc:  # noqa: BLE001
        why = _describe_error(exc)
        if why in {"HTTP 401", "HTTP 403"}:
            return ProbeResult(False, f"{shown} rejected the API key ({why})", "error")
        if why.startswith("HTTP"):
            return ProbeResult(False, f"{shown} answered {why}", "error")
        return ProbeResult(False, f"unreachable at {shown} ({why})", "unreachable")
    ids = {m.get("id") for m in (data or {}).get("data", []) if isinstance(m, dict)}
    if model in ids:
        return ProbeResult(True, f"openai:{model} available at {shown}")
    if settings.openai_base_url:  # compatible servers often serve any name
        return ProbeResult(True, f"{shown} reachable (model {model} not listed; using it anyway)")
    return ProbeResult(False, f"model {model} not offered by {shown}", "missing")


def probe_chat(spec: str, settings: Settings) -> ProbeResult:
    """Check that the chat model behind ``spec`` is reachable (within probe_timeout_s)."""
    provider, model = parse_spec(spec)
    if provider == "none":
        return ProbeResult(False, "no-LLM mode (KRAG_CHAT_MODEL=none)", "disabled")
    if provider == "ollama":
        return _probe_ollama(model, settings)
    return _probe_openai(model, settings, spec)


def probe_embeddings(settings: Settings) -> ProbeResult:
    """Check the embedding model; ``local:minilm`` is loaded and run once."""
    provider, model = parse_spec(settings.embedding_model, allow_local=True)
    if provider == "ollama":
        return _probe_ollama(model, settings)
    if provider == "openai":
        return _probe_openai(model, settings, settings.embedding_model)
    try:
        vec = _shared_minilm().embed_query("probe")
    except Exception as exc:  # noqa: BLE001
        return ProbeResult(False, f"local:minilm failed to load ({exc})", "error")
    return ProbeResult(True, f"local:minilm loaded ({len(vec)}-d)")


# -- resolution with a once-per-process notice -------------------------------------------
_probe_cache: dict[tuple[str, str, str], ProbeResult] = {}
_probe_lock = threading.Lock()


def clear_probe_cache() -> None:
    """Forget cached probe results (tests; or to re-check after starting a server)."""
    with _probe_lock:
        _probe_cache.clear()


def _cache_key(spec: str, settings: Settings) -> tuple[str, str, str]:
    provider, _ = parse_spec(spec)
    where = settings.ollama_host if provider == "ollama" else _openai_base(settings)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    fingerprint = hashlib.sha256(key.encode()).hexdigest()[:12] if provider == "openai" else ""
    return spec, where, fingerprint


def _notice(spec: str, settings: Settings, probe: ProbeResult) -> str:
    provider, _ = parse_spec(spec)
    if probe.kind == "disabled":
        return "Running in no-LLM mode (KRAG_CHAT_MODEL=none)."
    if provider == "ollama":
        where = mask_url(settings.ollama_host.rstrip("/"))
        hint = "Start Ollama or set KRAG_CHAT_MODEL."
    else:
        where = mask_url(_openai_base(settings))
        hint = "Check KRAG_OPENAI_BASE_URL / KRAG_OPENAI_API_KEY or set KRAG_CHAT_MODEL."
    if probe.kind == "unreachable":
        what = f"is {probe.detail}"
    elif probe.kind == "missing":
        what, hint = f"is not available at {where} ({probe.detail})", "Or set KRAG_CHAT_MODEL."
    else:
        what = f"is unusable ({probe.detail})"
    return f"Chat model {spec} {what}; running in no-LLM mode. {hint}"


def cached_probe_chat(spec: str, settings: Settings) -> tuple[ProbeResult, bool]:
    """Probe once per (spec, host/base_url, key); returns (result, was_fresh)."""
    key = _cache_key(spec, settings)
    with _probe_lock:
        if key in _probe_cache:
            return _probe_cache[key], False
        result = probe_chat(spec, settings)
        _probe_cache[key] = result
        return result, True


def resolve_chat_model(
    settings: Settings, spec: str | None = None, *, temperature: float | None = None
) -> ChatResolution:
    """The chat model for ``spec`` (default ``settings.chat_model``), or no-LLM mode.

    Raises ProviderError for a malformed spec; an unreachable model is not an error.
    """
    spec = (spec or settings.chat_model).strip()
    probe, fresh = cached_probe_chat(spec, settings)
    if probe.ok:
        model = make_chat_model(spec, settings, temperature=temperature)
        return ChatResolution(model, spec, True, None)
    notice = _notice(spec, settings, probe)
    if fresh:
        log.log(logging.INFO if probe.kind == "disabled" else logging.WARNING, "%s", notice)
    return ChatResolution(None, spec, False, notice)
