"""Load what a first question would otherwise wait for, when a serving process starts.

A fresh process answers its first question 7-15 s late (issue 40): the query graph's
modules, the local embedding model and the spaCy pipeline load on first use, and the first
run of the graph meets cold code paths and a cold database. :func:`warm_models` loads the
process's read-only models (the ones :func:`graph_flows.shared.embeddings.shared_minilm`
and :func:`graph_flows.shared.nlp.load_nlp` keep once per process anyway);
:func:`warm_query` runs one question through the compiled query graph with the request's
resources in no-LLM mode (no model is called, nothing is written). ``krag ui`` calls the
first before Streamlit serves (:mod:`ui.web.serve`), the UI's cached resources the second
(:func:`ui.web.backend.open_resources`). Both return what they did in seconds; neither
raises: a failure is logged and the first question loads what is missing, as before.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from graph_flows.shared.resources import NO_LLM, Resources, use_resources
from graph_flows.shared.settings import Settings

log = logging.getLogger(__name__)

PROBE = "Which query language was based on the relational calculus that Codd proposed in 1970?"
"""A question with a person, a year and a relation: it takes the paths a real one takes
(names, numbers, the asked relation, spaCy's parse)."""


def warm_models(settings: Settings) -> dict[str, float]:
    """Import the query graph and load the embedding model and the spaCy pipeline of this
    process; seconds per step (a step that failed is logged and left out)."""
    timings: dict[str, float] = {}
    _step(timings, "query_graph", _import_graph)
    _step(timings, "embedder", lambda: _load_embedder(settings))
    _step(timings, "spacy", _load_nlp)
    return timings


def warm_query(resources: Resources) -> dict[str, float]:
    """Run :data:`PROBE` through the query graph on ``resources`` (its store, embedder and
    scope) in no-LLM mode; seconds it took. The request's own resources are not changed."""
    from graph_flows.services.ask import run_query_streaming

    probe = Resources(settings=resources.settings, store=resources.store,
                      embeddings=resources.embeddings, chat_override=NO_LLM)

    def run() -> None:
        with use_resources(probe):
            run_query_streaming({"query": PROBE}, {}, lambda _token: None)

    timings: dict[str, float] = {}
    _step(timings, "query", run)
    return timings


def _step(timings: dict[str, float], name: str, fn: Any) -> None:
    started = time.perf_counter()
    try:
        fn()
    except Exception:  # noqa: BLE001 - warming is an optimisation: the first question retries
        log.warning("warming %s failed; the first question loads it", name, exc_info=True)
        return
    timings[name] = round(time.perf_counter() - started, 3)


def _import_graph() -> None:
    from graph_flows.query.graph import graph  # noqa: F401 - compiled on import


def _load_embedder(settings: Settings) -> None:
    from graph_flows.shared.providers import make_embeddings

    embeddings = make_embeddings(settings)
    load = getattr(embeddings, "load", None)
    if callable(load):  # the local model; a remote one has nothing to load
        load()


def _load_nlp() -> None:
    from graph_flows.shared.nlp import load_nlp

    nlp = load_nlp()
    if nlp is not None:
        nlp(PROBE)  # the first call builds the pipes' lazy tables
