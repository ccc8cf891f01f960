"""Scripted extraction models for the indexing benchmark (and the tests).

- :class:`ScriptedChatModel`: an in-process fake chat model whose reply is computed from the
  prompt by a ``responder`` (so replies follow the chunk, whatever the concurrency).
- :class:`ContentLLMServer`: the wire-protocol
  :class:`~graph_flows.testing.llm_server.LLMServer` whose
  chat replies are computed from the request body the same way (for subprocess runs).
- :func:`rules_reply`: JSON of the rule extractor (deterministic for any text).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graph_flows.testing.llm_server import LLMServer, RecordedRequest

_DOC = re.compile(r"<document>\n?(.*?)\n?</document>", re.S)


def document_of(messages: Sequence[BaseMessage]) -> str:
    """The chunk text inside ``<document>`` of the prompt ('' when absent)."""
    for message in messages:
        if message.type == "system":
            continue
        match = _DOC.search(str(message.content))
        if match:
            return match.group(1)
    return ""


def document_in_body(body: Any) -> str:
    """The chunk text inside ``<document>`` of an OpenAI/Ollama chat request body ('' when
    absent)."""
    for message in (body or {}).get("messages", []):
        if message.get("role") == "system":
            continue
        match = _DOC.search(str(message.get("content") or ""))
        if match:
            return match.group(1)
    return ""


def rules_reply(text: str) -> str:
    """Extraction JSON produced by the rule extractor (deterministic for any text)."""
    from graph_flows.indexing.extraction.rules import extract_rules

    return extract_rules(text).model_dump_json()


class ScriptedChatModel(GenericFakeChatModel):
    """Fake chat model: ``responder(messages)`` gives each reply (str or AIMessage).

    ``bind_tools`` returns self so ``with_structured_output`` works; every call is logged
    in ``calls`` (unless ``record=False``: benchmarks); replies report token usage like a
    real provider; ``latency`` sleeps.
    """

    responder: Any = None
    calls: list[list[BaseMessage]] = []
    latency: float = 0.0
    record: bool = True
    lock: Any = None

    def __init__(self, responder: Callable[[list[BaseMessage]], str | AIMessage],
                 latency: float = 0.0, record: bool = True) -> None:
        super().__init__(messages=iter(()), responder=responder, calls=[], latency=latency,
                         record=record, lock=threading.Lock())

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.latency:
            time.sleep(self.latency)
        if self.record:
            with self.lock:
                self.calls.append(list(messages))
        reply = self.responder(list(messages))
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=reply, usage_metadata={
                "input_tokens": 100, "output_tokens": len(reply.split()),
                "total_tokens": 100 + len(reply.split())})
        return ChatResult(generations=[ChatGeneration(message=reply)])

    @classmethod
    def per_document(cls, reply: Callable[[str], str], **kw: Any) -> ScriptedChatModel:
        """A model answering ``reply(chunk text)``."""
        return cls(lambda messages: reply(document_of(messages)), **kw)


class ContentLLMServer(LLMServer):
    """LLMServer whose chat replies are ``reply(chunk text of the request)``."""

    def __init__(self, reply: Callable[[str], str] = rules_reply, **kw: Any) -> None:
        super().__init__(**kw)
        self.reply = reply
        self._local = threading.local()

    def _record(self, req: RecordedRequest) -> None:
        super()._record(req)
        self._local.body = req.body

    def _next_reply(self) -> str:
        return self.reply(document_in_body(getattr(self._local, "body", None)))
