"""krag inside LangChain and LangGraph: the retriever in a two-line LCEL chain, the tool in
a LangGraph prebuilt ReAct agent (docs/GUIDE.md, "LangChain and LangGraph").

Run it from the repository root once the sample corpus is ingested::

    .venv/bin/krag ingest graph_flows/sample_corpus --source sample
    .venv/bin/python docs/examples/langchain_agent.py

It reads the database the settings describe (``KRAG_DATABASE_URL``, else the embedded
PostgreSQL under ``KRAG_DATA_DIR``, scope ``KRAG_SCOPE``) and runs offline: the chat model
is a scripted fake (langchain_core's ``GenericFakeChatModel``) whose replies are written
below. Put your own chat model (``ChatOllama``, ``ChatOpenAI``, ...) in its place.
tests/integrations/test_example.py runs this file.
"""

from __future__ import annotations

import warnings
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langgraph.prebuilt import create_react_agent
from langgraph.warnings import LangGraphDeprecatedSinceV10

from graph_flows.integrations import KragQueryTool, KragRetriever

QUESTION = "What did Edgar Codd propose, and which systems were built on it?"
PROMPT = ChatPromptTemplate.from_template(
    "Answer from these passages only, citing them by number.\n\n{context}\n\n"
    "Question: {question}")


class ScriptedChatModel(GenericFakeChatModel):
    """A fake chat model that replies with the messages it is given, in order (offline).
    ``bind_tools`` returns itself, so an agent can hand it tools."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


def scripted(*replies: AIMessage) -> ScriptedChatModel:
    return ScriptedChatModel(messages=iter(replies))


def numbered(docs: list[Document]) -> str:
    """The passages as the prompt's context: rank, title, text."""
    return "\n\n".join(f"[{d.metadata['rank']}] {d.metadata['title']}\n{d.page_content}"
                       for d in docs)


def run_chain(retriever: KragRetriever, model: Any) -> str:
    """krag's passages in an LCEL chain (the two lines)."""
    chain = ({"context": retriever | numbered, "question": RunnablePassthrough()}
             | PROMPT | model | StrOutputParser())
    return chain.invoke(QUESTION)


def run_agent(tool: KragQueryTool, model: Any) -> list[Any]:
    """krag's kag_query as the tool of a LangGraph prebuilt ReAct agent; its messages."""
    with warnings.catch_warnings():
        # langgraph 1.x points to langchain.agents.create_agent (the `langchain` package,
        # not a krag dependency); the prebuilt agent below still works as before
        warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
        agent = create_react_agent(model, [tool])
    return agent.invoke({"messages": [("user", QUESTION)]})["messages"]


def main() -> None:
    with KragRetriever(k=3) as retriever, KragQueryTool() as tool:
        print("== passages from KragRetriever")
        for doc in retriever.invoke(QUESTION):
            print(f"[{doc.metadata['rank']}] {doc.metadata['title']} "
                  f"({doc.metadata['uri'].rsplit('/', 1)[-1]}, score "
                  f"{doc.metadata['score']:.3f}, "
                  f"{len(doc.metadata['facts'])} facts linked)")
        print("\n== LCEL chain")
        print(run_chain(retriever, scripted(AIMessage(
            "Codd proposed the relational model [1]; System R and Ingres were built on it."))))
        print("\n== ReAct agent with kag_query")
        model = scripted(
            AIMessage("", tool_calls=[{"name": "kag_query", "id": "call_1",
                                       "args": {"query": QUESTION, "max_hops": 2}}]),
            AIMessage("Codd proposed the relational model [F1]; System R and Ingres "
                      "followed."))
        for message in run_agent(tool, model):
            text = message.content if isinstance(message.content, str) else ""
            calls = [c["name"] for c in getattr(message, "tool_calls", [])]
            first = text.splitlines()[0] if text else f"calls {', '.join(calls)}"
            lines = len(text.splitlines())
            print(f"{message.type}: {first}" + (f" (+{lines - 1} lines)" if lines > 1 else ""))


if __name__ == "__main__":
    main()
