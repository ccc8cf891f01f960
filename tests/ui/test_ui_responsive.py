"""The UI responds, in real headless Chromium at a desktop (1400 px) and a phone (390 px)
width, on the seeded app of test_ui_browser (issue 40 items 1 and 6): the navigation icons
are Streamlit's Material Symbols (drawn by its own font, no emoji font needed); a question
nothing answers gets no diagram; a new answer
at the end of a long chat is scrolled into view, even when the reader had scrolled up; its
diagram fits the chat column (its drawing no wider than its frame, nothing scrolls
sideways); Explore's diagram frame is as tall as the drawing of the entity shown (not of
the one before); the enlarged diagram (Chat and Explore, a graph taller than the window
among them) is drawn whole inside the window without the dialog scrolling, and "Full size"
zooms it only when asked. The sidebar (upload, close on a phone) is test_sidebar_browser's.

With KRAG_UI_SCREENSHOTS=<dir> the views are saved there (chat-<width>.png,
explore-<width>.png, dialog-<width>.png, chat-dialog-<width>.png). No timing is asserted
here: the time to the first answer is measured by bench/ui_first_answer.py."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.ui.browser_helpers import (
    DIALOG_SCROLLS,
    HUB,
    PAGE_SIDEWAYS,
    SIZES,
    SVG_FIT,
    TIMEOUT,
    ask,
    assert_fits_column,
    assert_material_icons,
    launch,
    seed_star,
    shot,
)
from tests.ui.test_ui_browser import (  # noqa: F401 - fixtures
    SharedApp,
    app_url,
    requirements,
    shared_app,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

QUESTIONS = ["Who did Ada Lovelace work with?", "What did Charles Babbage design?",
             "What does the Analytical Engine use?", "Where did Charles Babbage live?"]


def _enlarged(page: Any, size: dict[str, int], name: str) -> dict[str, Any]:
    """Open the last "Enlarge diagram"; assert the dialog and its drawing lie within the
    window and the dialog does not scroll; the drawing's measures."""
    page.get_by_role("button", name="Enlarge diagram").last.click()
    dialog = page.get_by_role("dialog")
    frame = dialog.locator("iframe")
    frame.content_frame.locator("pre.mermaid > svg").wait_for(timeout=TIMEOUT)
    page.wait_for_timeout(1500)  # the frame settles at its content's height
    shot(page, name)
    box = dialog.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], box
    assert box["x"] >= 0 and box["x"] + box["width"] <= size["width"], box
    fit = frame.evaluate(SVG_FIT)
    svg = fit["svg"]
    assert svg["top"] >= 0 and svg["bottom"] <= min(size["height"], box["y"] + box["height"]), (
        name, fit, box)
    assert svg["left"] >= 0 and svg["right"] <= size["width"], (name, fit)
    assert not fit["sideways"], (name, fit)
    assert dialog.evaluate(DIALOG_SCROLLS) == [], (name, "the dialog scrolls")
    return fit


# The latest question, and the first 40 px of its answer, lie between the app's header and
# the chat input (the band of the window the chat is read in).
IN_VIEW = """() => {
    const band = (id, edge) => document.querySelector(`[data-testid=${id}]`)
        .getBoundingClientRect()[edge];
    const top = band("stHeader", "bottom") - 1, bottom = band("stBottom", "top");
    const msgs = document.querySelectorAll('[data-testid="stChatMessage"]');
    const asked = msgs[msgs.length - 2].getBoundingClientRect();
    const answer = msgs[msgs.length - 1].querySelector('[data-testid="stChatMessageContent"]')
        .getBoundingClientRect();
    return top <= asked.top && asked.top < bottom && top <= answer.top
        && answer.top + 40 <= bottom;
}"""


@pytest.mark.parametrize("size", SIZES)
def test_new_answer_of_a_long_chat_is_scrolled_into_view(
    app_url: str, size: dict[str, int]  # noqa: F811
) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser, page = launch(p, size)
        try:
            page.goto(app_url)
            page.get_by_test_id("stChatInput").locator("textarea").wait_for(timeout=TIMEOUT)
            assert_material_icons(page)
            for i, question in enumerate(QUESTIONS[:-1]):
                ask(page, question, 2 * i + 1)
            page.mouse.move(size["width"] / 2, size["height"] / 2)
            page.mouse.wheel(0, -50_000)  # the reader scrolled up to an earlier answer
            page.wait_for_timeout(500)
            answer = ask(page, QUESTIONS[-1], 2 * len(QUESTIONS) - 1)
            frame = answer.locator("iframe").first
            frame.content_frame.locator("pre.mermaid > svg").wait_for(
                timeout=TIMEOUT)  # its diagram drawn: the chat has grown to its length
            assert page.get_by_test_id("stChatMessage").count() == 2 * len(QUESTIONS)
            try:  # the question and the start of its answer come into the band read in
                page.wait_for_function(IN_VIEW, timeout=15_000)
                page.wait_for_timeout(2000)
                assert page.evaluate(IN_VIEW), "the answer did not stay in view"
            finally:
                shot(page, f"chat-{size['width']}.png")
            page.wait_for_function("f => f.contentDocument.body.dataset.scale",
                                   arg=frame.element_handle())
            assert_fits_column(frame.evaluate(SVG_FIT), "chat")
            assert not page.evaluate(PAGE_SIDEWAYS), "the chat scrolls sideways"
            _enlarged(page, size, f"chat-dialog-{size['width']}.png")
        finally:
            browser.close()


