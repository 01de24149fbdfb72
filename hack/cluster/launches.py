"""What each add-on runs beside the control plane: its processes (a
``_Launch`` each, with the health check that says it serves), their
configuration files, and a client certificate each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .addons import COSCHEDULING_REQUEUE, Addon, Gang
from .kueue_manager import _kueue_launches
from .pki import issue_cert, write_kubeconfig
from .ports import free_port
from .processes import _Launch

VOLCANO_CONF = """\
# The local cluster's Volcano scheduler (written by hack/cluster).
# enqueue admits a PodGroup (phase Pending -> Inqueue), allocate places its
# pods and binds them only once minMember of them fit, backfill places pods
# that request no resources. No preemption or reclaim: tests stay predictable.
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority     # groups, then pods, in the order of their PriorityClass
  - name: gang         # minMember pods of a group bound together, or none
  - name: conformance  # critical system pods are never evicted
- plugins:
  - name: drf          # dominant-resource fairness between groups
  - name: predicates   # kube-scheduler's node filters: resources, affinity, taints
  - name: proportion   # the queues' shares, by weight
  - name: nodeorder    # kube-scheduler's node scores
"""


def _launches(g: Addon, workdir: Path, state: dict[str, Any]) -> list[_Launch]:
    """The processes of ``g``, their configuration files written in ``workdir``,
    each with its own client certificate (``system:masters``, as KWOK's)."""
    pki = workdir / "pki"
    kubeconfigs = {}
    for tool, _ in g.binaries:
        if not (pki / f"{tool}.crt").exists():
            issue_cert(pki, tool, f"/O=system:masters/CN={tool}")
        kubeconfigs[tool] = workdir / f"{tool}.kubeconfig"
        write_kubeconfig(kubeconfigs[tool], state["server"], pki, tool)
    if g.name == "volcano" and isinstance(g, Gang):
        return _volcano_launches(g, workdir, state["ports"], kubeconfigs)
    if g.name == "coscheduling" and isinstance(g, Gang):
        return _coscheduling_launches(g, workdir, state["ports"], kubeconfigs)
    if g.name == "kueue":
        return _kueue_launches(workdir, state, kubeconfigs)
    raise AssertionError(g.name)


def _volcano_launches(
    g: Gang, workdir: Path, ports: dict[str, int], kubeconfigs: dict[str, Path]
) -> list[_Launch]:
    ports["volcano-healthz"], ports["volcano-metrics"] = free_port(), free_port()
    # A folder of its own: Volcano reloads the file on any change in its
    # folder, and the state folder's logs change all the time.
    conf = workdir / "volcano" / "scheduler.conf"
    conf.parent.mkdir(exist_ok=True)
    conf.write_text(VOLCANO_CONF)
    return [
        _Launch(
            "volcano-scheduler",
            [
                f"--kubeconfig={kubeconfigs['volcano-scheduler']}",
                f"--scheduler-conf={conf}",
                f"--scheduler-name={g.scheduler_name}",
                "--leader-elect=false",
                "--enable-healthz=true",
                f"--healthz-address=127.0.0.1:{ports['volcano-healthz']}",
                f"--listen-address=127.0.0.1:{ports['volcano-metrics']}",
                f"--cache-dump-dir={conf.parent}",
                "--v=2",
            ],
            f"http://127.0.0.1:{ports['volcano-healthz']}/healthz",
        )
    ]


def _coscheduling_config(g: Gang, workdir: Path, kubeconfig: str) -> Path:
    """scheduler-plugins' kube-scheduler's configuration file: one profile,
    ``g.scheduler_name``, with the Coscheduling plugin."""
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": kubeconfig},
        "profiles": [
            {
                "schedulerName": g.scheduler_name,
                "plugins": {
                    # Coscheduling at every extension point it implements
                    # (PreFilter, PostFilter, Permit, Reserve, ...), and
                    # as the queue's sort, which keeps a group's pods together.
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {
                        "enabled": [{"name": "Coscheduling"}],
                        "disabled": [{"name": "*"}],
                    },
                },
                # A group's pods wait at Permit at most this long for the rest.
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}
                ],
            }
        ],
    }
    conf = workdir / "scheduler-plugins-scheduler.yaml"
    conf.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
    return conf


def _coscheduling_launches(
    g: Gang, workdir: Path, ports: dict[str, int], kubeconfigs: dict[str, Path]
) -> list[_Launch]:
    pki = workdir / "pki"
    ports["scheduler-plugins"] = free_port()
    ports["scheduler-plugins-controller-probe"] = free_port()
    ports["scheduler-plugins-controller-metrics"] = free_port()
    if not (pki / "scheduler-plugins-serving.crt").exists():
        issue_cert(
            pki,
            "scheduler-plugins-serving",
            "/CN=scheduler-plugins-scheduler",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        )
    kubeconfig = str(kubeconfigs["scheduler-plugins-scheduler"])
    conf = _coscheduling_config(g, workdir, kubeconfig)
    return [
        _Launch(
            "scheduler-plugins-scheduler",
            [
                f"--config={conf}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                # The API server has no front proxy: no request-header CA to look up.
                "--authentication-skip-lookup=true",
                "--bind-address=127.0.0.1",
                f"--secure-port={ports['scheduler-plugins']}",
                f"--tls-cert-file={pki / 'scheduler-plugins-serving.crt'}",
                f"--tls-private-key-file={pki / 'scheduler-plugins-serving.key'}",
                # Coscheduling rejects a whole group in PostFilter when one of
                # its pods does not fit ("optimistic rejection"), and the
                # rejected pods then wait for a Pod add or a PodGroup event
                # only: a node freed by another job's ending does not requeue
                # them (Coscheduling registers no such event). Without this
                # they wait for the queue's flush of unschedulable pods, 5
                # minutes by default, after the cluster has room (seen in CI:
                # a waiting job not started 90 s after the GPUs were free).
                # docs/scheduling.md recommends the same to platform teams.
                f"--pod-max-in-unschedulable-pods-duration={COSCHEDULING_REQUEUE}",
                "--v=2",
            ],
            # readyz: served once the informers have synced.
            f"https://127.0.0.1:{ports['scheduler-plugins']}/readyz",
        ),
        _Launch(
            "scheduler-plugins-controller",
            [
                f"--probeAddr=127.0.0.1:{ports['scheduler-plugins-controller-probe']}",
                f"--metricsAddr=127.0.0.1:{ports['scheduler-plugins-controller-metrics']}",
                "--qps=50",
                "--burst=100",
            ],
            f"http://127.0.0.1:{ports['scheduler-plugins-controller-probe']}/healthz",
        ),
    ]
