"""One place for configuration: environment (prefix ``KRAG_``), ``.env``, defaults.

Nothing else in the code base reads the environment. Callers build a
:class:`Settings` (``Settings()`` reads env + ``.env``; keyword arguments win) and pass
it, or values from it, down. Invalid values raise :class:`SettingsError` whose message is
one line naming the setting and what it accepts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from storage.engine import mask_password

CHAT_MODEL_RE = re.compile(r"^(none|ollama:\S+|openai:\S+)$")
EMBEDDING_MODEL_RE = re.compile(r"^(local:minilm|ollama:\S+|openai:\S+)$")
CHAT_MODEL_HELP = "'ollama:<model>', 'openai:<model>' or 'none'"
EMBEDDING_MODEL_HELP = "'local:minilm', 'ollama:<model>' or 'openai:<model>'"


class SettingsError(ValueError):
    """A setting has an invalid value; ``str()`` is one line meant for the user."""


class Settings(BaseSettings):
    """Resolved configuration of krag. Precedence: keyword argument > env > .env > default."""

    model_config = SettingsConfigDict(
        env_prefix="KRAG_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    database_url: str | None = Field(
        default=None,
        description="PostgreSQL URL (>= 14 with pgvector and pg_trgm). Unset: embedded Postgres.",
    )
    database_owner_url: str | None = Field(
        default=None,
        description="URL of the tables' owner (runs migrations, grants the role of "
        "database_url its privileges). Unset: database_url itself.",
    )
    database_read_url: str | None = Field(
        default=None,
        description="Streaming read replicas of database_url (one URL or several separated "
        "by commas): they serve read-only requests, writes go to database_url. Unset: the "
        "primary serves everything.",
    )
    replica_max_lag_s: float = Field(
        default=10.0, gt=0, le=3600,
        description="A read replica lagging more than this many seconds is skipped (the "
        "primary serves).",
    )
    data_dir: Path = Field(
        default=Path(".krag"),
        description="Local state (embedded cluster, UI uploads). Default: .krag/ under the "
        "current working directory.",
    )
    scope: str = Field(default="default", description="Default knowledge scope (tenant/project).")
    chat_model: str = Field(
        default="ollama:qwen2.5:7b-instruct",
        description=f"Answer model: {CHAT_MODEL_HELP}. Unreachable -> no-LLM mode.",
    )
    extraction_model: str | None = Field(
        default=None, description="Model for analysis/extraction; defaults to chat_model."
    )
    embedding_model: str = Field(
        default="local:minilm",
        description=f"Embedding model: {EMBEDDING_MODEL_HELP}. local:minilm is offline, 384-d.",
    )
    embedding_dim: int | None = Field(
        default=None, ge=8, le=16000,
        description="Embedding dimension; only needed for models krag does not know.",
    )
    ollama_host: str = Field(default="http://localhost:11434", description="Ollama base URL.")
    openai_api_key: SecretStr | None = Field(default=None, description="OpenAI(-compatible) key.")
    openai_base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL (vLLM, llama.cpp, LM Studio)."
    )
    llm_timeout_s: float = Field(default=120.0, gt=0, le=3600, description="Per LLM call.")
    embedding_timeout_s: float = Field(default=10.0, gt=0, le=600, description="Per embed call.")
    search_timeout_s: float = Field(default=5.0, gt=0, le=120, description="Per search stmt.")
    request_timeout_s: float = Field(default=15.0, gt=0, le=600, description="Whole query.")
    max_rounds: int = Field(default=2, ge=1, le=4, description=(
        "Retrieval rounds of a query (1-4; 1 = no follow-up): the default of the query "
        "graph's run-context max_rounds."))
    probe_timeout_s: float = Field(default=2.0, gt=0, le=60, description="Reachability probes.")
    pool_size: int = Field(default=10, ge=1, le=200, description="DB connection pool size.")
    max_upload_mb: int = Field(default=50, ge=1, le=2048, description="Largest file accepted.")

    @field_validator("chat_model", "extraction_model")
    @classmethod
    def _check_chat(cls, v: str | None) -> str | None:
        if v is not None and not CHAT_MODEL_RE.match(v.strip()):
            raise ValueError(f"must be {CHAT_MODEL_HELP}")
        return v.strip() if v else v

    @field_validator("embedding_model")
    @classmethod
    def _check_embedding(cls, v: str) -> str:
        if not EMBEDDING_MODEL_RE.match(v.strip()):
            raise ValueError(f"must be {EMBEDDING_MODEL_HELP}")
        return v.strip()

    @field_validator("database_url", "database_owner_url")
    @classmethod
    def _check_url(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        scheme = urlsplit(v).scheme
        if scheme not in {"postgresql", "postgres", "postgresql+psycopg"}:
            raise ValueError("must be a postgresql:// URL (or unset for the embedded Postgres)")
        return v.strip()

    @field_validator("database_read_url")
    @classmethod
    def _check_read_urls(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        urls = [u.strip() for u in v.split(",") if u.strip()]
        for url in urls:
            if urlsplit(url).scheme not in {"postgresql", "postgres", "postgresql+psycopg"}:
                raise ValueError("must be postgresql:// URLs separated by commas (or unset)")
        return ",".join(urls)

    @property
    def effective_extraction_model(self) -> str:
        return self.extraction_model or self.chat_model

    def masked(self) -> dict[str, Any]:
        """Settings as a dict fit for display: secrets and URL passwords masked."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = "****" if value.get_secret_value() else ""
            elif name.endswith("_url") and isinstance(value, str):
                value = ",".join(mask_password(u) for u in value.split(","))
            out[name] = value
        return out


def load_settings(**overrides: Any) -> Settings:
    """Build :class:`Settings`, turning validation errors into one-line :class:`SettingsError`."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "settings"
        msg = str(err["msg"]).removeprefix("Value error, ")
        got = err.get("input")
        shown = "****" if "key" in field else repr(got)
        raise SettingsError(f"KRAG_{field.upper()}: {msg} (got {shown})") from None
