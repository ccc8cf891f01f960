"""The HTTP app ``langgraph dev`` / LangGraph Server merge into theirs (``http.app`` in
langgraph.json): no routes, a startup and a shutdown hook.

On SIGTERM uvicorn shuts down gracefully and then re-raises the signal with the default
handler, so the process dies without running atexit handlers and would leave its PID in
the embedded PostgreSQL handle list (the server would keep running). The lifespan's
shutdown closes the graphs' default resources first, releasing the handle.

A run refused for its input (an unknown key, an empty query, a control character: the
graphs' one-line errors, :func:`graph_flows.services.errors.is_user_error`) is logged by
the server's worker twice, each time as an error with its traceback. While the app runs,
:class:`OneLineRefusals` makes that one warning line without a traceback; any other failed
run keeps its traceback.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette

from graph_flows.services.errors import user_error_types
from graph_flows.shared.resources import close_default

WORKER_LOGGER = "langgraph_api.worker"
"""The LangGraph server's logger of failed runs (langgraph-api 0.16)."""
_FIRST = "Run encountered an error in graph"  # followed by "Background run failed" (same run)
_ERROR = re.compile(r"<class '([\w.]+)\.(\w+)'>\((.*)\)\s*$", re.DOTALL)


class OneLineRefusals(logging.Filter):
    """The worker's records of a run refused for its input: the first dropped, the second
    one warning line ("run refused: <message> (<error>)") without a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        event = record.msg if isinstance(record.msg, dict) else None
        text = str(event.get("event", "")) if event is not None else record.getMessage()
        found = _ERROR.search(text)
        if found is None or not _refusal(found[1], found[2]):
            return True
        if text.startswith(_FIRST):
            return False
        line = f"run refused: {found[3].splitlines()[0] if found[3] else ''} ({found[2]})"
        if event is not None:
            event.pop("exception", None)
            event.pop("exc_info", None)
            event.update(event=line, level="warning")
        else:
            record.msg, record.args = line, ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info, record.exc_text = None, None
        return True


def _refusal(module: str, name: str) -> bool:
    """Whether ``module.name`` is a loaded class of a user error."""
    cls: Any = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and issubclass(cls, user_error_types())


@asynccontextmanager
async def lifespan(_app: Starlette) -> AsyncIterator[None]:
    """Refusals logged as one line while serving (resources are built on first use);
    release the resources at shutdown."""
    refusals = OneLineRefusals()
    logging.getLogger(WORKER_LOGGER).addFilter(refusals)
    try:
        yield
    finally:
        logging.getLogger(WORKER_LOGGER).removeFilter(refusals)
        await asyncio.to_thread(close_default)  # blocking I/O off the event loop


app = Starlette(lifespan=lifespan)
