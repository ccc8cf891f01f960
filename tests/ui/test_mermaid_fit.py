"""The diagram's layout (ui/web/diagram.js) rendered by the real mermaid.js in headless
Chromium in a frame as wide as the chat column at a 1400 px window (884 px): whatever the
graph's shape, every label stays at least 12 px high; a two-node diagram is drawn at
``max_scale``, centred, not blown up; a 20-node chain and a 19-leaf star are laid out in the
direction that needs no horizontal scrolling; a graph wide in both directions scrolls
sideways rather than shrinking; the frame is never taller than ``max_height`` (plus the
scroll bar), and the enlarged view draws the same graph larger."""

from __future__ import annotations

from typing import Any

import pytest

from graph_flows.query.mermaid import MAX_NODES, build_mermaid
from tests.ui.browser_helpers import CHROME_ARGS, CHROMIUM, MEASURE, MIN_LABEL_PX
from tests.ui.test_ui_browser import requirements  # noqa: F401
from ui.web.diagram import ENLARGED, FONT_PX, INLINE, mermaid_html

pytestmark = [pytest.mark.browser, pytest.mark.slow]

COLUMN = 884  # the chat column's width at a 1400 px window (tests/ui/test_diagram_browser)
PHONE = 302  # the chat column's width at a 390 px window (a phone)


def _fact(i: int, a: str, b: str, predicate: str = "owns") -> dict:
    return {"id": f"f{i}", "subject_id": a, "subject": a, "object_id": b, "object": b,
            "predicate": predicate, "fact": f"{a} and {b}."}


def _diagrams(max_nodes: int = 20) -> dict[str, str]:
    chain = [_fact(i, f"Station {i}", f"Station {i + 1}", "was succeeded by")
             for i in range(19)]
    star = [_fact(i, "Harrowgate Foods", f"Subsidiary number {i}") for i in range(19)]
    pair = [_fact(0, "Ada Lovelace", "Charles Babbage", "worked with")]
    mixed = star[:8] + [_fact(20 + i, f"Subsidiary number {i}", f"Brand {i}", "sells")
                        for i in range(8)]
    both = star[:9] + [_fact(30 + i, f"Depot {i}" if i else "Harrowgate Foods",
                             f"Depot {i + 1}", "ships to") for i in range(10)]
    long = _fact(40, "Charles Babbage",
                 "Royal Society of London for Improving Natural Knowledge",
                 "was elected a fellow of")
    parts = [long, _fact(41, "Ada Lovelace", "Analytical Engine", "wrote notes on"),
             _fact(42, "Per Georg Scheutz", "Stockholm", "built a difference engine in")]
    out = {name: build_mermaid([], facts, max_nodes=max_nodes) for name, facts in
           {"chain": chain, "star": star, "pair": pair, "mixed": mixed,
            "both": both}.items()}
    # three unconnected cited facts: side by side when laid out top down as one graph
    out["parts"] = build_mermaid([], parts, cited=["f40", "f41", "f42"])
    return out


