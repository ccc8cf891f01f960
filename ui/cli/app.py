"""The `krag` command line. Each command is a thin shell over the library."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from graph_flows.indexing.context import MAX_BATCH_SIZE, MAX_CONCURRENCY, MAX_WORKERS
from ui.cli import ask as ask_mod
from ui.cli import errors
from ui.cli.errors import UserError, missing_path, plain_options
from ui.cli.eval import eval_app
from ui.cli.progress import DEFAULT_EVERY_S
from ui.cli.scope import scope_app
from ui.cli.token import token_app
from ui.hosts import ui_exposure_warning

if TYPE_CHECKING:
    from graph_flows.shared.settings import Settings

# Heavy modules (settings -> storage, the graphs) are imported inside the commands, so that
# `krag` answers within a second (its first line, --help, usage errors).
log = logging.getLogger(__name__)
app = typer.Typer(
    name="krag", no_args_is_help=True, add_completion=False,
    help="Knowledge-graph RAG on PostgreSQL: ingest documents, ask questions.",
)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


def settings_from_cli(**overrides: Any) -> Settings:
    """Settings with non-None CLI overrides applied (CLI > env > .env > default)."""
    from graph_flows.shared.settings import load_settings

    return load_settings(**{k: v for k, v in overrides.items() if v is not None})


app.add_typer(scope_app, name="scope")
app.add_typer(eval_app, name="eval")
app.add_typer(token_app, name="token")


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Log details, and the traceback of an unexpected error.")]
    = False,
) -> None:
    """Knowledge-graph RAG on PostgreSQL: ingest documents, ask questions."""
    if verbose:
        logging.getLogger().setLevel(logging.DEBUG)


def _print_kv(title: str, values: dict[str, Any]) -> None:
    console.print(f"[bold]{title}[/bold]")
    for key, value in values.items():
        if isinstance(value, list):  # one line each (the read replicas)
            for i, line in enumerate(value or ["none"]):
                console.print(f"  {key if i == 0 else '':<22} {line}", markup=False,
                              highlight=False)
            continue
        console.print(f"  {key:<22} {value}", markup=False, highlight=False)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Show resolved settings (secrets masked), database health and model reachability."""
    from graph_flows.services.doctor import run_doctor

    report = run_doctor(settings_from_cli())
    if as_json:
        console.print_json(json.dumps(report.__dict__, default=str))
    else:
        _print_kv("Settings", report.settings)
        _print_kv("Database", report.database)
        for name, info in report.providers.items():
            mark = "ok" if info["ok"] else "unavailable"
            console.print(f"[bold]Model ({name})[/bold] {info['model']}: {mark}", markup=True)
            console.print(f"  {info['detail']}", markup=False, highlight=False)
        console.print(f"[bold]Mode[/bold] {report.mode}")
    if not report.ok:
        raise typer.Exit(1)


@app.command()
def ask(
    question: ask_mod.QuestionArg, scope: ask_mod.ScopeOpt = None,
    mermaid: ask_mod.MermaidOpt = False, as_json: ask_mod.JsonOpt = False,
    model: ask_mod.ModelOpt = None, as_of: ask_mod.AsOfOpt = None,
    max_hops: ask_mod.HopsOpt = None, max_rounds: ask_mod.RoundsOpt = None,
) -> None:
    """Ask a question: streams the answer, then the cited facts, their sources and the
    retrieval rounds."""
    ask_mod.ask_command(settings_from_cli(), console, question, scope, mermaid, as_json,
                        model, as_of, max_hops, max_rounds, err_console=err_console)


# -- indexing: ingest, status, remove, reembed (bodies in ui/cli/ingest.py) ----------------


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Files or folders to ingest.")],
    source: Annotated[str | None, typer.Option(help="Source name (default: file/folder name).")]
    = None,
    scope: Annotated[str | None, typer.Option(help="Knowledge scope (default: KRAG_SCOPE).")]
    = None,
    workers: Annotated[int | None, typer.Option(
        min=1, max=MAX_WORKERS, show_default="auto",
        help="Worker processes sharing the chunks. Default: without an LLM, 2 (one per core, "
             "at most 2) once 512 chunks or more are pending, else 1; with an LLM, 1 (raise "
             "--concurrency instead).")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed",
                                               help="Retry chunks that failed before.")] = False,
    chunk_size: Annotated[int, typer.Option(help="Chunk size in characters.")] = 1000,
    chunk_overlap: Annotated[int, typer.Option(help="Chunk overlap in characters.")] = 100,
    concurrency: Annotated[int, typer.Option(min=1, max=MAX_CONCURRENCY,
                                             help="LLM calls in flight per worker.")] = 4,
    batch_size: Annotated[int, typer.Option(min=1, max=MAX_BATCH_SIZE,
                                            help="Chunks per claimed batch.")] = 32,
    look_ahead: Annotated[bool, typer.Option(
        help="With an LLM, extract the next batch while the current one is written.")]
    = True,
    extraction_model: Annotated[str | None, typer.Option(
        help="Extraction model, e.g. ollama:qwen2.5:7b-instruct or none.")] = None,
    defer_index: Annotated[bool, typer.Option(
        "--defer-index", help="Rebuild the vector indexes after the load (large loads).")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run report as JSON.")]
    = False,
    progress_every: Annotated[float, typer.Option(
        min=0.1, help="Seconds between progress lines when stderr is not a terminal.")]
    = DEFAULT_EVERY_S,
) -> None:
    """Ingest documents: extract entities and relations into the knowledge graph."""
    missing_path(paths)
    plain_options(source=source, scope=scope)
    if not as_json:  # the first line at once: loading the models can take a while
        err_console.print(f"Ingesting {', '.join(str(p) for p in paths)} …", markup=False,
                          highlight=False, soft_wrap=True)
    from graph_flows.indexing.context import IndexingContext
    from ui.cli import ingest as commands

    if extraction_model:
        settings_from_cli(extraction_model=extraction_model)  # validates the spec
    ctx = IndexingContext(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                          concurrency=concurrency, batch_size=batch_size,
                          look_ahead=look_ahead, extraction_model=extraction_model)
    commands.ingest(console, err_console, paths, source=source, scope=scope,
                    workers=workers, retry_failed=retry_failed, context=ctx,
                    as_json=as_json, defer_index=defer_index, progress_every=progress_every)


