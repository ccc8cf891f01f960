"""Streamlit pieces shared by the pages: Mermaid diagrams, sources, metrics, sidebar.

Untrusted text (entity names, facts, document names) is only ever shown escaped
(:func:`ui.web.backend.md_escape`), with ``st.text`` / ``st.code``, or inside the Mermaid
component, where the diagram source is HTML-escaped and mermaid runs with
``securityLevel: 'strict'``. Nothing here uses ``unsafe_allow_html``.
"""

from __future__ import annotations

import html
import logging
import re
from datetime import date
from functools import lru_cache
from pathlib import Path
from typing import Any

import streamlit as st
import streamlit.components.v1 as components

from graph_flows.query.sections import validity
from ui.web.backend import md_escape

log = logging.getLogger(__name__)

MERMAID_JS = Path(__file__).resolve().parents[1] / "static" / "mermaid" / "mermaid.min.js"
SETUP_HINT = "Run `make setup` (needs npm) to render diagrams."
@lru_cache(maxsize=1)
def _mermaid_js(mtime: float) -> str:
    return MERMAID_JS.read_text(encoding="utf-8")


def mermaid_available() -> bool:
    return MERMAID_JS.is_file() and MERMAID_JS.stat().st_size > 0


def mermaid_html(diagram: str) -> str:
    """A standalone page rendering ``diagram`` with the locally installed mermaid.js; the
    drawing is scaled down to fit the frame (width and height), never clipped."""
    js = _mermaid_js(MERMAID_JS.stat().st_mtime).replace("</script", "<\\/script")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        "<style>html,body{margin:0;height:100%;overflow:hidden;font-family:sans-serif;"
        "background:#fff}pre.mermaid{margin:0;height:100%;display:flex;"
        "justify-content:center;align-items:flex-start}"
        "pre.mermaid>svg{max-width:100%!important;max-height:100%;height:auto}</style>"
        "</head><body>"
        f"<pre class=\"mermaid\">{html.escape(diagram)}</pre>"
        f"<script>{js}</script>"
        "<script>mermaid.initialize({startOnLoad:true, securityLevel:'strict', "
        "theme:'default', flowchart:{htmlLabels:false, useMaxWidth:true}});</script>"
        "</body></html>")


COLUMN_PX = 700  # width of Streamlit's centred main column, which the drawing scales to
FRAME_PX = (120, 900)
_NODE_LINE = re.compile(r'^\s*(n\d+)\["(.*)"\]$')
_EDGE_LINE = re.compile(r'^\s*(n\d+) (?:-->\|"(.*)"\||---) (n\d+)$')


def _ranks(nodes: dict[str, str], edges: list[tuple[str, str, str]]) -> dict[str, int]:
    """Mermaid's left-to-right layers, approximately: the longest chain of edges reaching
    each node (cycles cut off after as many rounds as there are nodes)."""
    rank = dict.fromkeys(nodes, 0)
    for _ in range(len(nodes)):
        moved = False
        for a, _, b in edges:
            if a in rank and b in rank and rank[b] < rank[a] + 1 < len(nodes):
                rank[b], moved = rank[a] + 1, True
        if not moved:
            break
    return rank


def _parse(diagram: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    for line in diagram.splitlines():
        if node := _NODE_LINE.match(line):
            nodes[node[1]] = node[2]
        elif edge := _EDGE_LINE.match(line):
            edges.append((edge[1], edge[2] or "", edge[3]))
    return nodes, edges


def diagram_layout(diagram: str) -> tuple[str, int]:
    """(direction, frame height) for the drawing. Mermaid puts each chain of edges in
    successive layers: left to right (``LR``) the drawing is as tall as its fullest layer
    (about 58 px a node) and as wide as its layers' labels and edge labels; top down
    (``TD``) the other way round. A drawing wider than the page's column is scaled down,
    and so is its height; the direction that keeps it larger wins (a long chain goes top
    down instead of shrinking to a line)."""
    nodes, edges = _parse(diagram)
    if not nodes:
        return "LR", FRAME_PX[0]
    layers: dict[int, list[str]] = {}
    for node, r in _ranks(nodes, edges).items():
        layers.setdefault(r, []).append(node)
    label = max((len(lbl) for _, lbl, _ in edges), default=0)
    widths = [[7 * len(nodes[n]) + 40 for n in layer] for layer in layers.values()]
    gaps = (len(layers) - 1) * (50 + 6 * label)
    options = {"LR": (sum(max(w) for w in widths) + gaps, 58 * max(map(len, widths)) + 20),
               "TD": (max(sum(w) + 20 * len(w) for w in widths),
                      len(layers) * 60 + gaps // 3 + 20)}
    scale = {d: min(1.0, COLUMN_PX / max(w, 1), FRAME_PX[1] / max(h, 1))
             for d, (w, h) in options.items()}
    direction = "TD" if scale["TD"] > 1.5 * scale["LR"] else "LR"
    height = options[direction][1] * min(1.0, COLUMN_PX / max(options[direction][0], 1))
    return direction, int(max(FRAME_PX[0], min(FRAME_PX[1], height + 16)))


def diagram_frame(diagram: str) -> tuple[str, int]:
    """The diagram in the direction :func:`diagram_layout` chose, and its frame height."""
    direction, height = diagram_layout(diagram)
    if direction == "TD" and diagram.startswith("graph LR\n"):
        diagram = "graph TD\n" + diagram.removeprefix("graph LR\n")
    return diagram, height


def render_mermaid(diagram: str) -> None:
    """The diagram as SVG (local mermaid.js) in a frame sized to the drawing, laid out in
    the direction that keeps it readable, or its source with a setup hint."""
    if not diagram or diagram.strip() == "graph LR":
        return
    if mermaid_available():
        laid_out, height = diagram_frame(diagram)
        components.html(mermaid_html(laid_out), height=height, scrolling=False)
    else:
        st.code(diagram, language="text")
        st.caption(SETUP_HINT)


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
