"""The Mermaid diagram of an answer (Chat) or of an entity's neighbourhood (Explore).

Drawn by the locally installed mermaid.js in a frame of its own (``st.iframe``, as wide as
the column and as tall as its drawing), where :file:`diagram.js` renders the source top
down, top down with its unconnected parts stacked, and left to right, and keeps the drawing
that needs no horizontal scrolling. Inline, the drawing is scaled to the column's width,
but never below :data:`INLINE`'s ``min_scale`` (labels, drawn by mermaid at :data:`FONT_PX`,
stay at least 12 px high; in a column narrower than ``narrow_px``, a phone's, it may also be
laid out narrower (:data:`NARROW_FLOWCHART`) and shrink to ``narrow_scale`` rather than
scroll sideways) nor above its ``max_scale``; a graph too wide
even so scrolls inside its frame, with a visible scroll bar. Long names wrap at
:data:`WRAP_PX` (mermaid's ``flowchart.wrappingWidth``). "Enlarge diagram" opens the same
graph in a dialog as wide as the window, scaled whole to the dialog's width and the
window's height (:data:`ENLARGED`); "Full size" there zooms it to mermaid's own size, in a
scrolling box, only when asked.

The source is HTML-escaped into the page and mermaid runs with ``securityLevel: 'strict'``;
the labels themselves are escaped by :mod:`graph_flows.query.mermaid`.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import streamlit as st

from graph_flows.query.mermaid import CITED_COLOUR, STYLES, legend

MERMAID_JS = Path(__file__).resolve().parents[1] / "static" / "mermaid" / "mermaid.min.js"
LAYOUT_JS = Path(__file__).resolve().with_name("diagram.js")
SETUP_HINT = "Run `make setup` (needs npm) to render diagrams."
FONT_PX = 16  # mermaid's label font size, set explicitly
WRAP_PX = 150  # a label wider than this wraps onto more lines
# In a phone's column the drawing may also be laid out narrower: names wrapped at 90 px,
# ranks and nodes 25 px apart and 6 px inside a node's box (mermaid: 150, 50, 50, 15).
NARROW_FLOWCHART = {"wrappingWidth": 90, "rankSpacing": 25, "nodeSpacing": 25, "padding": 6}
DIALOG_PX = 4000  # wider than any window: the dialog shrinks to the window's width
ALT = "Diagram of the entities and facts"
SCROLL_HINT = "The diagram is larger than this frame: scroll it to see the rest."
_CSS = (
    # a scroll bar that stays visible and takes room (an overlay one hides until hovered):
    # styled scroll bars are classic ones in Chromium and Safari; Firefox takes its colour
    ".diagram{overflow:auto}"
    ".diagram::-webkit-scrollbar{width:10px;height:10px;background:#f3f4f6}"
    ".diagram::-webkit-scrollbar-thumb{background:#9ca3af;border-radius:5px}"
    "@supports (-moz-appearance:none){.diagram{scrollbar-color:#9ca3af #f3f4f6}}"
    "pre.mermaid{margin:0}pre.mermaid>svg{display:block;margin:0 auto}"
    "pre.failed{white-space:pre-wrap;font-size:13px}"
    # the source is not shown while it is drawn (a frame never gets shorter once grown)
    "pre.mermaid:not([data-shown]):not(.failed){height:0;overflow:hidden;visibility:hidden}"
    ".zoom{font-size:13px;margin:0 0 6px;padding:2px 10px;cursor:pointer}"
    ".legend,.hint{font-size:13px;color:#374151;margin:2px 0 6px}"
    ".legend .item{margin-right:14px;white-space:nowrap}"
    ".key{display:inline-block;width:14px;height:10px;margin-right:5px;vertical-align:middle;"
    "border:2px solid;border-radius:3px}"
    + "".join(f".key.{role}{{background:{s.fill};border-color:{s.stroke};"
              f"border-width:{s.width}px}}" for role, s in STYLES.items())
    + f".key.cited{{height:0;width:22px;border:0;border-radius:0;border-top:3px solid "
      f"{CITED_COLOUR}}}"
)


@dataclass(frozen=True)
class Fit:
    """How a drawing is scaled to its frame (see :file:`diagram.js`)."""

    min_scale: float
    """Inline, never smaller: labels at ``FONT_PX * min_scale`` px; wider drawings scroll."""
    max_scale: float
    """Never larger, so a small diagram is not blown up."""
    max_height: int
    """Inline, taller drawings are scaled down to this (not below ``min_scale``), then scroll."""
    narrow_px: int = 0
    """Inline, in a frame narrower than this (a phone's column) ..."""
    narrow_scale: float = 0.0
    """... the drawing shrinks down to this scale before it scrolls sideways."""
    window: bool = False
    """Scale the whole drawing to the frame's width and the window's height (the dialog),
    whatever the scale; zoomed only when the reader asks."""


INLINE = Fit(min_scale=0.8, max_scale=1.5, max_height=720, narrow_px=600, narrow_scale=0.625)
ENLARGED = Fit(min_scale=0.8, max_scale=2.5, max_height=1400, window=True)
DIALOG_MARGIN_PX = 24  # kept free under the drawing when it is not in a dialog


@lru_cache(maxsize=2)
def _read(path: Path, mtime: float) -> str:
    return path.read_text(encoding="utf-8").replace("</script", "<\\/script")


def mermaid_available() -> bool:
    return MERMAID_JS.is_file() and MERMAID_JS.stat().st_size > 0


def legend_html(diagram: str) -> str:
    """One line naming what the diagram's styles mean (:func:`mermaid.legend`), each after
    a swatch drawn like it; "" when the diagram styles nothing."""
    items = "".join(f'<span class="item"><span class="key {style}"></span>{html.escape(text)}'
                    "</span>" for style, text in legend(diagram))
    return f'<div class="legend" role="note" aria-label="Legend">{items}</div>' if items else ""


def mermaid_html(diagram: str, fit: Fit = INLINE) -> str:
    """A standalone page drawing ``diagram`` with the local mermaid.js, laid out by
    :file:`diagram.js` within ``fit``, under its legend."""
    limits = json.dumps({"minScale": fit.min_scale, "maxScale": fit.max_scale,
                         "maxHeight": fit.max_height, "narrowPx": fit.narrow_px,
                         "narrowScale": fit.narrow_scale or fit.min_scale,
                         "window": fit.window, "marginPx": DIALOG_MARGIN_PX,
                         "fontPx": FONT_PX, "wrapPx": WRAP_PX,
                         "narrowFlowchart": NARROW_FLOWCHART})
    zoom = ('<button class="zoom" type="button" style="visibility:hidden">Full size</button>'
            if fit.window else "")
    scripts = [_read(p, p.stat().st_mtime) for p in (MERMAID_JS, LAYOUT_JS)]
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<style>html,body{{margin:0;font-family:sans-serif;background:#fff}}{_CSS}</style>"
        f"</head><body>{legend_html(diagram)}{zoom}<div class=\"diagram\">"
        f"<pre class=\"mermaid\">{html.escape(diagram)}</pre></div>"
        f'<div class="hint" hidden>{SCROLL_HINT}</div>'
        f"<script>{scripts[0]}</script>"
        f"<script>const LIMITS = {limits};</script>"
        f"<script>{scripts[1]}</script>"
        "</body></html>")


@st.dialog("Diagram", width=DIALOG_PX)
def _enlarged(diagram: str) -> None:
    st.iframe(mermaid_html(diagram, ENLARGED), height="content", alt=ALT)


def render_mermaid(diagram: str, key: str) -> None:
    """The diagram drawn at the column's width, with an "Enlarge diagram" button (``key``
    names it) opening it in a dialog; its source with a setup hint without mermaid.js."""
    if not diagram.strip() or diagram.strip() in ("graph LR", "graph TD"):
        return  # no diagram: nothing relevant was found (or nothing to draw)
    if not mermaid_available():
        st.code(diagram, language="text")
        st.caption(SETUP_HINT)
        return
    st.iframe(mermaid_html(diagram), height="content", alt=ALT)
    if st.button("Enlarge diagram", key=key, icon=":material/open_in_full:",
                 type="tertiary", help="Open the diagram in a dialog as wide as the window"):
        _enlarged(diagram)
