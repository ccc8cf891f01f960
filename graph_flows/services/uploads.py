"""Uploaded files into the knowledge graph: checks, safe names, one ingest run."""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings

log = logging.getLogger(__name__)


def check_upload(name: str, size: int, settings: Settings) -> str | None:
    """Why an upload is refused, or None when it is acceptable."""
    from graph_flows.indexing.documents.loaders import SUPPORTED_SUFFIXES

    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        return (f"{name}: unsupported file type '{suffix or 'none'}' "
                f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    if size > settings.max_upload_mb * 1024 * 1024:
        return (f"{name}: {size / 1024 / 1024:.1f} MB is over the "
                f"{settings.max_upload_mb} MB limit (KRAG_MAX_UPLOAD_MB)")
    if size == 0:
        return f"{name}: the file is empty"
    return None


def safe_filename(name: str) -> str:
    """A plain file name for an uploaded file (no directories, no odd characters)."""
    base = Path(name.replace("\\", "/")).name
    stem, suffix = Path(base).stem, Path(base).suffix.lower()
    stem = re.sub(r"[^A-Za-z0-9._ -]+", "_", stem).strip(" .") or "upload"
    return stem[:100] + suffix


def ingest_uploads(
    files: list[tuple[str, bytes]], scope: str, resources: Resources,
    on_progress: Callable[[dict[str, int]], Any] | None = None, poll_s: float = 0.3,
) -> dict[str, Any]:
    """Ingest ``(name, bytes)`` files into ``scope`` with ``resources``; progress snapshots
    (see :func:`graph_flows.services.ingest.ingest`) go to ``on_progress`` from a poller
    thread. Returns the run output (``failures`` included)."""
    with tempfile.TemporaryDirectory(prefix="krag-upload-") as tmp:
        paths = []
        for name, data in files:
            path = Path(tmp) / safe_filename(name)
            path.write_bytes(data)
            paths.append(str(path))
        with use_resources(resources):
            return runner.ingest({"paths": paths, "scope": scope}, IndexingContext(),
                                 on_progress=on_progress, poll_s=poll_s)
