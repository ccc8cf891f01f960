"""Explore: find an entity, read its definition, facts and sources, walk to its neighbours."""

from __future__ import annotations

from typing import Any

import streamlit as st

from graph_flows.query.mermaid import build_mermaid
from graph_flows.query.readable import is_date
from graph_flows.services.explore import fact_groups
from ui.web import backend, components, state
from ui.web.diagram import render_mermaid

md = backend.md_escape


def select(entity_id: str) -> None:
    st.session_state["explore_id"] = entity_id


def entity_label(ent: Any) -> str:
    """``Name (type)``: two entities of one name are told apart by their type (a name that
    is a date says so, whatever type its extractor gave it)."""
    return f"{ent.name} ({'date' if is_date(ent.name) else ent.type})"


def aliases_line(ent: Any, limit: int = 8) -> str:
    """``also: A, B`` for an entity the documents call by other names too, else ""."""
    aliases = list(getattr(ent, "aliases", ()) or ())
    if not aliases:
        return ""
    more = f" (+{len(aliases) - limit} more)" if len(aliases) > limit else ""
    return "also: " + ", ".join(aliases[:limit]) + more


def document_label(doc: dict[str, str]) -> str:
    """``title (source:uri)`` of a document, or ``source:uri`` when it has no own title."""
    where = f"{doc.get('source')}:{doc.get('uri')}"
    title = doc.get("title") or ""
    return f"{title} ({where})" if title and title != doc.get("uri") else where


def show_facts(facts: list[dict[str, Any]], docs: dict[str, list[dict[str, str]]]) -> None:
    """Each fact sentence once (:func:`graph_flows.services.explore.fact_groups`) with its
    relations and the documents it was extracted from, then every source once."""
    groups = fact_groups(facts)
    st.markdown(f"**Facts** ({len(groups)})")
    for g in groups:
        rels = " · ".join(f"{md(s)} → *{md(r)}* → {md(o)}" for s, r, o in g["relations"])
        origin = "; ".join(dict.fromkeys(document_label(d) for i in g["ids"]
                                         for d in docs.get(i, [])))
        st.markdown(f"- {md(g['fact'])}  \n  {rels}"
                    + (f"  \n  *from:* {md(origin)}" if origin else ""))
    sources = {document_label(d): d for f in facts for d in docs.get(f["id"], [])}
    st.markdown(f"**Sources** ({len(sources)})")
    if not sources:
        st.caption("No document behind these facts (e.g. facts remembered over MCP).")
    for label in sorted(sources):
        st.markdown(f"- {md(label)}")


def diagram_holder(entity_id: str) -> Any:
    """Where the diagram of ``entity_id`` goes: one container deeper or shallower than the
    last entity's. Streamlit reuses a frame that stays in the same place of the page, and a
    reused frame never gets shorter (it measures at least its own height); a frame in a new
    place is built anew and sized to its own drawing."""
    last, deeper = st.session_state.get("explore_frame", ("", False))
    if entity_id != last:
        deeper = not deeper
        st.session_state["explore_frame"] = (entity_id, deeper)
    holder = st.container()
    return holder.container() if deeper else holder


def show_entity(resources: Any, scope: str, entity_id: str) -> None:
    hood = backend.neighbourhood(resources, scope, entity_id)
    if not hood:
        st.info("That entity is not in this scope.")
        return
    e = hood["entity"]
    st.subheader(md(e.name))
    st.caption(f"type: {md(e.type)} · confidence {e.confidence:.2f}")
    if aliases_line(e):
        st.markdown(f"**Aliases:** {md(', '.join(e.aliases))}")
    st.markdown(md(e.summary) if e.summary else "*no definition*")
    nodes = [{"id": e.id, "name": e.name}] + [{"id": n.id, "name": n.name}
                                                 for n in hood["neighbours"]]
    with diagram_holder(e.id):
        render_mermaid(build_mermaid(nodes, hood["facts"], focus=e.id), key=f"enlarge-{e.id}")
    show_facts(hood["facts"], backend.fact_documents(resources, scope,
                                                       [f["id"] for f in hood["facts"]]))
    if hood["neighbours"]:
        st.markdown("**Neighbours**")
        cols = st.columns(3)
        for i, n in enumerate(hood["neighbours"]):
            cols[i % 3].button(md(n.name), key=f"nb-{n.id}", on_click=select, args=(n.id,))


def main() -> None:
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
            cols[i % 3].button(md(entity_label(ent)), key=f"hit-{ent.id}", on_click=select,
                               args=(ent.id,))
            if aliases_line(ent):
                cols[i % 3].caption(md(aliases_line(ent)))
    if st.session_state.get("explore_id"):
        st.divider()
        show_entity(resources, scope, st.session_state["explore_id"])


main()
