"""The HTTP app ``langgraph dev`` / LangGraph Server merge into theirs (``http.app`` in
langgraph.json): no routes, only a shutdown hook.

On SIGTERM uvicorn shuts down gracefully and then re-raises the signal with the default
handler, so the process dies without running atexit handlers and would leave its PID in
the embedded PostgreSQL handle list (the server would keep running). The lifespan's
shutdown closes the graphs' default resources first, releasing the handle.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from graph_flows.shared.resources import close_default


@asynccontextmanager
async def lifespan(_app: Starlette) -> AsyncIterator[None]:
    """Nothing at startup (resources are built on first use); release them at shutdown."""
    try:
        yield
    finally:
        await asyncio.to_thread(close_default)  # blocking I/O off the event loop


app = Starlette(lifespan=lifespan)
