"""Bring the newest question and its answer into view (issue 40: a new answer was drawn below
the window when the chat was long), and the sidebar's upload report.

Streamlit follows the bottom of the page only while the reader is already there, and an
answer with a diagram and its panels is taller than a window: its start scrolled away.
:func:`show_latest_question` puts the latest question at the top of the window (below the
app's header) and keeps it there while the chat below it grows (:data:`HOLD_MS`), so the
answer under it is read from its start. It is called when the question is asked (the answer
streams in below it) and again when the answer is complete.

:func:`show_upload_report` keeps the upload report in the sidebar's view: on a phone the
sidebar is a window-tall overlay scrolled down to the Ingest button, and the report drawn
where the button was (longer, when files were refused) ended below the window's edge.

The scripts are constants (no text of the user's or the documents'), run by ``st.html`` in the
page; its element is hidden by :data:`HIDE_CSS` (applied once by :mod:`ui.web.app`).
"""

from __future__ import annotations

import streamlit as st

MARKER = "krag-scroll"
HOLD_MS = 15_000
"""How long the question is held at the top while the chat below it grows (the answer
streaming, its diagram's frame taking its drawing's height), unless the reader scrolls,
types or clicks first, or the page runs again."""
SETTLE_MS = 150
"""The page is still when nothing grew or scrolled for this long."""
HIDE_CSS = f'[data-testid="stElementContainer"]:has(.{MARKER}) {{ display: none; }}'
SCRIPT = """<span class="%(marker)s" data-step="%(step)s"></span><script>
(() => {
  const mark = '.%(marker)s[data-step="%(step)s"]';
  const latest = () => {
    const users = document.querySelectorAll('[data-testid="stChatMessageAvatarUser"]');
    const last = users.length ? users[users.length - 1] : null;
    return last && last.closest('[data-testid="stChatMessage"]');
  };
  const msg = latest();
  if (!msg) return;
  const scroller = msg.closest('[data-testid="stAppScrollToBottomContainer"]') || window;
  const events = ["wheel", "touchmove", "keydown", "mousedown"];
  let timer = 0;
  const place = () => {
    const now = latest();
    if (!now || !document.querySelector(mark)) return stop();
    now.style.scrollMarginTop = "4.5rem";  /* below the app's header */
    now.scrollIntoView({block: "start"});
  };
  /* placed once the page is still: Streamlit follows the bottom while the chat grows and
     stops following once the view was moved while nothing changed size */
  const settle = () => { clearTimeout(timer); timer = setTimeout(place, %(settle_ms)d); };
  const grows = new ResizeObserver(settle);
  function stop() {
    clearTimeout(timer);
    grows.disconnect();
    scroller.removeEventListener("scroll", settle);
    events.forEach((e) => window.removeEventListener(e, stop, true));
  }
  grows.observe(msg.parentElement);  /* the chat grows: the answer, its diagram's frame */
  scroller.addEventListener("scroll", settle, {passive: true});
  events.forEach((e) => window.addEventListener(e, stop, true));  /* the reader takes over */
  setTimeout(stop, %(hold_ms)d);
  settle();
})();
</script>"""


def show_latest_question(step: str) -> None:
    """Scroll the latest question to the top of the window; ``step`` makes this call's
    element differ from the last one's, so the browser runs the script again."""
    st.html(SCRIPT % {"marker": MARKER, "step": step, "hold_ms": HOLD_MS,
                      "settle_ms": SETTLE_MS},
            unsafe_allow_javascript=True)


REPORT_HOLD_MS = 3_000
"""How long the report is kept in view while the sidebar settles after the page ran again
(the emptied upload list and the Ingest button leave it), unless the reader takes over."""
REPORT_SCRIPT = """<span class="%(marker)s" data-step="%(step)s"></span><script>
(() => {
  const mark = '.%(marker)s[data-step="%(step)s"]';
  const box = document.querySelector('[data-testid="stSidebarContent"]');
  if (!box) return;
  const events = ["wheel", "touchmove", "keydown", "mousedown"];
  const place = () => {
    const alerts = box.querySelectorAll('[data-testid="stAlertContainer"]');
    if (!alerts.length || !document.querySelector(mark)) return stop();
    alerts[alerts.length - 1].scrollIntoView({block: "nearest"});
  };
  const grows = new ResizeObserver(place);
  function stop() {
    grows.disconnect();
    events.forEach((e) => window.removeEventListener(e, stop, true));
  }
  [...box.children].forEach((child) => grows.observe(child));
  events.forEach((e) => window.addEventListener(e, stop, true));  /* the reader takes over */
  setTimeout(stop, %(hold_ms)d);
  place();
})();
</script>"""


def show_upload_report(step: str) -> None:
    """Scroll the sidebar (only as far as needed) to show the upload report drawn above this
    call; ``step`` differs per upload so the browser runs the script again."""
    st.sidebar.html(REPORT_SCRIPT % {"marker": MARKER, "step": step,
                                     "hold_ms": REPORT_HOLD_MS},
                    unsafe_allow_javascript=True)
