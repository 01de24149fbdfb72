"""kustomize's form of the install: the base ``manifests/kustomization.yaml``
(every object of a cluster-wide install), the overlays ``deploy/cluster-wide``
and ``deploy/namespaced`` (a Role with the ClusterRole's namespaced rules
instead of the ClusterRole), and the component ``deploy/monitoring``
(ServiceMonitor and PrometheusRule)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .install_sources import (
    DEPLOY,
    GENERATED,
    LOADER,
    MANIFESTS,
    NAME,
    NAMESPACE,
    RULES,
    SERVICE_MONITOR,
    base_files,
    dump,
    find,
    namespaced_rules,
    role_objects,
)

HEAD = f"# {GENERATED}\n"


def kustomize_files(objs: list[dict[str, Any]]) -> dict[Path, str]:
    """Every file of the kustomize form, by path."""
    return {
        **base_and_cluster_wide(),
        **namespaced_overlay(objs),
        **monitoring_component(),
    }


def _kustomization(kind: str = "Kustomization", **fields: Any) -> str:
    version = "v1alpha1" if kind == "Component" else "v1beta1"
    return dump({"apiVersion": f"kustomize.config.k8s.io/{version}", "kind": kind, **fields})


def base_and_cluster_wide() -> dict[Path, str]:
    resources = [str(f.relative_to(MANIFESTS)) for f in base_files()]
    base_note = (
        "# The base: every object of a cluster-wide install (deploy/install.yaml is the same\n"
        "# objects in one file). Install through an overlay: deploy/.\n"
    )
    return {
        MANIFESTS / "kustomization.yaml": HEAD + base_note + _kustomization(resources=resources),
        DEPLOY / "cluster-wide" / "kustomization.yaml": (
            HEAD + "# The operator in t9k-system, watching every namespace under its ClusterRole.\n"
            "# With Prometheus Operator: add `components: [../monitoring]`.\n"
            + _kustomization(resources=["../../manifests"])
        ),
    }


def _delete(kind: str, name: str) -> dict[str, Any]:
    return {
        "patch": dump(
            {"$patch": "delete", "apiVersion": "v1", "kind": kind, "metadata": {"name": name}}
        ),
        "target": {"kind": kind, "name": name},
    }


def namespaced_overlay(objs: list[dict[str, Any]]) -> dict[Path, str]:
    """``deploy/namespaced``: the base without the cluster-wide RBAC and the
    namespace, the operator told to watch its own namespace, and the Role."""
    _, left_out = namespaced_rules(find(objs, "ClusterRole", NAME))
    watch_own_namespace = {
        # Kubernetes expands $(POD_NAMESPACE) from the container's env.
        "patch": dump(
            [
                {
                    "op": "add",
                    "path": "/spec/template/spec/containers/0/args/-",
                    "value": "--namespace=$(POD_NAMESPACE)",
                }
            ]
        ),
        "target": {"kind": "Deployment", "name": NAME},
    }
    folder = DEPLOY / "namespaced"
    kustomization = (
        HEAD + "# The operator watching only the namespace it runs in, under a Role there\n"
        "# (role.yaml: the ClusterRole's namespaced rules) instead of the ClusterRole.\n"
        "# Choose the namespace in an overlay of your own (`namespace: team-a`,\n"
        "# `resources: [<this folder>]`): it must exist, it is not created here.\n"
        "# The CRDs and PriorityClasses are cluster-wide and included: whoever applies\n"
        "# this needs the right to create them (or drop them in that overlay).\n"
        "# Left out of the Role (cluster-scoped, read only: nodes tell the operator of\n"
        "# a lost node or a job's start estimate, the rest are read with --kueue): "
        f"{', '.join(left_out)}.\n"
        + _kustomization(
            resources=["../../manifests", "role.yaml"],
            patches=[
                _delete("ClusterRole", NAME),
                _delete("ClusterRoleBinding", NAME),
                _delete("Namespace", NAMESPACE),
                watch_own_namespace,
            ],
        )
    )
    return {
        folder / "kustomization.yaml": kustomization,
        folder / "role.yaml": HEAD + "---\n".join(dump(o) for o in role_objects(objs)),
    }


def monitoring_component() -> dict[Path, str]:
    """``deploy/monitoring``: for clusters running Prometheus Operator."""
    component = DEPLOY / "monitoring"
    return {
        component / "kustomization.yaml": (
            HEAD + "# For clusters running Prometheus Operator (monitoring.coreos.com/v1):\n"
            "# `components: [<path>/deploy/monitoring]` in an overlay.\n"
            + _kustomization(
                "Component", resources=["service-monitor.yaml", "prometheus-rule.yaml"]
            )
        ),
        component / "service-monitor.yaml": HEAD + dump(SERVICE_MONITOR),
        component / "prometheus-rule.yaml": (
            HEAD
            + "# spec.groups: manifests/monitoring/rules.yaml's, unchanged.\n"
            + dump(prometheus_rule())
        ),
    }


def prometheus_rule() -> dict[str, Any]:
    groups = yaml.load(RULES.read_text(), Loader=LOADER)["groups"]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "metrics"},
        },
        "spec": {"groups": groups},
    }
