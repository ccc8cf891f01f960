"""Chat: ask the knowledge graph, see streamed answers, diagrams and sources; upload files.

The work is done by :mod:`graph_flows.services`, adapted in :mod:`ui.web.backend`; rendering
helpers in :mod:`ui.web.components` and :mod:`ui.web.panels`.
"""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from graph_flows.services.uploads import upload_report
from ui.web import backend, components, panels, scroll, state

log = logging.getLogger(__name__)


def sidebar(settings: Any, resources: Any, error: str | None) -> str:
    """Scope (with its chain), "as of" date, statistics, upload; returns the chosen scope.

    The statistics are drawn after the upload ran (into a slot above it), so they count
    what was just ingested."""
    st.sidebar.title("krag")
    if resources is None:
        st.sidebar.error(f"Knowledge base unavailable: {error}")
        return st.session_state.get("scope", settings.scope if settings else "default")
    chains = state.scope_options(resources, settings)
    scope = components.scope_picker(chains, settings.scope)
    components.scope_caption(chains.get(scope, [scope]))
    components.as_of_picker()
    statistics = st.sidebar.container()
    upload(settings, resources, scope)
    with statistics:
        show_statistics(resources, scope)
    return scope


def show_statistics(resources: Any, scope: str) -> None:
    """Documents, chunks, entities and relations of ``scope`` as metrics."""
    try:
        counts = backend.scope_counts(resources, scope)
    except Exception as exc:  # noqa: BLE001 - statistics are informative only
        log.warning("statistics unavailable", exc_info=True)
        st.caption(f"statistics unavailable ({md(backend.friendly_error(exc))})")
        return
    cols = st.columns(2)
    for i, (name, value) in enumerate(counts.items()):
        cols[i % 2].metric(name.capitalize(), value)


def md(text: str) -> str:
    return backend.md_escape(text)


def upload(settings: Any, resources: Any, scope: str) -> None:
    """File uploader and "Ingest" button; reports "N ingested, M unchanged, K refused: why".

    Once files are ingested (or refused) the uploader starts over empty: its key changes and
    the page runs again, showing the report under it (pressing "Ingest" twice cannot ingest
    twice). A failed run keeps the files for another try."""
    round_ = st.session_state.get("upload_round", 0)
    files = st.sidebar.file_uploader(
        "Add documents", accept_multiple_files=True, key=f"uploads-{round_}",
        help=f"Markdown, text, PDF, HTML, Word, PowerPoint, Excel, CSV, EPUB, e-mail (.eml), "
             f"OpenDocument text, RTF or JSON, up to {settings.max_upload_mb} MB each.")
    if report := st.session_state.pop("upload_report", None):
        panels.show_upload_report(report)
        scroll.show_upload_report(f"upload-{round_}")  # in view on a phone's sidebar
    if not files or not st.sidebar.button("Ingest", type="primary"):
        return
    accepted, refused = [], []
    for f in files:
        reason = backend.check_upload(f.name, f.size, settings)
        if reason:
            refused.append((backend.safe_filename(f.name), reason))
        else:
            accepted.append((f.name, f.getvalue()))
    out = None
    if accepted:
        bar = st.sidebar.progress(0.0, text="Ingesting…")
        try:
            out = backend.ingest_files(accepted, scope, resources,
                                       lambda frac, msg: bar.progress(frac, text=msg))
        except Exception as exc:  # noqa: BLE001 - one line for the user
            bar.empty()
            st.sidebar.error(f"Ingest failed: {md(backend.friendly_error(exc))}")
            return
        bar.empty()
    st.session_state["upload_report"] = upload_report(refused, out)
    st.session_state["upload_round"] = round_ + 1
    st.rerun()


def model_banner(settings: Any) -> None:
    if settings is None:
        return
    ok, line = components.model_status(settings)
    if ok:
        st.sidebar.caption(md(line))
    else:
        panels.no_llm_banner(settings, line)


def replay(history: list[dict[str, Any]]) -> None:
    last_answer = max((i for i, m in enumerate(history) if m.get("result")), default=-1)
    for i, msg in enumerate(history):
        with st.chat_message(msg["role"]):
            if msg.get("error"):
                st.error(msg["content"])
            elif msg["role"] == "user":
                st.text(msg["content"])
            else:
                st.markdown(backend.neutralise_images(msg["content"]))
            if msg.get("result"):
                show = i == last_answer or st.toggle("Show diagram", key=f"diagram-{i}")
                panels.render_answer(msg["result"], diagram=show, key=str(i))


def answer(prompt: str, scope: str, resources: Any) -> None:
    history = st.session_state["history"]
    history.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.text(prompt)
        scroll.show_latest_question(f"{len(history)}-asked")
    payload = {"query": prompt, "scope": scope}
    if as_of := st.session_state.get("as_of"):
        payload["as_of"] = as_of
    run = backend.QueryRun(payload, resources)
    with st.chat_message("assistant"):
        text = st.write_stream(run.tokens())
        if run.error:
            st.error(f"Sorry, that failed: {run.error}")
            history.append({"role": "assistant", "content": f"Sorry, that failed: {run.error}",
                            "error": True})
            return
        result = {"as_of": as_of, **run.result} if as_of else run.result
        panels.render_answer(result, key=str(len(history)))  # its index in the history
        scroll.show_latest_question(f"{len(history)}-answered")
    history.append({"role": "assistant", "content": text if isinstance(text, str)
                    else result.get("answer", ""), "result": result})


def main() -> None:
    state.init_session()
    settings, resources, error = state.load()
    scope = sidebar(settings, resources, error)
    st.title("Ask the knowledge graph")
    model_banner(settings)
    replay(st.session_state["history"])
    prompt = st.chat_input("Ask a question about your documents")
    if prompt and prompt.strip():
        answer(prompt.strip(), scope, resources)


main()
