"""Pytest fixture ``llm_server``: a started
:class:`graph_flows.testing.llm_server.LLMServer` per test.

Import it from ``conftest.py`` (``from tests.llm_fixtures import llm_server  # noqa: F401``)
or from a test module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graph_flows.testing.llm_server import LLMServer


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A fake Ollama + OpenAI server on 127.0.0.1:<free port>; stopped after the test.

    ``.url`` (Ollama host), ``.openai_url`` (``url + '/v1'``), ``.script(*replies)``,
    ``.requests`` / ``.bodies(path)``, ``.fail_next(n)``, ``.latency``, ``.token_delay``.
    """
    with LLMServer() as server:
        yield server
