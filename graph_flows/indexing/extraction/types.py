"""Canonical entity and relation types, and the alias tables that map free-form labels onto them.

Extraction models (and the rule extractor) may answer with any label: ``"Company"``,
``"programming language"``, ``"is part of"``, ``"utilizes"``. The graph stores only the six
entity types and six relation types below; everything else is mapped through the alias tables
and falls back to ``concept`` / ``relates_to``.

Direction of relations: the mapping never swaps subject and object. A label is mapped to a
canonical type only when "subject LABEL object" reads the same way as "subject TYPE object":

* ``uses``: the subject uses the object ("built with", "written in", "powered by", "runs on").
* ``part_of``: the subject is a part of the object ("belongs to", "member of", "contained in").
* ``contains``: the subject contains the object ("includes", "has", "consists of").
* ``defines``: the subject and the object are a term and its definition ("is defined as",
  "means", "describes"); direction is deliberately loose for this one.
* ``mentions``: the subject refers to the object ("cites", "refers to").

Passive labels whose meaning needs a swap ("used by", "included in", "owned by") map to
``relates_to``: the fact sentence still carries the exact wording. Callers who know the sentence
structure (the rule extractor) swap endpoints themselves before labelling.
"""

from __future__ import annotations

import re

ENTITY_TYPES: tuple[str, ...] = (
    "concept",
    "person",
    "organization",
    "technology",
    "location",
    "section",
)
RELATION_TYPES: tuple[str, ...] = (
    "mentions",
    "defines",
    "relates_to",
    "contains",
    "part_of",
    "uses",
)
DEFAULT_ENTITY_TYPE = "concept"
DEFAULT_RELATION_TYPE = "relates_to"


def _table(groups: dict[str, str]) -> dict[str, str]:
    """Expand ``{canonical: "alias | alias two | ..."}`` into ``{normalised alias: canonical}``."""
    out: dict[str, str] = {}
    for canonical, aliases in groups.items():
        out[_key(canonical)] = canonical
        for alias in aliases.split("|"):
            if alias.strip():
                out[_key(alias)] = canonical
    return out


def _key(raw: str) -> str:
    """Lowercase, trim, and turn runs of spaces, hyphens, slashes and dots into one underscore."""
    key = re.sub(r"[\s\-/.]+", "_", str(raw).strip().lower())
    return re.sub(r"_+", "_", key).strip("_")


ENTITY_TYPE_ALIASES: dict[str, str] = _table(
    {
        "concept": "idea|topic|term|theory|notion|method|methodology|technique|algorithm|"
        "process|principle|field|discipline|event|misc|miscellaneous|other|thing|time|date|"
        "num|number|quantity|abstract concept",
        "person": "people|persons|individual|human|author|writer|researcher|scientist|"
        "engineer|inventor|mathematician|founder|ceo|employee|per|character",
        "organization": "organisation|org|company|institution|corporation|corp|university|"
        "college|school|agency|government|institute|laboratory|lab|business|firm|startup|"
        "enterprise|association|society|foundation|committee|team|publisher|nonprofit|ngo|"
        "bank|party|club",
        "technology": "tech|tool|framework|library|language|programming language|software|"
        "product|platform|database|protocol|api|service|application|app|hardware|device|"
        "machine|computer|format|file format|standard|package|module|system|model|"
        "algorithm implementation|engine",
        "location": "place|geo|geographic|gpe|loc|city|country|region|state|province|"
        "continent|address|site|area|town|village|county|nation|territory",
        "section": "chapter|heading|header|subsection|part|appendix|paragraph|title",
    }
)

RELATION_TYPE_ALIASES: dict[str, str] = _table(
    {
        "mentions": "mention|mentioned|reference|references|referenced|refers to|refer to|"
        "referred to|cites|cite|cited|quotes|links to",
        "defines": "define|defined|is defined as|defined as|is defined by|means|mean|"
        "describes|describe|described|explains|explain|is called|denotes|is a term for",
        "relates_to": "related|related to|is related to|relates|associated|associated with|"
        "is associated with|connected to|linked to|related_to",
        "contains": "contain|contained|includes|include|included|including|comprises|"
        "comprise|comprised|has|have|had|has part|consists of|consist of|is made of|"
        "made of|is composed of|composed of|holds",
        "part_of": "is part of|is a part of|part|belongs to|belong to|belonged to|"
        "member of|is a member of|is member of|component of|is a component of|"
        "contained in|is contained in|included in|is included in|subset of|is a subset of|"
        "subsidiary of|is a subsidiary of|division of|within",
        "uses": "use|used|using|utilizes|utilize|utilized|utilises|utilise|utilised|"
        "employs|employ|employed|leverages|leverage|leveraged|built with|is built with|"
        "built on|is built on|based on|is based on|relies on|rely on|depends on|"
        "depend on|requires|require|runs on|run on|written in|is written in|"
        "implemented in|is implemented in|powered by|is powered by|consumes|calls",
    }
)

