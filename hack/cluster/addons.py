"""The add-ons: programs the cluster runs beside its control plane on
request (the gang schedulers, Kueue) and the install tests' tools (Helm,
kustomize, prometheus-operator's CRDs), each built from a Go module through a
wrapper module under hack/third_party/ into a cache folder of its own, its
CRDs beside its binaries in ``crds/``."""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .cache import _obtain
from .common import THIRD_PARTY, log, versions
from .gotool import BuildError, _go, _go_env, _module_source


@dataclass(frozen=True, kw_only=True)
class Addon:
    """A program the cluster runs beside its control plane on request (a gang
    scheduler, or Kueue), built from a Go module through a wrapper module, its
    CRDs copied from the same module's source."""

    name: str  # as given on the command line
    title: str
    version_key: str  # in hack/versions.env
    module: str  # the Go module built, at that version
    wrapper: str  # its wrapper module: hack/third_party/<wrapper>
    binaries: tuple[tuple[str, str], ...]  # (binary, Go package), started in this order
    crds: tuple[tuple[str, str], ...]  # (file in the module's source, name in crds/)
    ldflags: str = "-s -w"

    @property
    def version(self) -> str:
        return versions()[self.version_key]

    @property
    def tag(self) -> str:
        """The cache folder's name: the version, and a digest of the wrapper
        module and build flags, so a changed replace line means a new build."""
        digest = hashlib.sha256(self.ldflags.encode())
        for name in ("go.mod", "go.sum"):
            digest.update((THIRD_PARTY / self.wrapper / name).read_bytes())
        return f"{self.wrapper}-{self.version}-{digest.hexdigest()[:10]}"

    @property
    def skip(self) -> str:
        """The ``binaries`` option that does without it."""
        return f"--no-{self.name}"


@dataclass(frozen=True, kw_only=True)
class Gang(Addon):
    """A gang scheduler the cluster can run beside kube-scheduler: it schedules
    the pods whose ``spec.schedulerName`` is ``scheduler_name``, binding a
    group's pods all together or not at all."""

    scheduler_name: str

    @property
    def skip(self) -> str:
        return "--gang none"


COSCHEDULING_REQUEUE = "15s"
"""How long a pod the Coscheduling scheduler rejected stays out of its queue at
most (kube-scheduler's --pod-max-in-unschedulable-pods-duration, default 5m)."""
_VOLCANO_CRDS = "installer/helm/chart/volcano/crd/bases"
_SP_CRDS = "config/crd/bases"  # the same CRDs as manifests/{coscheduling,capacityscheduling}
GANGS = {
    "volcano": Gang(
        name="volcano",
        title="the Volcano scheduler",
        version_key="VOLCANO_VERSION",
        module="volcano.sh/volcano",
        wrapper="volcano",
        binaries=(("volcano-scheduler", "volcano.sh/volcano/cmd/scheduler"),),
        # PodGroups and Queues, and NUMA topologies: the scheduler watches them
        # (its ResourceTopology feature gate is on by default).
        crds=tuple(
            (f"{_VOLCANO_CRDS}/{f}", f)
            for f in (
                "scheduling.volcano.sh_podgroups.yaml",
                "scheduling.volcano.sh_queues.yaml",
                "nodeinfo.volcano.sh_numatopologies.yaml",
            )
        ),
        scheduler_name="volcano",
        ldflags="-s -w -X volcano.sh/volcano/pkg/version.Version={version}",
    ),
    "coscheduling": Gang(
        name="coscheduling",
        title="scheduler-plugins (Coscheduling)",
        version_key="SCHEDULER_PLUGINS_VERSION",
        module="sigs.k8s.io/scheduler-plugins",
        wrapper="scheduler-plugins",
        # The scheduler alone binds all or nothing; the controller fills in
        # the PodGroups' status (phase, running/succeeded/failed counts).
        binaries=(
            ("scheduler-plugins-scheduler", "sigs.k8s.io/scheduler-plugins/cmd/scheduler"),
            ("scheduler-plugins-controller", "sigs.k8s.io/scheduler-plugins/cmd/controller"),
        ),
        crds=tuple(
            (f"{_SP_CRDS}/{f}", f)
            for f in (
                "scheduling.x-k8s.io_podgroups.yaml",
                "scheduling.x-k8s.io_elasticquotas.yaml",
            )
        ),
        scheduler_name="scheduler-plugins-scheduler",
    ),
}

_KUEUE_CRDS = "config/components/crd/bases"
KUEUE = Addon(
    name="kueue",
    title="the Kueue manager",
    version_key="KUEUE_VERSION",
    module="sigs.k8s.io/kueue",
    wrapper="kueue",
    binaries=(("kueue-manager", "sigs.k8s.io/kueue/cmd/kueue"),),
    # All of them: its controllers watch every kind here (MultiKueue and
    # topology-aware scheduling are on by default), not only the queues and
    # Workloads the operator uses.
    crds=tuple(
        (f"{_KUEUE_CRDS}/kueue.x-k8s.io_{kind}.yaml", f"kueue.x-k8s.io_{kind}.yaml")
        for kind in (
            "admissionchecks",
            "clusterqueues",
            "cohorts",
            "localqueues",
            "multikueueclusters",
            "multikueueconfigs",
            "provisioningrequestconfigs",
            "resourceflavors",
            "topologies",
            "workloadpriorityclasses",
            "workloads",
        )
    ),
    ldflags="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion={version}",
)
# Every add-on, by name: what `binaries` builds unless told otherwise.
ADDONS: dict[str, Addon] = {**GANGS, KUEUE.name: KUEUE}


