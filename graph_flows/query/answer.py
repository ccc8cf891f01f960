"""generate_response helpers: LLM answer (streamed), extractive no-LLM answer, empty answer."""

from __future__ import annotations

import contextvars
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from prompts import load_prompt, render

EXTRACTIVE_HEADER = "No-LLM mode: extractive answer from the knowledge base (no model wrote this)."
_CITE = re.compile(r"\[(F\d+)\]")


class AnswerTimeoutError(TimeoutError):
    """The answer model did not finish within the request budget."""


def llm_answer(
    model: Any, query: str, definitions: str, facts: str, emit: Callable[[str], None],
    deadline: float | None = None,
) -> str:
    """Stream the model's answer token by token through ``emit``; return the full text.

    ``deadline`` (``time.time()``): the stream runs on a helper thread and is abandoned when
    the deadline passes (:class:`AnswerTimeoutError`), even before its first token; the
    helper stops at the model's next token (or at the model's own ``llm_timeout_s``).
    """
    system = render(load_prompt("answer_v1"), definitions=definitions or "(none)",
                    facts=facts or "(none)")
    messages = [("system", system), ("human", query)]
    if deadline is None:
        parts: list[str] = []
        for chunk in model.stream(messages):
            token = _token(chunk)
            if token:
                parts.append(token)
                emit(token)
        return "".join(parts)
    return _stream_until(model, messages, emit, deadline)


def _token(chunk: Any) -> str:
    content = chunk.content
    return content if isinstance(content, str) else "".join(
        p.get("text", "") for p in content if isinstance(p, dict))


_END = object()


def _stream_until(model: Any, messages: list, emit: Callable[[str], None],
                  deadline: float) -> str:
    """Tokens come through a queue so this thread (which owns ``emit``) can time out."""
    tokens: queue.Queue[Any] = queue.Queue()
    stop = threading.Event()

    def pump() -> None:
        try:
            for chunk in model.stream(messages):
                if stop.is_set():
                    return
                tokens.put(_token(chunk))
            tokens.put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            tokens.put(exc)

    context = contextvars.copy_context()  # keep callbacks/tracing of the graph run
    threading.Thread(target=context.run, args=(pump,), daemon=True,
                     name="krag-answer").start()
    parts: list[str] = []
    while True:
        remaining = deadline - time.time()
        try:
            if remaining <= 0:
                raise queue.Empty
            item = tokens.get(timeout=remaining)
        except queue.Empty:
            stop.set()
            raise AnswerTimeoutError("".join(parts)) from None
        if item is _END:
            return "".join(parts)
        if isinstance(item, BaseException):
            raise item
        if item:
            parts.append(item)
            emit(item)


def extractive_answer(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]], max_facts: int = 5,
) -> str:
    """Top facts and definitions, verbatim and cited, labelled as not written by a model."""
    lines = [EXTRACTIVE_HEADER, ""]
    if facts:
        lines.append("Most relevant facts:")
        lines += [f"- {f['fact']} [{f['label']}]" for f in facts[:max_facts]]
    ranked = [e for e in entities if e.get("summary") and e.get("score", 0) > 0][:3]
    if ranked:
        lines += ["", "Definitions:"]
        lines += [f"- {e['name']}: {e['summary']}" for e in ranked]
    return "\n".join(lines)


def empty_answer(query: str, closest: Sequence[str]) -> str:
    """Nothing retrieved: say so and list the closest entity names."""
    subject = " ".join(query.split())
    subject = subject if len(subject) <= 120 else subject[:119] + "…"
    text = f"The knowledge base has nothing about “{subject}”."
    if closest:
        text += " Closest entities it does know: " + ", ".join(closest) + "."
    else:
        text += " It holds no entities in this scope yet: ingest documents with `krag ingest`."
    return text


def citations(answer: str, facts: Sequence[dict[str, Any]]) -> tuple[list[dict], list[str]]:
    """Facts cited as ``[Fn]`` in order of first use, and labels that match no fact."""
    by_label = {f["label"]: f for f in facts}
    cited, unknown = [], []
    for label in dict.fromkeys(_CITE.findall(answer)):
        f = by_label.get(label)
        if f is None:
            unknown.append(label)
            continue
        cited.append({"label": label, "fact_id": f["id"], "fact": f["fact"],
                      "subject": f["subject"], "object": f["object"],
                      "sources": f.get("sources", [])})
    return cited, unknown
