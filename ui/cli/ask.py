"""`krag ask`: stream an answer to the terminal (the use case: :mod:`graph_flows.services.ask`)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.style import Style
from rich.text import Text

if TYPE_CHECKING:
    from graph_flows.shared.settings import Settings

log = logging.getLogger(__name__)


def passage_text(c: dict[str, Any], width: int = 160) -> Text:
    """A cited passage as a person reads it (:mod:`graph_flows.query.readable`): ``[P1]``,
    its section path and its document's short name (a terminal link to its location),
    then, on the next line, its text without markdown markers around the cited sentence
    (bold), cut to about ``width`` characters."""
    from graph_flows.query import readable

    fields = readable.passage_fields(c)
    crumb = " › ".join(c.get("section") or fields["section"])
    doc = str(c.get("document") or fields["document"])
    _, body = readable.split_headings(str(c.get("text", "")))
    before, mark, after = readable.window(readable.plain_text(body),
                                          str(c.get("sentence") or ""), width)
    href = readable.link(c.get("uri"))
    line = Text(f"  [{c.get('label', '')}] ")
    line.append(f"{crumb}  (" if crumb else "(")
    line.append(doc, style=Style(link=href) if href else "")
    line.append(")")
    if c.get("withheld"):
        line.append("  [partly withheld: instruction-like text]")
    line.append("\n      " + before + (" " if before and mark else ""))
    line.append(mark, style="bold")
    line.append((" " if mark and after else "") + after)
    return line


def fact_documents(c: dict[str, Any]) -> str:
    """The short names of the documents a cited fact comes from."""
    from graph_flows.query import readable

    return ", ".join(dict.fromkeys(readable.document_name(s.get("title"), s.get("uri"))
                                   for s in c.get("sources", [])))


def print_sources(console: Console, result: dict[str, Any]) -> None:
    """The cited facts and passages with the documents they come from."""
    from graph_flows.query import sections

    if not result.get("citations"):
        return
    console.print("\nSources:", style="bold")
    facts = {f.get("id"): f for f in result.get("facts", [])}
    for c in result["citations"]:
        if "passage_id" in c:
            console.print(passage_text(c), highlight=False)
            continue
        docs = fact_documents(c)
        when = sections.validity(facts.get(c.get("fact_id"), {}))
        console.print(f"  [{c['label']}] {c['fact']}" + (f"  [{when}]" if when else "")
                      + (f"  ({docs})" if docs else ""), markup=False, highlight=False)


def print_rounds(console: Console, rounds: list[dict[str, Any]]) -> None:
    """The retrieval rounds, one dim line each, the last with why the loop stopped."""
    from graph_flows.services.ask import round_line

    for record in rounds:
        console.print(round_line(record), style="dim", markup=False, highlight=False)


def print_diagram(console: Console, diagram: str) -> None:
    """The answer's Mermaid diagram and a line saying what its styles mean; a dim line
    instead when there is none (nothing relevant was found)."""
    from graph_flows.query.mermaid import legend_text

    if not diagram.strip():
        console.print("\n(no diagram: nothing relevant was found to draw)", style="dim")
        return
    console.print("\n" + diagram, markup=False, highlight=False)
    if line := legend_text(diagram):
        console.print(line, style="dim", markup=False, highlight=False)


def ask_command(
    settings: Settings, console: Console, question: str, scope: str | None,
    show_mermaid: bool, as_json: bool, model: str | None, as_of: str | None = None,
    max_hops: int | None = None, max_rounds: int | None = None,
    err_console: Console | None = None,
) -> None:
    """Body of `krag ask` (the typer wrapper lives in app.py). While the loop runs more than
    one round, each round is a dim line on ``err_console`` (stderr) as it ends, before the
    answer streams on ``console``."""
    from graph_flows.services import ask as ask_service

    def on_token(token: str) -> None:
        if not as_json:
            console.print(token, end="", markup=False, highlight=False)

    def on_round(record: dict[str, Any]) -> None:
        if err_console is not None and not as_json and (
                record.get("round", 1) > 1 or not record.get("stop")):
            err_console.print(ask_service.round_line(record), style="dim", markup=False,
                              highlight=False)

    result = ask_service.ask(settings, question, on_token, scope=scope, as_of=as_of,
                             model=model, max_hops=max_hops, max_rounds=max_rounds,
                             on_round=on_round)
    if as_json:
        console.print_json(json.dumps(result, default=str))
        return
    console.print()
    print_sources(console, result)
    for err in result.get("errors", []):
        console.print(f"note: {err}", style="yellow", markup=False, highlight=False)
    withheld = ask_service.withheld_counts(result.get("passages", []))
    if withheld["passages"]:
        console.print("note: " + ask_service.withheld_notice(withheld), style="yellow",
                      markup=False, highlight=False)
    if show_mermaid:
        print_diagram(console, result.get("mermaid", ""))
    metrics = result.get("search_metrics", {})
    console.print(f"\n({len(result.get('facts', []))} facts, "
                  f"{len(result.get('entities', []))} entities, retrieval "
                  f"{metrics.get('total_ms', 0):.0f} ms, answer mode: "
                  f"{result.get('answer_mode')})", style="dim")
    conf = result.get("answer_confidence") or {}
    if conf.get("label") and conf["label"] != "none":
        console.print(f"confidence: {conf['label']} ({conf.get('reason', '')})", style="dim",
                      markup=False, highlight=False)
    print_rounds(console, result.get("rounds") or [])


QuestionArg = Annotated[str, typer.Argument(help="The question to ask.")]
ScopeOpt = Annotated[str | None, typer.Option("--scope", help="Knowledge scope.")]
MermaidOpt = Annotated[bool, typer.Option("--mermaid", help="Print the Mermaid diagram.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the whole result as JSON.")]
HopsOpt = Annotated[int | None, typer.Option(
    "--max-hops",
    help="Also rank facts up to this many hops from the matched entities (1-3).")]
RoundsOpt = Annotated[int | None, typer.Option(
    "--max-rounds",
    help="Retrieval rounds (1-4; default KRAG_MAX_ROUNDS, 2): after each round the planner "
         "model may ask a follow-up sub-question; 1 turns the loop off.")]
AsOfOpt = Annotated[str | None, typer.Option(
    "--as-of", help="Answer from the facts valid at this ISO date (default: now).")]
ModelOpt = Annotated[str | None, typer.Option(
    "--model", help="Answer model for this run (ollama:…, openai:…, none).")]
