"""Model spec strings (``ollama:<m>``, ``openai:<m>``, ``local:minilm``, ``none``) and the
OpenAI endpoint settings, shared by the model factory and the reachability probes.

The OpenAI API key is never put into a message, a log record or an error.
"""

from __future__ import annotations

from graph_flows.shared.settings import Settings

OPENAI_DEFAULT_BASE = "https://api.openai.com/v1"
SPEC_HELP = "expected 'ollama:<model>', 'openai:<model>' or 'none'"


class ProviderError(ValueError):
    """A model spec or provider configuration is unusable; ``str()`` is one line."""


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


def openai_base(settings: Settings) -> str:
    """The OpenAI(-compatible) base URL without a trailing slash."""
    return (settings.openai_base_url or OPENAI_DEFAULT_BASE).rstrip("/")


def openai_key(settings: Settings, spec: str) -> str:
    """The API key for ``spec`` ('not-needed' for a keyless compatible server)."""
    if settings.openai_api_key and settings.openai_api_key.get_secret_value():
        return settings.openai_api_key.get_secret_value()
    if settings.openai_base_url:
        return "not-needed"
    raise ProviderError(f"{spec} needs KRAG_OPENAI_API_KEY (or KRAG_OPENAI_BASE_URL)")


def describe_error(exc: BaseException) -> str:
    """A client failure in a few words (no secrets): timed out, connection refused, HTTP n."""
    import httpx

    text = str(exc)
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused" if "refused" in text.lower() else "cannot connect"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__
