"""Property: every job settles, whatever its spec.

At least 1,000 specs across every registered kind, made from a valid job of each kind
by setting valid pod-template fields (half of them: one to four of
:data:`ENRICHMENTS`) and by mutating it (six in ten: a field set to an extreme
or wrongly typed value, removed, or an unknown one added; one to three
mutations each), go to
the local cluster with the operator running. Each one must be refused at
admission with a message naming a field, or within 30 s be running (or done),
or be Failed, or Pending, with a condition naming the cause (among the
enrichments: pods their kubelet cannot start, for a while or for good). Throughout, the
operator stays up and its RSS under 300 MB. Specs are sent as ``kubectl apply``
sends them (strict field validation: an unknown field is refused, not pruned).

No accepted job carries a malformed resource quantity (a string such as
``lots`` where a pod template, or a kind's own field, wants a quantity): the
CRD refuses it at admission, naming the field, rather than the Pod API when a
pod is created; and :data:`MALFORMED_QUANTITIES`, set at every kind of
quantity of every kind (:data:`QUANTITY_SPOTS`), are each refused so.

And nothing is dropped on the way to the pod: every field set in a pod template
of an accepted job is on each pod the operator makes from it (empty values
aside, which the Pod API does not print; env entries compared by name, since the
operator's own variables replace same-named ones); nor is a DeepSpeedJob's
``spec.config.otherArgs``, every item of which is on the deepspeed line its
worker-0 runs. And after a pause, every ``spec.runMode.pause.resumeSpecs``
item's command and args are on the new pods of its type (:data:`RESUMES`;
args alone follow the template's command, or in torchrun mode the torchrun
line; DeepSpeedJob and ColossalAIJob refuse them at admission).

Why a seeded generator and not hypothesis: the property is judged on the
cluster, 30 s at most per job, so the specs are submitted in concurrent
batches; hypothesis draws and judges one example at a time, and its
shrinking has nothing to work on across a batch. The seed is printed and can
be replayed or changed with T9K_FUZZ_SEED (default 12345, so CI judges the
same specs every run); the counts by outcome are printed, and for the
default seed each must reach its minimum (``AT_LEAST``).
"""

from __future__ import annotations

import copy
import os
import random
import re
import shlex
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.api.schema import QUANTITY_PATTERN
from t9k_operator.kube import ApiError, KubeClient, Resource
from t9k_operator.resources import PODS
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs
from tests.kinds import (
    KIND_NAMES,
    by_kind,
    kind_entry,
    kind_resource,
    kind_table,
    kubeflow_status,
    per_kind,
)

SPECS = int(os.environ.get("T9K_FUZZ_SPECS", "1000"))
SEED = 12345  # fixed: CI judges the same specs
# What the fixed seed's 1,000 specs came to (2026-11-26, once malformed quantities
# and int32s beyond their range were refused at admission: ran 399, refused 515,
# failed:InvalidSpec 37, failed:PodCannotStart 25, waiting:ErrImagePull 23,
# waiting:Unschedulable 1),
# less a fifth for the timing a run may meet: an operator that failed every job
# with a message, or an admission that refused everything, settles every job too,
# and must not pass.
AT_LEAST = {
    "ran": 320,
    "refused": 411,
    "failed:InvalidSpec": 30,
    "failed:PodCannotStart": 20,
    "waiting:ErrImagePull": 18,  # an image that cannot be pulled, named by the pull's error
}
BATCH = 50
SETTLE = 30.0
RSS_LIMIT = 300 * 1024 * 1024

EXTREMES: list[Any] = [
    -1,
    0,
    1,
    3,
    5001,
    2**31,
    2**63 - 1,
    -(2**63),
    1.5,
    "",
    "x",
    "lots",
    "-1",
    "Never",
    "a" * 300,
    "/tmp/x",
    "$(HOME)",
    [],
    ["a"],
    [1],
    [{}],
    {},
    {"a": 1},
    {"a": "b"},
    None,
    True,
    False,
]


