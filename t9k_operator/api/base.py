"""The base of every API model: :class:`T9kModel`.

Every model of ``t9k_operator.api`` is a pydantic v2 model derived from
:class:`T9kModel`, with camelCase aliases: a raw dict from the API server
parses as is, and ``model_dump(by_alias=True)`` gives back the wire shape.
Unknown keys are ignored, never an error: the CRD schema has already pruned
what it does not declare, and an operator that meets a newer object must not
crash on it.

Each field carries a ``description``: ``hack/gen_crds.py`` turns the models
into the CRD's OpenAPI schema, where the descriptions become ``kubectl
explain`` text. Constraints written on a field (``ge``, ``max_length``,
``Literal``) become schema constraints enforced by the API server; rules a
schema cannot express as a type travel as CEL rules in ``json_schema_extra``
under ``x-kubernetes-validations`` (the conventions the generator relies on
are in :mod:`t9k_operator.api.schema`). ``Field(default=...)`` puts the
default into the CRD (the API server fills it in);
``Field(default_factory=...)`` is a Python-side default only.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class T9kModel(BaseModel):
    """Base of every API model: camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
    )
