"""Session state and cached resources shared by the pages (initialised once per session)."""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from graph_flows.shared.reads import ReadSession
from graph_flows.shared.settings import Settings, load_settings
from ui.web import backend

log = logging.getLogger(__name__)


@st.cache_resource(show_spinner="Opening the knowledge base…")
def _resources(key: str) -> Any:
    from ui.web.serve import preload_streamlit

    preload_streamlit()  # done already when `krag ui` started the server
    return backend.open_resources(key)


def init_session() -> None:
    """History and scope, set once per browser session."""
    st.session_state.setdefault("history", [])


def read_session() -> ReadSession:
    """This browser session's read session: after its upload its reads wait for a read
    replica to replay it (or go to the primary), other sessions' do not."""
    return st.session_state.setdefault("read_session", ReadSession())


def load() -> tuple[Settings | None, Any, str | None]:
    """(settings, resources, error): the error is one line when the backend is unusable."""
    try:
        settings = load_settings()
    except Exception as exc:  # noqa: BLE001 - a bad setting is shown, not raised
        return None, None, backend.friendly_error(exc)
    try:
        return settings, _resources(backend.settings_key(settings)), None
    except Exception as exc:  # noqa: BLE001 - e.g. database down; retried on the next run
        return settings, None, backend.friendly_error(exc)


def scope_options(resources: Any, settings: Settings) -> dict[str, list[str]]:
    """Known scopes mapped to their chains (scope, parent, ...); the default scope on failure."""
    try:
        return backend.scope_chains(resources)
    except Exception:  # noqa: BLE001 - the picker still offers the default scope
        log.warning("scope list unavailable", exc_info=True)
        return {settings.scope: [settings.scope]}
