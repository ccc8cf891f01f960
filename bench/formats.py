"""Every file of the supported formats under a folder: what ingests, what fails and why.

Usage::

    python -m bench.formats FOLDER [--only .docx,.xlsx] [--ingest] [--max-mb 50] [--json OUT]

Walks FOLDER (recursively, hidden entries skipped) and, for each file whose type krag reads
(:data:`graph_flows.indexing.documents.loaders.SUPPORTED_SUFFIXES`), runs the loader as an
ingest does: load (conversion to Markdown), clean, chunk. Per format it reports files,
loaded, failed (each failure's one-line reason), characters of cleaned text, chunks, and
seconds of load + clean + chunk. ``--only`` takes the files with the listed suffixes,
supported or not (a run of older code then counts what it refuses).

``--ingest`` then ingests each format's files through the ingest service as ``krag
ingest`` does (no-LLM when ``KRAG_CHAT_MODEL=none``; the database of ``KRAG_DATA_DIR`` or
``KRAG_DATABASE_URL``; source ``bench-formats-<format>``) and adds documents stored,
skipped and seconds per format. The corpus is read where it is, never copied.

Prints a Markdown table (and the failures); ``--json OUT`` writes the per-file details.
Measured on the Unstructured project's ``example-docs/`` (Apache-2.0): docs/BENCHMARKS.md,
command F1.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from graph_flows.indexing.documents.chunking import chunk_text
from graph_flows.indexing.documents.clean import clean_text
from graph_flows.indexing.documents.loaders import SUPPORTED_SUFFIXES, load_file
from graph_flows.indexing.documents.types import LoadFailure

MB = 1 << 20


def files_by_format(folder: Path, suffixes: set[str] | frozenset[str]
                    ) -> dict[str, list[Path]]:
    """Files under ``folder`` with one of ``suffixes``, by suffix, each list sorted."""
    found: dict[str, list[Path]] = defaultdict(list)
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in names:
            path = Path(root) / name
            if not name.startswith(".") and path.suffix.lower() in suffixes:
                found[path.suffix.lower()].append(path)
    return {k: sorted(v) for k, v in sorted(found.items())}


def load_one(path: Path, max_bytes: int) -> dict[str, Any]:
    """Load, clean and chunk one file as the indexing graph does; what came of it."""
    started = time.perf_counter()
    chars = chunks = parts = 0
    reason = None
    for item in load_file(path, max_bytes=max_bytes):
        if isinstance(item, LoadFailure):
            reason = item.reason
            continue
        text = clean_text(item.text)
        if not text.strip():
            reason = "no text left after cleaning; skipped"
            continue
        parts += 1
        chars += len(text)
        chunks += len(chunk_text(text))
    return {"file": str(path), "ok": reason is None, "reason": reason, "parts": parts,
            "chars": chars, "chunks": chunks, "seconds": time.perf_counter() - started}


def ingest_format(paths: list[Path], suffix: str) -> dict[str, Any]:
    """Ingest ``paths`` through the ingest service (one run); counts and seconds."""
    from graph_flows.indexing.context import IndexingContext
    from graph_flows.services import ingest as runner

    started = time.perf_counter()
    out = runner.ingest({"paths": [str(p) for p in paths],
                         "source": f"bench-formats-{suffix.lstrip('.')}"},
                        IndexingContext(), workers=1)
    docs = out.get("documents", {})
    return {"stored": sum(docs.get(k, 0) for k in ("new", "changed", "unchanged")),
            "skipped": docs.get("skipped", 0),
            "chunks_failed": out.get("chunks", {}).get("failed", 0),
            "ingest_seconds": time.perf_counter() - started}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"files": len(rows), "loaded": sum(r["ok"] for r in rows),
            "failed": sum(not r["ok"] for r in rows), "chars": sum(r["chars"] for r in rows),
            "chunks": sum(r["chunks"] for r in rows),
            "seconds": sum(r["seconds"] for r in rows)}


def table(summary: dict[str, dict[str, Any]]) -> str:
    ingest = any("stored" in s for s in summary.values())
    head = "| format | files | loaded | failed | characters | chunks | load s |"
    if ingest:
        head += " stored | skipped | ingest s |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for suffix, s in summary.items():
        line = (f"| {suffix} | {s['files']} | {s['loaded']} | {s['failed']} | "
                f"{s['chars']:,} | {s['chunks']:,} | {s['seconds']:.2f} |")
        if ingest:
            line += f" {s.get('stored', '')} | {s.get('skipped', '')} | " \
                    f"{s.get('ingest_seconds', 0):.1f} |"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--ingest", action="store_true",
                        help="also ingest each format's files through the ingest service")
    parser.add_argument("--only", default="", help="comma-separated suffixes (default: all)")
    parser.add_argument("--max-mb", type=int, default=50, help="KRAG_MAX_UPLOAD_MB")
    parser.add_argument("--json", type=Path, help="write the per-file details here")
    args = parser.parse_args(argv)
    os.environ.setdefault("KRAG_MAX_UPLOAD_MB", str(args.max_mb))
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # per-font warnings, not failures
    only = {s.strip().lower() for s in args.only.split(",") if s.strip()}
    groups = files_by_format(args.folder, only or SUPPORTED_SUFFIXES)
    rows = {s: [load_one(p, args.max_mb * MB) for p in paths] for s, paths in groups.items()}
    summary = {s: summarise(r) for s, r in rows.items()}
    if args.ingest:
        for suffix, paths in groups.items():
            summary[suffix].update(ingest_format(paths, suffix))
    print(table(summary))
    print()
    for suffix, file_rows in rows.items():
        for r in file_rows:
            if not r["ok"]:
                print(f"- {suffix} {Path(r['file']).relative_to(args.folder)}: {r['reason']}")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "files": rows}, indent=1))


if __name__ == "__main__":
    main()
