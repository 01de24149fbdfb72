"""Invariants stated once: :class:`Rule`, its CEL for the API server and its
Python for the models.

An invariant that a schema type cannot express is a :class:`Rule`: the CEL
expression the CRD carries under ``x-kubernetes-validations`` (the API server
refuses a bad object at admission, naming the field), the message both sides
give, where the error points (``fieldPath``), and a Python predicate on the
parsed value that says the same (an object that reaches the operator some
other way, e.g. stored before the rule existed, still fails to parse with the
same message). A transition rule, which reads ``oldSelf``, has no Python side:
a model sees one version of an object.

A rule is registered once, where it applies:

* on a model, in its ``rules`` class variable (:class:`~t9k_operator.api.base.T9kModel`
  emits them into the model's schema and checks them after parsing; the
  predicate gets the parsed model, ``self`` in the CEL);
* on a field, as the ``Annotated`` marker :class:`Rules` (the predicate gets
  the field's parsed value, ``self`` in the CEL);
* on the whole object, in the kind's ``CrdInfo.root_rules``; their Python
  side is the object model's own check (``JobObject``'s name checks).

``hack/generate/crds.py`` emits :meth:`Rule.cel_rule`; tests/unit/api/test_rules.py
shows, rule by rule, that the two sides agree on hand-written examples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

VALIDATIONS = "x-kubernetes-validations"
"""The schema key of a node's CEL rules."""

T = TypeVar("T")


@dataclass(frozen=True)
class Rule(Generic[T]):
    """One invariant: its CEL, its message, where it points, and its Python side."""

    cel: str
    """The CEL expression, evaluated on the node the rule is registered at (``self``)."""
    message: str
    """What the API server and the model say when the rule is broken."""
    holds: Callable[[T], bool] | None
    """The Python side, on the parsed value; None for a transition rule (``oldSelf``)."""
    field_path: str | None = None
    """The ``fieldPath`` of the API server's error, relative to the node."""
    optional_old_self: bool = False
    """A transition rule that also runs on create (``oldSelf`` is then an optional)."""

    def cel_rule(self) -> dict[str, Any]:
        """The rule as an ``x-kubernetes-validations`` item."""
        out: dict[str, Any] = {"rule": self.cel, "message": self.message}
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.optional_old_self:
            out["optionalOldSelf"] = True
        return out

    def check(self, value: T) -> None:
        """Raise ``ValueError`` with the rule's message when ``value`` breaks it."""
        if self.holds is not None and not self.holds(value):
            raise ValueError(self.message)


def add_rules(schema: JsonSchemaValue, rules: Iterable[Rule[Any]]) -> None:
    """Append ``rules`` to the CEL rules of a JSON schema node."""
    cel = [rule.cel_rule() for rule in rules]
    if cel:
        schema[VALIDATIONS] = [*schema.get(VALIDATIONS, []), *cel]


def check_all(rules: Iterable[Rule[T]], value: T) -> T:
    """Check ``value`` against each rule in turn (the first broken one raises)."""
    for rule in rules:
        rule.check(value)
    return value


class Rules:
    """An ``Annotated`` marker putting rules on a field:
    ``Annotated[list[str], Rules(RESERVED_ARGS_RULE)]``."""

    def __init__(self, *rules: Rule[Any]) -> None:
        self.rules = rules

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            lambda value: check_all(self.rules, value), handler(source)
        )

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        add_rules(handler.resolve_ref_schema(json_schema), self.rules)
        return json_schema
