"""What the Chromium UI tests share: the browser, screenshots, asking in the chat, a large
graph to draw, and the measures of what a reader sees of a diagram (its SVG's box against
its frame's and the window's, and whether anything scrolls sideways)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from graph_flows.shared.embeddings import MiniLMEmbeddings
from storage import DocumentIn, EntityIn, KnowledgeStore, RelationIn, ids
from tests.pg_fixtures import TEST_DIM, TEST_MODEL

CHROMIUM = Path("/usr/bin/chromium")
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT = 120_000
MIN_LABEL_PX = 12  # a label drawn smaller than this is not legible at desktop size
HUB = "Harrowgate Foods"  # an entity of many labelled facts: a diagram larger than a window
# A desktop window and a phone's (Streamlit folds the sidebar away below 768 px).
SIZES = [pytest.param({"width": 1400, "height": 900}, id="1400px"),
         pytest.param({"width": 390, "height": 844}, id="390px")]


def launch(p: Any, size: dict[str, int], **kwargs: Any) -> tuple[Any, Any]:
    """A headless Chromium (``p``: Playwright) and a page of window ``size``."""
    browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS, **kwargs)
    return browser, browser.new_page(viewport=size)


def shot(page: Any, name: str, env: str = "KRAG_UI_SCREENSHOTS") -> None:
    """Save a screenshot of ``page`` as ``name`` in the folder named by ``env``, if set."""
    if out := os.environ.get(env):
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / name))


def in_window(box: dict[str, float] | None, size: dict[str, int]) -> bool:
    """Whether the bounding ``box`` lies wholly inside a window of ``size``."""
    return bool(box) and box["x"] >= 0 and box["y"] >= 0 and box["width"] > 0 and (
        box["x"] + box["width"] <= size["width"] and box["y"] + box["height"] <= size["height"])


def ask(page: Any, question: str, n: int) -> Any:
    """Ask ``question``; the answer's chat message (the ``n``-th message) once complete."""
    box = page.get_by_test_id("stChatInput").locator("textarea")
    box.fill(question)
    box.press("Enter")
    answer = page.get_by_test_id("stChatMessage").nth(n)
    answer.get_by_text("Details").wait_for(timeout=TIMEOUT)
    return answer


def seed_star(url: str, leaves: int = 11) -> None:
    """:data:`HUB` owning ``leaves`` firms, each a labelled fact of one passage."""
    store = KnowledgeStore.open(url, embedding_model=TEST_MODEL, embedding_dim=TEST_DIM)
    try:
        emb = MiniLMEmbeddings()
        names = [f"Subsidiary number {i}" for i in range(leaves)]
        facts = [f"{HUB} owns {name}." for name in names]
        text = " ".join(facts)
        doc = DocumentIn(scope="default", source="foods", uri="foods.md",
                         content_hash=ids.content_hash(text), title="foods")
        (chunk,) = store.sync_document(doc, [text]).new_chunk_ids
        hub = EntityIn(HUB, "organization", "default", "A food company.", 0.9,
                       emb.embed_query(HUB), (chunk,))
        firms = [EntityIn(name, "organization", "default", "A firm.", 0.9,
                          emb.embed_query(name), (chunk,)) for name in names]
        store.write_graph([hub, *firms], [
            RelationIn(hub.id, "owns", firm.id, fact, "default", 0.8, emb.embed_query(fact),
                       chunk_ids=(chunk,), predicate_text="owns")
            for firm, fact in zip(firms, facts, strict=True)])
    finally:
        store.close()


# Each navigation icon: its text (the Material Symbols ligature), the font size and the
# width its text is drawn at (a ligature glyph is one em wide; the name in a fallback font
# is two or more), and whether Streamlit's icon font has loaded.
ICONS = """async () => {
    await document.fonts.ready;
    const loaded = [...document.fonts].some(f => f.status === 'loaded'
        && f.family.replace(/["']/g, '') === 'Material Symbols Rounded');
    const icons = [...document.querySelectorAll(
        '[data-testid=stSidebarNav] [data-testid=stIconMaterial]')].map(e => {
        const range = document.createRange();
        range.selectNodeContents(e);
        return {text: e.textContent, font: parseFloat(getComputedStyle(e).fontSize),
                drawn: range.getBoundingClientRect().width};
    });
    return {loaded, icons};
}"""


