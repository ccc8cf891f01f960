"""The one error type the use cases raise for input the caller must change, and how a
surface tells such a refusal from a failure when it logs it."""

from __future__ import annotations

import logging


class RequestError(ValueError):
    """A request the caller must change (bad limit, unknown id, rejected fact, bad date).

    ``str()`` is one line that says what to change; front ends show it as it is (the MCP
    adapter as a tool error, the CLI as ``error: ...``).
    """


def user_error_types() -> tuple[type[BaseException], ...]:
    """The errors whose message is written for the caller (bad input, not a fault): this
    module's, both graphs' input errors, the date parser's and the store's argument check."""
    from graph_flows.shared.dates import DateParseError
    from graph_flows.shared.graph_input import GraphInputError
    from storage.errors import InvalidInputError

    return RequestError, GraphInputError, DateParseError, InvalidInputError


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a refusal of the caller's input (see :func:`user_error_types`)."""
    return isinstance(exc, user_error_types())


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``str(exc)``."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")


def log_failure(log: logging.Logger, what: str, exc: BaseException) -> None:
    """Log a failed request on a server: bad input as one warning line (no traceback, the
    caller was told), anything else with its traceback."""
    if is_user_error(exc):
        log.warning("%s refused: %s (%s)", what, first_line(exc), type(exc).__name__)
    else:
        log.warning("%s failed", what, exc_info=exc)
