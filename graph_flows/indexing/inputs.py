"""The indexing graph's input, checked at its entry before any node reads or writes.

Like the query graph's (:func:`graph_flows.query.analyze.check_request`), a bad input is one
line in a typed error, :class:`InvalidIndexingInputError`, and nothing is stored:

- types as :class:`~graph_flows.indexing.state.InputState` declares them: ``paths`` a list
  of non-empty strings, ``texts`` a list of non-empty strings (a bare string is not taken
  for a list of characters), ``records`` a list of ``{"uri", "text", "title"?}`` objects
  (a record's empty text is skipped and reported, as an empty file is), ``source`` and
  ``scope`` strings, ``retry_failed`` and ``extract`` booleans;
- control characters (:mod:`graph_flows.shared.control_chars`) in a path, a record's uri,
  the source or the scope (identities and names); a scope name the store would refuse;
- nothing to do: no paths, texts or records (or only empty lists), unless the run names the
  scope or source whose pending chunks it extracts (a worker: ``{"scope": ..., "source":
  ...}``) or asks to retry failed chunks; ``extract: false`` with no documents.

Document text and titles are not refused for control characters: cleaning removes them (a
NUL included), for texts, records and files alike (``sync_documents``).
"""

from __future__ import annotations

from typing import Any

from graph_flows.shared.control_chars import control_message
from graph_flows.shared.graph_input import GraphInputError
from graph_flows.shared.scoped import check_scope
from storage import InvalidInputError

DOCUMENT_KEYS = ("paths", "texts", "records")
RECORD_KEYS = frozenset({"uri", "text", "title"})
NOTHING = ("nothing to ingest: give paths, texts or records (a run that only extracts "
           "chunks already stored names their scope or source).")


class InvalidIndexingInputError(GraphInputError):
    """An indexing input the caller must change; ``str()`` is one line."""


def _refuse(message: str | None) -> None:
    if message:
        raise InvalidIndexingInputError(message)


def _strings(value: Any, key: str, what: str) -> list[str]:
    """``value`` when it is a list of non-empty strings, else a one-line error."""
    if not isinstance(value, list):
        raise InvalidIndexingInputError(
            f"{key} must be a list of {what}s, got {type(value).__name__} "
            f"{str(value)[:40]!r}; e.g. {key}: [\"...\"].")
    for n, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise InvalidIndexingInputError(
                f"{key}[{n}] must be a non-empty string ({what}), got {str(item)[:40]!r}.")
    return value


def _records(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InvalidIndexingInputError(
            f"records must be a list of {{\"uri\", \"text\", \"title\"?}} objects, got "
            f"{type(value).__name__}.")
    for n, rec in enumerate(value):
        if not isinstance(rec, dict):
            raise InvalidIndexingInputError(
                f"records[{n}] must be an object with uri, text and (optionally) title.")
        unknown = sorted(str(k) for k in rec if k not in RECORD_KEYS)
        if unknown:
            raise InvalidIndexingInputError(
                f"records[{n}] has an unknown key {unknown[0][:40]!r}; a record has uri, "
                "text and (optionally) title.")
        if not isinstance(rec.get("uri"), str) or not rec["uri"].strip():
            raise InvalidIndexingInputError(f"records[{n}].uri must be a non-empty string.")
        _refuse(control_message(f"records[{n}].uri", rec["uri"]))
        if not isinstance(rec.get("text"), str):  # an empty one is skipped and reported
            raise InvalidIndexingInputError(f"records[{n}].text must be a string.")
        if rec.get("title") is not None and not isinstance(rec["title"], str):
            raise InvalidIndexingInputError(f"records[{n}].title must be a string or null.")
    return value


def _name(value: dict[str, Any], key: str) -> str | None:
    """The optional ``source`` or ``scope``: a string without control characters (a scope
    also a valid scope name), or None."""
    name = value.get(key)
    if name is None:
        return None
    if not isinstance(name, str):
        raise InvalidIndexingInputError(f"{key} must be a string, got {str(name)[:40]!r}.")
    _refuse(control_message(key, name))
    if key == "scope" and name:
        try:
            check_scope(name)
        except InvalidInputError as exc:
            raise InvalidIndexingInputError(str(exc)) from None
    return name or None


def check_input(value: dict[str, Any]) -> None:
    """Refuse a bad indexing input (see the module docstring) with one line."""
    for key in ("retry_failed", "extract"):
        if key in value and not isinstance(value[key], bool):
            raise InvalidIndexingInputError(
                f"{key} must be true or false, got {str(value[key])[:40]!r}.")
    documents = 0
    if value.get("paths") is not None:
        for n, path in enumerate(_strings(value["paths"], "paths", "file or folder path")):
            _refuse(control_message(f"paths[{n}]", path))
            documents += 1
    if value.get("texts") is not None:
        documents += len(_strings(value["texts"], "texts", "document text"))
    if value.get("records") is not None:
        documents += len(_records(value["records"]))
    names = [_name(value, "source"), _name(value, "scope")]
    if documents:
        return
    if any(value.get(k) is not None for k in DOCUMENT_KEYS):
        raise InvalidIndexingInputError(
            "nothing to ingest: the paths, texts and records given are empty; give at "
            "least one.")
    if value.get("extract") is False:
        raise InvalidIndexingInputError(
            "nothing to do: extract is false and no paths, texts or records are given.")
    if not any(names) and not value.get("retry_failed"):
        raise InvalidIndexingInputError(NOTHING)