def _draw(browser: Any, width: int, source: str, fit: Any = INLINE) -> dict[str, Any]:
    """The measures of ``source`` drawn in a fresh page ``width`` px wide (a fresh document,
    as each Streamlit frame is)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.set_content(mermaid_html(source, fit))
    svg = page.locator("pre.mermaid > svg")
    svg.locator("g.node").first.wait_for(timeout=30_000)
    page.wait_for_function("document.body.dataset.scale")
    m = svg.evaluate(MEASURE)
    m["frame"] = page.evaluate("document.body.getBoundingClientRect().height")
    m["direction"] = page.evaluate("document.querySelector('pre.mermaid').dataset.shown")
    m["cited"] = page.evaluate("""() => [...document.querySelectorAll('pre.mermaid path')]
        .filter(e => /stroke-width:\\s*3px/.test(e.getAttribute('style') || '')).length""")
    page.close()
    return m


def test_layout_keeps_labels_legible_whatever_the_shape(requirements) -> None:  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            drawn = {name: _draw(browser, COLUMN, source)
                     for name, source in _diagrams().items()}
            for name, m in drawn.items():
                for label in m["labels"]:
                    assert label["font"] >= MIN_LABEL_PX, (name, label)
                    assert min(label["rows"]) >= MIN_LABEL_PX, (name, label)
                assert m["frame"] <= INLINE.max_height + 24 + 20, (name, m["frame"])
                assert m["width"] <= COLUMN + 1 or m["scrolls"], (name, m["width"])
            assert abs(drawn["pair"]["scale"] - INLINE.max_scale) < 0.01, drawn["pair"]
            assert drawn["pair"]["width"] < COLUMN - 50  # capped, not blown up to the column
            assert drawn["chain"]["direction"] == "TD", drawn["chain"]["direction"]
            for name in ("chain", "star", "mixed", "pair"):
                assert not drawn[name]["scrolls"], (name, drawn[name]["width"])
            assert drawn["both"]["scrolls"], drawn["both"]["width"]  # sideways, legible

            big = _draw(browser, 1368, _diagrams()["mixed"], ENLARGED)  # the dialog at 1400
            assert big["width"] > drawn["mixed"]["width"] * 1.1, (big, drawn["mixed"])
        finally:
            browser.close()


def test_a_phone_column_needs_no_sideways_scrolling(requirements) -> None:  # noqa: F811
    """In a phone's chat column every shape of an answer's diagram (at most MAX_NODES) is
    drawn without sideways scrolling: a graph of unconnected parts with its parts stacked
    (their cited-edge styles kept), a chain or a star in the direction and with the wrapping
    that fits, scaled to the column (labels at least 10 px)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            drawn = {name: _draw(browser, PHONE, source)
                     for name, source in _diagrams(MAX_NODES).items()}
            sideways = {name: round(m["width"]) for name, m in drawn.items()
                        if m["scrolls"] or m["width"] > PHONE + 1}
            assert sideways == {}, sideways
            for name, m in drawn.items():
                for label in m["labels"]:
                    assert label["font"] >= FONT_PX * INLINE.narrow_scale - 0.01, (name, label)
            assert drawn["parts"]["direction"].startswith("TD stacked"), drawn["parts"]
            assert drawn["parts"]["cited"] == 3, drawn["parts"]  # linkStyle 0,1,2 kept
        finally:
            browser.close()


def test_a_source_mermaid_cannot_parse_is_shown_as_text(requirements) -> None:  # noqa: F811
    from playwright.sync_api import expect, sync_playwright

    broken = 'graph LR\n    n1["unclosed'
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS)
        try:
            page = browser.new_page(viewport={"width": COLUMN, "height": 600})
            page.set_content(mermaid_html(broken))
            expect(page.locator("pre.mermaid.failed")).to_have_text(broken, timeout=30_000)
            assert page.locator("pre.mermaid svg").count() == 0
        finally:
            browser.close()


def test_legend_and_a_visible_scroll_bar(requirements) -> None:  # noqa: F811
    """An answer's diagram is drawn under a legend naming its styles (only those it uses);
    a drawing wider than the column scrolls with a scroll bar that takes room (not an
    overlay that hides) and a line saying so; one that fits shows neither."""
    from playwright.sync_api import expect, sync_playwright

    from graph_flows.query import extractive

    facts = [_fact(0, "Ada Lovelace", "Charles Babbage", "worked with"),
             _fact(1, "Charles Babbage", "Analytical Engine", "designed")]
    answer = build_mermaid([], facts, question=extractive.question(
        "Who did Ada Lovelace work with?"), cited=["f0"], answer="Charles Babbage")
    with sync_playwright() as p:  # scroll bars drawn, as in a browser with a window
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROME_ARGS,
                                    ignore_default_args=["--hide-scrollbars"])
        try:
            page = browser.new_page(viewport={"width": COLUMN, "height": 900})
            page.set_content(mermaid_html(answer))
            legend = page.get_by_role("note", name="Legend")
            expect(legend).to_have_text(
                "named in the questionthe answera fact the answer cites", timeout=30_000)
            page.wait_for_function("document.body.dataset.scale")
            assert not page.locator(".hint").is_visible()
            page.close()

            page = browser.new_page(viewport={"width": COLUMN, "height": 900})
            page.set_content(mermaid_html(_diagrams()["both"]))
            page.wait_for_function("document.body.dataset.scale")
            expect(page.locator(".hint")).to_be_visible()
            bar = page.evaluate("""() => { const b = document.querySelector('.diagram');
                return {room: b.offsetHeight - b.clientHeight,
                        wide: b.scrollWidth > b.clientWidth}; }""")
            assert bar["wide"] and bar["room"] >= 8, bar  # a classic scroll bar, visible
            assert page.get_by_role("note", name="Legend").count() == 0  # nothing styled
        finally:
            browser.close()
