"""A replayed follow-up planner: the query loop's planning requests answered from each
question's gold decomposition, over the OpenAI wire protocol (a perfect planner).

`krag eval multihop --planner replay` serves a :class:`PlanBook` with the extraction
replay's server (:class:`~graph_flows.services.evaluation.replay.ReplayServer`), so the
real ``langchain-openai`` client, the structured-output parser, the loop's checks, merge
and stopping all run; only the planner's judgement is replaced. What it measures is the
ceiling of the loop's machinery when every sub-question is right, not a planner.

A planning request is recognised by its user message (graph_flows.query.planner
``planner_message``): the question inside ``<question>``, the searches run so far inside
``<asked>`` (one ``- `` line each, the first the question itself) and ``<evidence>``. The
question is found by its folded text (NFKC, case-folded, letters and digits: tag
neutralising does not matter). The reply asks the first hop the searches do not cover yet:
its sub-question with every ``#j`` replaced by hop ``j``'s answer, ``bridge_entity`` the
previous hop's answer (empty for the first hop) and a one-sentence ``reason``; once every
hop is covered, ``sufficient``. A hop is covered when its filled sub-question is one of
the searches, or names nothing the searches did not name (the content-word stems of
graph_flows.query.extractive, the loop's own novelty test): the question itself usually
asks its first hop whole ("Who founded the company that made X?" holds "Which company made
X?"), and the loop would end on such a sub-question (loop.check_sub_question), so a perfect
planner, as the prompt asks, goes on to the next hop with the bridge filled in. Without
skips this is hop ``k + 1`` after ``k`` follow-ups. The evidence is not read: the replay
follows the decomposition whatever the rounds found.

A request whose question is not in the question file (or has no decomposition) gets HTTP
422 with a one-line reason (the loop then stops with "the planner failed"); a request that
is not a planning request gets HTTP 400. Both are counted in the server's stats.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from graph_flows.query.extractive import terms
from graph_flows.services.evaluation.data import Hop, Question
from graph_flows.services.evaluation.replay import Reply, fold, message_text

_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_ASKED = re.compile(r"<asked>\n(.*?)\n</asked>", re.DOTALL)
_REFERENCE = re.compile(r"#(\d+)")


def fill(hop: Hop, earlier: Sequence[Hop]) -> str:
    """``hop``'s sub-question with every ``#j`` replaced by the answer of ``earlier[j-1]``
    (a reference to a hop not among ``earlier`` is left as written)."""
    def answer(match: re.Match[str]) -> str:
        j = int(match.group(1))
        return earlier[j - 1].answer if 1 <= j <= len(earlier) else match.group(0)

    return " ".join(_REFERENCE.sub(answer, hop.question).split())


def next_step(hops: Sequence[Hop], searches: Sequence[str]) -> dict[str, Any]:
    """The FollowUp after ``searches`` (the question, then the follow-ups asked): the first
    hop the searches do not cover yet, or sufficient when they cover every hop."""
    asked = {fold(s) for s in searches}
    named = frozenset().union(*(terms(s) for s in searches))
    for k, hop in enumerate(hops):
        sub = fill(hop, hops[:k])
        if fold(sub) in asked or not terms(sub) - named:
            continue
        return {"sufficient": False, "sub_question": sub,
                "bridge_entity": hops[k - 1].answer if k else "",
                "reason": f"Hop {k + 1} of {len(hops)} has not been searched yet."}
    return {"sufficient": True, "sub_question": "", "bridge_entity": "",
            "reason": f"The searches cover all {len(hops)} hops of the question."}


class PlanBook:
    """The questions' decompositions by folded question text; answers planning requests."""

    def __init__(self, questions: Sequence[Question]) -> None:
        self.questions: dict[str, Question] = {}
        for q in questions:
            self.questions.setdefault(fold(q.question), q)

    def respond(self, body: dict[str, Any]) -> Reply:
        """The FollowUp for one planning request, or an HTTP error saying why there is
        none (see the module docstring)."""
        message = _planning_message(body.get("messages") or [])
        if message is None:
            return Reply(status=400, code="not_planning", counts={"not_planning": 1},
                         error="no <question>, <asked> and <evidence> in a user message: "
                               "not a planning request")
        question, asked = message
        known = self.questions.get(fold(question))
        if known is None or not known.decomposition:
            what = "is not in the question file" if known is None else "has no decomposition"
            return Reply(status=422, code="unknown_question", counts={"unknown_question": 1},
                         error=f"replay: the question {question[:80]!r} {what}")
        step = next_step(known.decomposition, asked)
        return Reply(json.dumps(step, ensure_ascii=False), counts={
            "answered": 1, "sufficient" if step["sufficient"] else "sub_questions": 1})


def _planning_message(messages: Sequence[Any]) -> tuple[str, list[str]] | None:
    """The question and the searches of the last user message holding a planning request
    (a repair request repeats it before its note), or None."""
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = message_text(message.get("content"))
        question, asked = _QUESTION.search(text), _ASKED.search(text)
        if question and asked and "<evidence>" in text:
            searches = [line[2:] for line in asked.group(1).split("\n")
                        if line.startswith("- ")]
            return question.group(1), searches
    return None
