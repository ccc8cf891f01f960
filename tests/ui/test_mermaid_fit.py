"""The diagram frame sizes to its drawing: rendered by the real mermaid.js in headless
Chromium at the width of Streamlit's main column and the height ``diagram_height`` gives,
the drawing is never clipped, fills a fair share of its frame and stays readable (no fixed
620 px frame cutting a taller drawing, no tall empty frame around two nodes, no 20-node
chain shrunk to a line)."""

from __future__ import annotations

import pytest

from graph_flows.query.mermaid import build_mermaid
from tests.ui.test_ui_browser import CHROME_ARGS, CHROMIUM, requirements  # noqa: F401
from ui.web.components import COLUMN_PX, FRAME_PX, diagram_frame, mermaid_html

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _fact(i: int, a: str, b: str, predicate: str = "relates_to") -> dict:
    return {"id": f"f{i}", "subject_id": a, "subject": a, "object_id": b, "object": b,
            "predicate": predicate, "fact": f"{a} and {b}."}


def _diagrams() -> dict[str, str]:
    chain = [_fact(i, f"Station {i}", f"Station {i + 1}", "was succeeded by")
             for i in range(19)]
    star = [_fact(i, "Harrowgate Foods", f"Subsidiary number {i}") for i in range(19)]
    pair = [_fact(0, "Ada Lovelace", "Charles Babbage", "worked with")]
    mixed = star[:8] + [_fact(20 + i, f"Subsidiary number {i}", f"Brand {i}", "sells")
                        for i in range(8)]
    return {name: build_mermaid([], facts, max_nodes=20) for name, facts in
            {"chain": chain, "star": star, "pair": pair, "mixed": mixed}.items()}


def test_drawing_fits_its_frame(requirements) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            page = browser.new_page()
            for name, source in _diagrams().items():
                diagram, height = diagram_frame(source)
                assert FRAME_PX[0] <= height <= FRAME_PX[1]
                page.set_viewport_size({"width": COLUMN_PX, "height": height})
                page.set_content(mermaid_html(diagram))
                page.locator("pre.mermaid > svg g.node").first.wait_for(timeout=30_000)
                box = page.evaluate("""() => {
                    const r = document.querySelector('pre.mermaid > svg > g')
                        .getBoundingClientRect();
                    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right};
                }""")
                assert box["top"] >= -1 and box["left"] >= -1, (name, box)
                assert box["bottom"] <= height + 1 and box["right"] <= COLUMN_PX + 1, \
                    (name, height, box)
                drawn = box["bottom"] - box["top"]
                assert drawn >= 0.4 * height or height == FRAME_PX[0], (name, height, box)
                assert drawn >= 40, (name, height, box)  # readable, not shrunk to a line
        finally:
            browser.close()
