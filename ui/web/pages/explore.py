"""Explore: find an entity, read its definition and facts, walk to its neighbours."""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parents[3]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import streamlit as st

from graph_flows.query.mermaid import build_mermaid
from ui.web import backend, components, state


def select(entity_id: str) -> None:
    st.session_state["explore_id"] = entity_id


def show_entity(resources, scope: str, entity_id: str) -> None:
    hood = backend.neighbourhood(resources, scope, entity_id)
    if not hood:
        st.info("That entity is not in this scope.")
        return
    e = hood["entity"]
    st.subheader(backend.md_escape(e.name))
    st.caption(f"type: {backend.md_escape(e.type)} · confidence {e.confidence:.2f}")
    st.markdown(backend.md_escape(e.summary) if e.summary else "*no definition*")
    nodes = [{"id": e.id, "name": e.name}] + [{"id": n.id, "name": n.name}
                                                 for n in hood["neighbours"]]
    components.render_mermaid(build_mermaid(nodes, hood["facts"]))
    st.markdown(f"**Facts** ({len(hood['facts'])})")
    for f in hood["facts"]:
        st.markdown(f"- {backend.md_escape(f['fact'])}")
    if hood["neighbours"]:
        st.markdown("**Neighbours**")
        cols = st.columns(3)
        for i, n in enumerate(hood["neighbours"]):
            cols[i % 3].button(backend.md_escape(n.name), key=f"nb-{n.id}", on_click=select,
                               args=(n.id,))


def main() -> None:
    st.set_page_config(page_title="krag · Explore", page_icon="🔎", layout="wide")
    state.init_session()
    settings, resources, error = state.load()
    st.title("Explore the graph")
    if resources is None:
        st.error(f"Knowledge base unavailable: {error}")
        return
    scope = components.scope_picker(state.scope_options(resources, settings), settings.scope)
    term = st.text_input("Find an entity", placeholder="e.g. Ada Lovelace")
    if term.strip():
        found = backend.find_entities(resources, scope, term)
        if not found:
            st.info("No entity matches that name in this scope.")
        cols = st.columns(3)
        for i, ent in enumerate(found):
            cols[i % 3].button(backend.md_escape(ent.name), key=f"hit-{ent.id}", on_click=select,
                               args=(ent.id,))
    if st.session_state.get("explore_id"):
        st.divider()
        show_entity(resources, scope, st.session_state["explore_id"])


main()
