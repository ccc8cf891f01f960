"""`krag scope`: declare the scope hierarchy (platform > realm > team > project)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

scope_app = typer.Typer(no_args_is_help=True, help="Scopes and their parents.")
_console = Console(soft_wrap=True)


def _store():  # noqa: ANN202 - a KnowledgeStore
    from graph_flows.shared.settings import load_settings
    from graph_flows.shared.store import open_store

    return open_store(load_settings())


@scope_app.command("set")
def set_scope(
    name: Annotated[str, typer.Argument(help="The scope to declare.")],
    parent: Annotated[str | None, typer.Option("--parent", help="Its parent scope.")] = None,
) -> None:
    """Declare a scope (a root, or a child of --parent). Queries in it see its ancestors."""
    from storage.scopes import set_parent

    store = _store()
    try:
        with store.transaction() as conn:
            chain = set_parent(conn, name, parent)
    finally:
        store.close()
    _console.print("visible to queries in " + name + ": " + " > ".join(reversed(chain)),
                   markup=False, highlight=False)


@scope_app.command("list")
def list_cmd() -> None:
    """List scopes with their parents."""
    from storage.scopes import list_scopes

    store = _store()
    try:
        with store.engine.connect() as conn:
            rows = list_scopes(conn)
    finally:
        store.close()
    for name, parent in rows:
        _console.print(f"{name}" + (f"  (parent: {parent})" if parent else ""),
                       markup=False, highlight=False)
