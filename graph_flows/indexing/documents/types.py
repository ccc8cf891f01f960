"""What a loader yields: a document's text, or one line saying why a file was skipped.

Shared by :mod:`~graph_flows.indexing.documents.loaders` and
:mod:`~graph_flows.indexing.documents.pdf` (kept apart so neither imports the other's types).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class LoadedDocument:
    """A document's text, ready for cleaning and chunking."""

    uri: str
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadFailure:
    """A file that could not be loaded; ``reason`` is one line for the user."""

    uri: str
    reason: str


LoadResult = LoadedDocument | LoadFailure
