"""The follow-up planner of the query loop: the answer model's (or analysis model's) verdict
on the evidence so far, "sufficient" or the next sub-question (IRCoT / DRIFT style).

The model gets the system prompt ``prompts/assess_evidence_v1.md`` and one user message
(:func:`planner_message`): the question inside ``<question>``, the searches already run
inside ``<asked>`` (one per line, ``- `` first; the first is the question), and a compact
view of the evidence inside ``<evidence>`` (the first passages, clipped, then the first
facts). Every text in it has its tags neutralised, the question and the searches their
instruction-like spans withheld (graph_flows.shared.untrusted.for_prompt); passage texts
arrive with theirs already withheld. It answers
with a :class:`FollowUp` by structured output.

A reply that cannot be read is asked for once more (the same messages and a note naming the
problem); a second bad reply ends the loop (:class:`PlanResult` ``error``), never the run.
Calls and tokens (the replies' usage) are counted.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from graph_flows.query.sections import clip
from graph_flows.shared.untrusted import for_prompt, question_message

log = logging.getLogger(__name__)

PROMPT = "assess_evidence_v1"
VIEW_PASSAGES = 6  # passages shown to the planner ...
VIEW_PASSAGE_CHARS = 400  # ... each clipped to this many characters
VIEW_FACTS = 10  # facts shown to the planner
MAX_SUB_QUESTION = 300  # characters kept of a sub-question (a longer one is cut)
REPAIR_NOTE = ("Your previous reply could not be read ({error}). Reply again with only the "
               "structured output: sufficient, sub_question, bridge_entity, reason.")


class FollowUp(BaseModel):
    """Structured output asked of the planner."""

    sufficient: bool = Field(description=(
        "true when the evidence already answers the whole question"))
    sub_question: str = Field(default="", description=(
        "when not sufficient: the one next question to search for, self-contained, naming "
        "what the evidence found"))
    bridge_entity: str = Field(default="", description=(
        "the name found in the evidence that the sub-question follows, or empty"))
    reason: str = Field(default="", description="one short sentence: what is missing, or why "
                                                "the evidence is enough")


@dataclass(frozen=True)
class PlanResult:
    """The planner's verdict (None when its replies could not be read), its calls and
    tokens, and the one-line error of an unreadable reply."""

    plan: FollowUp | None
    calls: int
    tokens: int
    error: str | None = None


def planner_message(question: str, asked: Sequence[str], passages: Sequence[dict[str, Any]],
                    facts: Sequence[dict[str, Any]]) -> str:
    """The planner's user message (see the module docstring)."""
    searches = "\n".join(f"- {clip(for_prompt(q)[0], MAX_SUB_QUESTION)}" for q in asked)
    lines = [f"[P{i}] ({clip(p.get('title') or p.get('uri', ''), 120)}) "
             f"{clip(p.get('text', ''), VIEW_PASSAGE_CHARS)}"
             for i, p in enumerate(passages[:VIEW_PASSAGES], start=1)]
    lines += [f"[F{i}] {clip(f.get('fact', ''), 300)}"
              for i, f in enumerate(facts[:VIEW_FACTS], start=1)]
    evidence = "\n".join(lines) or "(nothing found yet)"
    return (f"{question_message(question)}\n<asked>\n{searches}\n</asked>\n"
            f"<evidence>\n{evidence}\n</evidence>")


def plan(model: Any, prompt: str, message: str) -> PlanResult:
    """Ask ``model`` for a :class:`FollowUp`, repairing an unreadable reply once. A failing
    call (timeout, connection, HTTP error) raises: the caller decides what it ends."""
    structured = model.with_structured_output(FollowUp, include_raw=True)
    messages: list[tuple[str, str]] = [("system", prompt), ("human", message)]
    calls = tokens = 0
    error = ""
    for _attempt in range(2):
        reply = structured.invoke(messages)
        calls += 1
        tokens += _tokens(reply.get("raw"))
        parsed, problem = _parsed(reply)
        if parsed is not None:
            return PlanResult(parsed, calls, tokens)
        error = problem
        log.info("planner reply unreadable (%s)", problem)
        messages = [*messages[:2], ("human", REPAIR_NOTE.format(error=problem))]
    return PlanResult(None, calls, tokens, f"the planner's reply could not be read twice "
                                           f"({error})")


def _parsed(reply: dict[str, Any]) -> tuple[FollowUp | None, str]:
    """The reply's FollowUp, or None and a short description of what was wrong."""
    parsed = reply.get("parsed")
    if reply.get("parsing_error") is not None or parsed is None:
        exc = reply.get("parsing_error")
        return None, (type(exc).__name__ if exc is not None else "no structured output")
    if isinstance(parsed, dict):
        try:
            parsed = FollowUp.model_validate(parsed)
        except ValueError as exc:
            return None, type(exc).__name__
    return parsed, ""


def _tokens(raw: Any) -> int:
    """Total tokens of a reply message (its usage metadata; 0 when the model gives none)."""
    usage = getattr(raw, "usage_metadata", None) or {}
    return int(usage.get("total_tokens") or 0)
