"""`krag eval multihop`: ingest a passage corpus into its own scope, ask every question
through the query graph (no LLM), rank source passages from what the graph retrieved and
score them, with dense (MiniLM cosine) and BM25 (Postgres full-text lexemes) baselines over the same
chunks in the same run.

Ranking of the graph's passages: the passages the graph ranked itself (recipe ``ppr``: its
whole ranking, ``search_metrics["ppr"]["ranked"]``, as a dense ranking is scored on its
whole top 10; the ``passages`` of the answer context are those of them that fit its token
budget), then the documents of the retrieved facts in fact rank order, then those of the
retrieved entities (their provenance) in entity rank order, deduplicated.
Ans@ctx is the answer (or an alias) in the context the graph built (``definitions``,
``facts_text`` and ``passages_text``); for a baseline, in the text of its top-5 passages.
Ans@answer (the graph only) is the answer (or an alias) in the text of the graph's own
answer: queries run without an LLM, so that is the extractive no-LLM answer users get (its
fixed header left out: its "no model wrote this" would hold an alias "no").
``krag_halves`` scores the graph over the even (development) and odd (held-out) question
indexes, ``krag_by_hops`` by the hop count of each question's gold decomposition (2-hop,
3-hop, 4-hop on MuSiQue). ``confidence`` counts the answers by their confidence label
(graph_flows.query.confidence):
``{label: {"n", "correct"}}``, correct by the Ans@answer test; ``confidence_halves`` the same
over the even (development) and odd (held-out) question indexes.
``diagram`` measures each answer's final Mermaid diagram: its size, labelled edges, whether
it shows the gold answer when the answer text holds it, the question's entities and
fragment names (graph_flows.services.evaluation.diagram).
``recipe`` selects the query graph's ranking recipe (default: the graph's default).
``injection`` counts the scope's chunks with instruction-like text withheld
(storage.injection_spans): passages the answer model never reads whole.

The query loop (graph_flows.query.loop): ``planner`` ``none`` (default) runs it as the
product runs without a model (the no-LLM follow-up when part of the question is not covered,
as by default; one round with ``no_llm_follow_up`` False); ``replay`` answers its planning
requests from each question's gold decomposition through a replay model server
(graph_flows.services.evaluation.planner_replay): the real client and loop with a perfect
planner, so the ceiling of the loop's machinery. Analysis and answer stay no-LLM either way.
``max_rounds`` bounds the rounds (default: the product's, KRAG_MAX_ROUNDS). The report's
``planner`` block counts planner calls and tokens per question, the rounds run, the reasons
the loop stopped and the replay server's answers.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from graph_flows.indexing.context import IndexingContext
from graph_flows.query.confidence import LABELS as CONFIDENCE_LABELS
from graph_flows.query.loop import MAX_ROUNDS
from graph_flows.query.retrieval import RECIPES
from graph_flows.services.evaluation.data import (
    EvalInputError,
    Passage,
    Question,
    check_gold,
    read_corpus,
    read_questions,
)
from graph_flows.services.evaluation.diagram import DiagramCounts, answer_text
from graph_flows.services.evaluation.metrics import RetrievalScore, answer_in
from graph_flows.services.evaluation.planner_replay import PlanBook
from graph_flows.services.evaluation.replay import ReplayBook, ReplayServer, read_recordings
from graph_flows.services.ingest import ingest
from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.scoped import scope_access
from storage import injection_spans
from storage.evidence import chunk_rows, fill_chunk_embeddings
from storage.fulltext import ChunkText, bm25_chunks, entity_documents, scope_chunks

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]
"""Progress callback: (stage, done, total); stages 'ingest', 'embed', 'krag', 'dense', 'bm25'."""

SOURCE = "eval-corpus"
CANDIDATE_CHUNKS = 100  # chunks a baseline ranks per question (enough for MRR)
EMBED_BATCH = 128
REPLAY_SPEC = "openai:replay"  # the extraction (or planner) model of a replay run
PLANNERS = ("none", "replay")


def _silent(_stage: str, _done: int, _total: int) -> None:
    """Default progress callback."""


def parse_extraction(mode: str) -> str:
    """Validate ``--extraction``: ``rules`` or ``replay:FILE`` (an existing file)."""
    if mode == "rules":
        return mode
    if mode.startswith("replay:"):
        path = Path(mode.removeprefix("replay:"))
        if not path.is_file():
            raise EvalInputError(f"{path}: no such replay file (--extraction replay:FILE)")
        return mode
    raise EvalInputError(f"--extraction must be 'rules' or 'replay:FILE', got {mode!r}")


def parse_recipe(recipe: str | None) -> str | None:
    """Validate ``--recipe``: one of the query graph's recipes, or None (its default)."""
    if recipe is not None and recipe not in RECIPES:
        raise EvalInputError(f"--recipe must be one of {', '.join(RECIPES)}, got {recipe!r}")
    return recipe


