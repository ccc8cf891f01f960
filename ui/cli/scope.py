"""`krag scope`: declare the scope hierarchy (platform > realm > team > project)."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.console import Console

log = logging.getLogger(__name__)

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
    from graph_flows.services import scopes

    store = _store()
    try:
        chain = scopes.set_parent(store, name, parent)
    finally:
        store.close()
    _console.print("visible to queries in " + name + ": " + " > ".join(reversed(chain)),
                   markup=False, highlight=False)


@scope_app.command("list")
def list_cmd() -> None:
    """List scopes with their parents."""
    from graph_flows.services import scopes

    store = _store()
    try:
        rows = scopes.list_scopes(store)
    finally:
        store.close()
    for name, parent in rows:
        _console.print(f"{name}" + (f"  (parent: {parent})" if parent else ""),
                       markup=False, highlight=False)
