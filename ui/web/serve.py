"""The Streamlit server of ``krag ui``, with the models loaded before it serves.

``python -m ui.web.serve run ui/web/app.py [streamlit options]`` loads the query graph, the
embedding model and the spaCy pipeline into this process
(:func:`graph_flows.services.warm.warm_models`) and imports what Streamlit itself imports on
the first answer (:func:`preload_streamlit`), then hands the arguments to Streamlit's own
command line, as ``python -m streamlit`` would. The page's cached resources
(:func:`ui.web.backend.open_resources`) then find the models loaded, and the first question
does not wait for them. A failure to load is logged and the server starts anyway.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)


def preload_streamlit() -> None:
    """Import what Streamlit imports on a page's first streamed answer: ``st.write_stream``
    checks its argument against dataframe types, which imports pandas and pyarrow (seconds
    on a busy machine, measured in the first question's run)."""
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401


def warm() -> None:
    """Load the models of the configured settings (a bad setting is left to the page)."""
    from graph_flows.services.warm import warm_models
    from graph_flows.shared.settings import load_settings

    try:
        settings = load_settings()
    except Exception:  # noqa: BLE001 - the page shows the bad setting as one line
        log.warning("settings unusable; models not loaded before serving", exc_info=True)
        return
    print("krag ui: loading models…", file=sys.stderr, flush=True)
    log.info("models loaded (seconds): %s", warm_models(settings))
    import ui.web.backend  # noqa: F401 - the pages' modules, imported once here

    preload_streamlit()


def main() -> None:
    warm()
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
