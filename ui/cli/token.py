"""`krag token`: the bearer tokens MCP over HTTP requires (create, list, revoke)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from storage.tokens import TokenRow

token_app = typer.Typer(no_args_is_help=True,
                        help="Bearer tokens for MCP over HTTP, each bound to one scope.")
_console = Console(soft_wrap=True)
JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]


def _store():  # noqa: ANN202 - a KnowledgeStore
    from graph_flows.shared.settings import load_settings
    from graph_flows.shared.store import open_store

    return open_store(load_settings())


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _record(row: TokenRow) -> dict[str, Any]:
    from graph_flows.services.tokens import status

    return {"name": row.name, "scope": row.scope, "read_only": row.read_only,
            "status": status(row), "created_at": _when(row.created_at),
            "expires_at": _when(row.expires_at), "revoked_at": _when(row.revoked_at),
            "last_used_at": _when(row.last_used_at)}


def _say(text: str) -> None:
    _console.print(text, markup=False, highlight=False)


@token_app.command("create")
def create(
    scope: Annotated[str, typer.Option("--scope", help="The scope the token's tools see "
                                                      "(reads include its ancestors).")],
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Only kag_query and recall; remember and correct are refused.")]
    = False,
    expires: Annotated[str | None, typer.Option(
        "--expires", help="Lifetime (30d, 12h, 90m) or an ISO date; default: never.")] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="A unique name to list or revoke it by (default: SCOPE-xxxxxx).")]
    = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a token and print it once (only its hash is stored)."""
    from graph_flows.services import tokens

    store = _store()
    try:
        created = tokens.create_token(store, scope, name=name, read_only=read_only,
                                      expires=expires)
    finally:
        store.close()
    if as_json:
        _say(json.dumps({"token": created.token, **_record(created.info)}))
        return
    _say(created.token)
    info = created.info
    typer.echo(f"token {info.name!r} for scope {info.scope!r}"
               f"{' (read-only)' if info.read_only else ''}, expires "
               f"{_when(info.expires_at) or 'never'}: shown once, store it now", err=True)


@token_app.command("list")
def list_cmd(as_json: JsonOpt = False) -> None:
    """List tokens (names, scopes, status; never the tokens)."""
    from graph_flows.services import tokens

    store = _store()
    try:
        rows = [_record(r) for r in tokens.list_tokens(store)]
    finally:
        store.close()
    if as_json:
        _say(json.dumps(rows))
        return
    for r in rows:
        _say(f"{r['name']}  scope={r['scope']}  {'read-only' if r['read_only'] else 'read-write'}"
             f"  {r['status']}  expires={r['expires_at'] or 'never'}"
             f"  last_used={r['last_used_at'] or 'never'}")
    if not rows:
        _say("no tokens; `krag token create --scope S` makes one")


@token_app.command("revoke")
def revoke(
    name: Annotated[str, typer.Argument(help="The token's name, as `krag token list` shows.")],
    as_json: JsonOpt = False,
) -> None:
    """Revoke a token: requests with it get HTTP 401 from now on."""
    from graph_flows.services import tokens

    store = _store()
    try:
        row = tokens.revoke_token(store, name)
    finally:
        store.close()
    if as_json:
        _say(json.dumps(_record(row)))
    else:
        _say(f"token {row.name!r} (scope {row.scope!r}) revoked at {_when(row.revoked_at)}")
