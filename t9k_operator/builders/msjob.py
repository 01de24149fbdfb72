"""MSJob builders: role pods with MindSpore's cluster env, and the scheduler Service.

MindSpore's dynamic networking needs, in the ``mindspore`` container:
``MS_ROLE`` (MS_SCHED / MS_PSERVER / MS_WORKER), ``MS_SCHED_HOST`` (an IP
address), ``MS_SCHED_PORT`` (the container port named ``msjob-port``, default
2222), ``MS_WORKER_NUM``, ``MS_SERVER_NUM`` and ``MS_NODE_ID`` (the pod name).
As the MindSpore operator does, the other roles reach the scheduler through
the ClusterIP of a Service in front of it (``<job>-scheduler``); the
scheduler itself gets its own pod IP through the downward API. The caller
passes that ClusterIP in, keeping these functions pure.
"""

from __future__ import annotations

from t9k_operator.api.msjob import (
    PORT_NAME,
    PS,
    SCHEDULER,
    TRAINING_CONTAINER,
    WORKER,
    MSJobObject,
    scheduler_port,
)
from t9k_operator.builders.common import (
    NORMAL,
    KindFacts,
    PodMode,
    child_metadata,
    headless_service,
    job_labels,
    replica_pod,
    set_env,
)
from t9k_operator.objects import Obj, training_container_index

Job = MSJobObject

TRAINING_CONTAINERS = (TRAINING_CONTAINER,)
MS_ROLE = {SCHEDULER: "MS_SCHED", PS: "MS_PSERVER", WORKER: "MS_WORKER"}
DEBUG_COMMAND = ("sleep", "inf")
FACTS = KindFacts(TRAINING_CONTAINERS, DEBUG_COMMAND)


def job_scheduler_port(job: Job) -> int:
    """The scheduler port: the Scheduler's msjob-port, else the default."""
    scheduler = job.spec.ms_replica_specs.get(SCHEDULER)
    return scheduler_port(scheduler.template if scheduler is not None else {})


def scheduler_service_name(job_name: str) -> str:
    return f"{job_name}-scheduler"


def scheduler_service(job: Job) -> Obj:
    """A ClusterIP Service in front of the scheduler pod, on the scheduler port."""
    name = job.name
    port = job_scheduler_port(job)
    selector = {**job_labels(job.kind, name), "t9k.dev/replica-type": SCHEDULER}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": child_metadata(job, scheduler_service_name(name), job_labels(job.kind, name)),
        "spec": {
            "selector": selector,
            "publishNotReadyAddresses": True,
            "ports": [{"name": PORT_NAME, "port": port, "targetPort": port}],
        },
    }


KUBEFLOW_GROUP = "mindspore.gitee.com"


def kubeflow_labels(job_name: str, role: str, index: int) -> dict[str, str]:
    """The labels the MindSpore operator (through Kubeflow's common library) puts
    on a job's pods, so selectors, dashboards and `kubectl logs -l` written for
    it keep matching: the old unprefixed keys and the training.kubeflow.org
    ones, the replica type in lower case as it writes it."""
    return {
        "group-name": KUBEFLOW_GROUP,
        "job-name": job_name,
        "replica-type": role.lower(),
        "replica-index": str(index),
        "training.kubeflow.org/job-name": job_name,
        "training.kubeflow.org/replica-type": role.lower(),
        "training.kubeflow.org/replica-index": str(index),
    }


def build_pod(
    job: Job,
    role: str,
    index: int,
    *,
    scheduler_ip: str | None,
    mode: PodMode = NORMAL,
) -> Obj:
    template = job.spec.ms_replica_specs[role].template
    pod = replica_pod(
        job,
        template,
        role,
        index,
        training_names=TRAINING_CONTAINERS,
        mode=mode,
        role=MS_ROLE[role],
    )
    pod["metadata"]["labels"].update(kubeflow_labels(job.name, role, index))
    containers = pod["spec"].get("containers") or []
    if not containers:
        return pod
    c = containers[training_container_index(template, TRAINING_CONTAINERS)]
    port = job_scheduler_port(job)
    set_env(
        c,
        {
            "MS_ROLE": MS_ROLE[role],
            "MS_SCHED_PORT": str(port),
            "MS_WORKER_NUM": str(job.spec.worker_num),
            "MS_SERVER_NUM": str(job.spec.server_num),
            "MS_NODE_ID": pod["metadata"]["name"],
        },
    )
    env = c["env"]
    if role == SCHEDULER:
        env[:] = [e for e in env if e.get("name") != "MS_SCHED_HOST"]
        env.append(
            {"name": "MS_SCHED_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        )
        ports = c.setdefault("ports", [])
        if not any(p.get("name") == PORT_NAME for p in ports):
            ports.append({"name": PORT_NAME, "containerPort": port})
    elif scheduler_ip:
        set_env(c, {"MS_SCHED_HOST": scheduler_ip})
    return pod


def build_service(job: Job) -> Obj:
    return headless_service(job, [(PORT_NAME, job_scheduler_port(job))])
