"""Pod templates as the API models hold them: checked for shape, kept as dicts.

A kind's pod templates stay plain dicts, as the Pod API has them: the
operator copies them into the pods it builds, and the API server checks the
pod when it is created. What the operator itself reads of a template (labels,
containers, their command, env and ports) must have the shape it expects, or
no pod could be built from it, and Kueue's topology annotations must keep
Kueue's rules (:mod:`~t9k_operator.api.topology`); :func:`pod_template_shape_error`
says where they have not, and :data:`PodTemplate` makes that a validation error of the model.

In the CRD a template field (declared with :func:`pod_template_field`) gets
the full Kubernetes PodTemplateSpec schema (:func:`pod_template_schema`), so
a typo such as ``comand:`` is refused at admission; a kind lays its own
descriptions, limits and CEL rules over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from t9k_operator.api.schema import KUBERNETES_SCHEMA, POD_TEMPLATE_SPEC
from t9k_operator.api.topology import topology_error

# -- shape --------------------------------------------------------------------------------


def _kind_of(value: Any) -> str:
    names = {dict: "a map", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}
    return names.get(type(value), "null" if value is None else type(value).__name__)


def _expect(value: Any, want: type, path: str, what: str) -> None:
    if not isinstance(value, want) or (want is int and isinstance(value, bool)):
        raise ValueError(f"{path} must be {what}, not {_kind_of(value)}")


def _string_map(value: Any, path: str) -> None:
    _expect(value, dict, path, "a map of strings")
    for key, item in value.items():
        _expect(item, str, f"{path}.{key}", "a string")


def _container_shape(c: Any, path: str) -> None:
    _expect(c, dict, path, "a map (a container)")
    for key in ("name", "image", "workingDir", "imagePullPolicy"):
        if c.get(key) is not None:
            _expect(c[key], str, f"{path}.{key}", "a string")
    for key in ("command", "args"):
        if c.get(key) is not None:
            _expect(c[key], list, f"{path}.{key}", "a list of strings")
            for i, arg in enumerate(c[key]):
                _expect(arg, str, f"{path}.{key}[{i}]", "a string")
    for key, what in (("env", "name"), ("ports", "containerPort"), ("volumeMounts", "mountPath")):
        if c.get(key) is not None:
            _expect(c[key], list, f"{path}.{key}", "a list")
            for i, item in enumerate(c[key]):
                _expect(item, dict, f"{path}.{key}[{i}]", f"a map (with {what})")
    for i, env in enumerate(c.get("env") or []):
        _expect(env.get("name"), str, f"{path}.env[{i}].name", "a string")
        if env.get("value") is not None:
            _expect(env["value"], str, f"{path}.env[{i}].value", "a string")
    for i, port in enumerate(c.get("ports") or []):
        if port.get("name") is not None:
            _expect(port["name"], str, f"{path}.ports[{i}].name", "a string")
        _expect(port.get("containerPort"), int, f"{path}.ports[{i}].containerPort", "an integer")
    if c.get("resources") is not None:
        _expect(c["resources"], dict, f"{path}.resources", "a map")


def pod_template_shape_error(template: Any, path: str = "template") -> str | None:
    """Where a pod template has a shape the operator cannot build a pod from
    (labels given as a list, a container as a string, ...), naming the field;
    None when it can. The Pod API checks the rest when the pod is created."""
    try:
        _expect(template, dict, path or "template", "a map (a PodTemplateSpec)")
        meta = template.get("metadata")
        if meta is not None:
            _expect(meta, dict, f"{path}.metadata", "a map")
            for key in ("labels", "annotations"):
                if meta.get(key) is not None:
                    _string_map(meta[key], f"{path}.metadata.{key}")
            broken = topology_error(meta.get("annotations") or {})
            if broken is not None:
                raise ValueError(f"{path}.metadata.annotations[{broken[0]}] {broken[1]}")
        spec = template.get("spec")
        if spec is not None:
            _expect(spec, dict, f"{path}.spec", "a map (a PodSpec)")
            for key in ("containers", "initContainers", "volumes"):
                if spec.get(key) is not None:
                    _expect(spec[key], list, f"{path}.spec.{key}", "a list")
            for key in ("containers", "initContainers"):
                for i, c in enumerate(spec.get(key) or []):
                    _container_shape(c, f"{path}.spec.{key}[{i}]")
            for i, v in enumerate(spec.get("volumes") or []):
                _expect(v, dict, f"{path}.spec.volumes[{i}]", "a map (a volume)")
    except ValueError as exc:
        return str(exc)
    return None


def check_pod_template(template: dict[str, Any]) -> dict[str, Any]:
    """Pydantic after-validator: raise with :func:`pod_template_shape_error`'s text
    (paths relative to the template, which pydantic's location names)."""
    error = pod_template_shape_error(template, "")
    if error:
        raise ValueError(error.lstrip("."))
    return template


PodTemplate = Annotated[dict[str, Any], AfterValidator(check_pod_template)]
"""A pod template as the operator reads it; declare its field with
:func:`pod_template_field` so the CRD validates it."""


# -- schema and containers -------------------------------------------------------------


def pod_template_schema(overlay: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``json_schema_extra`` of a pod template field: the Kubernetes PodTemplateSpec,
    with ``overlay`` (a kind's own descriptions, limits and CEL rules) on top."""
    return {KUBERNETES_SCHEMA: POD_TEMPLATE_SPEC, **(overlay or {})}


def pod_template_field(
    pods: str, overlay: Mapping[str, Any] | None = None, *, more: str = "."
) -> Any:
    """A kind's required :data:`PodTemplate` field, the template of its ``pods``
    (e.g. "workers"): described alike by every kind, ``more`` ending the
    description (a full stop, or a clause of the kind's own); in the CRD,
    :func:`pod_template_schema` with ``overlay``."""
    return Field(
        description=(
            f"Pod template of the {pods} (a Kubernetes PodTemplateSpec: metadata and spec), "
            f"kept as written{more}"
        ),
        json_schema_extra=pod_template_schema(overlay),
    )


def _containers(template: Mapping[str, Any]) -> Any:
    return (template.get("spec") or {}).get("containers") or []


def named_container(template: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The pod template's container called ``name``; None without one."""
    for container in _containers(template):
        if isinstance(container, Mapping) and container.get("name") == name:
            return container
    return None


def named_or_first_container(template: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The pod template's container called ``name``, else its first; None without any."""
    named = named_container(template, name)
    if named is not None:
        return named
    containers = _containers(template)
    first = containers[0] if containers else None
    return first if isinstance(first, Mapping) else None
