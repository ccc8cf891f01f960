"""Streamlit pieces shared by the pages: sources, metrics, sidebar (the diagram is
:mod:`ui.web.diagram`).

Untrusted text (entity names, facts, document names) is only ever shown escaped
(:func:`ui.web.backend.md_escape`) or with ``st.text`` / ``st.code``. Nothing here uses
``unsafe_allow_html``.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

import streamlit as st

from graph_flows.query.sections import validity
from ui.web.backend import md_escape

log = logging.getLogger(__name__)


def _citation_line(c: dict[str, Any], fact: dict[str, Any]) -> str:
    docs = "; ".join(f"{s.get('title') or s.get('source')} ({s.get('uri')})"
                     for s in c.get("sources", []))
    when = validity(fact) or validity(c)
    return (f"**\\[{md_escape(c.get('label', ''))}\\]** {md_escape(c.get('fact', ''))}"
            + (f" *({md_escape(when)})*" if when else "")
            + (f"  \n*from:* {md_escape(docs)}" if docs else ""))


def _passage_line(p: dict[str, Any], cited: bool) -> str:
    doc = p.get("title") or p.get("uri") or ""
    text = " ".join(str(p.get("text", "")).split())
    text = text if len(text) <= 400 else text[:399] + "…"
    mark = " *(cited)*" if cited else ""
    if p.get("withheld"):
        mark += " *(partly withheld: instruction-like text)*"
    return (f"**\\[{md_escape(p.get('label', ''))}\\]** {md_escape(text)}{mark}  \n"
            f"*from:* {md_escape(doc)} ({md_escape(p.get('uri', ''))})")


def render_sources(result: dict[str, Any]) -> None:
    """Expandable panel: cited facts with their validity and documents, the passages
    (recipe "ppr") with their documents, then definitions."""
    citations, entities = result.get("citations") or [], result.get("entities") or []
    passages = [p for p in result.get("passages") or [] if isinstance(p, dict)]
    if not citations and not entities and not passages:
        return
    facts = {f.get("id"): f for f in result.get("facts") or [] if isinstance(f, dict)}
    fact_cites = [c for c in citations if "passage_id" not in c]
    cited_passages = {c.get("passage_id") for c in citations if "passage_id" in c}
    title = f"Sources ({len(fact_cites)} cited facts" + (
        f", {len(cited_passages)} cited passages)" if passages else ")")
    with st.expander(title):
        for c in fact_cites:
            st.markdown(_citation_line(c, facts.get(c.get("fact_id"), {})))
        if passages:
            st.markdown("**Passages**")
            for p in passages:
                st.markdown(_passage_line(p, p.get("id") in cited_passages))
        if entities:
            st.markdown("**Entities**")
            for e in entities[:12]:
                name, kind = md_escape(e.get("name", "")), md_escape(e.get("type", ""))
                st.markdown(f"- **{name}** *({kind})*: {md_escape(e.get('summary', ''))}")


def confidence_line(result: dict[str, Any]) -> str | None:
    """ "Confidence: label — reason" (escaped) from ``answer_confidence``, or None if absent."""
    conf = result.get("answer_confidence")
    if not isinstance(conf, dict) or not conf.get("label"):
        return None
    reason = str(conf.get("reason") or "").strip()
    return f"Confidence: {md_escape(conf['label'])}" + (f" — {md_escape(reason)}" if reason else "")


def model_status(settings: Any) -> tuple[bool, str]:
    """(LLM reachable, one line) for the configured chat model; probes are cached."""
    from graph_flows.shared.providers import ProviderError, resolve_chat_model

    try:
        res = resolve_chat_model(settings)
    except ProviderError as exc:
        log.info("chat model unusable", exc_info=True)
        return False, str(exc)
    if res.llm_mode:
        return True, f"Chat model: {res.spec}"
    return False, res.notice or "Running in no-LLM mode."


def scope_label(name: str, chain: list[str]) -> str:
    """``team-a  (team-a › realm › platform)`` for a nested scope, the plain name for a root."""
    return f"{name}  ({' › '.join(chain)})" if len(chain) > 1 else name


def scope_picker(chains: dict[str, list[str]], default: str) -> str:
    """Sidebar select of known scopes, labelled with their chains; the choice (a scope name)
    is kept in ``session_state['scope']``."""
    current = st.session_state.get("scope", default)
    options = list(chains) if current in chains else [*chains, current]
    choice = st.sidebar.selectbox(
        "Scope", options, index=options.index(current),
        format_func=lambda name: scope_label(name, chains.get(name, [name])),
        help="Knowledge scope (tenant/project). A query sees its scope and its ancestors'.")
    st.session_state["scope"] = choice
    return choice


def scope_caption(chain: list[str]) -> None:
    """Under the picker: the scopes answers read (own + ancestors), the one uploads write to."""
    st.sidebar.caption(f"Answers use: {md_escape(', '.join(chain))}  \n"
                       f"uploads go to {md_escape(chain[0])}")


def as_of_picker() -> str | None:
    """Optional "as of" date (ISO) in the sidebar, kept in ``session_state['as_of']``."""
    as_of = None
    if st.sidebar.checkbox("Answer as of a past date", key="as_of_enabled",
                           help="Answer from the facts that were valid on that date."):
        today = date.today()
        picked = st.sidebar.date_input("As of", value=today, min_value=date(1000, 1, 1),
                                       max_value=today, key="as_of_date")
        as_of = picked.isoformat() if isinstance(picked, date) else None
    st.session_state["as_of"] = as_of
    return as_of
