"""`krag ask`: stream an answer from the query graph to the terminal."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console

from graph_flows.query import sections
from graph_flows.shared.settings import Settings


def run_query_streaming(
    payload: dict[str, Any], context: dict[str, Any], on_token: Any
) -> dict[str, Any]:
    """Run the query graph, calling ``on_token`` for each streamed token; return the output."""
    from graph_flows import query_flow

    final: dict[str, Any] = {}
    for mode, chunk in query_flow.stream(payload, context=context,
                                         stream_mode=["custom", "values"]):
        if mode == "custom" and "token" in chunk:
            on_token(chunk["token"])
        elif mode == "values":
            final = chunk
    return final


def print_sources(console: Console, result: dict[str, Any]) -> None:
    """The cited facts with the documents they come from."""
    if not result.get("citations"):
        return
    console.print("\nSources:", style="bold")
    facts = {f.get("id"): f for f in result.get("facts", [])}
    for c in result["citations"]:
        docs = ", ".join(f"{s['source']}:{s['uri']}" for s in c.get("sources", []))
        when = sections.validity(facts.get(c.get("fact_id"), {}))
        console.print(f"  [{c['label']}] {c['fact']}" + (f"  [{when}]" if when else "")
                      + (f"  ({docs})" if docs else ""), markup=False, highlight=False)


def ask_command(
    settings: Settings, console: Console, question: str, scope: str | None,
    show_mermaid: bool, as_json: bool, model: str | None, as_of: str | None = None,
    max_hops: int | None = None,
) -> None:
    """Body of `krag ask` (the typer wrapper lives in cli.py)."""
    from graph_flows.shared.resources import build_resources, use_resources

    resources = build_resources(settings)
    payload: dict[str, Any] = {"query": question}
    if scope:
        payload["scope"] = scope
    if as_of:
        payload["as_of"] = as_of
    context: dict[str, Any] = {"answer_model": model} if model else {}
    if max_hops is not None:
        context["max_hops"] = max_hops
    with use_resources(resources):
        if as_json:
            result = run_query_streaming(payload, context, lambda _t: None)
            console.print_json(json.dumps(result, default=str))
            return
        result = run_query_streaming(
            payload, context, lambda t: console.print(t, end="", markup=False,
                                                      highlight=False))
    console.print()
    print_sources(console, result)
    for err in result.get("errors", []):
        console.print(f"note: {err}", style="yellow", markup=False, highlight=False)
    if show_mermaid:
        console.print("\n" + result.get("mermaid", ""), markup=False, highlight=False)
    metrics = result.get("search_metrics", {})
    console.print(f"\n({len(result.get('facts', []))} facts, "
                  f"{len(result.get('entities', []))} entities, retrieval "
                  f"{metrics.get('total_ms', 0):.0f} ms, answer mode: "
                  f"{result.get('answer_mode')})", style="dim")
    conf = result.get("answer_confidence") or {}
    if conf.get("label") and conf["label"] != "none":
        console.print(f"confidence: {conf['label']} ({conf.get('reason', '')})", style="dim",
                      markup=False, highlight=False)


QuestionArg = Annotated[str, typer.Argument(help="The question to ask.")]
ScopeOpt = Annotated[str | None, typer.Option("--scope", help="Knowledge scope.")]
MermaidOpt = Annotated[bool, typer.Option("--mermaid", help="Print the Mermaid diagram.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")]
HopsOpt = Annotated[int | None, typer.Option(
    "--max-hops", min=1, max=3,
    help="Also rank facts up to this many hops from the matched entities (1-3).")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", help="Answer from the facts valid at this ISO date (default: now).")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Answer model for this run (ollama:…, openai:…, none).")]
