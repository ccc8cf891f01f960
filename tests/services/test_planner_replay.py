"""The replayed planner: the query loop's planning requests answered from gold
decompositions over the OpenAI wire protocol, read by the real langchain-openai client
through the planner's own structured output (graph_flows.query.planner.plan)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from graph_flows.query import planner
from graph_flows.services.evaluation.data import EvalInputError, Hop, Question, read_questions
from graph_flows.services.evaluation.multihop import REPLAY_SPEC
from graph_flows.services.evaluation.planner_replay import PlanBook, fill, next_step
from graph_flows.services.evaluation.replay import ReplayServer
from graph_flows.shared.providers import make_chat_model
from graph_flows.shared.settings import Settings
from prompts import load_prompt

# hop 1 names something the question does not ("boatyard"), so it is asked; the question
# of QUICK holds its first hop whole, so the replay goes straight to the second
SLOW = Question("q1", "Where did the founder of Heron Works train?", ("Dunmore",),
                ("toy:heron", "toy:varga"), decomposition=(
                    Hop("Which shipwright founded the boatyard Heron Works?", "Ines Varga"),
                    Hop("Where did #1 train as a shipwright?", "Dunmore")))
QUICK = Question("q2", "Whom did the founder of Heron Works marry?", ("Tomas Reyl",),
                 ("toy:heron", "toy:varga"), decomposition=(
                     Hop("Who was the founder of Heron Works?", "Ines Varga"),
                     Hop("Whom did #1 marry?", "Tomas Reyl")))
BARE = Question("q3", "Who built the ketch Alba?", ("Heron Works",), ("toy:heron",))


def model(base_url: str, method: str | None = None) -> object:
    """The product's own model factory pointed at the replay server."""
    built = make_chat_model(REPLAY_SPEC, Settings(_env_file=None, openai_base_url=base_url,
                                                  chat_model="none"),
                            temperature=0.0, streaming=False)
    if method is None:
        return built

    class Forced:  # the same client with another structured-output method
        def with_structured_output(self, schema: type, **kw: object) -> object:
            return built.with_structured_output(schema, method=method, **kw)

    return Forced()


def ask(chat: object, question: str, asked: list[str]) -> planner.PlanResult:
    """One planning call as assess_evidence makes it (no evidence: the replay ignores it)."""
    return planner.plan(chat, load_prompt(planner.PROMPT),
                        planner.planner_message(question, asked, [], []))


@pytest.mark.parametrize("method", [None, "function_calling"])
def test_hop_by_hop_then_sufficient_through_the_real_client(method: str | None) -> None:
    with ReplayServer(PlanBook([SLOW, QUICK, BARE])) as server:
        chat = model(server.base_url, method)
        asked = [SLOW.question]
        replies = []
        for _ in range(3):
            result = ask(chat, SLOW.question, asked)
            replies.append(result.plan)
            if result.plan is None or result.plan.sufficient:
                break
            asked.append(result.plan.sub_question)
        quick = ask(chat, QUICK.question, [QUICK.question]).plan
        stats = server.stats
    first, second, last = replies
    assert (first.sufficient, first.sub_question, first.bridge_entity) == (
        False, "Which shipwright founded the boatyard Heron Works?", "")
    assert (second.sufficient, second.sub_question, second.bridge_entity) == (
        False, "Where did Ines Varga train as a shipwright?", "Ines Varga")
    assert second.reason == "Hop 2 of 2 has not been searched yet."
    assert last.sufficient and last.sub_question == ""
    assert (quick.sub_question, quick.bridge_entity) == ("Whom did Ines Varga marry?",
                                                         "Ines Varga")
    assert stats == {"requests": 4, "answered": 4, "sub_questions": 3, "sufficient": 1}


def test_usage_is_counted_as_tokens() -> None:
    with ReplayServer(PlanBook([SLOW])) as server:
        result = ask(model(server.base_url), SLOW.question, [SLOW.question])
    assert result.calls == 1 and result.tokens > 100  # a ~1,900-character prompt


def test_unknown_question_is_a_422_with_one_line_and_counted() -> None:
    with ReplayServer(PlanBook([SLOW, BARE])) as server:
        chat = model(server.base_url)
        with pytest.raises(openai.UnprocessableEntityError) as unknown:
            ask(chat, "Who painted the lighthouse at Kelmouth?", ["Who painted it?"])
        with pytest.raises(openai.UnprocessableEntityError) as bare:
            ask(chat, BARE.question, [BARE.question])
        other = httpx.post(f"{server.base_url}/chat/completions", json={
            "model": "replay", "messages": [{"role": "user", "content": "Hello"}]})
        stats = server.stats
    message = unknown.value.body["message"]
    assert message == ("replay: the question 'Who painted the lighthouse at Kelmouth?' is "
                       "not in the question file")
    assert bare.value.body["message"].endswith("has no decomposition")
    assert other.status_code == 400 and "not a planning request" in other.text
    assert stats == {"requests": 3, "unknown_question": 2, "not_planning": 1}


def test_a_repair_request_is_answered_from_its_planning_message() -> None:
    message = planner.planner_message(SLOW.question, [SLOW.question], [], [])
    with ReplayServer(PlanBook([SLOW])) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json={
            "model": "replay", "messages": [
                {"role": "system", "content": "plan"}, {"role": "user", "content": message},
                {"role": "user", "content": planner.REPAIR_NOTE.format(error="x")}]}).json()
    content = json.loads(reply["choices"][0]["message"]["content"])
    assert content["sub_question"] == SLOW.decomposition[0].question
    assert reply["usage"]["total_tokens"] > 0


def test_fill_and_next_step() -> None:
    hops = (Hop("Who made X?", "Ada"), Hop("#1 >> employer", "Loom Co"),
            Hop("Where is #2 based, and #3?", "Leeds"))
    assert fill(hops[2], hops[:2]) == "Where is Loom Co based, and #3?"
    assert next_step(hops, ["What did the employer of the one who made X build?"])[
        "sub_question"] == "Ada >> employer"  # hop 1's words are all in the question
    assert next_step(hops, ["q", "Who made X?", "Ada >> employer",
                            "Where is Loom Co based, and #3?"])["sufficient"]


def test_decomposition_is_read_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    base = {"question": "Q?", "answer": "A", "supporting_passage_ids": ["p"]}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({**base, "decomposition": [
        {"question": "H?", "answer": "A", "passage_id": "p"}]}) + "\n", encoding="utf-8")
    assert read_questions(path)[0].decomposition == (Hop("H?", "A", "p"),)
    path.write_text(json.dumps(base) + "\n" + json.dumps({
        **base, "decomposition": [{"question": "H?"}]}) + "\n", encoding="utf-8")
    with pytest.raises(EvalInputError) as err:
        read_questions(path)
    assert str(err.value) == (f"{path}:2: field 'decomposition' must be a list of objects "
                              "with a 'question' and an 'answer' (strings)")
