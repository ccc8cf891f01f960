"""Run context of the indexing graph: what a caller (or LangGraph Studio) may tune per run.

Precedence: a value passed in the run's ``context`` > the environment (through
:class:`graph_flows.shared.settings.Settings`, e.g. ``KRAG_EXTRACTION_MODEL``) > the default here.
Every field is a plain value so Studio can show and edit it; resources (store, models) are
resolved from settings by :mod:`graph_flows.services.ingest`, never passed in here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

MAX_CONCURRENCY = 256  # LLM calls in flight per worker: threads, and the model server's queue
MAX_BATCH_SIZE = 4096  # chunks per claimed batch: one transaction, held in memory
# Worker processes of one ingest: each is a Python process with its models and database
# connections; past this, one machine only thrashes (run more machines on one database).
MAX_WORKERS = 64


@dataclass(kw_only=True)
class IndexingContext:
    """Tunables of one indexing run."""

    chunk_size: int = field(
        default=1000,
        metadata={"description": "Target chunk length in characters (markdown headers and "
                                 "sentence boundaries are respected)."},
    )
    chunk_overlap: int = field(
        default=100, metadata={"description": "Characters shared by consecutive chunks."},
    )
    extraction_model: str | None = field(
        default=None,
        metadata={"description": "Model for entity/relation extraction, e.g. "
                                 "'ollama:qwen2.5:7b-instruct', 'openai:gpt-4o-mini' or 'none' "
                                 "(rule-based, no LLM). Unset: KRAG_EXTRACTION_MODEL, else "
                                 "KRAG_CHAT_MODEL."},
    )
    concurrency: int = field(
        default=4, metadata={"description": "Chunks extracted in parallel (LLM calls in flight)."},
    )
    min_confidence: float = field(
        default=0.6,
        metadata={"description": "Entities and relations below this confidence are dropped."},
    )
    resolution_threshold: float = field(
        default=0.8,
        metadata={"description": "pg_trgm similarity at or above which a new entity name is "
                                 "merged into an existing entity of the same type."},
    )
    short_forms: bool = field(
        default=True,
        metadata={"description": "Join a document's later short forms (a surname, a defined "
                                 "acronym, 'the Bee', a plural) to the full name it "
                                 "introduced earlier, keeping them as aliases. Decided on "
                                 "the stored document once all its chunks are extracted, "
                                 "so the graph does not depend on the order chunks were "
                                 "resolved in (graph_flows.indexing.join_names)."},
    )
    look_ahead: bool = field(
        default=True,
        metadata={"description": "With an LLM, claim and extract the next batch while the "
                                 "current one is validated, resolved, embedded and written "
                                 "(the model is never idle between batches). A failed step "
                                 "stops it: no call starts after the failure, and the chunks "
                                 "claimed ahead go back to pending in place (retried; if "
                                 "that fails the run stops, and the next run takes them "
                                 "back first). False: one batch at a time."},
    )
    batch_size: int = field(
        default=32,
        metadata={"description": "Chunks claimed, extracted and written per transaction."},
    )
    embed_batch_size: int = field(
        default=64, metadata={"description": "Texts per embedding request."},
    )
    stale_after_s: float = field(
        default=600.0,
        metadata={"description": "A claim older than this is taken over by another worker "
                                 "(claims of dead processes on this host are taken over at once)."},
    )
    worker_id: str | None = field(
        default=None,
        metadata={"description": "Name recorded on claimed chunks. Unset: '<hostname>:<pid>'."},
    )

    def __post_init__(self) -> None:
        """Limits: a value outside them is a one-line ValueError naming it."""
        for name, top, what in (("concurrency", MAX_CONCURRENCY, "LLM calls in flight"),
                                ("batch_size", MAX_BATCH_SIZE, "chunks per batch")):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
                raise ValueError(f"{name} must be a whole number from 1 to {top} ({what}); "
                                 f"got {value!r}")

    @classmethod
    def coerce(cls, value: Any) -> IndexingContext:
        """The context of a run: the dataclass itself, a dict (Studio, JSON) or None."""
        if isinstance(value, cls):
            return value
        if not value:
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in dict(value).items() if k in known and v is not None})