def parse_planner(mode: str) -> str:
    """Validate ``--planner``: ``none`` or ``replay``."""
    if mode not in PLANNERS:
        raise EvalInputError(f"--planner must be one of {', '.join(PLANNERS)}, got {mode!r}")
    return mode


def parse_max_rounds(value: str | int | None) -> int | None:
    """Validate ``--max-rounds``: a whole number 1..4, or None (the product's default)."""
    if value is None:
        return None
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str) and value.strip().isdecimal():
        number = int(value)
    if number is None or not 1 <= number <= MAX_ROUNDS:
        raise EvalInputError(f"--max-rounds must be a whole number 1..{MAX_ROUNDS} (1 turns "
                             f"the loop off), got {value!r}")
    return number


def eval_scope(corpus: Path, extraction: str) -> str:
    """The scope a corpus is ingested into: a hash of its content and the extraction mode
    (for replay, of the recording's content)."""
    mode = extraction.encode()
    if extraction.startswith("replay:"):
        mode = b"replay:" + Path(extraction.removeprefix("replay:")).read_bytes()
    digest = hashlib.sha256(Path(corpus).read_bytes() + b"\0" + mode)
    return f"eval-{digest.hexdigest()[:12]}"


@dataclass
class _Run:
    """What one evaluation run works with."""

    res: Resources
    scope: str
    passages: dict[str, Passage]
    questions: list[Question]
    progress: Progress


@dataclass(frozen=True)
class LoopOptions:
    """How the query loop runs in an evaluation (see the module docstring)."""

    planner: str = "none"
    max_rounds: int | None = None
    no_llm_follow_up: bool = True

    def context(self) -> dict[str, Any]:
        """The query graph's run-context keys these options set."""
        out: dict[str, Any] = {"no_llm_follow_up": self.no_llm_follow_up}
        if self.max_rounds is not None:
            out["max_rounds"] = self.max_rounds
        if self.planner == "replay":
            out |= {"planner_model": REPLAY_SPEC, "analysis_model": NO_LLM,
                    "answer_model": NO_LLM}
        return out


def run_multihop(
    resources: Resources, corpus: Path, questions: Path, *, extraction: str = "rules",
    scope: str | None = None, on_progress: Progress | None = None, recipe: str | None = None,
    loop: LoopOptions | None = None,
) -> dict[str, Any]:
    """Run the whole evaluation; the JSON report (see the module docstring)."""
    mode = parse_extraction(extraction)
    recipe = parse_recipe(recipe)
    loop = loop or LoopOptions()
    parse_planner(loop.planner)
    parse_max_rounds(loop.max_rounds)
    passages = read_corpus(Path(corpus))
    asked = read_questions(Path(questions))
    check_gold(Path(questions), asked, {p.id for p in passages})
    run = _Run(replace(resources, chat_override=NO_LLM), scope or eval_scope(corpus, mode),
               {p.id: p for p in passages}, asked, on_progress or _silent)
    with use_resources(run.res), scope_access(run.scope, run.res.store):
        ingest_report = _ingest_with(run, resources, mode, passages)
        with run.res.store.connect() as conn:
            chunks = scope_chunks(conn, run.scope)
            flagged = injection_spans.counts(conn, [run.scope])
        if recipe is not None:
            _fill_chunk_vectors(run)
        context = ({} if recipe is None else {"recipe": recipe}) | loop.context()
        krag, planning = _score_with_planner(run, context, loop)
        dense = _score_dense(run, chunks)
        bm25 = _score_bm25(run)
    ingest_report["chunks"] = len(chunks)
    flagged["share"] = round(flagged["flagged"] / flagged["chunks"], 4) if chunks else 0.0
    labels = planning.pop("confidence")
    diagrams = planning.pop("diagram")
    parts = planning.pop("parts")
    planning |= {"mode": loop.planner, "no_llm_follow_up": loop.no_llm_follow_up,
                 "max_rounds": loop.max_rounds or resources.settings.max_rounds}
    return {"krag": krag.as_dict(),
            "krag_halves": {k: parts[k] for k in ("even", "odd") if k in parts},
            "krag_by_hops": {k: parts[k] for k in parts if k.endswith("-hop")},
            "confidence": labels.table(),
            "confidence_halves": {"even": labels.table(0), "odd": labels.table(1)},
            "diagram": diagrams.as_dict(), "planner": planning, "injection": flagged,
            "baselines": {"dense": dense.as_dict(), "bm25": bm25.as_dict()},
            "ingest": ingest_report, "scope": run.scope, "questions": len(asked),
            "recipe": recipe or "default",
            "passages": len(passages)}