BASE_SPECS: dict[str, dict[str, Any]] = kind_table("FUZZ_BASE_SPEC")
"""kind -> the spec of a valid job, which the fuzzer enriches and mutates (its
``FUZZ_BASE_SPEC`` in tests/kinds/<kind>.py)."""


def base(kind: str) -> tuple[Resource, dict[str, Any]]:
    """The resource of ``kind`` and a valid job of it (its spec from :data:`BASE_SPECS`)."""
    spec = kind_entry(BASE_SPECS, f"{__name__}.BASE_SPECS", kind)
    return kind_resource(kind), {
        "apiVersion": by_kind(kind).crd.api_version,
        "kind": kind,
        "spec": spec,
    }


ENRICHMENTS: list[tuple[str, str, Any]] = [
    # (where in the template: "pod" = its spec, "container" = its first container,
    # "meta" = its metadata; field; a value the Pod API accepts)
    ("pod", "tolerations", [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]),
    ("pod", "securityContext", {"runAsUser": 1000, "fsGroup": 1000, "runAsNonRoot": True}),
    ("pod", "hostAliases", [{"ip": "10.0.0.1", "hostnames": ["data.local"]}]),
    ("pod", "terminationGracePeriodSeconds", 5),
    ("pod", "dnsConfig", {"options": [{"name": "ndots", "value": "2"}]}),
    (
        "pod",
        "affinity",
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": "type", "operator": "In", "values": ["kwok"]}
                            ]
                        },
                    }
                ]
            }
        },
    ),
    ("pod", "volumes", [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}]),
    ("container", "volumeMounts", [{"name": "scratch", "mountPath": "/scratch"}]),
    ("container", "workingDir", "/workspace"),
    ("container", "imagePullPolicy", "IfNotPresent"),
    ("container", "readinessProbe", {"exec": {"command": ["true"]}, "periodSeconds": 10}),
    ("container", "lifecycle", {"preStop": {"exec": {"command": ["sleep", "1"]}}}),
    ("container", "securityContext", {"capabilities": {"add": ["IPC_LOCK"]}}),
    (
        "container",
        "env",
        [
            {"name": "A", "value": "1"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    ),
    (
        "container",
        "resources",
        {"limits": {"cpu": 0.5, "memory": "1Gi"}, "requests": {"cpu": 0.25}},
    ),
    ("meta", "labels", {"team": "a", "tier": "train"}),
    ("meta", "annotations", {"kwok.t9k.dev/run-duration": "2s", "note": "enriched"}),
    # Pods their kubelet cannot start (hack/third_party/kwok/stages.yaml, pod-pull-failed and
    # pod-cannot-start):
    # one that waits to be cured, and one no wait cures.
    ("meta", "annotations", {"kwok.t9k.dev/waiting-reason": "ImagePullBackOff"}),
    (
        "meta",
        "annotations",
        {
            "kwok.t9k.dev/waiting-reason": "InvalidImageName",
            "kwok.t9k.dev/waiting-message": 'couldn\'t parse image name "x:Bad Tag"',
        },
    ),
]


def enrich(rng: random.Random, doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``doc`` with one to four valid pod-template fields set in every template."""
    doc = copy.deepcopy(doc)
    picks = rng.sample(ENRICHMENTS, rng.randint(1, 4))
    for template in templates(doc).values():
        for where, field, value in picks:
            node = {
                "pod": template["spec"],
                "meta": template["metadata"],
                "container": template["spec"]["containers"][0],
            }[where]
            node[field] = copy.deepcopy(value)
    return doc, [f"{where}.{field}" for where, field, _ in picks]


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def mutate(rng: random.Random, doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    doc = copy.deepcopy(doc)
    notes = []
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(doc["spec"]) if p]
        if not paths:  # an earlier mutation emptied the spec: nothing left to change
            break
        path = rng.choice(paths)
        parent: Any = doc["spec"]
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = rng.random()
        if action < 0.7:
            value = copy.deepcopy(rng.choice(EXTREMES))
            parent[last] = value
            notes.append(f"{'.'.join(map(str, path))}={value!r:.40}")
        elif action < 0.85 and isinstance(parent, dict):
            del parent[last]
            notes.append(f"-{'.'.join(map(str, path))}")
        elif isinstance(parent, dict):
            parent["zzUnknown"] = rng.choice(EXTREMES)
            notes.append(f"+{'.'.join(map(str, path[:-1]))}.zzUnknown")
    return doc, notes


def settled(job: dict[str, Any]) -> str | None:
    """The outcome if the job has settled, else None."""
    status = job.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    phase = status.get("phase")
    if kubeflow_status(job["kind"]):  # Kubeflow-style status (MSJob's)
        kinds = {c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"}
        if "Failed" in kinds:
            failed = next(c for c in status["conditions"] if c["type"] == "Failed")
            return f"failed:{failed.get('reason')}" if failed.get("message") else None
        if kinds & {"Running", "Succeeded"}:
            return "ran"
        t9k = {c.get("type"): c for c in status.get("t9kConditions") or []}
        return _waiting(t9k)
    if phase in ("Running", "Succeeded"):
        return "ran"
    if phase == "Failed":
        failed = conditions.get("Failed") or {}
        return f"failed:{failed.get('reason')}" if failed.get("message") else None
    if phase == "Pending" and _waiting(conditions):
        return _waiting(conditions)
    if phase == "Paused":
        return "ran"  # a pause the spec asked for
    return None


# Kubelet's reasons for a container it cannot start yet (docs/kinds.md, Errors).
KUBELET_WAITING = ("ImagePullBackOff", "ErrImagePull")


def _waiting(conditions: dict[Any, Any]) -> str | None:
    """Pending with a condition naming what it waits for."""
    for type_, reason in (
        ("Initialized", "FailedCreate"),
        ("Running", "Unschedulable"),
        *(("Running", r) for r in KUBELET_WAITING),
    ):
        cond = conditions.get(type_) or {}
        if cond.get("reason") == reason and cond.get("message"):
            return f"waiting:{reason}"
    return None


TEMPLATES: dict[str, Callable[[dict[str, Any]], list[tuple[Any, Any]]]] = kind_table(
    "fuzz_templates"
)
"""kind -> the (replica type, pod template) pairs of a (mutated) spec, as found (its
``fuzz_templates``)."""


def templates(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The pod templates of a (mutated) job by replica type, lower-cased as pods label it."""
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return {}
    pairs = kind_entry(TEMPLATES, f"{__name__}.TEMPLATES", doc["kind"])(spec)
    return {str(t).lower(): tpl for t, tpl in pairs if isinstance(t, str) and isinstance(tpl, dict)}


def dropped(sent: Any, got: Any, path: str) -> list[str]:
    """Paths set in ``sent`` that ``got`` lacks. Values may differ (the operator sets
    some, the API server normalises quantities); empty values count as unset."""
    if sent in (None, [], {}, ""):
        return []
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            # A map of nothing but empty values ({key: null}) is empty too.
            return [path] if dropped(sent, {}, path) else []
        return [p for k, v in sent.items() for p in dropped(v, got.get(k), f"{path}.{k}")]
    if not isinstance(sent, list):
        return [] if got is not None else [path]
    if not isinstance(got, list):
        return [path]
    out = []
    if path.endswith(".env"):
        by_name = {e.get("name"): e for e in got if isinstance(e, dict)}
        for e in sent:
            if isinstance(e, dict):
                key = e.get("name")
                out += dropped(e, by_name.get(key), f"{path}[{key}]")
        return out
    for i, v in enumerate(sent):
        out += dropped(v, got[i] if i < len(got) else None, f"{path}[{i}]")
    return out


# -- resource quantities --------------------------------------------------------------

QUANTITY_KEYS = re.compile(
    r"(\.(resources\.(limits|requests)|overhead|minResources)\.[^.]+|\.sizeLimit|\.divisor)$"
)
"""The paths (as :func:`_paths` joins them) where a resource quantity sits."""


def bad_quantities(doc: dict[str, Any]) -> list[str]:
    """Paths of the spec where a quantity is a string the Pod API cannot parse."""
    out = []
    for path in _paths(doc.get("spec")):
        node: Any = doc["spec"]
        for part in path:
            node = node[part]
        joined = "spec." + ".".join(map(str, path))
        if (
            isinstance(node, str)
            and QUANTITY_KEYS.search(joined)
            and not re.match(QUANTITY_PATTERN, node)
        ):
            out.append(joined)
    return out


MALFORMED_QUANTITIES: list[Any] = ["lots", "1.5.5", "2 Gi", "1Gb", "", "0x10", "1e", True, {"a": 1}]


def _set(node: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    for key in keys[:-1]:
        node = node.setdefault(key, {}) if not key.isdigit() else node[int(key)]  # type: ignore[index]
    node[keys[-1]] = value


# Where a quantity sits in a pod template (a dotted path, numbers index lists), and
# what the template needs beside it to be otherwise valid.
QUANTITY_SPOTS: list[tuple[str, dict[str, Any]]] = [
    ("spec.containers.0.resources.limits.cpu", {}),
    ("spec.containers.0.resources.requests.memory", {}),
    (
        "spec.initContainers.0.resources.limits.cpu",
        {"spec.initContainers": [{"name": "init", "image": "busybox", "resources": {}}]},
    ),
    ("spec.overhead.cpu", {}),
    ("spec.volumes.0.emptyDir.sizeLimit", {"spec.volumes": [{"name": "scratch", "emptyDir": {}}]}),
    (
        "spec.volumes.0.ephemeral.volumeClaimTemplate.spec.resources.requests.storage",
        {
            "spec.volumes": [
                {
                    "name": "data",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {}}
                        }
                    },
                }
            ]
        },
    ),
    (
        "spec.containers.0.env.0.valueFrom.resourceFieldRef.divisor",
        {
            "spec.containers.0.env": [
                {"name": "CPUS", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}
            ]
        },
    ),
]
TEMPLATE_PATHS: dict[str, tuple[str, str]] = kind_table("FUZZ_TEMPLATE_PATH")
"""kind -> (the path of a pod template in the spec, as the API server names it;
the same as a dotted path into the spec) (its ``FUZZ_TEMPLATE_PATH``)."""
OWN_QUANTITY_SPOTS: dict[str, list[tuple[str, str]]] = kind_table("FUZZ_OWN_QUANTITY_SPOTS")
"""kind -> the kind's own quantities: (as the API server names it, dotted path in
the spec) (its ``FUZZ_OWN_QUANTITY_SPOTS``)."""


