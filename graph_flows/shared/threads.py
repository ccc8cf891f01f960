"""Thread pools whose tasks run in the submitting request's context.

A plain :class:`~concurrent.futures.ThreadPoolExecutor` runs each task in the worker
thread's own context, without the request's ContextVars: its resources
(:mod:`graph_flows.shared.resources`) and, above all, its database access
(:mod:`storage.access`), so a search run there would see no scoped row. Use
:class:`ContextThreadPool` (or :func:`in_context` for a plain thread) instead.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class ContextThreadPool(ThreadPoolExecutor):
    """A ThreadPoolExecutor running each task in a copy of the submitter's context."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        """Run ``fn(*args, **kwargs)`` in a copy of the current context."""
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def in_context(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` bound to a copy of the current context (a target for ``threading.Thread``)."""
    ctx = contextvars.copy_context()
    return lambda *args, **kwargs: ctx.run(fn, *args, **kwargs)