@app.command()
def status(
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Per source: documents, chunks by status, entities, relations, LLM usage."""
    from ui.cli import ingest as commands

    commands.status(console, scope=scope, as_json=as_json)


@app.command()
def remove(
    source: Annotated[str, typer.Argument(help="Source name, as `krag status` lists it.")],
    scope: Annotated[str | None, typer.Option(help="Scope (default: KRAG_SCOPE).")] = None,
) -> None:
    """Remove a source: its documents, chunks and whatever only they supported."""
    from ui.cli import ingest as commands

    commands.remove(console, source=source, scope=scope)


@app.command()
def reembed(
    batch_size: Annotated[int, typer.Option(help="Texts per embedding request.")] = 64,
) -> None:
    """Re-embed every entity and relation with the configured embedding model."""
    from ui.cli import ingest as commands

    commands.reembed(console, batch_size=batch_size)


@app.command("ui")
def ui_command(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on.")]
    = 8501,
) -> None:
    """Start the Streamlit chat UI (headless; open http://HOST:PORT in a browser) with its
    models loaded before it serves. It has no login: beyond 127.0.0.1 put it behind an
    authenticating proxy."""
    if warning := ui_exposure_warning(host):
        err_console.print(warning, markup=False, highlight=False)
    app_path = Path(__file__).resolve().parents[1] / "web" / "app.py"
    # ui.web.serve loads the models, then runs Streamlit's own command line
    cmd = [sys.executable, "-m", "ui.web.serve", "run", str(app_path),
           "--server.address", host, "--server.port", str(port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--server.maxUploadSize", str(settings_from_cli().max_upload_mb)]
    raise typer.Exit(run_forwarding_signals(cmd))


def run_forwarding_signals(cmd: list[str]) -> int:
    """Run ``cmd`` and return its exit code; SIGTERM and SIGINT sent to this process are
    passed on to the child and the child is waited for.

    Streamlit turns those signals into a normal exit, so its atexit handlers run and the
    embedded PostgreSQL handle it holds is released (``subprocess.call`` would SIGKILL the
    child when the signal interrupts the wait, leaving the server running).
    """
    import subprocess

    proc = subprocess.Popen(cmd)

    def forward(signum: int, frame: object) -> None:  # pragma: no cover - signal path
        proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@app.command("mcp")
def mcp_command(
    transport: Annotated[str, typer.Option(
        "--transport", help="stdio (for a client that launches krag) or http (streamable "
                            "HTTP at http://HOST:PORT/mcp).")] = "stdio",
    host: Annotated[str, typer.Option("--host", help="HTTP: address to listen on.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP: port to listen on.")] = 8765,
    scope: Annotated[str | None, typer.Option(
        help="Knowledge scope every tool reads and writes (default: KRAG_SCOPE); over HTTP "
             "with tokens, each token's own scope instead.")] = None,
) -> None:
    """Serve the knowledge graph over MCP: kag_query, recall, remember, correct. Over HTTP
    every request needs 'Authorization: Bearer <token>' once a token exists (`krag token`);
    a non-loopback --host without one is refused."""
    if transport not in ("stdio", "http"):
        raise UserError(f"--transport must be stdio or http, got {transport!r}")
    if not 1 <= port <= 65535:
        raise UserError(f"--port must be 1..65535, got {port}")
    from ui import mcp as mcp_server

    settings_from_cli()  # validates the environment before anything starts
    if transport == "stdio":
        # stdin is read in a worker thread that SystemExit cannot interrupt (the process
        # would wait for stdin to close): on SIGTERM release the store and leave at once.
        signal.signal(signal.SIGTERM, _release_and_exit)
    mcp_server.serve(transport=transport, host=host, port=port, scope=scope)  # type: ignore[arg-type]


def _on_sigterm(signum: int, frame: object) -> None:  # pragma: no cover - signal path
    # A normal exit runs atexit handlers, so the embedded Postgres handle is released.
    sys.exit(128 + signum)


def _release_and_exit(signum: int, frame: object) -> None:  # pragma: no cover - signal path
    from graph_flows.shared.resources import building_here, close_default

    if building_here():  # the store is opening below this frame, holding the lock that
        # close_default waits for: release it from a thread once the opening is done
        threading.Thread(target=_release_and_exit, args=(signum, None), daemon=True).start()
        return
    try:
        close_default()  # releases the embedded Postgres handle
    finally:
        os._exit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: every error is one ``error: ...`` line (ui/cli/errors.py),
    SIGTERM is a clean exit."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _on_sigterm)
    root_level = logging.getLogger().level  # --verbose lowers it for this run only
    try:
        code = app(args=argv, prog_name="krag", standalone_mode=False)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        sys.exit(130)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one line, see errors.py
        if type(exc).__name__ == "NoArgsIsHelpError":  # `krag` alone: typer printed the help
            sys.exit(0)
        sys.exit(errors.report(exc))
    finally:
        logging.getLogger().setLevel(root_level)
    if isinstance(code, int) and code:
        sys.exit(code)


if __name__ == "__main__":
    main()
