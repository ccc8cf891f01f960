"""Detection of instructions aimed at the model inside extracted text (prompt injection).

:func:`looks_like_injection` tests a string against :data:`INJECTION_PATTERNS` after
:func:`normalize_for_matching`: NFKC folds full-width and other compatibility forms,
zero-width characters, bidi controls and soft hyphens are removed, whitespace is collapsed.

The patterns target instructions addressed to a model ("ignore previous instructions",
"reveal your system prompt", "you are now ...", chat-template markers), not the vocabulary:
entities named "System", "Instructions", "Prompt engineering" or "Prompt injection", and
sentences that describe injection attacks in general terms, pass. A text that quotes a literal
attack phrase is flagged (fail safe), and so is chatty second-person text such as "if you
are now on version 2" (rare in extracted names and facts). Homoglyphs from other scripts
(Cyrillic "і") are not folded: that is a known gap.
"""

from __future__ import annotations

import re
import unicodedata

PROMPT_TAGS: tuple[str, ...] = ("document", "instructions", "schema", "examples")

ZERO_WIDTH = re.compile(r"[\u200b-\u200f\u2060\ufeff\u00ad]")
BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")

_I = re.IGNORECASE
_IM = re.IGNORECASE | re.MULTILINE
_START = r"(?:^|[.!?:;]\s*|\b(?:now|please|from now on,?|you (?:must|should|will|shall))\s+)"
INJECTION_PATTERNS: tuple[re.Pattern[str], ...] = (
    # ignore / disregard / forget / override (all) previous instructions
    re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:(?:all|any|of|the|your|my|"
        r"these|those)\s+)*(?:previous|prior|above|earlier|preceding|foregoing|original|"
        r"existing|system|all|any|initial)\s+(?:instructions?|prompts?|directions?|rules|"
        r"guidelines|commands?|orders|context|messages?)\b",
        _I,
    ),
    re.compile(r"\bdisregard\s+(?:everything|anything|all\b|the\s+above)", _I),
    re.compile(r"\bforget\s+(?:everything|all\s+(?:that|previous|prior|above|you)|what\s+you)", _I),
    # role hijacking
    re.compile(r"\bsystem\s*:\s*you\s+(?:are|will|must|should)\b", _I),
    re.compile(r"\byou\s+are\s+now\b", _I),
    re.compile(r"\bfrom\s+now\s+on\s*,?\s+you\b", _I),
    re.compile(_START + r"(?:act|behave|respond)\s+as\s+(?:if\b|an?\b|the\b|my\b|though\b)", _IM),
    re.compile(r"\bpretend\s+(?:that\s+)?you\s+(?:are|were)\b", _I),
    re.compile(_START + r"pretend\s+to\s+be\b", _IM),
    re.compile(
        r"\b(?:enter|enable|activate|switch\s+to)\s+(?:developer|god|dan|jailbreak)\s+mode", _I
    ),
    re.compile(
        r"\bas\s+an?\s+(?:ai|artificial\s+intelligence)\b(?:\s+\w+){0,3}\s*,\s*(?:i|you|we)\b",
        _I,
    ),
    re.compile(r"\bnew\s+(?:system\s+)?instructions?\s*:", _I),
    # prompt delimiters and chat-template markers
    re.compile(r"<\s*/?\s*(?:" + "|".join(PROMPT_TAGS) + r"|system|user|assistant)\s*>", _I),
    re.compile(r"<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|"
               r"start_header_id|end_header_id)\s*\|>", _I),
    re.compile(r"\[\s*/?\s*INST\s*\]|<<\s*/?\s*SYS\s*>>", _I),
    re.compile(r"^\s*#{2,}\s*(?:system|instructions?|user|assistant|response)\s*:?\s*$", _IM),
    # prompt exfiltration
    re.compile(
        r"\b(?:reveal|print|show|display|output|repeat|leak|dump|tell\s+me)\s+(?:me\s+)?"
        r"(?:your|the\s+(?:system|hidden|secret|initial|original|full))\s+(?:(?:system|hidden|"
        r"secret|initial|original|full)\s+)*(?:prompt|instructions|rules|configuration)",
        _I,
    ),
)


def normalize_for_matching(text: str) -> str:
    """NFKC, without zero-width/bidi characters and soft hyphens, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", str(text))
    text = BIDI.sub("", ZERO_WIDTH.sub("", text))
    return re.sub(r"[ \t\r\f\v]+", " ", text)


def looks_like_injection(text: str) -> bool:
    """True when ``text`` contains an instruction aimed at the model (see the module docs)."""
    if not text:
        return False
    normalised = normalize_for_matching(text)
    return any(pattern.search(normalised) for pattern in INJECTION_PATTERNS)


