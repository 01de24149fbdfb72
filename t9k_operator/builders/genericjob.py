"""GenericJob builders: replica pods with the template's variables filled in,
the job's headless Service, and a Service per replica when ``spec.service``
asks for them.

The variables, in the containers' (and init containers') ``command``,
``args`` and ``env`` values, each replica its own:

* ``$(type)``: its type; ``$(rank)``: its index among its type's replicas;
* ``$(replicas[<type>])``: how many replicas ``<type>`` has;
* ``$(service.<type>[<rank>].host)``: that replica's Service,
  ``<job>-<type>-<rank>`` (with ``spec.service`` only);
* ``$(service.port[<name>])``: the number of that port of ``spec.service``.

They live beside kubelet's own ``$(NAME)`` references to the container's
environment: the operator fills in only the names above, leaves every other
``$(...)`` to kubelet, and keeps kubelet's escape ``$$`` as it is (so
``$$(rank)`` reaches the process as the text ``$(rank)``). A reference that
has a variable's shape but names a type, rank or port the job lacks is an
error (:func:`variable_error`), never left in the pod as text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from t9k_operator.api.genericjob import GenericJobObject
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    child_metadata,
    headless_service,
    pod_name,
    replica_labels,
    replica_pod,
)
from t9k_operator.objects import Obj

Job = GenericJobObject

TRAINING_CONTAINERS = ("main",)
"""The container debug and resume settings replace the command of: the one
named main (as ``t9k create generic`` names it), else the first."""
DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)

_REPLICAS = re.compile(r"replicas\[([^\]]*)\]")
_HOST = re.compile(r"service\.([^.\[\]]*)\[([^\]]*)\]\.host")
_PORT = re.compile(r"service\.port\[([^\]]*)\]")


class VariableError(ValueError):
    """A template variable the job cannot fill in (the message says why)."""


def replica_host(job_name: str, replica_type: str, rank: int) -> str:
    """The name of one replica's Service (and of its pod)."""
    return pod_name(job_name, replica_type, rank)


def _counts(job: Job) -> dict[str, int]:
    return {rs.type: rs.replicas for rs in job.spec.replica_specs}


def _value(job: Job, name: str, replica_type: str, rank: int) -> str | None:
    """The value of the variable ``name`` for one replica; None when ``name`` is
    not a GenericJob variable (kubelet's, then). Raises :class:`VariableError`."""
    if name == "type":
        return replica_type
    if name == "rank":
        return str(rank)
    counts = _counts(job)
    if m := _REPLICAS.fullmatch(name):
        if m[1] not in counts:
            raise VariableError(f"replica type {m[1]!r} is not in spec.replicaSpecs")
        return str(counts[m[1]])
    if not name.startswith("service."):
        return None
    service = job.spec.service
    if m := _HOST.fullmatch(name):
        type_, index = m[1], m[2]
        if type_ not in counts:
            raise VariableError(f"replica type {type_!r} is not in spec.replicaSpecs")
        if not index.isdigit() or int(index) >= counts[type_]:
            raise VariableError(f"replica type {type_} has no rank {index!r}")
        if service is None:
            raise VariableError("replicas have Services only with spec.service")
        return replica_host(job.name, type_, int(index))
    if m := _PORT.fullmatch(name):
        if service is None:
            raise VariableError("ports exist only with spec.service")
        ports = {p.name: p.port for p in service.ports}
        if m[1] not in ports:
            raise VariableError(f"spec.service.ports has no port named {m[1]!r}")
        return str(ports[m[1]])
    raise VariableError(
        "not a GenericJob variable: service.<type>[<rank>].host or service.port[<name>]"
    )


