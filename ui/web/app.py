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

VIEWS = Path(__file__).resolve().parent / "views"


def main() -> None:
    st.set_page_config(page_icon="🕸️", layout="wide")
    st.navigation([
        st.Page(VIEWS / "chat.py", title="Chat", icon="💬", default=True),
        st.Page(VIEWS / "explore.py", title="Explore", icon="🔎"),
    ]).run()


main()
