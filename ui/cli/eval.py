"""`krag eval`: quality harness (multihop retrieval, Re-DocRED extraction).

The work is done by :mod:`graph_flows.services.evaluation`; this module declares the
options, shows rich progress bars fed by the services' callbacks and prints tables or one
JSON object. Bad input is one line ``error: ...`` on stderr with exit code 2.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from graph_flows.services.errors import RequestError

eval_app = typer.Typer(no_args_is_help=True, help="Measure retrieval and extraction quality.")
_console = Console(soft_wrap=True)
_err = Console(stderr=True, soft_wrap=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
STAGES = {"ingest": "ingest chunks", "aliases": "ingest documents (aliases)",
          "embed": "embed chunks (dense)", "krag": "questions (krag)",
          "dense": "questions (dense)", "bm25": "questions (bm25)"}
RETRIEVAL_KEYS = ("R@2", "R@5", "R@10", "AllSupp@10", "MRR", "Ans@ctx")


@contextmanager
def _user_errors() -> Iterator[None]:
    """A request error becomes one line on stderr and exit code 2."""
    from graph_flows.shared.providers import ProviderError
    from graph_flows.shared.settings import SettingsError

    try:
        yield
    except (RequestError, ProviderError, SettingsError) as exc:
        _err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


@contextmanager
def _bars(disabled: bool) -> Iterator[Any]:
    """A rich progress display and a ``(stage, done, total)`` callback feeding it (none when
    stderr is not a terminal: rich would only print the last frame there)."""
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=_err, disable=disabled or not _err.is_terminal) as bar:
        tasks: dict[str, Any] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(STAGES.get(stage, stage), total=None)
            bar.update(tasks[stage], completed=done, total=total or None)

        yield update


@eval_app.command("multihop")
def multihop(
    corpus: Annotated[Path, typer.Option(help="Passages, JSON lines {id, title, text}.")],
    questions: Annotated[Path, typer.Option(
        help="Questions, JSON lines {question, answer, answer_aliases, "
             "supporting_passage_ids}.")],
    extraction: Annotated[str, typer.Option(help="rules, or replay:FILE.")] = "rules",
    scope: Annotated[str | None, typer.Option(
        help="Scope to ingest into (default: eval-<hash of corpus and mode>).")] = None,
    recipe: Annotated[str | None, typer.Option(
        help="Query recipe: split, rrf or ppr (default: the query graph's default; a "
             "recipe given here first embeds the chunks that have no vector).")] = None,
    planner: Annotated[str, typer.Option(
        help="The query loop's planner: none (no planner model), or replay (each "
             "question's gold decomposition answered by a replay model server: a perfect "
             "planner, the ceiling of the loop's machinery).")] = "none",
    max_rounds: Annotated[str | None, typer.Option(  # parsed here: a one-line error
        help="Retrieval rounds of the query loop, 1-4 (default: KRAG_MAX_ROUNDS).")] = None,
    no_llm_follow_up: Annotated[bool, typer.Option(
        "--no-llm-follow-up/--no-follow-up",
        help="Without a planner, run the no-LLM follow-up round (the query graph's "
             "default), or not.")] = True,
    as_json: JsonOpt = False,
) -> None:
    """Ingest a corpus, ask its questions (no LLM) and score passage retrieval against
    dense (MiniLM) and full-text (BM25-style) baselines over the same chunks."""
    from graph_flows.services.evaluation.multihop import (
        LoopOptions,
        parse_extraction,
        parse_max_rounds,
        parse_planner,
        parse_recipe,
        run_multihop,
    )
    from graph_flows.shared.heap import freeze_loaded
    from graph_flows.shared.resources import build_resources
    from graph_flows.shared.settings import load_settings

    with _user_errors():
        parse_extraction(extraction)
        parse_recipe(recipe)
        loop = LoopOptions(parse_planner(planner), parse_max_rounds(max_rounds),
                           no_llm_follow_up)
        for path in (corpus, questions):  # before the database is opened
            if not path.is_file():
                raise RequestError(f"{path}: no such file")
        resources = build_resources(load_settings(chat_model="none"))
        freeze_loaded()  # the questions are timed as a serving process would answer them
        try:
            with _bars(as_json) as progress:
                report = run_multihop(resources, corpus, questions, extraction=extraction,
                                      scope=scope, on_progress=progress, recipe=recipe,
                                      loop=loop)
        finally:
            resources.store.close()
    if as_json:
        _console.print(json.dumps(report), markup=False, highlight=False, soft_wrap=True)
        return
    _console.print(_retrieval_table(report))
    ing = report["ingest"]
    _console.print(f"scope {report['scope']}: {report['passages']} passages, "
                   f"{report['questions']} questions; ingest {ing['chunks']} chunks, "
                   f"{ing['seconds']} s this run ({ing['chunks_per_s']} chunks/s); "
                   f"{report['injection']['flagged']} chunks with instruction-like text "
                   "withheld", markup=False, highlight=False)
    plan = report["planner"]
    _console.print(f"query loop: planner {plan['mode']}, max_rounds {plan['max_rounds']}; "
                   f"{plan['calls_per_question']} planner calls and "
                   f"{plan['tokens_per_question']} tokens per question; questions by rounds "
                   f"{plan['rounds']}", markup=False, highlight=False)
    conf = report["confidence"]
    _console.print("answers by confidence (right/labelled): " + ", ".join(
        f"{label} {row['correct']}/{row['n']}" for label, row in conf.items()),
        markup=False, highlight=False)


def _retrieval_table(report: dict[str, Any]) -> Table:
    # Fits an 80-column terminal unclipped: a system's name never wraps ("bm25 (baseline)"
    # stays one line), scores read ".776" as the docs write them, latency is the caption.
    rows = [("krag", report["krag"]), *((f"{k} (baseline)", v)
                                         for k, v in report["baselines"].items())]
    latency = ", ".join(f"{name.split()[0]} {row['latency_ms']['p50']:.0f}/"
                        f"{row['latency_ms']['p95']:.0f}" for name, row in rows)
    table = Table(title="Passage retrieval", caption=f"latency p50/p95 ms: {latency}")
    table.add_column("system", no_wrap=True)
    for col in RETRIEVAL_KEYS:
        table.add_column(col, justify="right", min_width=5, no_wrap=True)
    for name, row in rows:
        table.add_row(name, *(f"{row[k]:.3f}".removeprefix("0") for k in RETRIEVAL_KEYS))
    return table


@eval_app.command("extraction")
def extraction(
    redocred: Annotated[Path, typer.Option(help="Re-DocRED documents, JSON lines.")],
    chunk_size: Annotated[int, typer.Option(
        help="Chunk size before extraction, as the pipeline cuts (0: whole document).")] = 1000,
    limit: Annotated[int, typer.Option(help="Score only the first N documents.")] = 0,
    offset: Annotated[int, typer.Option(
        help="Skip the first N documents (e.g. --offset 100 --limit 100: a held-out half)."
    )] = 0,
    aliases: Annotated[bool, typer.Option(
        "--aliases/--no-aliases", help="Also ingest the documents into the store (scope "
        "eval-aliases-<hash>) and measure how many multi-name entities resolution merges: "
        "as the product ingests (aliases) and, the baseline, without joining short forms "
        "(aliases_without_short_forms, scope eval-aliases-<hash>-nosf)."
    )] = True,
    as_json: JsonOpt = False,
) -> None:
    """Score the no-LLM extractor on Re-DocRED: entities, types, relations, and (through the
    real ingest and resolution) aliases merged into one entity."""
    from graph_flows.indexing.extraction.rules import extract_rules_only
    from graph_flows.services.evaluation.data import read_redocred
    from graph_flows.services.evaluation.extraction import evaluate

    with _user_errors():
        if chunk_size and not 100 <= chunk_size <= 20000:
            raise RequestError(f"--chunk-size must be 0 or between 100 and 20000, got "
                               f"{chunk_size}")
        if limit < 0 or offset < 0:
            raise RequestError(f"--limit and --offset must be 0 or more, got {limit} and "
                               f"{offset}")
        docs = read_redocred(redocred)[offset:][: limit or None]
        if not docs:
            raise RequestError(f"--offset {offset} skips every document of {redocred}")
        with _bars(as_json) as progress:
            report = evaluate(docs, chunk_size=chunk_size,
                              on_progress=lambda n, total: progress("documents", n, total))
            baseline = evaluate(docs, chunk_size=chunk_size, extract=extract_rules_only,
                                on_progress=lambda n, total: progress("rules only", n, total))
            measured = _measure_aliases(docs, offset, chunk_size, progress) if aliases else {}
    out = {**report.as_dict(), **measured, "offset": offset,
           "baselines": {"rules_only": baseline.as_dict()}}
    if as_json:
        _console.print(json.dumps(out), markup=False, highlight=False, soft_wrap=True)
        return
    _console.print(_extraction_table(out))
    _console.print(_extraction_table(out["baselines"]["rules_only"], "rules only, no spaCy"))
    if measured:
        a = out["aliases"]
        _console.print(f"aliases (scope {out['alias_scope']}): {a['merged']} of "
                       f"{a['multi_name']} multi-name entities in one stored entity (rate "
                       f"{a['rate']:.3f}); false merges {a['false_merges']} of "
                       f"{a['matched_entities']} matched stored entities (rate "
                       f"{a['false_merge_rate']:.3f})", markup=False, highlight=False)
        s = out["aliases_without_short_forms"]
        _console.print(f"without joining short forms (baseline, scope "
                       f"{out['alias_scope_without_short_forms']}): {s['merged']} of "
                       f"{s['multi_name']} (rate {s['rate']:.3f}); false merges "
                       f"{s['false_merges']} (rate {s['false_merge_rate']:.3f})",
                       markup=False, highlight=False)


def _measure_aliases(docs: list[Any], offset: int, chunk_size: int,
                     progress: Any) -> dict[str, Any]:
    """The alias measure through the store (KRAG_DATA_DIR / KRAG_DATABASE_URL), no LLM."""
    from graph_flows.services.evaluation.aliases import measure_aliases
    from graph_flows.shared.resources import build_resources
    from graph_flows.shared.settings import load_settings

    resources = build_resources(load_settings(chat_model="none"))
    try:
        found = measure_aliases(resources, docs, first=offset, chunk_size=chunk_size,
                                on_progress=lambda n, total: progress("aliases", n, total))
        base = measure_aliases(resources, docs, first=offset, chunk_size=chunk_size,
                               short_forms=False,
                               on_progress=lambda n, total: progress("aliases", n, total))
    finally:
        resources.store.close()
    return {"aliases": found["aliases"], "alias_scope": found["scope"],
            "aliases_without_short_forms": base["aliases"],
            "alias_scope_without_short_forms": base["scope"]}


def _extraction_table(out: dict[str, Any], label: str = "the no-LLM extractor") -> Table:
    table = Table(title=f"Re-DocRED extraction, {label} ({out['documents']} documents)")
    for col in ("measure", "P", "R", "F1", "tp", "predicted", "gold"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    for name in ("entities", "named_entities", "pairs", "pairs_with_cooccurrence", "typed"):
        row = out[name]
        table.add_row(name, *(f"{row[k]:.3f}" for k in ("P", "R", "F1")),
                      *(str(row[k]) for k in ("tp", "predicted", "gold")))
    counts = out["type_counts"]
    table.caption = (f"type accuracy (PER/ORG/LOC): {out['type_accuracy']:.3f} "
                     f"({counts['correct']} of {counts['matched']} matched)")
    return table
