"""``spec.elastic`` of PyTorchTrainingJob and DeepSpeedJob: elastic training.

:class:`ElasticConfig` bounds the number of replicas while training
(``minReplicas`` <= ``expectedReplicas`` <= ``maxReplicas``), with the
rules (:class:`~t9k_operator.api.rules.Rule`) that keep the bounds consistent, and
:meth:`ElasticConfig.clamp`, the one place the replicas wanted now are
computed from them. The scale subresource of both kinds moves
``expectedReplicas`` (:data:`t9k_operator.api.crd.ELASTIC_SCALE`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule
from t9k_operator.api.schema import MAX_REPLICAS

MSG_ELASTIC_BOUNDS_REQUIRED = (
    "spec.elastic.minReplicas, spec.elastic.maxReplicas and spec.elastic.expectedReplicas "
    "are required when spec.elastic.enabled is true"
)
MSG_ELASTIC_MIN_MAX = "spec.elastic.minReplicas must not exceed spec.elastic.maxReplicas"
MSG_ELASTIC_EXPECTED = (
    "spec.elastic.expectedReplicas must lie within "
    "[spec.elastic.minReplicas, spec.elastic.maxReplicas]"
)


def _within(low: int | None, value: int | None, high: int | None) -> bool:
    """Whether ``low <= value <= high``, an unset bound (or value) holding."""
    return value is None or ((low is None or low <= value) and (high is None or value <= high))


BOUNDS_REQUIRED_RULE: Rule[ElasticConfig] = Rule(
    "!has(self.enabled) || !self.enabled || (has(self.minReplicas) "
    "&& has(self.maxReplicas) && has(self.expectedReplicas))",
    MSG_ELASTIC_BOUNDS_REQUIRED,
    lambda e: not e.enabled or None not in (e.min_replicas, e.max_replicas, e.expected_replicas),
)
MIN_MAX_RULE: Rule[ElasticConfig] = Rule(
    "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
    MSG_ELASTIC_MIN_MAX,
    lambda e: _within(e.min_replicas, e.max_replicas, None),
    field_path=".minReplicas",
)
EXPECTED_RULE: Rule[ElasticConfig] = Rule(
    "!has(self.expectedReplicas) || "
    "((!has(self.minReplicas) || self.minReplicas <= self.expectedReplicas)"
    " && (!has(self.maxReplicas) || self.expectedReplicas <= self.maxReplicas))",
    MSG_ELASTIC_EXPECTED,
    lambda e: _within(e.min_replicas, e.expected_replicas, e.max_replicas),
    field_path=".expectedReplicas",
)


class ElasticConfig(T9kModel):
    """Elastic training (needs torchrun): the number of replicas may change while training.

    A kind whose wording differs (workers rather than replicas) subclasses it and
    redeclares the fields with its own descriptions; the rules stay shared.
    """

    rules: ClassVar[tuple[Rule[Any], ...]] = (BOUNDS_REQUIRED_RULE, MIN_MAX_RULE, EXPECTED_RULE)

    enabled: bool = Field(default=False, description="Whether elastic training is on.")
    min_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Smallest number of replicas training runs with.",
    )
    max_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description="Largest number of replicas training runs with.",
    )
    expected_replicas: int | None = Field(
        default=None,
        ge=1,
        le=MAX_REPLICAS,
        description=(
            "Number of replicas wanted now, between minReplicas and maxReplicas; may be "
            "changed while the job runs (also through the scale subresource). The actual "
            "number may be lower when the cluster lacks resources."
        ),
    )

    def clamp(self, count: int) -> int:
        """Replicas wanted now, of a type that has ``count`` without elastic training:
        when on, expectedReplicas (else ``count``) clamped to [minReplicas,
        maxReplicas]. The one place this rule lives; it clamps even bounds
        admission would have refused."""
        if not self.enabled:
            return count
        want = self.expected_replicas or count
        if self.min_replicas is not None:
            want = max(want, self.min_replicas)
        if self.max_replicas is not None:
            want = min(want, self.max_replicas)
        return want
