"""Unknown input keys of a compiled graph are errors, not silently dropped.

LangGraph keeps only the input schema's keys when a run starts (``{"question": ...}`` to the
query graph became an empty input, reported as "query is empty"), and it does so before any
node runs, for TypedDict and pydantic input schemas alike. The one place that still sees the
raw input is the graph's entry (the ``__start__`` node, which reads the whole input from the
``__start__`` channel and writes the schema's keys to the state): :func:`refuse_unknown_keys`
puts a check in front of its writers, so a wrong key fails the run at once, with one line
naming the key and the closest accepted one ("unknown field 'question'; did you mean
'query'?"). ``graph.invoke``, ``graph.stream`` and a ``langgraph dev`` server's runs all enter
there; resuming with ``None`` or a ``Command`` passes through unchecked. A graph may add its
own check of the values there (``validate``: types, empty input, control characters), so a
bad input fails before any node runs, reads or writes.

Both graphs raise a subclass of :class:`GraphInputError` for input the caller must change
(``InvalidQueryError``, ``InvalidIndexingInputError``): every surface shows its one line and
logs it as one line, without a traceback.

The check is a :class:`InputCheck`: a ``RunnableLambda`` hashed by identity, because
``get_graph()`` (what LangGraph Studio's graph view and ``GET /assistants/{id}/graph`` call)
keeps the entry's writers in a set, and a plain ``RunnableLambda`` (it defines ``__eq__``)
is unhashable.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any, get_type_hints

from langchain_core.runnables import RunnableLambda
from langgraph.constants import START
from langgraph.graph.state import CompiledStateGraph


class GraphInputError(ValueError):
    """A graph input the caller must change; ``str()`` is one line saying what and how."""


class InputCheck(RunnableLambda):
    """The entry's input check, hashable (by identity) so the graph can be drawn."""

    __hash__ = object.__hash__


def unknown_field_message(unknown: Sequence[str], known: Sequence[str]) -> str:
    """One line naming the unknown keys (the first with the closest known one) and the
    accepted keys."""
    first = str(unknown[0])[:40]
    near = difflib.get_close_matches(first, list(known), n=1, cutoff=0.3)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
    return (f"unknown field {first!r}{more}{hint or '.'} "
            f"Accepted fields: {', '.join(known)}.")


def input_keys(schema: type) -> list[str]:
    """The keys a TypedDict input schema accepts (inherited ones included)."""
    return list(get_type_hints(schema))


def refuse_unknown_keys(
    graph: CompiledStateGraph, schema: type, error: type[Exception] = GraphInputError,
    validate: Callable[[dict[str, Any]], None] | None = None,
) -> CompiledStateGraph:
    """``graph`` (changed in place) with an input check at its entry: a dict input with a key
    ``schema`` does not declare raises ``error``; then ``validate`` (when given) checks the
    dict's values and raises its own one-line error (see the module docstring)."""
    known = input_keys(schema)
    accepted = frozenset(known)

    def check_input(value: Any) -> Any:
        if isinstance(value, dict):
            unknown = [str(k) for k in value if k not in accepted]
            if unknown:
                raise error(unknown_field_message(unknown, known))
            if validate is not None:
                validate(value)
        return value

    start = graph.nodes[START]
    graph.nodes[START] = start.copy(
        {"writers": [InputCheck(check_input, name="check_input"), *start.writers]})
    return graph
