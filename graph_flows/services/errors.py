"""The one error type the use cases raise for input the caller must change."""

from __future__ import annotations


class RequestError(ValueError):
    """A request the caller must change (bad limit, unknown id, rejected fact, bad date).

    ``str()`` is one line that says what to change; front ends show it as it is (the MCP
    adapter as a tool error, the CLI as ``error: ...``).
    """