def _ingest_with(run: _Run, resources: Resources, mode: str,
                 passages: Sequence[Passage]) -> dict[str, Any]:
    """Ingest with the rule extractor, or with the replay model server as the extraction
    model (an ``openai:`` model at the server's loopback URL, no API key sent; queries stay
    no-LLM: only this ingest sees the model)."""
    if mode == "rules":
        return _ingest(run, passages, IndexingContext())
    book = ReplayBook(read_recordings(Path(mode.removeprefix("replay:"))), passages)
    with ReplayServer(book) as server:
        settings = resources.settings.model_copy(update={
            "openai_base_url": server.base_url, "openai_api_key": None,
            "extraction_model": REPLAY_SPEC})
        extracting = replace(resources, settings=settings, chat_override=None, _chat_cache={})
        with use_resources(extracting):
            report = _ingest(run, passages, IndexingContext(extraction_model=REPLAY_SPEC))
        report["replay"] = {**server.stats, "recordings": len(book.recordings)}
    return report


def _ingest(run: _Run, passages: Sequence[Passage], context: IndexingContext,
            ) -> dict[str, Any]:
    """Ingest the passages (one document each, uri = passage id) through the ingest service."""
    records = [{"uri": p.id, "title": p.title, "text": p.full_text} for p in passages]
    started = time.perf_counter()
    out = ingest({"records": records, "scope": run.scope, "source": SOURCE}, context,
                 on_progress=lambda s: run.progress("ingest", s["completed"] + s["failed"],
                                                    s["total"]))
    seconds = time.perf_counter() - started
    done = int((out.get("chunks") or {}).get("completed", 0))
    if out.get("failures"):
        log.warning("eval ingest: %d failures, first: %s", len(out["failures"]),
                    out["failures"][0])
    stored = run.res.store.counts(run.scope)
    return {"chunks": 0, "seconds": round(seconds, 2),
            "chunks_per_s": round(done / seconds, 2) if seconds else 0.0,
            "extracted_chunks": done, "documents": out.get("documents", {}),
            "mode": out.get("mode"), "model": out.get("model"),
            "failed_chunks": int((out.get("chunks") or {}).get("failed", 0)),
            "failure_reasons": dict(Counter(_reason(f) for f in out.get("failures") or [])),
            "written": {"entities": out.get("entities", 0), "relations": out.get("relations", 0)},
            "dropped": out.get("dropped") or {},
            "stored": {"entities": stored["entities"], "relations": stored["relations"]}}


def _reason(failure: dict[str, Any]) -> str:
    """A failure reason without the passage id (for counting)."""
    return re.sub(r"passage \S+", "passage <id>", str(failure.get("reason", "")))[:200]


def ranked_documents(conn: Any, result: dict[str, Any]) -> list[str]:
    """The documents of the passages a query-graph result ranked (recipe ``ppr``), in rank
    order, before the answer context's token budget kept the first of them."""
    ranked = (result.get("search_metrics") or {}).get("ppr", {}).get("ranked") or []
    return [row["uri"] for row in chunk_rows(conn, ranked)]


