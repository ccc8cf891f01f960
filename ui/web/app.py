"""krag chat: ask the knowledge graph, see streamed answers, diagrams and sources.

A thin shell over the query and indexing graphs (``krag ui`` runs it). The work is done by
:mod:`graph_flows.services`, adapted in :mod:`ui.web.backend`; rendering helpers in
:mod:`ui.web.components`.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, "") and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `streamlit run ui/web/app.py` from a checkout

import streamlit as st  # noqa: E402

from ui.web import backend, components, state  # noqa: E402

log = logging.getLogger(__name__)
st.set_page_config(page_title="krag", page_icon="🕸️", layout="wide")


def sidebar(settings: Any, resources: Any, error: str | None) -> str:
    """Scope (with its chain), "as of" date, statistics, upload; returns the chosen scope."""
    st.sidebar.title("krag")
    if resources is None:
        st.sidebar.error(f"Knowledge base unavailable: {error}")
        return st.session_state.get("scope", settings.scope if settings else "default")
    chains = state.scope_options(resources, settings)
    scope = components.scope_picker(chains, settings.scope)
    components.scope_caption(chains.get(scope, [scope]))
    components.as_of_picker()
    try:
        counts = resources.store.counts(scope)
        cols = st.sidebar.columns(2)
        for i, (name, value) in enumerate(counts.items()):
            cols[i % 2].metric(name.capitalize(), value)
    except Exception as exc:  # noqa: BLE001 - statistics are informative only
        log.warning("statistics unavailable", exc_info=True)
        st.sidebar.caption(f"statistics unavailable ({backend.friendly_error(exc)})")
    upload(settings, resources, scope)
    return scope


def upload(settings: Any, resources: Any, scope: str) -> None:
    files = st.sidebar.file_uploader(
        "Add documents", accept_multiple_files=True, key="uploads",
        help=f"Markdown, text, PDF or HTML, up to {settings.max_upload_mb} MB each.")
    if not files or not st.sidebar.button("Ingest", type="primary"):
        return
    accepted = []
    for f in files:
        reason = backend.check_upload(f.name, f.size, settings)
        if reason:
            st.sidebar.error(f"Refused {reason}")
        else:
            accepted.append((f.name, f.getvalue()))
    if not accepted:
        return
    bar = st.sidebar.progress(0.0, text="Ingesting…")
    try:
        out = backend.ingest_files(accepted, scope, resources,
                                   lambda frac, msg: bar.progress(frac, text=msg))
    except Exception as exc:  # noqa: BLE001 - one line for the user
        st.sidebar.error(f"Ingest failed: {backend.friendly_error(exc)}")
        return
    bar.progress(1.0, text="Done")
    st.sidebar.success(f"Ingested {len(accepted)} file(s): {out.get('entities', 0)} entities, "
                       f"{out.get('relations', 0)} relations ({out.get('mode', '?')}).")
    for failure in out.get("failures", [])[:5]:
        st.sidebar.caption(backend.md_escape(f"{failure.get('uri')}: {failure.get('reason')}"))


def model_banner(settings: Any) -> None:
    if settings is None:
        return
    ok, line = components.model_status(settings)
    if ok:
        st.sidebar.caption(backend.md_escape(line))
    else:
        components.no_llm_banner(line)


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
                components.render_answer_extras(msg["result"], diagram=show)


def answer(prompt: str, scope: str, resources: Any) -> None:
    history = st.session_state["history"]
    history.append({"role": "user", "content": prompt})
    with st.chat_message("user"):
        st.text(prompt)
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
        components.render_answer_extras(result)
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
