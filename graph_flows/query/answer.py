"""generate_response helpers: LLM answer (streamed), extractive no-LLM answer, empty answer."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from prompts import load_prompt, render

EXTRACTIVE_HEADER = "No-LLM mode: extractive answer from the knowledge base (no model wrote this)."
_CITE = re.compile(r"\[(F\d+)\]")


def llm_answer(
    model: Any, query: str, definitions: str, facts: str, emit: Callable[[str], None]
) -> str:
    """Stream the model's answer token by token through ``emit``; return the full text."""
    system = render(load_prompt("answer_v1"), definitions=definitions or "(none)",
                    facts=facts or "(none)")
    parts: list[str] = []
    for chunk in model.stream([("system", system), ("human", query)]):
        token = chunk.content if isinstance(chunk.content, str) else "".join(
            p.get("text", "") for p in chunk.content if isinstance(p, dict))
        if token:
            parts.append(token)
            emit(token)
    return "".join(parts)


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
