"""The sidebar as a person uses it, in real headless Chromium at a desktop (1400 px) and a
phone (390 px) width, on the seeded app of test_ui_browser (issue 40 item 6).

On a phone Streamlit folds the sidebar away: the test opens it with its expand control,
scrolls it with the mouse wheel (a swipe) until a control is in the window, and taps the
control where it is drawn (the click goes to whatever is on top at that point, so a
covered or unreachable control fails). The navigation icons are drawn by Streamlit's
Material Symbols font (one square glyph each, not the icon's name in a fallback font); a
file picked with the uploader's own button and ingested leaves the upload list empty, the
report in view ("1 ingested"), and the same file again is reported "1 unchanged"; on a
phone the sidebar closes with its own control and gives the chat back.

With KRAG_UI_SCREENSHOTS=<dir> the views are saved there (sidebar-<width>.png,
upload-<width>.png)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.browser_helpers import (
    SIZES,
    TIMEOUT,
    assert_material_icons,
    in_window,
    launch,
    shot,
)
from tests.ui.test_ui_browser import private_app_url, requirements  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PHONE_MAX = 768  # Streamlit folds the sidebar away in windows narrower than this
NOTES = b"# Kestrel\n\nThe Kestrel K2 is a glider built in Lisbon.\n"

# Whether the sidebar is open: drawn from the window's left edge, within the window.
SIDEBAR_OPEN = """(width) => {
    const r = document.querySelector('[data-testid=stSidebar]').getBoundingClientRect();
    return r.left >= -0.5 && r.width > 200 && r.right <= width + 0.5;
}"""
SIDEBAR_FOLDED = """() => document.querySelector('[data-testid=stSidebar]')
    .getBoundingClientRect().right <= 0.5"""


def _tap(page: Any, target: Any, size: dict[str, int]) -> None:
    """Tap ``target`` at the middle of where it is drawn; it must lie in the window and be
    what is on top there."""
    box = target.bounding_box()
    assert in_window(box, size), ("not in the window", box)
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    on_top = target.evaluate("(e, [x, y]) => e.contains(document.elementFromPoint(x, y))",
                             [x, y])
    assert on_top, ("covered by another element", box)
    page.mouse.click(x, y)


def _scroll_to(page: Any, target: Any, size: dict[str, int]) -> None:
    """Scroll the sidebar with the mouse wheel over it until ``target`` is in the window."""
    side = page.get_by_test_id("stSidebar").bounding_box()
    page.mouse.move(side["x"] + side["width"] / 2, size["height"] / 2)
    for _ in range(30):
        box = target.bounding_box()
        if in_window(box, size):
            return
        page.mouse.wheel(0, 150 if box and box["y"] > 0 else -150)
        page.wait_for_timeout(150)
    pytest.fail(f"scrolling the sidebar never brought {target} into the window")


def _open_sidebar(page: Any, size: dict[str, int]) -> Any:
    """The sidebar, opened as a person opens it (on a phone it starts folded away)."""
    if size["width"] < PHONE_MAX:
        assert page.evaluate(SIDEBAR_FOLDED), "on a phone the chat should have the window"
        _tap(page, page.get_by_test_id("stExpandSidebarButton"), size)
    page.wait_for_function(SIDEBAR_OPEN, arg=size["width"], timeout=10_000)
    return page.get_by_test_id("stSidebar")


def _upload(page: Any, sidebar: Any, size: dict[str, int], name: str) -> Any:
    """Pick ``name`` (NOTES) with the uploader's button, press Ingest; the report."""
    browse = sidebar.get_by_test_id("stFileUploaderDropzone").locator("button",
                                                                      has_text="Upload")
    _scroll_to(page, browse, size)
    with page.expect_file_chooser() as chooser:
        _tap(page, browse, size)
    chooser.value.set_files(files=[{"name": name, "mimeType": "text/markdown",
                                    "buffer": NOTES}])
    ingest = sidebar.get_by_role("button", name="Ingest")  # shown once a file is listed
    ingest.wait_for(timeout=TIMEOUT)
    _scroll_to(page, ingest, size)
    _tap(page, ingest, size)
    return sidebar.get_by_test_id("stAlertContainer")


@pytest.mark.parametrize("size", SIZES)
def test_sidebar_icons_and_uploads_that_clear_then_report_unchanged(
    private_app_url: str, size: dict[str, int]  # noqa: F811
) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser, page = launch(p, size)
        try:
            page.goto(private_app_url)
            chat = page.get_by_test_id("stChatInput").locator("textarea")
            chat.wait_for(timeout=TIMEOUT)
            sidebar = _open_sidebar(page, size)
            shot(page, f"sidebar-{size['width']}.png")
            assert_material_icons(page)

            listed = sidebar.get_by_test_id("stFileUploader").get_by_text("kestrel.md")
            for expected in ("1 ingested", "1 unchanged"):
                report = _upload(page, sidebar, size, "kestrel.md")
                expect(report).to_contain_text(expected, timeout=TIMEOUT)
                expect(listed).to_have_count(0)  # the upload list cleared
                expect(sidebar.get_by_role("button", name="Ingest")).to_have_count(0)
                page.wait_for_timeout(500)  # the sidebar settles after the page ran again
                assert in_window(report.bounding_box(), size), "the report is out of view"
            shot(page, f"upload-{size['width']}.png")

            if size["width"] < PHONE_MAX:  # closed with its own control: the chat is back
                close = sidebar.get_by_test_id("stSidebarCollapseButton").get_by_role(
                    "button")
                _scroll_to(page, close, size)
                _tap(page, close, size)
                page.wait_for_function(SIDEBAR_FOLDED, timeout=10_000)
                _tap(page, chat, size)
                expect(chat).to_be_focused()
        finally:
            browser.close()