def _quantity_cases(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """(the field the API server must name, the job) for each spot and malformed value."""
    named, dotted = kind_entry(TEMPLATE_PATHS, f"{__name__}.TEMPLATE_PATHS", kind)
    cases = []
    for i, value in enumerate(MALFORMED_QUANTITIES):
        for spot, needs in QUANTITY_SPOTS:
            doc = copy.deepcopy(base(kind)[1])  # base() hands out BASE_SPECS itself
            template: dict[str, Any] = doc["spec"]
            for part in dotted.split("."):
                template = template[int(part)] if part.isdigit() else template[part]
            for path, extra in needs.items():
                _set(template, path, copy.deepcopy(extra))
            _set(template, spot, copy.deepcopy(value))
            field = named + "." + re.sub(r"\.(\d+)", r"[\1]", spot)
            cases.append((field, doc))
        for field, path in kind_entry(OWN_QUANTITY_SPOTS, f"{__name__}.OWN_QUANTITY_SPOTS", kind):
            doc = copy.deepcopy(base(kind)[1])  # base() hands out BASE_SPECS itself
            _set(doc["spec"], path, copy.deepcopy(value))
            cases.append((field, doc))
        if i == 0:  # the well-formed twins of the first spots are accepted: 0.5 included
            for number in (0.5, "500m", 2):
                doc = copy.deepcopy(base(kind)[1])  # base() hands out BASE_SPECS itself
                _set(doc["spec"], dotted + ".spec.containers.0.resources.limits.cpu", number)
                cases.append(("", doc))
    return cases


def test_malformed_quantities_are_refused_naming_the_field(
    admin: KubeClient, namespace: str, crds_installed: None
) -> None:
    per_kind(TEMPLATE_PATHS, f"{__name__}.TEMPLATE_PATHS")
    per_kind(OWN_QUANTITY_SPOTS, f"{__name__}.OWN_QUANTITY_SPOTS")
    accepted, unnamed, refused_ok = [], [], []
    n = 0
    for kind in sorted(KIND_NAMES):
        resource = kind_resource(kind)
        for field, doc in _quantity_cases(kind):
            doc["metadata"] = {"name": f"q-{n}"}
            n += 1
            try:
                admin.create(resource, doc, namespace, field_validation="Strict")
            except ApiError as exc:
                if not field:
                    refused_ok.append(f"{kind}: {exc.message[:300]}")
                elif exc.status != 422 or field not in exc.message:
                    unnamed.append(f"{kind} {field}: {exc.status} {exc.message[:300]}")
                continue
            if field:
                accepted.append(f"{kind} {field}")
    assert accepted == [], f"{len(accepted)} malformed quantities accepted: {accepted[:10]}"
    assert unnamed == [], unnamed[:10]
    assert refused_ok == [], refused_ok


def dropped_other_args(args: Any, pod: dict[str, Any]) -> list[str]:
    """The items of a DeepSpeedJob's spec.config.otherArgs missing from the deepspeed
    line its launcher pod (worker-0) runs: its training container's command."""
    if not isinstance(args, list):
        return []
    containers = pod["spec"].get("containers") or []
    c = next((c for c in containers if c.get("name") == "worker"), containers[0])
    line = " ".join(c.get("command") or [])
    return [
        f"spec.config.otherArgs[{i}]"
        for i, arg in enumerate(args)
        if isinstance(arg, str) and arg and shlex.quote(arg) not in line
    ]


# -- resumeSpecs reach the pods -----------------------------------------------------

RESUMES: dict[str, list[tuple[str, dict[str, Any], list[dict[str, Any]]]]] = kind_table(
    "FUZZ_RESUMES"
)
"""kind -> jobs: (a name, spec changes, resumeSpecs), every item of which must be
on the pods of its type after a pause ends (MSJob's API has no pause mode) (its
``FUZZ_RESUMES``)."""
TRAINING_CONTAINERS = ("pytorch", "worker", "launcher", "mindspore", "tensorflow")
TRAINING_CONTAINERS = ("pytorch", "worker", "launcher", "mindspore", "mpi-worker")


def dropped_resume(spec: dict[str, Any], pod: dict[str, Any], path: str) -> list[str]:
    """What of one resumeSpecs item the pod (of its type, made after the pause)
    lacks: its command and args; args alone follow the template's command, or in
    torchrun mode the torchrun line."""
    containers = pod["spec"]["containers"]
    c = next((c for c in containers if c["name"] in TRAINING_CONTAINERS), containers[0])
    command, args = c.get("command") or [], c.get("args") or []
    out = []
    if spec.get("command") and command != spec["command"]:
        out.append(f"{path}.command")
    wanted = spec.get("args") or []
    if spec.get("command") or command[:1] != ["torchrun"]:
        if args != wanted:
            out.append(f"{path}.args")
    elif command[-len(wanted) :] != wanted or args:
        out.append(f"{path}.args")
    return out


def _pause_and_resume(jobs: Jobs, name: str, resumes: list[dict[str, Any]]) -> list[str]:
    """Pause the running job, end the pause, and say what of ``resumes`` its new
    pods lack."""
    jobs.wait_phase(name, "Running")
    count = len(jobs.pods(name))
    jobs.patch_spec(name, {"runMode": {"pause": {"enabled": True}}})
    jobs.wait_phase(name, "Paused")
    wait_for(lambda: not jobs.all_pods(name), 30, f"{name}: pods gone while paused")
    jobs.patch_spec(name, {"runMode": {"pause": {"enabled": False}}})
    back = wait_for(lambda: len(jobs.pods(name)) == count and jobs.pods(name), 30, "resumed")
    lost = []
    for i, spec in enumerate(resumes):
        pods = [
            p
            for p in back.values()
            if p["metadata"]["labels"]["t9k.dev/replica-type"] == spec["type"]
        ]
        assert pods, (name, spec["type"], sorted(back))
        for pod in pods:
            missing = dropped_resume(spec, pod, f"spec.runMode.pause.resumeSpecs[{i}]")
            lost += [f"{pod['metadata']['name']}: {m}" for m in missing]
    return lost


def test_resume_specs_reach_the_pods_after_a_pause(
    admin: KubeClient, namespace: str, start_operator: Any
) -> None:
    """The dropped-field check for spec.runMode.pause.resumeSpecs: after a pause
    ends, every replica's pod runs what its type's resumeSpecs item says."""
    per_kind(RESUMES, f"{__name__}.RESUMES")
    operator = start_operator()
    operator.wait_ready()
    lost: list[str] = []
    for kind in sorted(KIND_NAMES):
        for name, changes, resumes in RESUMES[kind]:
            resource, valid = base(kind)
            doc = copy.deepcopy(valid)
            doc["metadata"] = {"name": name}
            doc["spec"].update(copy.deepcopy(changes))
            doc["spec"]["runMode"] = {"pause": {"enabled": False, "resumeSpecs": resumes}}
            for template in templates(doc).values():  # run until paused
                template["metadata"]["annotations"]["kwok.t9k.dev/run-duration"] = "10m"
            jobs = Jobs(admin, namespace, resource)
            jobs.create(doc)
            lost += [f"{kind} {m}" for m in _pause_and_resume(jobs, name, resumes)]
            admin.delete(resource, name, namespace)
    assert lost == [], lost


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.parametrize(
    "table", ["BASE_SPECS", "TEMPLATES", "TEMPLATE_PATHS", "OWN_QUANTITY_SPOTS", "RESUMES"]
)
def test_every_kind_has_its_entry_in_the_table(table: str) -> None:
    per_kind(globals()[table], f"{__name__}.{table}")


def test_every_mutated_spec_settles(admin: KubeClient, namespace: str, start_operator: Any) -> None:
    for table in ("BASE_SPECS", "TEMPLATES"):  # before the long run, not midway through it
        per_kind(globals()[table], f"{__name__}.{table}")
    operator = start_operator(
        "--kube-api-qps", "300", "--kube-api-burst", "600", "--log-level", "info"
    )
    operator.wait_ready()
    seed = int(os.environ.get("T9K_FUZZ_SEED", str(SEED)))
    print(f"\nfuzz seed {seed} (T9K_FUZZ_SEED={seed} replays it)")
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    unsettled: list[str] = []
    unnamed: list[str] = []
    lost: list[str] = []
    bad_admitted: list[str] = []
    checked: set[str] = set()
    compared_jobs: set[str] = set()
    ran_jobs: set[str] = set()
    batch_kinds: dict[str, Any] = {}
    peak = 0
    made = 0

    def compare_pods(
        batch: dict[str, Any], sent: dict[str, dict[str, Any]], other_args: dict[str, Any]
    ) -> None:
        """Compare every pod of the batch not yet seen with the template it came from."""
        pods, _ = admin.list_all(PODS, namespace)
        for pod in pods:
            labels = pod["metadata"].get("labels") or {}
            job_name = labels.get("t9k.dev/job-name")
            replica_type = labels.get("t9k.dev/replica-type", "").lower()
            template = sent.get(job_name, {}).get(replica_type)
            if template is None or pod["metadata"]["uid"] in checked:
                continue
            checked.add(pod["metadata"]["uid"])
            compared_jobs.add(job_name)
            missing = dropped(template, pod, "template")
            if labels.get("t9k.dev/role") == "launcher":
                missing += dropped_other_args(other_args.get(job_name), pod)
            if missing:
                lost.append(f"{pod['metadata']['name']} {batch[job_name][2]}: {missing}")

    while made < SPECS:
        batch: dict[str, tuple[Resource, str, list[str], float]] = {}
        sent: dict[str, dict[str, dict[str, Any]]] = {}
        other_args: dict[str, Any] = {}
        for _ in range(min(BATCH, SPECS - made)):
            kind = rng.choice(sorted(KIND_NAMES))
            resource, valid = base(kind)
            doc, notes = enrich(rng, valid) if rng.random() < 0.5 else (valid, [])
            if rng.random() < 0.6:
                doc, mutations = mutate(rng, doc)
                notes += mutations
            name = f"fz-{made}"
            made += 1
            doc["metadata"] = {"name": name}
            try:
                admin.create(resource, doc, namespace, field_validation="Strict")
            except ApiError as exc:
                if exc.status in (400, 422) and (
                    "spec" in exc.message or "metadata" in exc.message
                ):
                    outcomes["refused"] += 1
                else:
                    unnamed.append(f"{name} {notes}: {exc.status} {exc.message[:300]}")
                continue
            bad = bad_quantities(doc)
            if bad:
                bad_admitted.append(f"{name} {kind} {notes}: {bad}")
            batch[name] = (resource, kind, notes, time.monotonic())
            sent[name] = templates(doc)
            other_args[name] = (
                (doc["spec"].get("config") or {}) if kind == "DeepSpeedJob" else {}
            ).get("otherArgs")
            batch_kinds[name] = (kind, notes, sorted(sent[name]))
        pending = dict(batch)
        while pending:
            assert operator.proc.poll() is None, "the operator exited"
            compare_pods(batch, sent, other_args)
            peak = max(peak, rss(operator.proc.pid))
            for name, (resource, kind, notes, created) in list(pending.items()):
                job = admin.get(resource, name, namespace)
                outcome = settled(job)
                if outcome is not None:
                    outcomes[outcome] += 1
                    if outcome == "ran":
                        ran_jobs.add(name)
                    del pending[name]
                elif time.monotonic() - created > SETTLE:
                    unsettled.append(f"{name} {kind} {notes}: status {job.get('status')}")
                    del pending[name]
            time.sleep(0.5)
        compare_pods(batch, sent, other_args)  # the pods of jobs that settled in the last round
        for name, (resource, *_rest) in batch.items():
            admin.delete(resource, name, namespace)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    print(f"{made} specs: {summary}; operator peak RSS {peak / 2**20:.0f} MiB")
    print(f"{len(checked)} pods compared with their templates")
    assert unnamed == [], unnamed[:10]
    assert bad_admitted == [], f"malformed quantities admitted: {bad_admitted[:10]}"
    assert lost == [], f"{len(lost)} pods lack fields of their template: {lost[:10]}"
    unseen = {n: batch_kinds[n] for n in ran_jobs - compared_jobs}
    assert not unseen, f"jobs ran without a pod seen: {unseen}"
    assert unsettled == [], f"{len(unsettled)} did not settle in {SETTLE}s: {unsettled[:10]}"
    assert peak < RSS_LIMIT, f"operator RSS peaked at {peak / 2**20:.0f} MiB"
    assert made >= SPECS
    if seed == SEED:  # another seed's specs come to other counts
        short = {
            k: f"{outcomes[k]} < {n * SPECS // 1000}"
            for k, n in AT_LEAST.items()
            if outcomes[k] < n * SPECS // 1000
        }
        assert not short, f"fewer specs came to these outcomes than the seed's: {short}"


pytestmark = pytest.mark.timeout(1800)
