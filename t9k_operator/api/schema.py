"""What the models tell ``hack/generate/crds.py`` beyond their types: schema markers,
limits and bounded types.

The generator turns the models into structural CRD schemas; the conventions
it relies on:

* a node whose ``json_schema_extra`` names a Kubernetes type under
  :data:`KUBERNETES_SCHEMA` (every pod template, via
  :func:`~t9k_operator.api.template.pod_template_schema`; the ColossalAI
  launcher's env and resources) gets that type's full schema of the pinned
  Kubernetes version; the rest of the extra (descriptions, limits, CEL rules)
  is laid over it;
* any other field typed ``dict[str, Any]`` becomes ``type: object`` with
  ``x-kubernetes-preserve-unknown-fields: true``: kept whole, never pruned;
  :func:`preserved_object_schema` declares a few properties of such an object
  (those a CEL rule reads) and keeps the rest.

CEL rules cost the API server time, and it refuses a rule whose estimated
cost is unbounded; so every list and string a rule may walk is capped. The
caps live here (:data:`MAX_REPLICAS`, :data:`MAX_ARGS`, ...), as do the
bounded types built from them (:data:`Arg`, :data:`ReplicaType`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import AfterValidator, Field, WithJsonSchema

# -- limits that keep the CEL cost estimates of the API server bounded -------------

MAX_REPLICAS = 5000
"""At most this many replicas in one job (every count, and their sum). Kubernetes
is tested up to 5,000 nodes, and a distributed job is gang-shaped: more
replicas than the largest cluster has nodes is a typo. It also bounds the
job's status, which lists every replica."""
MSG_TOO_MANY_REPLICAS = (
    f"the job asks for more than {MAX_REPLICAS} replicas in all: Kubernetes clusters have at "
    "most 5,000 nodes, so this is taken for a typo"
)
MAX_PROCS = 1024
"""At most this many processes (GPU slots) per replica: far more than any node has GPUs."""
MAX_INT32 = 2147483647
"""Durations in seconds and limits: the Pod API's own bound for activeDeadlineSeconds."""
MAX_REPLICA_SPECS = 16
"""At most this many entries in a list of per-replica-type settings."""
MAX_ARGS = 64
"""At most this many items in a command or args list of a debug/resume setting."""
MAX_ARG_LENGTH = 8192
"""At most this many characters in one item of such a command or args list."""
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""A lower-case RFC 1123 label: replica types become parts of pod names."""
DNS_LABEL_MAX = 63
MAX_CONTAINERS = 64
"""At most this many containers in a pod template whose containers a CEL rule reads."""

Arg = Annotated[str, Field(max_length=MAX_ARG_LENGTH)]
ReplicaType = Annotated[
    str,
    Field(
        min_length=1,
        max_length=DNS_LABEL_MAX,
        pattern=DNS_LABEL_PATTERN,
        description="The replica type (role), a lower-case DNS label such as master or worker.",
    ),
]


# -- Kubernetes types -----------------------------------------------------------------

KUBERNETES_SCHEMA = "x-t9k-kubernetes"
"""Schema key naming the Kubernetes definition (as the API server's OpenAPI names
it) whose schema ``hack/generate/crds.py`` puts at that node."""
NOT_REQUIRED = "x-t9k-not-required"
"""Schema key, beside :data:`KUBERNETES_SCHEMA`'s node or below it, listing fields
the Kubernetes type requires that the kind lets be left out (it fills them in)."""
POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
ENV_VAR = "io.k8s.api.core.v1.EnvVar"
RESOURCE_REQUIREMENTS = "io.k8s.api.core.v1.ResourceRequirements"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""A resource quantity written as a string ("500m", "2Gi", "1e3"): the pattern
controller-gen puts on every resource.Quantity of the CRDs it generates."""


def quantity_schema() -> dict[str, Any]:
    """The CRD schema of a resource quantity (``hack/generate/crds.py`` puts it at every
    Quantity of a Kubernetes type, and at our own models' quantities).

    The Pod API takes a quantity as a string or a number, 0.5 included. A
    structural schema has no type for that: controller-gen's int-or-string
    refuses ``cpu: 0.5``, which every pod accepts. So the node is untyped (kept
    as written), and value checks do the rest: a string must match
    :data:`QUANTITY_PATTERN`, a boolean is refused, and so is a non-empty map or
    list. The API server's message names the field (``...limits.cpu in body
    should match ...``), at ``kubectl apply`` rather than when a pod is created.
    """
    return {
        "x-kubernetes-preserve-unknown-fields": True,
        "pattern": QUANTITY_PATTERN,
        "not": {"enum": [True, False]},
        "maxProperties": 0,
        "maxItems": 0,
    }


def quantity_error(value: Any) -> str | None:
    """Why ``value`` is no resource quantity the Pod API takes (None when it is):
    the admission checks of :func:`quantity_schema`, for a model to repeat."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return f"must be a quantity (a number, or a string such as 500m or 2Gi), not {value!r:.40}"
    if isinstance(value, str) and not re.match(QUANTITY_PATTERN, value):
        return f"{value!r:.40} is not a quantity (such as 500m, 2Gi or 1e3)"
    return None


# -- objects kept whole ----------------------------------------------------------------


def preserved_object_schema(description: str, properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema that declares ``properties`` and keeps every other field."""
    return {
        "type": "object",
        "additionalProperties": True,
        "description": description,
        "properties": properties,
    }


def containers_schema(description: str, **properties: Any) -> dict[str, Any]:
    """The schema of a pod template's ``containers`` that a CEL rule reads: at
    most :data:`MAX_CONTAINERS`, each kept as written but for its bounded name
    and the ``properties`` given."""
    return {
        "type": "array",
        "maxItems": MAX_CONTAINERS,
        "description": description,
        "items": preserved_object_schema(
            "A container, kept as written.",
            {
                "name": {
                    "type": "string",
                    "maxLength": DNS_LABEL_MAX,
                    "description": "Name of the container.",
                },
                **properties,
            },
        ),
    }


# -- CEL -------------------------------------------------------------------------------


def cel_strings(values: Sequence[str]) -> str:
    """A CEL list literal of ``values`` (which hold no quote), e.g. ``['a', 'b']``."""
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _check_quantity(value: Any) -> Any:
    error = quantity_error(value)
    if error:
        raise ValueError(error)
    return value


Quantity = Annotated[
    Any, AfterValidator(_check_quantity), WithJsonSchema({KUBERNETES_SCHEMA: QUANTITY})
]
"""A resource quantity in one of our own models (kept as written: 2, 0.5, "500m");
in the CRD, :func:`quantity_schema`, as at every quantity of a pod template."""
