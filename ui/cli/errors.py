"""How `krag` fails: every error is one line on stderr that starts with ``error:``.

Expected failures (bad input, a bad setting, an unknown source, an unreachable database or
model) print their own message; command-line usage errors print click's message and where
the help is; anything else prints its kind and first line (``krag --verbose`` adds the
traceback). Nothing heavy is imported here: `krag` must answer fast.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graph_flows.shared.control_chars import control_message

log = logging.getLogger(__name__)

PREFIX = "error: "
# Exception classes whose message is written for the user (module, class name). Looked up
# only in modules already imported: an error of a class that was never imported cannot have
# been raised, and importing the query or storage stack just to classify would be slow.
USER_ERRORS = (
    ("ui.cli.errors", "UserError"),
    ("graph_flows.shared.settings", "SettingsError"),
    ("graph_flows.shared.model_specs", "ProviderError"),
    ("graph_flows.shared.dates", "DateParseError"),
    ("graph_flows.shared.embeddings", "EmbeddingModelError"),
    ("graph_flows.services.errors", "RequestError"),
    ("graph_flows.shared.graph_input", "GraphInputError"),  # both graphs' input errors
    ("graph_flows.query.analyze", "InvalidQueryError"),
    ("storage.errors", "StorageError"),
)


class UserError(Exception):
    """An error whose message is one line for the user (exit code 2)."""


class BadInputError(UserError, ValueError):
    """Input the user must fix (a path, an option value); ``str()`` is one line."""


def missing_path(paths: Sequence[Path]) -> None:
    """Raise :class:`BadInputError` for the first path that holds a control character or
    does not exist."""
    for path in paths:
        if message := control_message(f"path {str(path)[:60]!r}", str(path)):
            raise BadInputError(message)
        if not path.exists():
            raise BadInputError(f"no such file or folder: {path}")


def plain_options(**values: str | None) -> None:
    """Raise :class:`BadInputError` for the first option value holding a control character
    (the words every surface uses: graph_flows.shared.control_chars)."""
    for option, value in values.items():
        if value and (message := control_message(option, value)):
            raise BadInputError(message)


def _user_error_classes() -> tuple[type[BaseException], ...]:
    found = []
    for module, name in USER_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def first_line(exc: BaseException) -> str:
    """The first non-empty line of ``str(exc)`` (empty when there is none)."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), "")


def click_message(exc: Any) -> str:
    """A click/typer error as one line: its message, then (usage errors) where the help is."""
    ctx = getattr(exc, "ctx", None)
    where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    return " ".join(exc.format_message().split()) + where


def describe(exc: BaseException) -> tuple[str, int]:
    """(the line after ``error:``, the exit code) for an exception a command raised."""
    from typer import TyperException

    if isinstance(exc, TyperException):
        return click_message(exc), exc.exit_code
    if isinstance(exc, _user_error_classes()):
        return first_line(exc) or type(exc).__name__, 2
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}", 1
    text = first_line(exc)
    return (f"unexpected {type(exc).__name__}" + (f": {text}" if text else "")
            + " (krag --verbose shows the traceback)", 1)


def report(exc: BaseException) -> int:
    """Print ``error: ...`` for ``exc`` on stderr, log the cause; the exit code."""
    message, code = describe(exc)
    sys.stderr.write(PREFIX + message + "\n")
    if log.isEnabledFor(logging.DEBUG):  # krag --verbose: the cause, after the one line
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    return code
