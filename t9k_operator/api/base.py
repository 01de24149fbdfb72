"""The base of every API model: :class:`T9kModel`.

Every model of ``t9k_operator.api`` is a pydantic v2 model derived from
:class:`T9kModel`, with camelCase aliases: a raw dict from the API server
parses as is, and ``model_dump(by_alias=True)`` gives back the wire shape.
Unknown keys are ignored, never an error: the CRD schema has already pruned
what it does not declare, and an operator that meets a newer object must not
crash on it.

Each field carries a ``description``: ``hack/generate/crds.py`` turns the models
into the CRD's OpenAPI schema, where the descriptions become ``kubectl
explain`` text. Constraints written on a field (``ge``, ``max_length``,
``Literal``) become schema constraints enforced by the API server; an
invariant a schema cannot express as a type is a
:class:`~t9k_operator.api.rules.Rule`, stated once with its CEL and its
Python side: a model lists its own in
:attr:`T9kModel.rules` (emitted under ``x-kubernetes-validations`` and checked
after parsing), a field carries them with
:class:`~t9k_operator.api.rules.Rules` (the conventions the generator relies on
are in :mod:`t9k_operator.api.schema`). ``Field(default=...)`` puts the
default into the CRD (the API server fills it in);
``Field(default_factory=...)`` is a Python-side default only.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler, model_validator
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from t9k_operator.api.rules import Rule, add_rules, check_all


class T9kModel(BaseModel):
    """Base of every API model: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
    )

    rules: ClassVar[tuple[Rule[Any], ...]] = ()
    """The model's invariants: CEL rules of its schema node, checked in this order
    on the parsed model (a subclass inherits them, or lists its own)."""

    @model_validator(mode="after")
    def _check_rules(self) -> Self:
        check_all(type(self).rules, self)
        return self

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = super().__get_pydantic_json_schema__(schema, handler)
        add_rules(handler.resolve_ref_schema(json_schema), cls.rules)
        return json_schema
