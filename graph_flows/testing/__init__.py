"""Fakes that the tests and the benchmarks both use, never the product itself (an import
contract in pyproject.toml checks it): :mod:`.llm_server`, a real HTTP server speaking the
Ollama and OpenAI wire protocols with scripted replies, so the real client libraries run;
:mod:`.fakes`, scripted in-process chat models and a server whose replies follow the request.
"""