def graph_passages(result: dict[str, Any], entity_docs: dict[str, list[str]],
                   ranked_docs: Sequence[str] = ()) -> list[str]:
    """Passage ids from a query-graph result: ``ranked_docs`` (its whole passage ranking,
    :func:`ranked_documents`) and its context passages, then fact sources in fact order,
    then entity provenance in entity order, deduplicated."""
    ranked: list[str] = list(ranked_docs) + [p["uri"] for p in result.get("passages") or []]
    for fact in result.get("facts") or []:
        ranked += [s["uri"] for s in fact.get("sources") or []]
    for entity in result.get("entities") or []:
        ranked += entity_docs.get(entity.get("id", ""), [])
    return list(dict.fromkeys(ranked))


def _fill_chunk_vectors(run: _Run) -> None:
    """Embed the chunks still without a vector (a store ingested before chunk embeddings
    existed), so every recipe can be measured on the same scope."""
    with run.res.store.transaction() as conn:
        added = fill_chunk_embeddings(conn, run.res.embeddings.embed_documents,
                                      batch=EMBED_BATCH)
    if added:
        log.info("eval: embedded %d chunks that had no vector", added)


def _score_with_planner(run: _Run, context: dict[str, Any], loop: LoopOptions,
                        ) -> tuple[RetrievalScore, dict[str, Any]]:
    """:func:`_score_krag` as the loop options say: with ``replay``, the questions run with
    the replay planner server as the planner model (an ``openai:`` model at its loopback
    URL, no API key sent; analysis and answer stay no-LLM by the run context, so only the
    planner reaches the server)."""
    if loop.planner != "replay":
        return _score_krag(run, context)
    with ReplayServer(PlanBook(run.questions)) as server:
        settings = run.res.settings.model_copy(update={
            "openai_base_url": server.base_url, "openai_api_key": None})
        planning = replace(run.res, settings=settings, chat_override=None, _chat_cache={})
        with use_resources(planning):
            krag, report = _score_krag(replace(run, res=planning), context)
        report["server"] = server.stats
    return krag, report


def _score_krag(run: _Run, context: dict[str, Any]) -> tuple[RetrievalScore, dict[str, Any]]:
    """Ask every question through the query graph and score the passages it reached; the
    loop's counts (:class:`LoopCounts`)."""
    from graph_flows import query_flow

    score, counts, labels = RetrievalScore(), LoopCounts(), ConfidenceCounts()
    diagrams = DiagramCounts()
    parts: dict[str, RetrievalScore] = {}
    for n, q in enumerate(run.questions, 1):
        started = time.perf_counter()
        result = query_flow.invoke({"query": q.question, "scope": run.scope}, context=context)
        ms = (time.perf_counter() - started) * 1000
        ids = [e["id"] for e in result.get("entities") or [] if e.get("id")]
        with run.res.store.connect() as conn:
            ranked = graph_passages(result, entity_documents(conn, ids),
                                    ranked_documents(conn, result))
        built = "\n".join(result.get(k, "") for k in ("definitions", "facts_text",
                                                        "passages_text"))
        right = answer_in(answer_text(result), q.answers)
        for part in (score, *(parts.setdefault(k, RetrievalScore()) for k in _parts(n - 1, q))):
            part.add(ranked, q.gold, answer_in(built, q.answers), ms, right)
        counts.add(result)
        labels.add(n - 1, result, right)
        diagrams.add(q.question, result, q.answers)
        run.progress("krag", n, len(run.questions))
    return score, counts.as_dict() | {"confidence": labels, "diagram": diagrams, "parts": {
        k: v.as_dict() for k, v in sorted(parts.items())}}


def _parts(index: int, q: Question) -> list[str]:
    """The report parts a question (``index`` from 0) counts in: its half ("even", the
    development half, or "odd", the held-out one) and, when its gold decomposition gives
    it, its hop count ("2-hop", ...)."""
    return ["even" if index % 2 == 0 else "odd",
            *([f"{len(q.decomposition)}-hop"] if q.decomposition else [])]