def substitute(text: str, value: Callable[[str], str | None]) -> str:
    """``text`` with each ``$(name)`` whose ``value`` is not None replaced, read
    as kubelet reads references: ``$$`` is kept (kubelet's escape), and a ``$(``
    without its ``)`` is text."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$$")
            i += 2
            continue
        if text.startswith("$(", i):
            end = text.find(")", i + 2)
            if end >= 0:
                found = value(text[i + 2 : end])
                out.append(text[i : end + 1] if found is None else found)
                i = end + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _texts(spec: Mapping[str, Any]) -> Iterator[tuple[str, Any, Any]]:
    """The places variables are filled in, in a pod spec: (path below the spec,
    the list or env item holding it, its key)."""
    for group in ("initContainers", "containers"):
        for c_i, c in enumerate(spec.get(group) or []):
            if not isinstance(c, dict):
                continue
            here = f"{group}[{c_i}]"
            for field in ("command", "args"):
                for k, arg in enumerate(c.get(field) or []):
                    if isinstance(arg, str):
                        yield f"{here}.{field}[{k}]", c[field], k
            for e_i, env in enumerate(c.get("env") or []):
                if isinstance(env, dict) and isinstance(env.get("value"), str):
                    yield f"{here}.env[{e_i}].value", env, "value"


def fill(job: Job, pod_spec: Obj, replica_type: str, rank: int) -> None:
    """Fill in the variables of one replica's pod spec, in place."""

    def value(name: str) -> str | None:
        return _value(job, name, replica_type, rank)

    for _, holder, key in _texts(pod_spec):
        holder[key] = substitute(holder[key], value)


def variable_error(job: Job) -> str | None:
    """The first template variable the job cannot fill in, naming its field; None
    when every one resolves (checked as replica 0 of each type would see it)."""
    for i, rs in enumerate(job.spec.replica_specs):
        spec = rs.template.get("spec") or {}
        for path, holder, key in _texts(spec):
            bad = _first_bad(job, holder[key], rs.type)
            if bad is not None:
                return (
                    f"spec.replicaSpecs[{i}].template.spec.{path}: $({bad[0]}): {bad[1]} "
                    "(write $$( for a literal $()"
                )
    return None


def _first_bad(job: Job, text: str, replica_type: str) -> tuple[str, str] | None:
    """The first reference of ``text`` that cannot be filled in, and why."""
    bad: list[tuple[str, str]] = []

    def probe(name: str) -> str | None:
        try:
            return _value(job, name, replica_type, 0)
        except VariableError as exc:
            bad.append((name, str(exc)))
            return ""

    substitute(text, probe)
    return bad[0] if bad else None


def build_pod(job: Job, replica_type: str, index: int, mode: PodMode = NORMAL) -> Obj:
    """The pod of ``<type>-<index>``: its template, the mode's command and args
    (debug or resume settings) on its first container, the variables filled in."""
    template = next(rs.template for rs in job.spec.replica_specs if rs.type == replica_type)
    pod = replica_pod(
        job,
        template,
        replica_type,
        index,
        training_names=TRAINING_CONTAINERS,
        mode=mode,
        role=replica_type,
    )
    fill(job, pod["spec"], replica_type, index)
    return pod


def _ports(job: Job) -> list[Obj]:
    service = job.spec.service
    out: list[Obj] = []
    for p in service.ports if service is not None else []:
        port: Obj = {"name": p.name, "port": p.port, "targetPort": p.port, "protocol": p.protocol}
        if p.app_protocol:
            port["appProtocol"] = p.app_protocol
        out.append(port)
    return out


def replica_service(job: Job, replica_type: str, index: int) -> Obj:
    """The headless Service ``<job>-<type>-<rank>`` of one replica: its name
    resolves to that replica's pod (before it is ready, so peers can wait on it)."""
    labels = replica_labels(job.kind, job.name, replica_type, index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, replica_host(job.name, replica_type, index), labels),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": labels,
            "ports": _ports(job),
        },
    }


def build_services(job: Job) -> list[Obj]:
    """The job's headless Service (the pods' subdomain), and with
    ``spec.service`` one Service per replica."""
    out = [headless_service(job, [(p["name"], p["port"]) for p in _ports(job)])]
    if job.spec.service is not None:
        for rs in job.spec.replica_specs:
            out += [replica_service(job, rs.type, i) for i in range(rs.replicas)]
    return out