@dataclass(frozen=True, kw_only=True)
class Tool(Addon):
    """A command the install tests and ``make deploy`` run (Helm, kustomize),
    or only CRDs taken from a module's source (prometheus-operator's): built
    and cached like an add-on, never started beside the cluster."""

    @property
    def skip(self) -> str:
        return "--no-tools"


_PROMETHEUS_CRDS = "example/prometheus-operator-crd"
TOOLS: dict[str, Tool] = {
    "helm": Tool(
        name="helm",
        title="Helm",
        version_key="HELM_VERSION",
        module="helm.sh/helm/v3",
        wrapper="helm",
        binaries=(("helm", "helm.sh/helm/v3/cmd/helm"),),
        crds=(),
        ldflags="-s -w -X helm.sh/helm/v3/internal/version.version={version}",
    ),
    "kustomize": Tool(
        name="kustomize",
        title="kustomize",
        version_key="KUSTOMIZE_VERSION",
        module="sigs.k8s.io/kustomize/kustomize/v5",
        wrapper="kustomize",
        binaries=(("kustomize", "sigs.k8s.io/kustomize/kustomize/v5"),),
        crds=(),
        ldflags="-s -w -X sigs.k8s.io/kustomize/api/provenance.version={version}",
    ),
    # A real S3 server (weed mini) for the TensorBoard's S3 logs.
    "seaweedfs": Tool(
        name="seaweedfs",
        title="SeaweedFS",
        version_key="SEAWEEDFS_VERSION",
        module="github.com/seaweedfs/seaweedfs",
        wrapper="seaweedfs",
        binaries=(("weed", "github.com/seaweedfs/seaweedfs/weed"),),
        crds=(),
    ),
    # The ServiceMonitor and PrometheusRule kinds the chart and kustomize ship
    # (monitoring.coreos.com/v1), so that the tests can apply them.
    "monitoring-crds": Tool(
        name="monitoring-crds",
        title="prometheus-operator's CRDs",
        version_key="PROMETHEUS_OPERATOR_VERSION",
        module="github.com/prometheus-operator/prometheus-operator",
        wrapper="prometheus-operator",
        binaries=(),
        crds=tuple(
            (f"{_PROMETHEUS_CRDS}/monitoring.coreos.com_{kind}.yaml", f"{kind}.yaml")
            for kind in ("servicemonitors", "prometheusrules")
        ),
    ),
}


def parse_gangs(spec: str | Iterable[str]) -> list[Gang]:
    """``volcano,coscheduling`` (or a list of such), ``all`` or ``none``."""
    words = [spec] if isinstance(spec, str) else list(spec)
    names = [n.strip() for w in words for n in w.split(",") if n.strip()]
    if names == ["none"]:
        return []
    if names == ["all"]:
        return list(GANGS.values())
    unknown = [n for n in names if n not in GANGS]
    if unknown:
        raise SystemExit(
            f"cluster: unknown gang scheduler {', '.join(map(repr, unknown))}: "
            f"choose from {', '.join(GANGS)} (or all)"
        )
    return [GANGS[n] for n in dict.fromkeys(names)]


def _build_addon(dest: Path, g: Addon) -> None:
    if not shutil.which("go"):
        raise BuildError(
            f"cluster: no Go toolchain on PATH to build {g.title}: install Go, or "
            f"do without it (`python3 -m hack.cluster binaries {g.skip}`)"
        )
    version, wrapper = g.version, THIRD_PARTY / g.wrapper
    if f"{g.module} {version}" not in (wrapper / "go.mod").read_text():
        raise BuildError(
            f"cluster: hack/third_party/{g.wrapper}/go.mod does not require {g.module} {version} "
            f"({g.version_key} in hack/versions.env): update the wrapper module"
        )
    env = _go_env()
    logfile = dest.parent / f"{g.tag}.build.log"
    logfile.unlink(missing_ok=True)
    started = time.monotonic()
    log(
        f"building {g.title} {version} from Go modules (hack/third_party/{g.wrapper}): "
        f"a few minutes cold on 2 cores; output in {logfile}"
    )
    for binary, package in g.binaries:
        _go(
            f"{binary} {version} (hack/third_party/{g.wrapper}: {package})",
            [
                "go",
                "build",
                "-trimpath",
                "-ldflags",
                g.ldflags.format(version=version),
                "-o",
                str(dest / binary),
                package,
            ],
            wrapper,
            env,
            logfile,
        )
    # The CRDs come from the same module's source, copied beside the binaries:
    # starting the scheduler later needs neither Go nor the module cache.
    source = _module_source(g.module, version, env, logfile, cwd=wrapper)
    (dest / "crds").mkdir()
    for path, name in g.crds:
        if not (source / path).is_file():
            raise BuildError(f"cluster: {g.module}@{version} has no {path}")
        shutil.copyfile(source / path, dest / "crds" / name)
    log(f"{g.title} built in {time.monotonic() - started:.0f}s")


def ensure_addon_binaries(g: Addon) -> Path:
    """``CACHE/bin/<g.tag>``: the add-on's binaries and, in ``crds/``, its
    CRDs; built first when needed, the same way as ``ensure_binaries``."""
    return _obtain(
        g.tag,
        f"the binaries of {g.title} are",
        [b for b, _ in g.binaries],
        [f"crds/{name}" for _, name in g.crds],
        lambda tmp: _build_addon(tmp, g),
    )
