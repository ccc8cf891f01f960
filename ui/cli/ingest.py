"""Bodies of the indexing commands of `krag` (ingest, status, remove, reembed).

``ui/cli/app.py`` declares the options and calls these; the work is done by
:mod:`graph_flows.services.ingest` and :mod:`graph_flows.services.sources`, these print with
rich (tables, progress bars fed by the services' callbacks) and raise :class:`BadInputError`
(one line, exit 2) for bad input.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from graph_flows.indexing.context import IndexingContext
from graph_flows.services import ingest as runner
from graph_flows.services import sources
from graph_flows.shared.settings import load_settings

log = logging.getLogger(__name__)

SHOWN_FAILURES = 10
SHOWN_MERGES = 5


class BadInputError(ValueError):
    """Input the user must fix; ``str()`` is one line."""


def check_paths(paths: Sequence[Path]) -> list[str]:
    """Absolute path strings; a missing one is a :class:`BadInputError`."""
    for path in paths:
        if not path.exists():
            raise BadInputError(f"no such file or folder: {path}")
    return [str(p.resolve()) for p in paths]


# -- ingest ---------------------------------------------------------------------------------
def ingest(
    console: Console, err: Console, paths: Sequence[Path], *, source: str | None,
    scope: str | None, workers: int, retry_failed: bool, context: IndexingContext,
    as_json: bool = False, show_progress: bool = True, defer_index: bool = False,
) -> dict[str, Any]:
    """`krag ingest`: run the indexing graph with a live progress bar, then a summary."""
    if workers < 1:
        raise BadInputError(f"--workers must be >= 1 (got {workers})")
    inputs = {"paths": check_paths(paths), "source": source, "scope": scope,
              "retry_failed": retry_failed}
    res = runner.get_resources(context)
    if res.notice:
        err.print(res.notice, markup=False, highlight=False, soft_wrap=True)
    started = time.monotonic()
    last: dict[str, int] = {}
    columns = (TextColumn("[bold]chunks"), BarColumn(), MofNCompleteColumn(),
               TextColumn("failed {task.fields[failed]}  entities {task.fields[entities]}  "
                          "relations {task.fields[relations]}  LLM calls {task.fields[calls]}"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False,
                  disable=as_json or not show_progress) as bar:
        task = bar.add_task("ingest", total=None, failed=0, entities=0, relations=0, calls=0)

        def update(snap: dict[str, int]) -> None:
            last.update(snap)
            bar.update(task, total=snap["total"] or None,
                       completed=snap["completed"] + snap["failed"], failed=snap["failed"],
                       entities=snap["entities"], relations=snap["relations"],
                       calls=snap["llm_calls"])

        out = runner.ingest(inputs, context, workers=workers, on_progress=update,
                            defer_index=defer_index)
    out["elapsed_s"] = round(time.monotonic() - started, 2)
    out["graph"] = {k: last.get(k, 0) for k in ("entities", "relations", "total", "completed",
                                               "failed", "pending")}
    if as_json:
        console.print_json(json.dumps(out, default=str))
    else:
        print_summary(console, out)
    return out


def print_summary(console: Console, out: dict[str, Any]) -> None:
    """Human summary of an ingest run."""
    docs, chunks, llm = out.get("documents", {}), out.get("chunks", {}), out.get("llm", {})
    graph = out.get("graph", {})
    p = console.print
    mode = f"LLM ({out.get('model')})" if out.get("mode") == "llm" else "no-LLM (rule-based)"
    p(f"[bold]Ingest finished[/bold] in {out.get('elapsed_s', 0)} s, extraction: {mode}")
    p(f"  documents  {docs.get('new', 0)} new, {docs.get('changed', 0)} changed, "
      f"{docs.get('unchanged', 0)} unchanged, {docs.get('skipped', 0)} skipped")
    p(f"  chunks     {chunks.get('new', 0)} new, {chunks.get('completed', 0)} extracted, "
      f"{chunks.get('failed', 0)} failed this run; {graph.get('completed', 0)}/"
      f"{graph.get('total', 0)} completed in these sources")
    p(f"  graph      {graph.get('entities', 0)} entities, {graph.get('relations', 0)} relations "
      f"in these sources; {len(out.get('merges', []))} near-duplicate merges")
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
def status(console: Console, *, scope: str | None, as_json: bool = False) -> None:
    """`krag status`: per source documents, chunk statuses, graph size, LLM usage."""
    report = sources.status(scope)
    if as_json:
        console.print_json(json.dumps(report.as_json()))
        return
    table = Table(title="Sources")
    for col in ("source", "docs", "chunks done", "pending", "failed", "entities", "relations",
                "LLM calls", "tokens in/out"):
        table.add_column(col, justify="left" if col == "source" else "right",
                         no_wrap=col == "source")
    for r in report.sources:
        name = r.source if r.scope == "default" else f"{r.scope}/{r.source}"
        table.add_row(name, str(r.documents), f"{r.chunks['completed']}/{r.total_chunks}",
                      str(r.chunks["pending"] + r.chunks["extracting"]), str(r.chunks["failed"]),
                      str(r.entities), str(r.relations), str(r.llm_calls),
                      f"{r.input_tokens}/{r.output_tokens}")
    console.print(table if report.sources else "No documents yet: krag ingest PATH")
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
                  f"and {done.get('chunks', 0)} chunks with {settings.embedding_model}.",
                  markup=False)
    return done
