"""Bodies of the indexing commands of `krag` (ingest, status, remove, reembed).

``ui/cli/app.py`` declares the options and calls these; the work is done by
:mod:`graph_flows.services.ingest` and :mod:`graph_flows.services.sources`, these print with
rich (tables; progress in :mod:`ui.cli.progress`) and raise :class:`BadInputError`
(one line, exit 2) for bad input.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from graph_flows.indexing.context import MAX_WORKERS, IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.services import sources
from graph_flows.shared.settings import load_settings
from ui.cli.errors import BadInputError, missing_path
from ui.cli.progress import DEFAULT_EVERY_S, IngestProgress

log = logging.getLogger(__name__)

SHOWN_FAILURES = 10
SHOWN_MERGES = 5


def check_paths(paths: Sequence[Path]) -> list[str]:
    """Absolute path strings; a missing one is a :class:`BadInputError`."""
    missing_path(paths)
    return [str(p.resolve()) for p in paths]


# -- ingest ---------------------------------------------------------------------------------
def ingest(
    console: Console, err: Console, paths: Sequence[Path], *, source: str | None,
    scope: str | None, workers: int | None, retry_failed: bool, context: IndexingContext,
    as_json: bool = False, show_progress: bool = True, defer_index: bool = False,
    progress_every: float = DEFAULT_EVERY_S,
) -> dict[str, Any]:
    """`krag ingest`: run the indexing graph with progress on ``err`` (a live bar on a
    terminal, a plain line every ``progress_every`` seconds otherwise), then a summary."""
    if workers is not None and not 1 <= workers <= MAX_WORKERS:
        raise BadInputError(f"--workers must be from 1 to {MAX_WORKERS} (got {workers}); "
                            "more machines can share one database (docs/GUIDE.md)")
    if progress_every <= 0:
        raise BadInputError(f"--progress-every must be > 0 seconds (got {progress_every:g})")
    check_chunking(context)
    inputs = {"paths": check_paths(paths), "source": source, "scope": scope,
              "retry_failed": retry_failed}
    progress = IngestProgress(err, every_s=progress_every,
                              enabled=show_progress and not as_json)
    with progress:
        res = runner.get_resources(context)
        if res.notice:
            err.print(res.notice, markup=False, highlight=False, soft_wrap=True)
        out = runner.ingest(inputs, context, workers=workers, on_progress=progress.update,
                            defer_index=defer_index)
    out["elapsed_s"] = round(time.monotonic() - progress.started, 2)
    out["graph"] = {k: progress.raw.get(k, 0) for k in ("entities", "relations", "total",
                                                       "completed", "failed", "pending")}
    if as_json:
        console.print_json(json.dumps(out, default=str))
    else:
        print_summary(console, out, paths)
    return out


def check_chunking(context: IndexingContext) -> None:
    """``--chunk-size`` and ``--chunk-overlap`` within the chunker's limits, else a
    :class:`BadInputError` naming the option."""
    from graph_flows.indexing.documents.chunking import MAX_SIZE, MIN_SIZE

    size, overlap = context.chunk_size, context.chunk_overlap
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise BadInputError(f"--chunk-size must be between {MIN_SIZE} and {MAX_SIZE} "
                            f"(got {size})")
    if not 0 <= overlap < size / 2:
        raise BadInputError(f"--chunk-overlap must be >= 0 and less than half the chunk size "
                            f"({size / 2:g}) (got {overlap})")


def nothing_found(out: dict[str, Any], paths: Sequence[Path]) -> str | None:
    """The line saying no document was found in ``paths`` (None when some were)."""
    from graph_flows.indexing.documents.loaders import SUPPORTED_SUFFIXES

    docs = out.get("documents", {})
    if any(docs.get(k, 0) for k in ("new", "changed", "unchanged")):
        return None
    where = ", ".join(str(p) for p in paths)
    reasons = [str(f.get("reason", "")) for f in out.get("failures", [])]
    if not all(r.startswith("unsupported file type") for r in reasons):
        return f"Nothing indexed from {where}: every file was skipped (reasons below)."
    return (f"No supported files in {where}: nothing to index (supported: "
            f"{', '.join(sorted(SUPPORTED_SUFFIXES))}).")


def print_summary(console: Console, out: dict[str, Any], paths: Sequence[Path] = ()) -> None:
    """Human summary of an ingest run."""
    docs, chunks, llm = out.get("documents", {}), out.get("chunks", {}), out.get("llm", {})
    graph = out.get("graph", {})
    p = console.print
    if paths and (line := nothing_found(out, paths)):
        p(line, markup=False, highlight=False)
    mode = f"LLM ({out.get('model')})" if out.get("mode") == "llm" else "no-LLM (rule-based)"
    p(f"[bold]Ingest finished[/bold] in {out.get('elapsed_s', 0)} s, extraction: {mode}")
    p(f"  documents  {docs.get('new', 0)} new, {docs.get('changed', 0)} changed, "
      f"{docs.get('unchanged', 0)} unchanged, {docs.get('skipped', 0)} skipped")
    p(f"  chunks     {chunks.get('new', 0)} new, {chunks.get('completed', 0)} extracted, "
      f"{chunks.get('failed', 0)} failed this run; {graph.get('completed', 0)}/"
      f"{graph.get('total', 0)} completed in these sources")
    p(f"  graph      {graph.get('entities', 0)} entities, {graph.get('relations', 0)} relations "
      f"in these sources; {len(out.get('merges', []))} merges (near duplicates and "
      "a document's short forms)")
    removed = out.get("removed", {})
    if any(removed.values()):
        p(f"  removed    {removed.get('chunks', 0)} old chunks, {removed.get('entities', 0)} "
          f"entities, {removed.get('relations', 0)} relations")
    p(f"  LLM        {llm.get('calls', 0)} calls, {llm.get('input_tokens', 0)} input / "
      f"{llm.get('output_tokens', 0)} output tokens")
    dropped = out.get("dropped", {})
    if dropped:
        p("  dropped    " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    for merge in out.get("merges", [])[:SHOWN_MERGES]:
        p(f"  merged     {merge['name']!r} into {merge['into']!r} ({merge['type']})",
          markup=False, highlight=False)
    failures = out.get("failures", [])
    for failure in failures[:SHOWN_FAILURES]:
        p(f"  skipped    {failure['uri']}: {failure['reason']}", markup=False, highlight=False)
    if len(failures) > SHOWN_FAILURES:
        p(f"  ... and {len(failures) - SHOWN_FAILURES} more (krag status)")
    if chunks.get("failed"):
        p("  Failed chunks keep their reason; run again with --retry-failed to retry them.")


# -- status, remove, reembed ----------------------------------------------------------------
GRAPH_COLUMNS = ("docs", "chunks", "pending", "failed", "entities", "relations")
LLM_COLUMNS = ("LLM calls", "tokens in", "tokens out")
SOURCE_MIN_WIDTH = 12


def status_rows(report: sources.StatusReport) -> list[dict[str, str]]:
    """One dict per source: the column name -> the cell text."""
    rows = []
    for r in report.sources:
        rows.append({
            "source": r.source if r.scope == "default" else f"{r.scope}/{r.source}",
            "docs": str(r.documents), "chunks": f"{r.chunks['completed']}/{r.total_chunks}",
            "pending": str(r.chunks["pending"] + r.chunks["extracting"]),
            "failed": str(r.chunks["failed"]), "entities": str(r.entities),
            "relations": str(r.relations), "LLM calls": str(r.llm_calls),
            "tokens in": str(r.input_tokens), "tokens out": str(r.output_tokens)})
    return rows


def _table(title: str, columns: Sequence[str], rows: list[dict[str, str]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    table.add_column("source", overflow="fold", min_width=SOURCE_MIN_WIDTH)
    for col in columns:
        table.add_column(col, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(row["source"], *(row[c] for c in columns))
    return table


def status_tables(report: sources.StatusReport, width: int) -> list[Table]:
    """The per-source table of `krag status`; when it would not fit ``width`` columns, two
    tables (graph, then LLM usage), so no number is ever wrapped or cut."""
    rows = status_rows(report)
    needed = SOURCE_MIN_WIDTH + 2 + sum(
        2 + max(len(col), *(len(row[col]) for row in rows))
        for col in GRAPH_COLUMNS + LLM_COLUMNS)
    if needed <= width:
        return [_table("Sources (chunks: completed/total)", GRAPH_COLUMNS + LLM_COLUMNS, rows)]
    return [_table("Sources (chunks: completed/total)", GRAPH_COLUMNS, rows),
            _table("LLM usage", LLM_COLUMNS, rows)]


def status(console: Console, *, scope: str | None, as_json: bool = False) -> None:
    """`krag status`: per source documents, chunk statuses, graph size, LLM usage."""
    report = sources.status(scope)
    if as_json:
        console.print_json(json.dumps(report.as_json()))
        return
    if not report.sources:
        console.print("No documents yet: krag ingest PATH")
    for table in status_tables(report, console.width) if report.sources else []:
        console.print(table)
    console.print(f"Embedding model: {report.embedding_model or '-'} "
                  f"({report.embedding_dim or '?'}-d)", markup=False)
    for uri, chunk_id, error in report.failed:
        console.print(f"  failed {chunk_id[:16]} in {uri}: {error}", markup=False,
                      highlight=False)


def remove(console: Console, *, source: str, scope: str | None) -> None:
    """`krag remove SOURCE`: delete a source and what only it supported."""
    report = sources.remove(source, scope)
    console.print(f"Removed source {source!r}: {report.documents} documents, {report.chunks} "
                  f"chunks, {report.entities} entities, {report.relations} relations.",
                  markup=False, highlight=False)


def reembed(console: Console, *, batch_size: int) -> dict[str, int]:
    """`krag reembed`: re-embed everything with the configured embedding model."""
    settings = load_settings()

    def announce(plan: sources.ReembedPlan) -> None:
        if plan.switching:
            console.print(f"Switching stored vectors from {plan.stored[0]} ({plan.stored[1]}-d) "
                          f"to {plan.target[0]} ({plan.target[1]}-d).", markup=False)

    with Progress(TextColumn("[bold]re-embedding"), BarColumn(), MofNCompleteColumn(),
                  TimeRemainingColumn(), console=console) as bar:
        task = bar.add_task("reembed", total=None)
        done = sources.reembed(
            settings, batch_size=batch_size, on_plan=announce,
            on_progress=lambda n, total: bar.update(task, completed=n, total=total))
    console.print(f"Re-embedded {done['entities']} entities, {done['relations']} relations "
                  f"and {done.get('chunks', 0)} chunks with {settings.embedding_model}; "
                  f"computed the synonym edges of {done.get('synonyms', 0)} entities; "
                  f"scanned {done.get('scanned', 0)} chunks for instruction-like text.",
                  markup=False)
    return done
