"""The local cluster: a real control plane on this machine with KWOK nodes.

Used by the tests, the demo and the benchmarks alike::

    python3 -m hack.cluster up [--name t9k]      # obtain binaries, start, wait until ready
    python3 -m hack.cluster down [--name t9k]    # stop every process, remove the state
    python3 -m hack.cluster status [--name t9k]
    python3 -m hack.cluster kubeconfig [--name t9k]   # print the admin kubeconfig path
    python3 -m hack.cluster binaries             # obtain the binaries, print their folder
    python3 -m hack.cluster up --gang volcano,coscheduling   # ... with gang schedulers too
    python3 -m hack.cluster gang [--name t9k] volcano        # add one to a running cluster
    python3 -m hack.cluster up --kueue                       # ... with Kueue too
    python3 -m hack.cluster kueue [--name t9k]               # add Kueue to a running cluster
    python3 -m hack.cluster multikueue [--name t9k]   # a MultiKueue manager and two workers
    python3 -m hack.cluster up --apiserver-flag=--max-requests-inflight=5   # kube-apiserver flag

(from the repository root). Its parts, a module each: ``common`` (paths,
versions, the log), ``gotool`` and ``cache`` (the Go builds and the binary
cache), ``binaries`` (the control plane's), ``addons`` (the add-ons and
tools, and their builds), ``pki``, ``ports``, ``processes``, ``state``
(``cluster.json``), ``control_plane`` and ``nodes`` (the start), ``launches``,
``kueue_manager`` and ``addon_start`` (add-ons in a running cluster),
``lifecycle`` (up, down, status), ``multikueue`` (a manager and two workers),
``__main__`` (the command line) and
``handle`` (:class:`Cluster`: a running cluster as the demo, the benchmarks
and the tests use it, through the command line).

Parts (versions in hack/versions.env): etcd, kube-apiserver (TLS, RBAC,
default admission plugins), kube-controller-manager (garbage collection,
namespace lifecycle, service accounts, node lifecycle), kube-scheduler, and the
KWOK controller simulating the nodes' kubelets with the stages in
hack/third_party/kwok/stages.yaml, and hack/third_party/kwok/pod_logs.py
giving each container a log of its own for KWOK's kubelet endpoint to serve
(``pod-logs/``). kubectl of the
same version is put beside them.

State lives in ``~/.cache/t9k-operator/clusters/<name>/``: the admin
kubeconfig is ``kubeconfig`` there, logs are ``*.log``, and ``cluster.json``
records ports and process ids so ``down`` stops exactly what ``up`` started.

Binaries are looked for, in order: ``$T9K_CLUSTER_BIN_DIR`` (a folder of
prebuilt binaries); the cache ``~/.cache/t9k-operator/bin/<versions>/``; the
official release downloads (skipped fast when offline); and last, a build with
the local Go toolchain from the Go module proxy (hack/third_party/k8s and
hack/third_party/etcd are small wrapper modules). KWOK is always built from
its module's source, with one change that makes its pod deletes a kubelet's
(``KWOK_PATCHES``). Only the standard library is used here, so this runs
before the project's virtualenv exists (the Makefile runs it with the
system's python3).

Gang schedulers (versions in hack/versions.env too) run beside kube-scheduler
on request, each for the pods naming its ``schedulerName``: the Volcano
scheduler (``volcano``) and scheduler-plugins' kube-scheduler with the
Coscheduling plugin (``scheduler-plugins-scheduler``, with the
scheduler-plugins controller filling in PodGroup status). Their binaries are
built from the Go module proxy through the wrapper modules
hack/third_party/volcano and hack/third_party/scheduler-plugins, each into its own cache folder
``~/.cache/t9k-operator/bin/<wrapper>-<version>-<digest>/`` with its CRDs in
``crds/``; ``binaries`` builds them too (``--gang none`` skips them).
Starting one installs its CRDs and waits for its health check; ``down``
stops it with the rest.

Kueue (``KUEUE_VERSION``) is added the same way: its manager
(``sigs.k8s.io/kueue/cmd/kueue``, built through hack/third_party/kueue as
``kueue-manager``) and all its CRDs, cached in
``~/.cache/t9k-operator/bin/kueue-<version>-<digest>/``; ``binaries`` builds
it too (``--no-kueue`` skips it), ``up --kueue`` or ``kueue`` starts it in the
namespace ``kueue-system`` and waits for its ``/readyz``. Its admission
webhooks are not registered with the API server: Workloads are created
directly, and its controllers and scheduler admit them; its CRDs' conversion
webhook is (``kueue_webhook``). No job integration is used. Its
visibility API (pending workloads' positions) is served through the API
server's aggregation layer on a free port of its own
(``kueue_manager._serve_visibility``); its self-signed serving certificate is
written to ``/visibility`` (a path fixed in Kueue, still in v0.17).

The install tests' tools are cached the same way, never started: Helm
(``HELM_VERSION``, hack/third_party/helm) and kustomize
(``KUSTOMIZE_VERSION``, hack/third_party/kustomize), and the ServiceMonitor
and PrometheusRule CRDs from prometheus-operator's module source
(``PROMETHEUS_OPERATOR_VERSION``, hack/third_party/prometheus-operator), and
SeaweedFS's ``weed`` (``SEAWEEDFS_VERSION``, hack/third_party/seaweedfs), a
real S3 server for the TensorBoard's S3 test;
``binaries`` builds them too (``--no-tools`` skips them), ``tool helm
kustomize monitoring-crds`` prints their folders.
"""

from __future__ import annotations

from .addon_start import start_addons
from .addons import (
    ADDONS,
    GANGS,
    KUEUE,
    TOOLS,
    Addon,
    Gang,
    Tool,
    ensure_addon_binaries,
    parse_gangs,
)
from .binaries import KWOK_BUILD, KWOK_PATCHES, ensure_binaries
from .cache import EXIT_MISSING_BINARIES, MissingBinaries
from .common import CACHE, HACK, versions
from .gotool import BuildError, drop_go_caches
from .handle import (
    Cluster,
    ClusterCommandError,
    GangScheduler,
    KubectlError,
    Kueue,
    MissingBinariesError,
    cluster_command,
)
from .lifecycle import down, gang, kueue, status, up
from .ports import free_port
from .processes import kubectl
from .state import state_dir

__all__ = [
    "ADDONS",
    "CACHE",
    "EXIT_MISSING_BINARIES",
    "GANGS",
    "HACK",
    "KUEUE",
    "KWOK_BUILD",
    "KWOK_PATCHES",
    "TOOLS",
    "Addon",
    "BuildError",
    "Cluster",
    "ClusterCommandError",
    "Gang",
    "GangScheduler",
    "KubectlError",
    "Kueue",
    "MissingBinaries",
    "MissingBinariesError",
    "Tool",
    "cluster_command",
    "down",
    "drop_go_caches",
    "ensure_addon_binaries",
    "ensure_binaries",
    "free_port",
    "gang",
    "kubectl",
    "kueue",
    "parse_gangs",
    "start_addons",
    "state_dir",
    "status",
    "up",
    "versions",
]
