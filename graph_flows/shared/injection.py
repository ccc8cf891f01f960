"""Detection of instructions aimed at the model inside extracted text (prompt injection).

:func:`looks_like_injection` tests a string against :data:`INJECTION_PATTERNS` after
:func:`normalize_for_matching`: NFKC folds full-width and other compatibility forms,
zero-width characters, bidi controls and soft hyphens are removed, whitespace is collapsed.

The patterns target instructions addressed to a model ("ignore previous instructions",
"reveal your system prompt", "you are now ...", chat-template markers), not the vocabulary:
entities named "System", "Instructions", "Prompt engineering" or "Prompt injection", and
sentences that describe injection attacks in general terms, pass. A text that quotes a literal
attack phrase is flagged (fail safe), and so is chatty second-person text such as "if you
are now on version 2" (rare in extracted names and facts).

Obfuscation handled before matching (:func:`matching_variants`): Unicode tag characters
(U+E0020..U+E007E, "ASCII smuggling") are decoded to the ASCII they hide; combining marks are
stripped ("ìgnórè"); Cyrillic, Greek, small-capital and other Latin look-alikes are folded to
ASCII (:data:`CONFUSABLES`: Cyrillic "і", "о", "е", Greek "ο", "ι"...). Each text is then
matched several ways: as folded; with the separators ``_ - * ~ ` + = | / .`` and backslashes
between words read as spaces ("ignore_previous_instructions", "**ignore** previous"); with
common leetspeak digits read as letters ("1gn0re prev10us"); with letter-spaced words joined
("i g n o r e  p r e v i o u s", words two spaces apart). Finally the core phrases
(:data:`COMPACT_PATTERNS`: "ignore previous instructions" and its kin, "reveal your system
prompt") are matched on the letters alone, which catches any spacing or punctuation between
letters. Known limits: paraphrases ("pay no attention to what you were told"), non-English
instructions, and payloads split across several fields or chunks are not recognised.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

PROMPT_TAGS: tuple[str, ...] = ("document", "instructions", "schema", "examples")

ZERO_WIDTH = re.compile(
    r"[\u200b-\u200f\u2060-\u2064\ufeff\u00ad\u180e\u034f\U000e0000-\U000e007f]")
"""Invisible characters removed from prompts, names and matched text: zero-width space,
joiners and marks, word joiner and invisible operators, BOM, soft hyphen, Mongolian vowel
separator, combining grapheme joiner, Unicode tag characters."""
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
    re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|of|the|your|my|these|"
        r"those)\s+)*(?:instructions?|prompts?|directions?|rules|guidelines|commands?)\s+"
        r"(?:above|before|given|so\s+far|you\s+(?:were|have\s+been)\s+given)\b",
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
    re.compile(r"#{2,}\s*(?:system|user|assistant)\s*:", _I),
    # prompt exfiltration
    re.compile(
        r"\b(?:reveal|print|show|display|output|repeat|leak|dump|tell\s+me)\s+(?:me\s+)?"
        r"(?:your|the\s+(?:system|hidden|secret|initial|original|full))\s+(?:(?:system|hidden|"
        r"secret|initial|original|full)\s+)*(?:prompt|instructions|rules|configuration)",
        _I,
    ),
)


_CONFUSABLE_PAIRS = (
    # Cyrillic lower / upper
    "аa вb еe ёe кk мm нh оo рp сc тt уy хx ѕs іi їi јj һh ӏl ԁd ԛq ԝw ʏy ɡg ѵv"
    " АA ВB ЕE ЁE КK МM НH ОO РP СC ТT УY ХX ЅS ІI ЇI ЈJ ҺH ӀI ԚQ ԜW ѴV"
    # Greek lower / upper
    " αa βb γy εe ηn ιi κk νv οo ρp τt υu χx ωw ϲc ϳj"
    " ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX ϹC"
    # Latin look-alikes and small capitals
    " ıi ȷj ɑa ɩi ɪi ʟl ᴀa ʙb ᴄc ᴅd ᴇe ɢg ʜh ᴊj ᴋk ᴍm ɴn ᴏo ᴘp ʀr ꜱs ᴛt ᴜu ᴠv ᴡw ᴢz"
)
CONFUSABLES: dict[int, str] = {ord(p[0]): p[1] for p in _CONFUSABLE_PAIRS.split()}
"""Characters of other scripts that look like ASCII letters, folded before matching."""

_TAGS = re.compile(r"[\U000e0020-\U000e007e]+")
_SEPARATORS = re.compile(r"(?<=\w)[_\-*~`+=|/\\.]+(?=\w)|[*~`]+")
_LETTER_SPACED = re.compile(r"(?<!\S)(?:\S ){3,}\S(?!\S)")
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i"})


def fold_confusables(text: str) -> str:
    """Tag characters decoded, combining marks stripped, look-alike letters folded to ASCII."""
    text = _TAGS.sub(lambda m: " " + "".join(chr(ord(c) - 0xE0000) for c in m.group()) + " ",
                     str(text))
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return unicodedata.normalize("NFKC", text).translate(CONFUSABLES)


def matching_variants(text: str) -> list[str]:
    """The forms of ``text`` the patterns are tried on (see the module docs)."""
    base = normalize_for_matching(fold_confusables(text))
    spaced = re.sub(r"[ \t\r\f\v]+", " ", _SEPARATORS.sub(" ", base))
    leet = spaced.translate(_LEET)
    joined = normalize_for_matching(_LETTER_SPACED.sub(
        lambda m: m.group().replace(" ", ""), fold_confusables(text)))
    return list(dict.fromkeys((base, spaced, leet, joined)))

COMPACT_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?:ignore|disregard|forget|override|bypass)(?:all|any|of|the|your|these)*"
               r"(?:previous|prior|above|earlier|preceding)(?:instructions?|prompts?|rules|"
               r"guidelines|directions?|commands?)"),
    re.compile(r"(?:reveal|print|show|repeat|leak|dump)(?:me)?yoursystemprompt"),
)
"""Core attack phrases, matched on the letters alone (``i g n o r e. p-r-e-v...``)."""


def compact_letters(text: str) -> str:
    """Lower-case ASCII letters of ``text`` only, after folding and leetspeak decoding."""
    folded = normalize_for_matching(fold_confusables(text)).translate(_LEET).casefold()
    return re.sub(r"[^a-z]+", "", folded)


def normalize_for_matching(text: str) -> str:
    """NFKC, without zero-width/bidi characters and soft hyphens, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", str(text))
    text = BIDI.sub("", ZERO_WIDTH.sub("", text))
    return re.sub(r"[ \t\r\f\v]+", " ", text)


@lru_cache(maxsize=65536)
def looks_like_injection(text: str) -> bool:
    """True when ``text`` contains an instruction aimed at the model (see the module docs).

    A pure function of the text, memoised: evidence facts repeat their sentence once per
    entity pair, and profiling an ingest found this check at 93 % of validation time."""
    if not text:
        return False
    if any(pattern.search(variant) for variant in matching_variants(text)
           for pattern in INJECTION_PATTERNS):
        return True
    compact = compact_letters(text)
    return any(pattern.search(compact) for pattern in COMPACT_PATTERNS)


