"""krag web UI: the Chat and Explore pages (``krag ui`` runs this file).

The entry point only sets the layout and the navigation; each page is a script in
:mod:`ui.web.views` and takes its browser title from ``st.Page`` ("Chat", "Explore").
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __package__ in (None, "") and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `streamlit run ui/web/app.py` from a checkout

import streamlit as st  # noqa: E402

from graph_flows.shared.reads import use_session  # noqa: E402
from ui.web import scroll, state  # noqa: E402

VIEWS = Path(__file__).resolve().parent / "views"


# A dialog (the enlarged diagram) never taller than the window: below its title bar, its
# body scrolls instead (3rem above and below the dialog, 4.5rem of title bar).
DIALOG_CSS = ('section[role="dialog"] > div:has(> [data-testid="stVerticalBlock"]) '
              '{ max-height: calc(100dvh - 10.5rem); overflow-y: auto; }')
# A frame sized to its content starts 1 px tall (not 150 px, nor its parent's height) until
# its page says how tall it is: Streamlit measures at least the frame's own height, so a
# frame never became shorter than it started.
FRAME_CSS = 'iframe.stIFrame:not([height]) { height: 1px; }'


def main() -> None:
    # icons from Streamlit's own Material Symbols font: no emoji font needed
    st.set_page_config(page_icon=":material/hub:", layout="wide")
    st.html(f"<style>{DIALOG_CSS} {FRAME_CSS} {scroll.HIDE_CSS}</style>")
    page = st.navigation([
        st.Page(VIEWS / "chat.py", title="Chat", icon=":material/chat:", default=True),
        st.Page(VIEWS / "explore.py", title="Explore", icon=":material/hub:"),
    ])
    with use_session(state.read_session()):  # the page's reads: this session's own writes
        page.run()


main()