# Single-valued attributes: a fact may name the property of its subject that holds one value
# at a time; a newer fact on the same subject and attribute supersedes an older one
# (storage.supersede). Any snake_case name is accepted; these aliases only merge spellings.
ATTRIBUTE_ALIASES: dict[str, str] = _table(
    {
        "ceo": "chief executive|chief executive officer|chief_executive|chief exec|"
        "managing director|president_and_ceo",
        "headquarters": "hq|head office|headquarter|headquartered in|headquarters location|"
        "main office|seat",
        "leader": "head|led by|chair|chairman|chairperson|chief",
        "owner": "owned by|parent company|parent|acquired by",
        "current_version": "version|latest version|latest release|current release|release",
        "license": "licence|licensed under|license type",
        "maintainer": "maintained by|lead maintainer",
        "status": "state|lifecycle status",
        "employer": "works at|works for|employed by",
        "spouse": "married to|husband|wife",
        "capital": "capital city",
    }
)
_ATTRIBUTE = re.compile(r"[a-z][a-z0-9_]{0,39}")

_AUXILIARIES = ("is_", "are_", "was_", "were_", "be_", "been_", "being_", "has_been_")


def normalize_entity_type(raw: str | None) -> str:
    """Map a free-form entity label to one of :data:`ENTITY_TYPES` (unknown -> ``concept``)."""
    if raw is None:
        return DEFAULT_ENTITY_TYPE
    key = _key(raw)
    for candidate in (key, _singular(key)):
        if candidate in ENTITY_TYPE_ALIASES:
            return ENTITY_TYPE_ALIASES[candidate]
    return DEFAULT_ENTITY_TYPE


def normalize_relation_type(raw: str | None) -> str:
    """Map a free-form predicate to one of :data:`RELATION_TYPES` (unknown -> ``relates_to``).

    The label is lowercased and trimmed, spaces and hyphens become underscores, then it is
    looked up as is, without a leading auxiliary ("is", "was" ...) and as a third-person
    singular verb ("utilize" / "utilizes"). See the module docstring for direction rules.
    """
    if raw is None:
        return DEFAULT_RELATION_TYPE
    key = _key(raw)
    for candidate in _relation_candidates(key):
        if candidate in RELATION_TYPE_ALIASES:
            return RELATION_TYPE_ALIASES[candidate]
    return DEFAULT_RELATION_TYPE


def stated_predicate(phrase: str, relation_type: str) -> str | None:
    """``phrase`` (a predicate as written) when it says more than ``relation_type``, which it
    was mapped to ("acquired" for ``relates_to``, "utilizes" for ``uses``); None when it is
    empty or only the type again ("uses", "Relates to")."""
    return phrase if phrase.strip() and _key(phrase) != _key(relation_type) else None


def normalize_attribute(raw: str | None) -> str | None:
    """A single-valued attribute name in snake_case (aliases merged), or None when absent or
    not a plain name of at most 40 letters, digits and underscores."""
    if raw is None or not str(raw).strip():
        return None
    key = _key(raw)
    if not _ATTRIBUTE.fullmatch(key):
        return None
    return ATTRIBUTE_ALIASES.get(key, key)


def _relation_candidates(key: str) -> list[str]:
    """Lookup keys tried in order for a relation label."""
    candidates = [key]
    for aux in _AUXILIARIES:
        if key.startswith(aux):
            candidates.append(key[len(aux) :])
    candidates.append(_singular(key))
    return candidates


def _singular(key: str) -> str:
    """A naive singular of the last word: ``technologies`` -> ``technology``, ``tools`` -> tool."""
    if key.endswith("ies") and len(key) > 4:
        return key[:-3] + "y"
    if key.endswith("s") and not key.endswith("ss") and len(key) > 3:
        return key[:-1]
    return key
