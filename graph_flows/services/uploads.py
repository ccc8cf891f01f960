"""Uploaded files into the knowledge graph: checks, safe names, one ingest run, a report.

Uploaded files are kept under ``<data_dir>/uploads/<scope>/`` (``KRAG_DATA_DIR``): the
stored path is the document's identity, so uploading a file again updates that document
rather than adding a copy, and no temporary path ever reaches the graph or the user.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.shared.control_chars import CONTROL
from graph_flows.shared.resources import Resources, use_resources
from graph_flows.shared.settings import Settings

log = logging.getLogger(__name__)


def check_upload(name: str, size: int, settings: Settings) -> str | None:
    """Why an upload is refused (one line, without the file name), or None when it is
    acceptable."""
    from graph_flows.indexing.documents.loaders import SUPPORTED_SUFFIXES

    if found := CONTROL.search(name):
        return (f"the file name contains a control character (U+{ord(found.group()):04X}); "
                "rename the file")
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        return (f"unsupported file type '{suffix or 'none'}' "
                f"(supported: {', '.join(sorted(SUPPORTED_SUFFIXES))})")
    if size > settings.max_upload_mb * 1024 * 1024:
        return (f"{size / 1024 / 1024:.1f} MB is over the "
                f"{settings.max_upload_mb} MB limit (KRAG_MAX_UPLOAD_MB)")
    if size == 0:
        return "the file is empty"
    return None


def safe_filename(name: str) -> str:
    """A plain file name for an uploaded file (no directories, no odd characters)."""
    base = Path(name.replace("\\", "/")).name
    stem, suffix = Path(base).stem, Path(base).suffix.lower()
    stem = re.sub(r"[^A-Za-z0-9._ -]+", "_", stem).strip(" .") or "upload"
    return stem[:100] + suffix


def upload_dir(settings: Settings, scope: str) -> Path:
    """Where the uploads of ``scope`` are kept (created on demand)."""
    folder = Path(settings.data_dir) / "uploads" / (safe_filename(scope).strip("_") or "scope")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ingest_uploads(
    files: list[tuple[str, bytes]], scope: str, resources: Resources,
    on_progress: Callable[[dict[str, int]], Any] | None = None, poll_s: float = 0.3,
) -> dict[str, Any]:
    """Store ``(name, bytes)`` files under :func:`upload_dir` and ingest them into ``scope``
    with ``resources``; progress snapshots (see :func:`graph_flows.services.ingest.ingest`)
    go to ``on_progress`` from a poller thread; files the run skipped are not kept. Returns
    the run output (``failures`` included) with ``files``: the stored name of each uploaded
    file, in order."""
    folder = upload_dir(resources.settings, scope)
    paths = []
    for name, data in files:
        path = folder / safe_filename(name)
        path.write_bytes(data)
        paths.append(str(path))
    with use_resources(resources):
        # one process: the upload's resources are this request's, which worker processes
        # (built from the environment) would not share
        out = runner.ingest({"paths": paths, "scope": scope}, IndexingContext(), workers=1,
                            on_progress=on_progress, poll_s=poll_s)
    skipped = {file_name(str(f.get("uri", ""))) for f in out.get("failures") or []
               if not f.get("chunk_id")}
    for path in paths:
        if Path(path).name in skipped:  # not in the graph: nothing to keep it for
            Path(path).unlink(missing_ok=True)
    return {**out, "files": [Path(p).name for p in paths]}


def file_name(uri: str) -> str:
    """The file name of a document URI or path (``file:///x/y/notes.md`` -> ``notes.md``)."""
    path = unquote(urlsplit(uri).path) if "://" in uri else uri
    return Path(path).name or uri


@dataclass
class UploadReport:
    """What became of the files of one upload: the names the run stored (new, changed or
    unchanged), how many of them were unchanged (the same content hash as the stored
    version: nothing re-extracted, as ``krag ingest`` of the same file reports), refused
    (name, why) pairs, and chunks whose extraction failed (kept for a retry)."""

    ingested: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    failed_chunks: int = 0
    unchanged: int = 0

    @property
    def added(self) -> int:
        """Files stored as new or changed documents."""
        return max(len(self.ingested) - self.unchanged, 0)

    def line(self) -> str:
        """``2 ingested, 1 unchanged, 1 refused: notes.exe: unsupported file type '.exe'
        (...)``; ``1 unchanged`` alone when the only file was already stored as it is."""
        parts = [f"{self.added} ingested"] if self.added or not self.unchanged else []
        if self.unchanged:
            parts.append(f"{self.unchanged} unchanged")
        text = ", ".join(parts)
        if self.refused:
            why = "; ".join(f"{name}: {reason}" for name, reason in self.refused)
            text += f", {len(self.refused)} refused: {why}"
        if self.failed_chunks:
            text += (f" ({self.failed_chunks} chunk(s) failed extraction; `krag ingest "
                     f"--retry-failed` retries them)")
        return text


def upload_report(
    refused: Sequence[tuple[str, str]], out: dict[str, Any] | None,
) -> UploadReport:
    """The report of an upload: files refused before the run, then those the run skipped
    (document failures, by file name; never a path), and how many stored files were
    unchanged (the run's document counts)."""
    report = UploadReport(refused=list(refused))
    if not out:
        return report
    skipped: dict[str, str] = {}
    for failure in out.get("failures") or []:
        if failure.get("chunk_id"):
            report.failed_chunks += 1
        else:
            skipped.setdefault(file_name(str(failure.get("uri", ""))),
                               str(failure.get("reason", "")))
    report.refused += list(skipped.items())
    report.ingested = [name for name in out.get("files") or [] if name not in skipped]
    report.unchanged = min(int((out.get("documents") or {}).get("unchanged", 0)),
                           len(report.ingested))
    return report
