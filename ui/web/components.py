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

from graph_flows.query import readable
from graph_flows.query.sections import validity
from graph_flows.shared.fragments import is_fragment
from ui.web.backend import md_escape

log = logging.getLogger(__name__)


def _citation_line(c: dict[str, Any], fact: dict[str, Any]) -> str:
    docs = "; ".join(_document_link(s) for s in c.get("sources", []))
    when = validity(fact) or validity(c)
    return (f"**\\[{md_escape(c.get('label', ''))}\\]** {md_escape(c.get('fact', ''))}"
            + (f" *({md_escape(when)})*" if when else "")
            + (f"  \n*from:* {docs}" if docs else ""))


def _document_link(d: dict[str, Any]) -> str:
    """The document's short name, linked to its full location when a browser may open it
    (escaped: names and locations are untrusted)."""
    name = md_escape(d.get("document") or readable.document_name(d.get("title"), d.get("uri")))
    href = readable.link(d.get("uri"))
    return f"[{name}]({href})" if href else name


def breadcrumb_text(parts: list[str], width: int = 40) -> str:
    """``Guide › Install`` (escaped), every part but the last cut to ``width`` characters."""
    cut = [p if i == len(parts) - 1 or len(p) <= width else p[: width - 1] + "…"
           for i, p in enumerate(parts)]
    return " › ".join(md_escape(p) for p in cut)


def passage_markdown(p: dict[str, Any], cite: dict[str, Any] | None = None) -> str:
    """A passage as a person reads it (:mod:`graph_flows.query.readable`): its label and
    section path, its text without markdown markers around the sentence its citation
    ``cite`` states (highlighted), and its document's short name linked to its location."""
    fields = readable.passage_fields(p)
    _, body = readable.split_headings(str(p.get("text", "")))
    sentence = str((cite or {}).get("sentence") or "")
    before, mark, after = readable.window(readable.plain_text(body), sentence)
    text = " ".join(part for part in (
        md_escape(before), f":yellow-background[**{md_escape(mark)}**]" if mark else "",
        md_escape(after)) if part)
    crumb = breadcrumb_text(p.get("section") or fields["section"])
    flags = " *(cited)*" if cite else ""
    if p.get("withheld"):
        flags += " *(partly withheld: instruction-like text)*"
    return (f"**\\[{md_escape(p.get('label', ''))}\\]** {crumb}{flags}  \n{text}  \n"
            f"*from:* {_document_link({**fields, **p})}")


def sources_title(facts: int, passages: int) -> str:
    """``Sources (2 cited facts, 1 cited passage)``, the counts that are not zero only."""
    counts = [f"{n} cited {what}{'s' if n != 1 else ''}"
              for n, what in ((facts, "fact"), (passages, "passage")) if n]
    return f"Sources ({', '.join(counts)})" if counts else "Sources"


def listed_entities(entities: list[dict[str, Any]], limit: int = 12) -> list[tuple[str, str]]:
    """(name, kind) of the entities worth listing: no fragment of a sentence
    (:func:`graph_flows.shared.fragments.is_fragment`), a date named a date."""
    out = []
    for e in entities:
        name = str(e.get("name", ""))
        if not is_fragment(name):
            out.append((name, "date" if readable.is_date(name) else str(e.get("type", ""))))
    return out[:limit]


def render_sources(result: dict[str, Any]) -> None:
    """Expandable panel: cited facts with their validity and documents, the passages
    (recipe "ppr") as a person reads them (the cited ones with their cited sentence
    highlighted), then definitions."""
    citations, entities = result.get("citations") or [], result.get("entities") or []
    passages = [p for p in result.get("passages") or [] if isinstance(p, dict)]
    if not citations and not entities and not passages:
        return
    facts = {f.get("id"): f for f in result.get("facts") or [] if isinstance(f, dict)}
    fact_cites = [c for c in citations if "passage_id" not in c]
    cited = {c.get("passage_id"): c for c in citations if "passage_id" in c}
    with st.expander(sources_title(len(fact_cites), len(cited))):
        for c in fact_cites:
            st.markdown(_citation_line(c, facts.get(c.get("fact_id"), {})))
        if passages:
            st.markdown("**Passages**")
            for p in passages:
                st.markdown(passage_markdown(p, cited.get(p.get("id"))))
        if listed := listed_entities([e for e in entities if isinstance(e, dict)]):
            st.markdown("**Entities**")
            summaries = {e.get("name"): e.get("summary", "") for e in entities}
            for name, kind in listed:
                st.markdown(f"- **{md_escape(name)}** *({md_escape(kind)})*: "
                            f"{md_escape(summaries.get(name, ''))}")


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
