"""Streamlit panels of the Chat page: the no-LLM banner, an answer's extras (diagram,
sources, confidence, a "Details" expander with the per-method retrieval line and the
retrieval rounds) and the upload report. Untrusted text is shown escaped
(:func:`ui.web.backend.md_escape`).
"""

from __future__ import annotations

import logging
from typing import Any

import streamlit as st

from graph_flows.services.ask import round_line, withheld_counts, withheld_notice
from graph_flows.services.uploads import UploadReport
from graph_flows.shared.model_specs import ProviderError, parse_spec
from graph_flows.shared.settings import Settings
from ui.web import components
from ui.web.backend import md_escape
from ui.web.diagram import render_mermaid

log = logging.getLogger(__name__)


# -- no-LLM mode ----------------------------------------------------------------------------
def suggested_model(settings: Settings) -> str:
    """The Ollama model to suggest: the configured chat model when it is an Ollama one,
    else the default of the ``chat_model`` setting."""
    for spec in (settings.chat_model, Settings.model_fields["chat_model"].default):
        try:
            provider, model = parse_spec(str(spec))
        except ProviderError:
            continue
        if provider == "ollama":
            return model
    return "<model>"


def no_llm_help(settings: Settings) -> str:
    """How to connect a chat model, naming the configured (or default) model."""
    model = suggested_model(settings)
    return ("Answers are extractive (the retrieved facts, cited) until a chat model is "
            f"reachable. To connect one: start [Ollama](https://ollama.com) and `ollama pull "
            f"{model}`, then set `KRAG_CHAT_MODEL=ollama:{model}` (and `KRAG_OLLAMA_HOST` if it "
            "is not on localhost:11434); or use an OpenAI-compatible endpoint with "
            "`KRAG_CHAT_MODEL=openai:<model>`, `KRAG_OPENAI_BASE_URL` and "
            "`KRAG_OPENAI_API_KEY`. Restart `krag ui` afterwards.")


def no_llm_banner(settings: Settings, notice: str) -> None:
    """The warning shown while answers are extractive."""
    st.warning(f"**No-LLM mode.** {md_escape(notice)}\n\n{no_llm_help(settings)}")


# -- an answer ------------------------------------------------------------------------------
def details_line(result: dict[str, Any]) -> str:
    """Answer mode, results per retrieval method, vector fallback, milliseconds, as of."""
    m = result.get("search_metrics") or {}
    results = m.get("results") or {}
    methods = ", ".join(f"{md_escape(k)} {v}" for k, v in results.items() if v) or "none"
    fallback = m.get("fallback") or {}
    fb = ", ".join(md_escape(k) for k, v in fallback.items() if v) if isinstance(fallback, dict) \
        else md_escape(fallback)
    as_of = f" · as of {md_escape(result['as_of'])}" if result.get("as_of") else ""
    return (f"answer: {md_escape(result.get('answer_mode', '?'))} · methods: {methods} · "
            f"vector fallback: {fb or 'no'} · retrieval {float(m.get('total_ms') or 0):.0f} ms"
            + as_of)


def render_answer(result: dict[str, Any], *, diagram: bool = True, key: str = "answer") -> None:
    """Everything under an answer: diagram, sources, confidence, notes, then the retrieval
    details folded in an expander. ``key`` names the answer's widgets (the same on the run
    that answers and on the replays after it)."""
    if diagram:
        render_mermaid(result.get("mermaid", ""), key=f"enlarge-{key}")
    components.render_sources(result)
    if line := components.confidence_line(result):
        st.caption(line)
    for err in result.get("errors") or []:
        st.caption(f"note: {md_escape(err)}")
    withheld = withheld_counts([p for p in result.get("passages") or [] if isinstance(p, dict)])
    if withheld["passages"]:
        st.caption(f"note: {md_escape(withheld_notice(withheld))}")
    with st.expander("Details"):
        st.caption(details_line(result))
        for line in rounds_lines(result):
            st.caption(line)


def rounds_lines(result: dict[str, Any]) -> list[str]:
    """The retrieval rounds as escaped caption lines: what each searched, who asked, the
    bridge entity, what it added and why the loop stopped (:func:`round_line`)."""
    rounds = [r for r in result.get("rounds") or [] if isinstance(r, dict)]
    return [md_escape(round_line(r)) for r in rounds]


# -- uploads --------------------------------------------------------------------------------
def show_upload_report(report: UploadReport) -> None:
    """One sidebar line: success, warning when some files were refused, error when none was
    stored, a plain note when every stored file was unchanged."""
    line = md_escape(report.line())
    if not report.ingested:
        st.sidebar.error(line)
    elif report.refused or report.failed_chunks:
        st.sidebar.warning(line)
    elif not report.added:
        st.sidebar.info(line)
    else:
        st.sidebar.success(line)