FRAME_FIT = """(frame) => ({frame: frame.getBoundingClientRect().height,
                           content: frame.contentDocument.body.getBoundingClientRect().height})"""


def _explore(page: Any, name: str, before: str = "") -> dict[str, float]:
    """Show entity ``name`` in Explore (after entity ``before``, whose diagram does not
    name it); its diagram frame's height and its content's."""
    from playwright.sync_api import expect

    page.get_by_label("Find an entity").fill(name)
    page.get_by_label("Find an entity").press("Enter")
    page.get_by_role("button", name=re.compile(rf"^{re.escape(name)} \(")).first.click()
    page.get_by_role("heading", name=name).wait_for(timeout=TIMEOUT)
    frame = page.get_by_test_id("stMainBlockContainer").locator("iframe").first
    svg = frame.content_frame.locator("pre.mermaid > svg")
    expect(svg).to_contain_text(name, timeout=TIMEOUT)
    if before:  # this entity's drawing, not the one before
        expect(svg).not_to_contain_text(before, timeout=TIMEOUT)
    page.wait_for_timeout(1500)  # the frame settles at its content's height
    return frame.evaluate(FRAME_FIT)


@pytest.fixture(scope="module")
def star(shared_app: SharedApp) -> str:  # noqa: F811
    """The shared app with :data:`HUB`'s star seeded (once: the widths share it); its URL."""
    seed_star(shared_app.db_url)
    return shared_app.url


@pytest.mark.parametrize("size", SIZES)
def test_explore_frame_fits_each_entity_and_its_dialog_fits_the_window(
    star: str, size: dict[str, int]
) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser, page = launch(p, size)
        try:
            page.goto(f"{star}/explore")
            expect(page.get_by_text("Explore the graph")).to_be_visible(timeout=TIMEOUT)
            big = _explore(page, "Charles Babbage")
            small = _explore(page, "pgvector", before="Charles Babbage")
            shot(page, f"explore-{size['width']}.png")
            for seen in (big, small):  # as tall as the drawing
                # whole pixels around a drawing of fractional height (the legend line
                # rounds up), never the last entity's height
                assert abs(seen["frame"] - seen["content"]) <= 4, (big, small)
            assert small["frame"] != big["frame"], (big, small)  # sized per entity

            _explore(page, HUB, before="pgvector")  # taller than the window when enlarged
            frame = page.get_by_test_id("stMainBlockContainer").locator("iframe").first
            assert_fits_column(frame.evaluate(SVG_FIT), "explore")
            fit = _enlarged(page, size, f"dialog-{size['width']}.png")
            assert fit["scale"] < 1, fit  # drawn whole: smaller than mermaid's own size
            dialog = page.get_by_role("dialog")
            inner = dialog.locator("iframe").content_frame
            inner.get_by_role("button", name="Full size").click()  # zoomed when asked
            page.wait_for_timeout(1500)
            zoomed = dialog.locator("iframe").evaluate(SVG_FIT)
            assert zoomed["scale"] == 1 and zoomed["svg"]["height"] > fit["svg"]["height"]
            box = dialog.bounding_box()  # it scrolls inside the dialog, which still fits
            assert box["y"] >= 0 and box["y"] + box["height"] <= size["height"], box
            expect(inner.get_by_role("button", name="Fit to window")).to_be_visible()
        finally:
            browser.close()


@pytest.mark.parametrize("size", SIZES)
def test_none_answer_has_no_diagram(app_url: str, size: dict[str, int]) -> None:  # noqa: F811
    """A question nothing in the graph answers gets no diagram (uploads: in
    test_sidebar_browser)."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser, page = launch(p, size)
        try:
            page.goto(app_url)
            page.get_by_test_id("stChatInput").locator("textarea").wait_for(timeout=TIMEOUT)
            answer = ask(page, "What is the boiling point of tungsten?", 1)
            expect(answer).to_contain_text("Nothing relevant", timeout=TIMEOUT)
            assert answer.locator("iframe").count() == 0  # no diagram for a `none` answer
            assert page.get_by_role("button", name="Enlarge diagram").count() == 0
        finally:
            browser.close()
