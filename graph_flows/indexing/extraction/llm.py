"""Extraction of one chunk: LLM with schema-constrained output, a tolerant parser, one retry.

The chat model is asked for :class:`~graph_flows.indexing.extraction.schema.Extraction` through
``with_structured_output(<json schema>, method="json_schema", include_raw=True)``: Ollama
receives the schema in ``format``, OpenAI(-compatible) servers as ``response_format``. The
schema is passed as a dict (not the Pydantic class) so a malformed reply comes back as raw
text instead of an exception inside the client; models without ``json_schema`` support fall
back to the default (tool-calling) structured output. Whatever arrives is parsed by
:func:`parse_extraction`, which tolerates code fences and prose around the JSON object.

A reply that still does not parse is retried once with the parse error fed back; a second
failure, or any error of the call itself (unreachable server, timeout, HTTP error), fails
that chunk with the reason. Nothing here raises for one bad chunk.

Concurrency: the chunks of a claimed batch run on a ``ThreadPoolExecutor`` of
``concurrency`` threads rather than a ``Send`` fan-out, because the batch is the unit of the
transactional write (a chunk is marked completed in the same transaction as its graph), the
bound must come from the run context (Studio-editable) rather than the run's
``max_concurrency`` config, and one graph step per batch keeps checkpoints small. The pool
lives only inside :func:`extract_batch` (one ``extract`` step): no call outlives the step that
made it, so a run that fails later (resolve, write) leaves nothing calling the LLM, and
nothing about a run is kept outside the graph state. LangChain chat models are thread-safe
for concurrent ``invoke``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import ValidationError

from graph_flows.indexing.extraction.rules import extract_rules, extract_rules_batch
from graph_flows.indexing.extraction.schema import Extraction
from graph_flows.indexing.extraction.validation import sanitize_for_prompt
from graph_flows.shared.threads import ContextThreadPool
from prompts import load_prompt, render, split_roles

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.runnables import Runnable

log = logging.getLogger(__name__)

PROMPT_NAME = "extraction_v2"
MAX_PROMPT_CHARS = 8000
_FEEDBACK = (
    "Your reply could not be used: {error}\n"
    "Reply again with only one JSON object with the keys \"entities\" and \"relations\", "
    "following the schema, with no code fence and no text before or after it."
)


class ExtractionParseError(ValueError):
    """A model reply that is not a usable Extraction; ``str()`` says why in one line."""


@dataclass
class ChunkResult:
    """Outcome of extracting one chunk (``extraction`` is None when it failed)."""

    chunk_id: str
    extraction: dict[str, Any] | None
    error: str | None = None
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    over_limit: int = 0
    malformed: int = 0


# -- parsing --------------------------------------------------------------------------------
def parse_extraction(value: Any) -> Extraction:
    """An Extraction from a parsed dict, an Extraction, or raw text with JSON somewhere in it."""
    if isinstance(value, Extraction):
        return value
    obj = value if isinstance(value, dict) else _json_object(str(value or ""))
    try:
        return Extraction.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ExtractionParseError(f"schema mismatch at {where or 'top level'}: "
                                   f"{first['msg']}") from None


def _json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences, leading and trailing prose ignored)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    last_error = "no JSON object found"
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except ValueError as exc:
            last_error = f"invalid JSON ({exc.msg} at char {exc.pos})"
        else:
            if isinstance(obj, dict):
                return obj
        start = text.find("{", start + 1)
    raise ExtractionParseError(last_error)


# -- prompting ------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def extraction_schema() -> dict[str, Any]:
    """JSON schema of Extraction with ``$defs`` inlined (friendlier to grammar engines)."""
    schema = Extraction.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return inline(defs[node["$ref"].rsplit("/", 1)[-1]])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(schema)


def build_messages(text: str, *, source: str, uri: str) -> list[BaseMessage]:
    """System + user messages of the versioned extraction prompt for one chunk."""
    system, user = split_roles(load_prompt(PROMPT_NAME))
    schema = json.dumps(extraction_schema(), separators=(",", ":"))
    document = sanitize_for_prompt(text, max_chars=MAX_PROMPT_CHARS)
    values = {"source": source, "uri": uri, "schema": schema}
    return [SystemMessage(render(system, **values)),
            HumanMessage(render(user, **values, document=document))]


def structured(model: BaseChatModel) -> Runnable:
    """``model`` returning {raw, parsed, parsing_error}, schema-constrained when supported."""
    schema = extraction_schema()
    try:
        return model.with_structured_output(schema, method="json_schema", include_raw=True)
    except (ValueError, NotImplementedError, TypeError):
        return model.with_structured_output(schema, include_raw=True)


# -- one chunk ------------------------------------------------------------------------------
def extract_with_llm(runnable: Runnable, chunk: dict[str, Any]) -> ChunkResult:
    """Extract one chunk; one retry with the parse error fed back; never raises."""
    result = ChunkResult(chunk["id"], None)
    messages = build_messages(chunk["text"], source=chunk["source"], uri=chunk["uri"])
    for attempt in (1, 2):
        try:
            out = runnable.invoke(messages)
        except Exception as exc:  # noqa: BLE001 - any client failure fails this chunk only
            # An HTTP error status carries its reason in the message; anything else keeps
            # its traceback in the log.
            log.warning("LLM call failed on chunk %s: %s", chunk["id"], describe_error(exc),
                        exc_info=None if getattr(exc, "status_code", None) else exc)
            result.error = f"LLM call failed: {describe_error(exc)}"
            return result
        raw: AIMessage = out["raw"]
        _add_usage(result, raw)
        try:
            extraction = parse_extraction(out.get("parsed") or raw.content)
        except ExtractionParseError as exc:
            if attempt == 2:
                log.warning("unparseable extraction of chunk %s after retry: %s",
                            chunk["id"], exc)
                result.error = f"unparseable extraction after retry: {exc}"
                return result
            messages = [*messages, AIMessage(str(raw.content or "")),
                        HumanMessage(_FEEDBACK.format(error=exc))]
            continue
        result.extraction = extraction.model_dump()
        result.over_limit = extraction.over_limit
        result.malformed = extraction.malformed
        return result
    return result  # pragma: no cover - the loop always returns


def extract_with_rules(chunk: dict[str, Any]) -> ChunkResult:
    """No-LLM mode: the deterministic rule extractor."""
    try:
        extraction = extract_rules(chunk["text"])
    except Exception as exc:  # noqa: BLE001 - a bug on one chunk must not stop the run
        log.exception("rule extractor failed on chunk %s", chunk["id"])  # with the cause
        return ChunkResult(chunk["id"], None, f"rule extractor failed: {describe_error(exc)}")
    return ChunkResult(chunk["id"], extraction.model_dump(), over_limit=extraction.over_limit)


def extract_batch(
    chunks: Sequence[dict[str, Any]], model: BaseChatModel | None, *, concurrency: int
) -> list[dict[str, Any]]:
    """Extract every chunk of a batch (order kept); ``model=None`` uses the rule extractor."""
    if model is None:
        try:  # one spaCy pass over the batch; a failure retries chunk by chunk
            batch = extract_rules_batch([c["text"] for c in chunks])
        except Exception:  # noqa: BLE001 - the per-chunk path reports the failing chunk
            log.warning("batched rule extraction failed; extracting chunk by chunk",
                        exc_info=True)
            return [asdict(extract_with_rules(c)) for c in chunks]
        return [asdict(ChunkResult(c["id"], ex.model_dump(), over_limit=ex.over_limit))
                for c, ex in zip(chunks, batch, strict=True)]
    runnable = structured(model)
    workers = max(1, min(concurrency, len(chunks)))
    with ContextThreadPool(max_workers=workers, thread_name_prefix="extract") as pool:
        futures = [pool.submit(extract_with_llm, runnable, c) for c in chunks]
        try:
            results = [f.result() for f in futures]
        finally:  # interrupted: calls not started yet never start
            pool.shutdown(cancel_futures=True)
    return [asdict(r) for r in results]


def _add_usage(result: ChunkResult, message: AIMessage) -> None:
    result.llm_calls += 1
    usage = getattr(message, "usage_metadata", None) or {}
    result.input_tokens += int(usage.get("input_tokens") or 0)
    result.output_tokens += int(usage.get("output_tokens") or 0)


def describe_error(exc: BaseException) -> str:
    """One line naming an exception: its type and the first line of its message."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
