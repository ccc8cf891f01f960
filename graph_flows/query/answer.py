"""generate_response helpers: LLM answer (streamed), extractive no-LLM answer, empty answer."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_flows.query import extractive
from prompts import load_prompt, render

ANSWER_PROMPT = "answer_v2"
EXTRACTIVE_HEADER = "No-LLM mode: extractive answer from the knowledge base (no model wrote this)."
_CITE = re.compile(r"\[([FP]\d+)\]")
TIMER_SLACK_S = 0.05


class AnswerTimeoutError(TimeoutError):
    """The answer model did not finish within the request budget."""


def llm_answer(
    model: Any, query: str, definitions: str, facts: str, emit: Callable[[str], None],
    deadline: float | None = None, passages: str = "",
) -> str:
    """Stream the model's answer token by token through ``emit``; return the full text.

    ``deadline`` (``time.time()``): the stream runs in this thread and is closed (which
    closes its HTTP response) at the first token after the deadline; the model, built for
    the remaining budget, gives up by itself if the server sends nothing. Either way
    :class:`AnswerTimeoutError` carries the text streamed so far, and no call runs on.
    """
    system = render(load_prompt(ANSWER_PROMPT), definitions=definitions or "(none)",
                    facts=facts or "(none)", passages=passages or "(none)")
    messages = [("system", system), ("human", query)]
    parts: list[str] = []
    stream = model.stream(messages)
    try:
        for chunk in stream:
            if deadline is not None and time.time() >= deadline:
                raise AnswerTimeoutError("".join(parts))
            token = _token(chunk)
            if token:
                parts.append(token)
                emit(token)
    except AnswerTimeoutError:
        raise
    except Exception as exc:
        if deadline is not None and budget_spent(deadline):
            raise AnswerTimeoutError("".join(parts)) from exc
        raise
    finally:
        stream.close()
    return "".join(parts)


def budget_spent(deadline: float) -> bool:
    """True once ``deadline`` (``time.time()``) has passed, within the clients' timer slack:
    a failure then is the budget's timeout (a model's own, shorter ``llm_timeout_s`` is
    reported as a failure of the model)."""
    return time.time() >= deadline - TIMER_SLACK_S


def _token(chunk: Any) -> str:
    content = chunk.content
    return content if isinstance(content, str) else "".join(
        p.get("text", "") for p in content if isinstance(p, dict))


def extractive_answer(
    entities: Sequence[dict[str, Any]], facts: Sequence[dict[str, Any]], max_facts: int = 5,
    *, query: str = "", passages: Sequence[dict[str, Any]] = (),
) -> str:
    """Top facts and definitions, verbatim and cited, labelled as not written by a model;
    with ``passages``, the best sentences of facts and passages for ``query`` instead."""
    if passages:
        return evidence_answer(query, facts, passages)
    lines = [EXTRACTIVE_HEADER, ""]
    if facts:
        lines.append("Most relevant facts:")
        lines += [f"- {f['fact']} [{f['label']}]" for f in facts[:max_facts]]
    ranked = [e for e in entities if e.get("summary") and e.get("score", 0) > 0][:3]
    if ranked:
        lines += ["", "Definitions:"]
        lines += [f"- {e['name']}: {e['summary']}" for e in ranked]
    return "\n".join(lines)


def evidence_answer(query: str, facts: Sequence[dict[str, Any]],
                    passages: Sequence[dict[str, Any]]) -> str:
    """The best sentence for ``query`` first, then a few supporting ones, each cited."""
    picked = extractive.pick(query, facts, passages)
    lines = [EXTRACTIVE_HEADER, ""]
    if picked:
        lines.append(f"{picked[0][0]} [{picked[0][1]}]")
    if len(picked) > 1:
        lines += ["", "Supporting evidence:"]
        lines += [f"- {sentence} [{label}]" for sentence, label in picked[1:]]
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


def citations(answer: str, facts: Sequence[dict[str, Any]],
              passages: Sequence[dict[str, Any]] = ()) -> tuple[list[dict], list[str]]:
    """Facts cited as ``[Fn]`` and passages cited as ``[Pn]``, in order of first use, and
    labels that match neither."""
    by_label = {f["label"]: f for f in facts}
    by_passage = {p["label"]: p for p in passages}
    cited, unknown = [], []
    for label in dict.fromkeys(_CITE.findall(answer)):
        f, p = by_label.get(label), by_passage.get(label)
        if f is not None:
            cited.append({"label": label, "fact_id": f["id"], "fact": f["fact"],
                          "subject": f["subject"], "object": f["object"],
                          "sources": f.get("sources", [])})
        elif p is not None:
            cited.append(passage_citation(label, p))
        else:
            unknown.append(label)
    return cited, unknown


def passage_citation(label: str, p: dict[str, Any]) -> dict[str, Any]:
    """A cited passage: its chunk id, text and document (uri, title, source)."""
    return {"label": label, "passage_id": p["id"], "text": p.get("text", ""),
            "document_id": p.get("document_id"), "uri": p.get("uri", ""),
            "title": p.get("title", ""), "source": p.get("source", "")}
