"""Reachability probes of chat and embedding models, and their short-lived cache.

A probe answers within ``probe_timeout_s``. Results are trusted for :data:`PROBE_TTL_OK_S`
(reachable) or :data:`PROBE_TTL_FAILED_S` (not), so a model server started after krag is
found without a restart. The OpenAI API key never appears in a detail or a log record.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from graph_flows.shared.embeddings import shared_minilm
from graph_flows.shared.model_specs import (
    ProviderError,
    describe_error,
    openai_base,
    openai_key,
    parse_spec,
)
from graph_flows.shared.settings import Settings
from storage.engine import mask_password

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ProbeResult:
    """Outcome of a reachability probe. ``kind``: ok, disabled, unreachable, missing, error."""

    ok: bool
    detail: str
    kind: str = "ok"


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
    shown = mask_password(host)
    try:
        tags = _get_json(f"{host}/api/tags", settings)
    except Exception as exc:  # noqa: BLE001 - the cause goes to the log, the user sees a line
        log.debug("ollama probe at %s failed", shown, exc_info=True)
        return ProbeResult(False, f"unreachable at {shown} ({describe_error(exc)})",
                           "unreachable")
    if not _ollama_model_listed(model, tags):
        return ProbeResult(False, f"model {model} not pulled; run: ollama pull {model}",
                           "missing")
    return ProbeResult(True, f"ollama:{model} available at {shown}")


def _probe_openai(model: str, settings: Settings, spec: str) -> ProbeResult:
    base = openai_base(settings)
    shown = mask_password(base)
    try:
        key = openai_key(settings, spec)
        data = _get_json(f"{base}/models", settings, {"Authorization": f"Bearer {key}"})
    except ProviderError as exc:
        return ProbeResult(False, str(exc), "error")
    except Exception as exc:  # noqa: BLE001 - the cause goes to the log, the user sees a line
        log.debug("openai probe at %s failed", shown, exc_info=True)
        why = describe_error(exc)
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
        vec = shared_minilm().embed_query("probe")
    except Exception as exc:  # noqa: BLE001 - the cause goes to the log, the user sees a line
        log.warning("local:minilm failed to load", exc_info=True)
        return ProbeResult(False, f"local:minilm failed to load ({exc})", "error")
    return ProbeResult(True, f"local:minilm loaded ({len(vec)}-d)")


PROBE_TTL_OK_S = 300.0
"""How long a successful probe is trusted."""
PROBE_TTL_FAILED_S = 30.0
"""How long "unreachable" (or missing, unusable) is trusted before probing again."""
_clock = time.monotonic  # tests replace it
_probe_cache: dict[tuple[str, str, str], tuple[ProbeResult, float]] = {}
_probe_lock = threading.Lock()


def clear_probe_cache() -> None:
    """Forget cached probe results (tests; or to re-check after starting a server)."""
    with _probe_lock:
        _probe_cache.clear()


def _cache_key(spec: str, settings: Settings) -> tuple[str, str, str]:
    provider, _ = parse_spec(spec)
    where = settings.ollama_host if provider == "ollama" else openai_base(settings)
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else ""
    fingerprint = hashlib.sha256(key.encode()).hexdigest()[:12] if provider == "openai" else ""
    return spec, where, fingerprint


def cached_probe_chat(spec: str, settings: Settings) -> tuple[ProbeResult, bool]:
    """Probe per (spec, host/base_url, key), trusting a result for PROBE_TTL_OK_S (reachable)
    or PROBE_TTL_FAILED_S (not); returns (result, was_fresh)."""
    key = _cache_key(spec, settings)
    with _probe_lock:
        hit = _probe_cache.get(key)
        if hit is not None and _clock() < hit[1]:
            return hit[0], False
        result = probe_chat(spec, settings)
        ttl = PROBE_TTL_OK_S if result.ok else PROBE_TTL_FAILED_S
        _probe_cache[key] = (result, _clock() + ttl)
        return result, True
