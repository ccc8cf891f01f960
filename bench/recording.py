"""What the offline bench scripts share: the query graph's searches recorded while they run,
and the ``dump`` / ``score`` command line."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from graph_flows.query import nodes


@contextmanager
def recorded_searches() -> Iterator[list[dict[str, Any]]]:
    """Every retrieval round's search result (``nodes._search``, its result unchanged), in
    order, appended to the yielded list while the block runs; the search restored after."""
    seen: list[dict[str, Any]] = []
    search = nodes._search

    def recorded(*args: Any) -> dict[str, Any]:
        found = search(*args)
        seen.append(found)
        return found

    nodes._search = recorded  # type: ignore[assignment]
    try:
        yield seen
    finally:
        nodes._search = search  # type: ignore[assignment]


def dump_score_parser(description: str) -> tuple[argparse.ArgumentParser,
                                                 argparse._SubParsersAction]:
    """A parser with ``dump --questions --scope --out`` (and ``score``, to be given its
    arguments by the caller); the subcommand lands in ``cmd``."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--questions", type=Path, required=True)
    d.add_argument("--scope", required=True)
    d.add_argument("--out", type=Path, required=True)
    return parser, sub