def assert_material_icons(page: Any) -> None:
    """The navigation icons are "chat" and "hub" drawn by Streamlit's Material Symbols font
    (one square glyph each), not their names in a fallback font."""
    seen = page.evaluate(ICONS)
    assert seen["loaded"], ("Streamlit's Material Symbols font did not load", seen)
    assert [i["text"] for i in seen["icons"]] == ["chat", "hub"], seen
    for icon in seen["icons"]:  # one glyph, not the word in another font
        assert abs(icon["drawn"] - icon["font"]) <= 2, ("drawn as text", seen)


# Run on a diagram's <iframe> element: the boxes, in the window, of the frame and of its
# rendered SVG; whether its scroll box or the frame's page scrolls sideways; its scale.
SVG_FIT = """(frame) => {
    const doc = frame.contentDocument, f = frame.getBoundingClientRect();
    const svg = doc.querySelector('pre.mermaid > svg').getBoundingClientRect();
    const box = doc.querySelector('.diagram'), page = doc.scrollingElement;
    return {frame: {left: f.left, right: f.right, top: f.top, bottom: f.bottom,
                    width: f.width},
            svg: {left: f.left + svg.left, right: f.left + svg.right, width: svg.width,
                  top: f.top + svg.top, bottom: f.top + svg.bottom, height: svg.height},
            sideways: box.scrollWidth > box.clientWidth + 1
                      || page.scrollWidth > page.clientWidth + 1,
            scale: parseFloat(doc.body.dataset.scale)};
}"""


def assert_fits_column(fit: dict[str, Any], where: str) -> None:
    """The drawing lies within its frame's width and nothing scrolls sideways."""
    assert fit["svg"]["width"] <= fit["frame"]["width"] + 1, (where, fit)
    assert fit["frame"]["left"] - 1 <= fit["svg"]["left"], (where, fit)
    assert fit["svg"]["right"] <= fit["frame"]["right"] + 1, (where, fit)
    assert not fit["sideways"], (where, fit)


# Run on a diagram's <iframe> element: each legend item's left and right edge in the window,
# and the frame's.
LEGEND_FIT = """(frame) => {
    const doc = frame.contentDocument, f = frame.getBoundingClientRect();
    const items = [...doc.querySelectorAll('.legend .item')].map(e => {
        const r = e.getBoundingClientRect();
        return {text: e.textContent, left: f.left + r.left, right: f.left + r.right};
    });
    return {frame: {left: f.left, right: f.right}, items};
}"""


# Run on the page: whether the app's main column or the window scrolls sideways.
PAGE_SIDEWAYS = """() => {
    const main = document.querySelector('[data-testid="stMain"]') || document.body;
    const root = document.scrollingElement;
    return main.scrollWidth > main.clientWidth + 1 || root.scrollWidth > root.clientWidth + 1;
}"""

# Run on a dialog: the boxes in it that scroll (taller than the room the window leaves
# them), each as [tag, its content's height, its own]; [] when none.
DIALOG_SCROLLS = """(dialog) => [...dialog.querySelectorAll('*')].filter(e => {
    const y = getComputedStyle(e).overflowY;
    return (y === 'auto' || y === 'scroll') && e.scrollHeight > e.clientHeight + 1;
}).map(e => [e.tagName, e.scrollHeight, e.clientHeight])"""


# Every label of the rendered SVG: its text, rendered font size (computed font size times
# the SVG's scale) and the rendered height of each of its lines (the rows of an SVG <text>
# label, the line boxes of a foreignObject HTML label).
MEASURE = """(svg) => {
    const box = svg.getBoundingClientRect();
    const scale = box.width / svg.viewBox.baseVal.width;
    const rows = (el) => {
        const lines = el.querySelectorAll(':scope > tspan');
        if (lines.length) return [...lines].map(r => r.getBoundingClientRect().height);
        const byTop = new Map();  // line boxes of the label's text nodes, by their top
        const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        while (walk.nextNode()) {
            const range = document.createRange();
            range.selectNodeContents(walk.currentNode);
            for (const r of range.getClientRects()) {
                const top = Math.round(r.top);
                if (r.height > 0) byTop.set(top, Math.max(r.height, byTop.get(top) || 0));
            }
        }
        return [...byTop.values()];
    };
    const labels = [...svg.querySelectorAll('g.label > text, g.edgeLabel text, '
                                            + 'foreignObject span.nodeLabel, '
                                            + 'foreignObject span.edgeLabel')]
        .filter(el => el.textContent.trim())
        .map(el => ({text: el.textContent.trim(), rows: rows(el),
                     font: parseFloat(getComputedStyle(el).fontSize) * scale}));
    const scroller = svg.closest('.diagram');
    return {width: box.width, height: box.height, scale, labels,
            scrolls: scroller ? scroller.scrollWidth > scroller.clientWidth + 1 : false};
}"""
