"""Streamed text regrouped into documents of bounded size ("parts").

Shared by the plain-text loader and the converters of structured formats
(:mod:`~graph_flows.indexing.documents.formats`): a text longer than ``max_bytes`` becomes
several documents, ``<uri>#part=<n>``, each Markdown part after the first starting with the
heading path in force where it was cut (see :mod:`~graph_flows.indexing.documents.loaders`).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import Any

from graph_flows.indexing.documents.chunking import heading_path
from graph_flows.indexing.documents.types import LoadedDocument, LoadFailure, LoadResult


def markdown_title(text: str) -> str | None:
    """The text of the first Markdown heading, if any."""
    path = heading_path(_first_heading_region(text))
    return path[0].lstrip("#").strip() if path else None


def _first_heading_region(text: str) -> str:
    """The text up to (and including) its first heading line, to bound the scan."""
    for line in text.split("\n"):
        if line.lstrip().startswith("#") and line.strip("# \t"):
            return text[: text.index(line) + len(line)]
    return ""


def split_parts(blocks: Iterator[str], limit: int, breaks: tuple[str, ...]) -> Iterator[str]:
    """Regroup streamed text into pieces of at most ``limit`` characters.

    A piece ends at the last of ``breaks`` (tried in order) found in its second half, else it
    is cut at exactly ``limit``. Memory holds at most one piece plus one block.
    """
    buffer = ""
    for block in blocks:
        buffer += block
        while len(buffer) > limit:
            cut = _cut_point(buffer, limit, breaks)
            yield buffer[:cut]
            buffer = buffer[cut:]
    if buffer:
        yield buffer


def _cut_point(text: str, limit: int, breaks: tuple[str, ...]) -> int:
    """Index just after the best break within ``text[:limit]`` (its second half), else limit."""
    for mark in breaks:
        index = text.rfind(mark, limit // 2, limit - len(mark) + 1)
        if index >= 0:
            return index + len(mark)
    return limit


def as_documents(
    parts: Iterator[str], uri: str, stem: str, meta: dict[str, Any], markdown: bool,
    title: str | None = None,
) -> Iterator[LoadResult]:
    """One document when the first part is the whole text, else numbered parts.

    Title: ``title`` when given, else (Markdown) the first heading, else ``stem``."""
    first = next(parts, "")
    second = next(parts, None)
    title = title or (markdown_title(first) if markdown else None) or stem
    if second is None:
        if not first.strip():
            yield LoadFailure(uri, "no text (only whitespace); nothing to index")
        else:
            yield LoadedDocument(uri, title, first, {**meta, "chars": len(first)})
        return
    path: list[str] = []
    for number, part in enumerate(chain([first, second], parts), start=1):
        header = "\n".join(path) + "\n\n" if path else ""
        if markdown:
            path = heading_path(part, path)
        if part.strip():
            yield LoadedDocument(
                f"{uri}#part={number}",
                f"{title} (part {number})",
                header + part,
                {**meta, "part": number, "source_uri": uri, "chars": len(part)},
            )


