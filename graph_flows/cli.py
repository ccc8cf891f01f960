"""The `krag` command line. Each command is a thin shell over the library."""

from __future__ import annotations

import json
import logging
import signal
import sys
from typing import Annotated, Any

import typer
from rich.console import Console

from graph_flows import ask as ask_mod
from graph_flows.settings import Settings, SettingsError, load_settings

app = typer.Typer(
    name="krag", no_args_is_help=True, add_completion=False,
    help="Knowledge-graph RAG on PostgreSQL: ingest documents, ask questions.",
)
console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


class UserError(Exception):
    """An error whose message is one line for the user (exit code 2)."""


def settings_from_cli(**overrides: Any) -> Settings:
    """Settings with non-None CLI overrides applied (CLI > env > .env > default)."""
    return load_settings(**{k: v for k, v in overrides.items() if v is not None})


@app.callback()
def _root() -> None:
    """Knowledge-graph RAG on PostgreSQL: ingest documents, ask questions."""


def _print_kv(title: str, values: dict[str, Any]) -> None:
    console.print(f"[bold]{title}[/bold]")
    for key, value in values.items():
        console.print(f"  {key:<22} {value}", markup=False, highlight=False)


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Show resolved settings (secrets masked), database health and model reachability."""
    from graph_flows.doctor import run_doctor

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
    model: ask_mod.ModelOpt = None,
) -> None:
    """Ask a question: streams the answer, then the cited facts and their sources."""
    from graph_flows.query.analyze import InvalidQueryError

    try:
        ask_mod.ask_command(settings_from_cli(), console, question, scope, mermaid, as_json,
                            model)
    except InvalidQueryError as exc:
        raise UserError(str(exc)) from None


def _on_sigterm(signum: int, frame: object) -> None:  # pragma: no cover - signal path
    # A normal exit runs atexit handlers, so the embedded Postgres handle is released.
    sys.exit(128 + signum)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: one-line errors, SIGTERM as a clean exit."""
    from storage import StorageError

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        code = app(args=argv, standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except (SettingsError, StorageError, UserError) as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # click usage errors (typer vendors its own click)
        if hasattr(exc, "show") and hasattr(exc, "exit_code"):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
