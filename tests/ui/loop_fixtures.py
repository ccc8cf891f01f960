"""The query loop's two-hop corpus (tests/loop_corpus.py) and the fake LLM server's script
for the surfaces' round tests."""

from __future__ import annotations

import json
from typing import Any

from tests.evidence_corpus import QUESTION
from tests.loop_corpus import ENOUGH, FOLLOW, seed_two_hop

__all__ = ["ENOUGH", "FOLLOW", "QUESTION", "llm_script", "seed_two_hop", "stops"]


def llm_script(answer: str) -> list[str]:
    """Replies of the fake LLM server (graph_flows/testing/llm_server.py) for one question that
    takes two
    rounds: the analysis, the planner's follow-up, the planner's "enough", the answer."""
    analysis = {"entities": ["Velmor Prize"], "keywords": ["founder", "childhood"],
                "intent": "factual"}
    return [json.dumps(analysis), json.dumps(FOLLOW), json.dumps(ENOUGH), answer]


def stops(rounds: list[dict[str, Any]]) -> list[str | None]:
    """The stop reasons of ``rounds``, in order."""
    return [r["stop"] for r in rounds]
