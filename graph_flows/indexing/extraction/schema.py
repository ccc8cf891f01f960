"""Pydantic models for extracted knowledge: the LLM's structured output and the rule extractor's.

The JSON schema is kept small and permissive on purpose, so small local models can follow it:
plain strings (no regex, no enums; labels are normalised afterwards by
:mod:`graph_flows.indexing.extraction.types`),
numbers accepted from strings, ``null`` accepted where a
default exists. Confidence is documented as 0..1 and clamped rather than rejected.

The model is asked for at most :data:`MAX_ENTITIES` entities and :data:`MAX_RELATIONS` relations
per chunk (the prompt, the schema's descriptions, the rule extractor's own cap); a model that
gives more is not wrong (GPT-3.5 writes up to 57 OpenIE triples for one Wikipedia paragraph), so
only lists longer than the hard caps :data:`CAP_ENTITIES` / :data:`CAP_RELATIONS` (protection
against runaway output) are truncated; the number of items cut is kept in
:attr:`Extraction.over_limit` (not part of the schema), which
:func:`graph_flows.indexing.extraction.validation.validate_extraction` reports as ``over_limit``.

One malformed item (a relation written as a bare list, an entity without a name) does not sink
the chunk: it is left out and counted in :attr:`Extraction.malformed` (reported as
``malformed``) while the well-formed items are kept. Only a reply whose every item is malformed
(the model misread the schema) fails validation, so the caller retries with the error.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import (
    BaseModel,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from graph_flows.indexing.extraction.types import ENTITY_TYPES, RELATION_TYPES

MAX_ENTITIES = 20
MAX_RELATIONS = 30
CAP_ENTITIES = 100
CAP_RELATIONS = 100
DEFAULT_CONFIDENCE = 0.8

_CONFIDENCE_HELP = (
    "How sure you are, from 0 to 1: 0.9 or more when the text states it plainly, "
    "0.6-0.8 when it is implied."
)


def clamp_confidence(value: Any) -> float:
    """A confidence as a float in [0, 1]: None/unparseable -> default, NaN -> 0."""
    if value is None or value == "":
        return DEFAULT_CONFIDENCE
    try:
        number = float(value)
    except (TypeError, ValueError):
        return DEFAULT_CONFIDENCE
    if math.isnan(number):
        return 0.0
    return min(1.0, max(0.0, number))


def _none_to_empty(value: Any) -> Any:
    """Small models send ``null`` for strings they have nothing for."""
    return "" if value is None else value


class ExtractedEntity(BaseModel):
    """One entity mentioned in the text."""

    name: str = Field(description="The entity's name exactly as written in the text.")
    type: str = Field(description=f"One of: {', '.join(ENTITY_TYPES)}.")
    description: str = Field(
        default="", description="One short sentence saying what the text says about it."
    )
    confidence: float = Field(default=DEFAULT_CONFIDENCE, description=_CONFIDENCE_HELP)

    _clamp = field_validator("confidence", mode="before")(clamp_confidence)
    _empty = field_validator("description", "type", mode="before")(_none_to_empty)


class ExtractedRelation(BaseModel):
    """One fact linking two entities of the same text."""

    subject: str = Field(description="Name of the subject entity (one of the entities).")
    predicate: str = Field(
        description=f"Relation type, one of: {', '.join(RELATION_TYPES)}.",
    )
    object: str = Field(description="Name of the object entity (one of the entities).")
    fact: str = Field(
        default="",
        description="The fact as one self-contained sentence, keeping the text's own verb.",
    )
    confidence: float = Field(default=DEFAULT_CONFIDENCE, description=_CONFIDENCE_HELP)
    valid_at: str | None = Field(
        default=None,
        description="ISO date (YYYY, YYYY-MM or YYYY-MM-DD) from which the fact holds, "
        "only if the text says so; otherwise null.",
    )
    attribute: str | None = Field(
        default=None,
        description="Only when the fact gives the value of a property the subject has one of "
        "at a time (ceo, headquarters, owner, current_version, license, status, leader): that "
        "property's name in snake_case; otherwise null.",
    )
    predicate_text: SkipJsonSchema[str | None] = None
    """Set by validation (not part of the schema): the predicate as stated, when ``predicate``
    became a relation type that does not repeat it ("acquired" -> ``relates_to``)."""

    _clamp = field_validator("confidence", mode="before")(clamp_confidence)
    _empty = field_validator("fact", mode="before")(_none_to_empty)

    @field_validator("attribute", mode="before")
    @classmethod
    def _blank_attribute(cls, value: Any) -> Any:
        """Empty strings and non-strings mean "no attribute"."""
        return value if isinstance(value, str) and value.strip() else None

    @field_validator("valid_at", mode="before")
    @classmethod
    def _blank_date(cls, value: Any) -> Any:
        """Empty strings mean "no date"; numbers (a bare year) become strings."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return str(value) if isinstance(value, int | float) else value


class Extraction(BaseModel):
    """Everything extracted from one chunk of text."""

    entities: list[ExtractedEntity] = Field(
        default_factory=list,
        description=f"Entities named in the text, most important first; at most {MAX_ENTITIES}.",
    )
    relations: list[ExtractedRelation] = Field(
        default_factory=list,
        description=f"Facts between those entities; at most {MAX_RELATIONS}.",
    )

    _over_limit: int = PrivateAttr(default=0)
    _malformed: int = PrivateAttr(default=0)

    @field_validator("entities", "relations", mode="before")
    @classmethod
    def _null_list(cls, value: Any) -> Any:
        """``null`` for a list means an empty list."""
        return [] if value is None else value

    @model_validator(mode="wrap")
    @classmethod
    def _drop_malformed(cls, data: Any, handler: ModelWrapValidatorHandler[Extraction],
                        ) -> Extraction:
        """Leave out malformed items and count them (see the module docstring)."""
        cut = 0
        if isinstance(data, dict):
            data = dict(data)
            for key, model in (("entities", ExtractedEntity), ("relations", ExtractedRelation)):
                items = data.get(key)
                if isinstance(items, list) and items:
                    good = [v for v in (_item(model, i) for i in items) if v is not None]
                    if good:  # all malformed: let validation fail (the caller retries)
                        cut += len(items) - len(good)
                        data[key] = good
        extraction = handler(data)
        extraction._malformed += cut
        return extraction

    @model_validator(mode="after")
    def _enforce_limits(self) -> Extraction:
        """Truncate to the hard caps and remember how many items were cut."""
        cut = max(0, len(self.entities) - CAP_ENTITIES)
        cut += max(0, len(self.relations) - CAP_RELATIONS)
        if cut:
            self.entities = self.entities[:CAP_ENTITIES]
            self.relations = self.relations[:CAP_RELATIONS]
        self._over_limit = cut
        return self

    @property
    def over_limit(self) -> int:
        """Items cut at construction because the lists exceeded the hard caps."""
        return self._over_limit

    @property
    def malformed(self) -> int:
        """Items left out at construction because they did not fit the schema."""
        return self._malformed


def _item(model: type[BaseModel], value: Any) -> BaseModel | None:
    """``value`` validated as ``model``, or None when it does not fit."""
    if isinstance(value, model):
        return value
    try:
        return model.model_validate(value)
    except ValidationError:
        return None
