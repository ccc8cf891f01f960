"""`krag doctor`: resolved settings, database health, provider reachability."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from graph_flows.shared.scoped import whole_store_access
from graph_flows.shared.settings import Settings

log = logging.getLogger(__name__)


@dataclass
class DoctorReport:
    """Everything `krag doctor` found; ``ok`` is False when the database is unusable."""

    settings: dict[str, object]
    database: dict[str, object] = field(default_factory=dict)
    providers: dict[str, dict[str, object]] = field(default_factory=dict)
    mode: str = ""
    ok: bool = True


def run_doctor(settings: Settings) -> DoctorReport:
    """Check the database and every configured model; never raises for a failed check."""
    from graph_flows.shared.providers import probe_chat, probe_embeddings
    from graph_flows.shared.store import open_store
    from storage import StorageError

    report = DoctorReport(settings=settings.masked())
    where = _masked(settings.database_url) if settings.database_url else (
        f"embedded PostgreSQL in {settings.data_dir.resolve() / 'pg'}")
    report.database["location"] = where
    try:
        store = open_store(settings, probe_replicas=False)  # reported below, not logged
        try:
            with whole_store_access():  # counts over every scope
                info = store.server_info()
                counts = store.counts()
                bypass = store.rls_bypass()
            replicas = store.replica_report(quiet=True)
        finally:
            store.close()
        report.database.update(
            reachable=True, server_version=info.version, extensions=info.extensions,
            schema_revision=info.schema_revision,
            embedding=f"{info.embedding_model} ({info.embedding_dim}-d)", **counts)
        report.database["row_level_security"] = (
            "enforced: the application's role is bound by the scope policies" if bypass is None
            else f"NOT enforced: {bypass}; connect KRAG_DATABASE_URL as a role that neither "
            "owns the tables nor bypasses RLS, and give the owner as KRAG_DATABASE_OWNER_URL")
        if replicas:
            report.database["read_replicas"] = [replica_line(r) for r in replicas]
    except StorageError as exc:
        log.warning("doctor: database check failed", exc_info=True)
        report.database.update(reachable=False, error=str(exc))
        report.ok = False
    chat = probe_chat(settings.chat_model, settings)
    report.providers["chat"] = {"model": settings.chat_model, "ok": chat.ok,
                                "detail": chat.detail}
    if settings.extraction_model and settings.extraction_model != settings.chat_model:
        ext = probe_chat(settings.extraction_model, settings)
        report.providers["extraction"] = {"model": settings.extraction_model, "ok": ext.ok,
                                          "detail": ext.detail}
    emb = probe_embeddings(settings)
    report.providers["embeddings"] = {"model": settings.embedding_model, "ok": emb.ok,
                                      "detail": emb.detail}
    report.ok = report.ok and emb.ok
    report.mode = (f"LLM mode ({settings.chat_model})" if chat.ok else
                   "no-LLM mode: no chat model is reachable (start Ollama, or set "
                   "KRAG_CHAT_MODEL to an OpenAI-compatible model, to enable the LLM)")
    return report


def replica_line(state: dict[str, object]) -> str:
    """One line on a read replica: its state and lag, or why the primary serves instead."""
    if state["problem"]:
        return (f"{state['url']}: {state['status']}, skipped (the primary serves): "
                f"{state['problem']}")
    paused = ", WAL replay paused" if state["replay_paused"] else ""
    age = state["last_replayed_commit_age_s"]
    last = "" if age is None else f", last replayed commit {float(age):.1f} s ago"  # type: ignore[arg-type]
    return (f"{state['url']}: {state['status']}, lag {float(state['lag_s'] or 0):.1f} s, "  # type: ignore[arg-type]
            f"{state['behind_bytes'] or 0} bytes behind{paused}{last}")


def _masked(url: str) -> str:
    """``url`` with its password hidden (SQLAlchemy's own rendering)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url if "@" not in url else "***@" + url.rsplit("@", 1)[1]
