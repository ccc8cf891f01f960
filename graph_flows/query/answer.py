"""generate_response helpers: LLM answer (streamed), extractive no-LLM answer, empty and
"nothing relevant" answers, citations."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from graph_flows.query import extractive, readable
from graph_flows.shared.untrusted import question_message
from prompts import load_prompt, render

ANSWER_PROMPT = "answer_v3"
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
    messages = [("system", system), ("human", question_message(query))]
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
    facts: Sequence[dict[str, Any]], *, query: str, passages: Sequence[dict[str, Any]] = (),
    entity_names: Sequence[str] = (),
) -> str:
    """The best sentences of facts and passages for ``query`` (:mod:`extractive`; the
    question's ``entity_names`` from its analysis), each cited, the best one first,
    labelled as not written by a model."""
    return extractive_text(extractive.pick(query, facts, passages, entity_names=entity_names))


def extractive_text(picked: Sequence[extractive.Candidate]) -> str:
    """The extractive answer of the picked sentences: the first leads, the rest support."""
    lines = [EXTRACTIVE_HEADER, ""]
    if picked:
        lines.append(f"{picked[0].sentence} [{picked[0].label}]")
    if len(picked) > 1:
        lines += ["", "Supporting evidence:"]
        lines += [f"- {c.sentence} [{c.label}]" for c in picked[1:]]
    return "\n".join(lines)


def _subject(query: str) -> str:
    subject = " ".join(query.split())
    return subject if len(subject) <= 120 else subject[:119] + "…"


def empty_answer(query: str, closest: Sequence[str]) -> str:
    """Nothing retrieved: say so and list the closest entity names."""
    text = f"The knowledge base has nothing about “{_subject(query)}”."
    if closest:
        text += " Closest entities it does know: " + ", ".join(closest) + "."
    else:
        text += " It holds no entities in this scope yet: ingest documents with `krag ingest`."
    return text


def nothing_relevant_answer(reason: str, closest: Sequence[str]) -> str:
    """Something was retrieved but none of it answers the question: say so, and why (the
    question is not repeated: it may hold names that are not the knowledge base's)."""
    text = (f"{EXTRACTIVE_HEADER}\n\nNothing relevant found: no fact or passage in the "
            f"knowledge base answers the question. {reason}")
    if closest:
        text += " Closest entities it does know: " + ", ".join(closest) + "."
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
            cited.append(passage_citation(label, p, answer))
        else:
            unknown.append(label)
    return cited, unknown


def passage_citation(label: str, p: dict[str, Any], answer: str = "") -> dict[str, Any]:
    """A cited passage: its chunk id, text and document (uri, title, source), how many
    instruction-like spans its text had withheld (``withheld``), and as a person reads it
    (:mod:`graph_flows.query.readable`): its ``section`` path, the ``document``'s short name
    and the ``sentence`` of it that ``answer`` cites (plain text, "" when none)."""
    text = p.get("text", "")
    return {"label": label, "passage_id": p["id"], "text": text,
            "document_id": p.get("document_id"), "uri": p.get("uri", ""),
            "title": p.get("title", ""), "source": p.get("source", ""),
            "withheld": p.get("withheld", 0), **readable.passage_fields(p),
            "sentence": readable.cited_sentence(text, answer, label) if answer else ""}
