"""LangChain's own standard suites (langchain-tests) against krag's retriever and tool, on
the sample corpus ingested into a real PostgreSQL (tests/integrations/conftest.py). No
standard test is overridden or skipped."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import RetrieversIntegrationTests, ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

from graph_flows.integrations import KragQueryTool, KragRetriever
from graph_flows.shared.resources import Resources
from storage.roles import prepare_embedded
from tests.integrations.conftest import QUESTION


class TestKragRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _lend(self, corpus: Resources) -> None:
        self.corpus = corpus

    @property
    def retriever_constructor(self) -> type[KragRetriever]:
        return KragRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"resources": self.corpus, "scope": "default"}

    @property
    def retriever_query_example(self) -> str:
        return QUESTION


class _ToolParams:
    @pytest.fixture(autouse=True)
    def _lend(self, corpus: Resources, corpus_url: str) -> None:
        self.corpus, self.corpus_url = corpus, corpus_url

    @property
    def tool_constructor(self) -> type[KragQueryTool]:
        return KragQueryTool

    @property
    def tool_constructor_params(self) -> dict[str, Any]:
        return {"resources": self.corpus}

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"query": QUESTION, "max_hops": 2, "limit": 10}


class TestKragQueryToolUnit(_ToolParams, ToolsUnitTests):
    @property
    def init_from_env_params(self) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
        """The tool built from the environment alone: the database of KRAG_DATABASE_URL,
        the scope of KRAG_SCOPE."""
        app_url, owner_url = prepare_embedded(self.corpus_url)
        env = {"KRAG_DATABASE_URL": app_url, "KRAG_DATABASE_OWNER_URL": owner_url,
               "KRAG_SCOPE": "team-zanthor", "KRAG_CHAT_MODEL": "none"}
        return env, {}, {"scope": "team-zanthor"}


class TestKragQueryToolIntegration(_ToolParams, ToolsIntegrationTests):
    pass