@dataclass
class ConfidenceCounts:
    """Per answer-confidence label: questions so labelled (``n``) and those whose answer
    text holds the gold answer or an alias (``correct``, the test of Ans@answer); over all
    questions and over the even (development) and odd (held-out) question indexes."""

    rows: list[tuple[int, str, bool]] = field(default_factory=list)

    def add(self, index: int, result: dict[str, Any], correct: bool) -> None:
        """Count one question (``index`` from 0) by its result's label."""
        label = str((result.get("answer_confidence") or {}).get("label") or "none")
        self.rows.append((index, label, correct))

    def table(self, half: int | None = None) -> dict[str, dict[str, int]]:
        """``{label: {"n", "correct"}}`` for every label; ``half`` 0 (even) or 1 (odd)."""
        rows = [r for r in self.rows if half is None or r[0] % 2 == half]
        return {label: {"n": sum(r[1] == label for r in rows),
                        "correct": sum(r[1] == label and r[2] for r in rows)}
                for label in CONFIDENCE_LABELS}


@dataclass
class LoopCounts:
    """Per-question counts of the query loop: planner calls and tokens, rounds run, and the
    reason the loop stopped."""

    calls: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    rounds: Counter[int] = field(default_factory=Counter)
    stops: Counter[str] = field(default_factory=Counter)
    by: Counter[str] = field(default_factory=Counter)

    def add(self, result: dict[str, Any]) -> None:
        """Count one query-graph result."""
        planner = (result.get("search_metrics") or {}).get("planner") or {}
        self.calls.append(int(planner.get("calls") or 0))
        self.tokens.append(int(planner.get("tokens") or 0))
        rounds = result.get("rounds") or []
        self.rounds[len(rounds)] += 1
        self.stops[str((rounds[-1].get("stop") if rounds else None) or "(no rounds)")] += 1
        self.by.update(r.get("by") or "" for r in rounds[1:])

    def as_dict(self) -> dict[str, Any]:
        """``calls_per_question``, ``tokens_per_question`` (means), ``calls`` (total),
        ``rounds`` (questions by rounds run), ``stops`` (questions by stop reason) and
        ``follow_ups`` (follow-up rounds by who asked)."""
        n = len(self.calls) or 1
        return {"calls_per_question": round(sum(self.calls) / n, 3),
                "tokens_per_question": round(sum(self.tokens) / n, 1),
                "calls": sum(self.calls),
                "rounds": {str(k): v for k, v in sorted(self.rounds.items())},
                "stops": dict(self.stops.most_common()), "follow_ups": dict(self.by)}


def _passages_of(chunks: Sequence[ChunkText]) -> list[str]:
    return list(dict.fromkeys(c.uri for c in chunks))


def _top_text(run: _Run, ranked: Sequence[str], k: int = 5) -> str:
    return "\n".join(run.passages[p].full_text for p in ranked[:k] if p in run.passages)


def _score_dense(run: _Run, chunks: Sequence[ChunkText]) -> RetrievalScore:
    """Cosine over the product embedder's vectors of the scope's chunk texts."""
    embedder = run.res.embeddings
    vectors: list[list[float]] = []
    for start in range(0, len(chunks), EMBED_BATCH):
        vectors += embedder.embed_documents([c.text for c in chunks[start:start + EMBED_BATCH]])
        run.progress("embed", min(start + EMBED_BATCH, len(chunks)), len(chunks))
    matrix = _normalise(np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1))
    score = RetrievalScore()
    for n, q in enumerate(run.questions, 1):
        started = time.perf_counter()
        query = _normalise(np.asarray([embedder.embed_query(q.question)], dtype=np.float32))[0]
        order = np.argsort(-(matrix @ query), kind="stable")[:CANDIDATE_CHUNKS] \
            if len(chunks) else []
        ranked = _passages_of([chunks[i] for i in order])
        ms = (time.perf_counter() - started) * 1000
        score.add(ranked, q.gold, answer_in(_top_text(run, ranked), q.answers), ms)
        run.progress("dense", n, len(run.questions))
    return score


def _normalise(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


def _score_bm25(run: _Run) -> RetrievalScore:
    """BM25 over the Postgres full-text lexemes of the scope's chunks (storage.fulltext)."""
    score = RetrievalScore()
    for n, q in enumerate(run.questions, 1):
        started = time.perf_counter()
        with run.res.store.connect() as conn:
            hits = bm25_chunks(conn, run.scope, q.question, CANDIDATE_CHUNKS)
        ranked = _passages_of(hits)
        ms = (time.perf_counter() - started) * 1000
        score.add(ranked, q.gold, answer_in(_top_text(run, ranked), q.answers), ms)
        run.progress("bm25", n, len(run.questions))
    return score
