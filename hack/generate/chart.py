"""The Helm chart, charts/t9k-operator: Chart.yaml, values.yaml with the
manifests' defaults, a template per object of the base (Helm's labels, the
release's namespace, the settings values.yaml offers), and in files/ the
CRDs (their repeated subtrees once: :mod:`.chart_share`), the alerting rules
and, when manifests/monitoring/dashboard.json exists, the Grafana dashboard.

A flag added to the Deployment's args must be known here (``VALUE_FLAGS`` or
``FIXED_FLAGS``): the generator refuses an unknown one rather than let the
chart drift from the manifests."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from .chart_share import share_subtrees
from .chart_text import (
    CRDS_TEMPLATE,
    DASHBOARD_TEMPLATE,
    HELPERS,
    NO_DASHBOARD_TEMPLATE,
    NOTES,
    RULE_TEMPLATE,
    values_text,
)
from .console import console_template, console_values
from .install_sources import (
    CHART,
    DASHBOARD,
    GENERATED,
    LOADER,
    MANIFESTS,
    NAME,
    RULES,
    SERVICE_MONITOR,
    dump,
    find,
    role_objects,
)

# Deployment flags the chart sets from values: flag -> (values key, its type).
VALUE_FLAGS = {
    "--concurrent-reconciles": ("concurrentReconciles", int),
    "--log-level": ("logLevel", str),
    "--pod-start-timeout": ("podStartTimeout", int),
    "--disruption-limit": ("disruptionLimit", int),
}
# Flags the chart passes as the manifests do (ports and probes are fixed).
FIXED_FLAGS = (
    "--metrics-bind-address",
    "--progress-bind-address",
    "--health-probe-bind-address",
    "--graceful-shutdown-timeout",
)
LEADER_ELECT = "--leader-elect"
# Flags the chart passes only when a value sets them (the manifests leave them
# out): values key -> flag, the value's default empty.
OPTIONAL_FLAGS = {"kubeAPI.qps": "--kube-api-qps", "kubeAPI.burst": "--kube-api-burst"}


# Placeholders put into an object before dumping it, replaced by template text
# after: '@@labels@@' (a key) by Helm's labels, '@@=EXPR@@' (a value) by
# {{ EXPR }}, '@@yaml=EXPR@@' (a value) by EXPR's YAML on the next lines.
_LABELS_KEY = "@@labels@@"
_PLACEHOLDER = re.compile(r"'@@(yaml)?=(.+?)@@'")


def _templated(text: str) -> str:
    lines = []
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() == f"'{_LABELS_KEY}': ''":
            lines.append(
                " " * indent + f'{{{{- include "t9k-operator.labels" . | nindent {indent} }}}}'
            )
            continue
        m = _PLACEHOLDER.search(line)
        if m and m.group(1):
            lines.append(line[: m.start()].rstrip())
            lines.append(
                " " * (indent + 2) + f"{{{{- toYaml {m.group(2)} | nindent {indent + 2} }}}}"
            )
            continue
        lines.append(_PLACEHOLDER.sub(lambda m: f"{{{{ {m.group(2)} }}}}", line))
    return "\n".join(lines) + "\n"


def _helm_object(obj: dict[str, Any], namespace: str = ".Release.Namespace") -> dict[str, Any]:
    """The object with Helm's labels, in the release's namespace."""
    obj = copy.deepcopy(obj)
    meta = obj["metadata"]
    meta["labels"] = {**meta.get("labels", {}), _LABELS_KEY: ""}
    if "namespace" in meta:
        meta["namespace"] = f"@@={namespace}@@"
    for subject in obj.get("subjects", []):
        if subject.get("kind") == "ServiceAccount":
            subject["namespace"] = "@@=.Release.Namespace@@"
    return obj


def _template(obj: dict[str, Any], condition: str | None = None, **kw: str) -> str:
    text = dump(_helm_object(obj, **kw))
    if "{{" in text or "}}" in text:
        raise SystemExit(
            f"generate.install: {obj['kind']} {obj['metadata']['name']} has braces Helm would read"
        )
    body = _templated(text)
    return f"{{{{- if {condition} }}}}\n{body}{{{{- end }}}}\n" if condition else body


def _get(values: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        values = values[part]
    return values


def _set(values: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        values = values.setdefault(part, {})
    values[last] = value


def chart_values(deployment: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """values.yaml's defaults: the Deployment's settings in manifests/manager."""
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    repository, _, tag = container["image"].rpartition(":")
    values: dict[str, Any] = {
        "image": {"repository": repository, "tag": "", "pullPolicy": container["imagePullPolicy"]},
        "imagePullSecrets": [],
        "replicas": deployment["spec"]["replicas"],
        "leaderElection": {"enabled": LEADER_ELECT in container["args"]},
        "watchNamespace": "",
    }
    for key in OPTIONAL_FLAGS:
        _set(values, key, None)
    for arg in container["args"]:
        flag, _, value = arg.partition("=")
        if flag in VALUE_FLAGS:
            key, kind = VALUE_FLAGS[flag]
            _set(values, key, kind(value))
        elif flag not in FIXED_FLAGS and arg != LEADER_ELECT:
            raise SystemExit(
                f"generate.install: the Deployment's flag {flag} is unknown here: add it to "
                "VALUE_FLAGS or FIXED_FLAGS in hack/generate/chart.py"
            )
    values |= {
        "extraArgs": [],
        "resources": container["resources"],
        "nodeSelector": {},
        "tolerations": [],
        "crds": {"install": True},
        "priorityClasses": {"install": True, "preemptionPolicy": "PreemptLowerPriority"},
        "metrics": {"service": {"enabled": True}},
        "serviceMonitor": {"enabled": False, "interval": "30s", "labels": {}},
        "prometheusRule": {"enabled": False, "labels": {}},
        "grafanaDashboard": {"enabled": False, "labels": {"grafana_dashboard": "1"}},
        "console": console_values(),
    }
    return values, tag


def _args_template(container: dict[str, Any], values: dict[str, Any]) -> list[str]:
    """The container's args as template lines (each at column 0 of the list)."""
    lines = []
    for arg in container["args"]:
        flag, _, _ = arg.partition("=")
        if arg == LEADER_ELECT:
            lines += ["{{- if .Values.leaderElection.enabled }}", f"- {arg}", "{{- end }}"]
        elif flag in VALUE_FLAGS:
            key, _ = VALUE_FLAGS[flag]
            _get(values, key)  # it is in values.yaml
            lines.append(f"- {flag}={{{{ .Values.{key} }}}}")
        else:
            lines.append(f"- {arg}")
    for key, flag in OPTIONAL_FLAGS.items():
        _get(values, key)  # it is in values.yaml
        lines += [f"{{{{- with .Values.{key} }}}}", f"- {flag}={{{{ . }}}}", "{{- end }}"]
    lines += [
        "{{- with .Values.watchNamespace }}",
        "- --namespace={{ . }}",
        "{{- end }}",
        "{{- range .Values.extraArgs }}",
        "- {{ . }}",
        "{{- end }}",
    ]
    return lines


def deployment_template(deployment: dict[str, Any], values: dict[str, Any]) -> str:
    d = copy.deepcopy(deployment)
    d["spec"]["replicas"] = "@@=.Values.replicas@@"
    pod = d["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args_marker = "@@args@@"
    args = container["args"]
    container["image"] = (
        '@@=printf "%s:%s" .Values.image.repository'
        " (.Values.image.tag | default .Chart.AppVersion)@@"
    )
    container["imagePullPolicy"] = "@@=.Values.image.pullPolicy@@"
    container["args"] = args_marker
    container["resources"] = "@@yaml=.Values.resources@@"
    text = dump(_helm_object(d))
    indent = next(line for line in text.splitlines() if args_marker in line).index("args")
    lines = [" " * indent + line for line in _args_template({"args": args}, values)]
    text = text.replace(f"args: '{args_marker}'", "args:\n" + "\n".join(lines))
    text = _templated(text)
    # Scheduling constraints and pull secrets, after the pod's fixed fields.
    extra = "".join(
        f"      {{{{- with .Values.{key} }}}}\n      {key}:\n"
        "        {{- toYaml . | nindent 8 }}\n      {{- end }}\n"
        for key in ("imagePullSecrets", "nodeSelector", "tolerations")
    )
    text = text.replace("      containers:\n", extra + "      containers:\n", 1)
    guard = (
        "{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}\n"
        '{{- fail "replicas > 1 needs leaderElection.enabled: every replica would reconcile" }}\n'
        "{{- end }}\n"
    )
    return guard + text


def chart_files(objs: list[dict[str, Any]]) -> dict[Path, str]:
    """Every file of the chart, by path."""
    deployment = find(objs, "Deployment", NAME)
    values, tag = chart_values(deployment)
    return {
        **_chart_meta(values, tag),
        **_crd_files(),
        **_object_templates(objs, deployment, values),
        **_monitoring_files(),
    }


TEMPLATES = CHART / "templates"
HEAD = f"{{{{/* {GENERATED} */}}}}\n"


def _chart_meta(values: dict[str, Any], tag: str) -> dict[Path, str]:
    chart = {
        "apiVersion": "v2",
        "name": NAME,
        "description": "Kubernetes operator for distributed training jobs "
        "(PyTorch, DeepSpeed, ColossalAI, MindSpore) and TensorBoards",
        "type": "application",
        "version": tag,
        "appVersion": tag,
    }
    return {
        CHART / "Chart.yaml": f"# {GENERATED}\n" + dump(chart),
        CHART / "values.yaml": values_text(values),
        CHART / ".helmignore": f"# {GENERATED}\n*.orig\n*~\n",
        TEMPLATES / "_helpers.tpl": HELPERS,
        TEMPLATES / "NOTES.txt": NOTES,
    }


def _crd_files() -> dict[Path, str]:
    """The CRDs' template, and the CRDs in files/crds/ with their repeated
    subtrees in shared.yaml."""
    out = {TEMPLATES / "crds.yaml": CRDS_TEMPLATE}
    docs = {
        f.name: yaml.load(f.read_text(), Loader=LOADER)
        for f in sorted((MANIFESTS / "crds").glob("*.yaml"))
    }
    shared = share_subtrees(docs)
    for name, doc in docs.items():
        out[CHART / "files" / "crds" / name] = dump(doc)
    out[CHART / "files" / "crds" / "shared.yaml"] = dump(shared)
    return out


def _object_templates(
    objs: list[dict[str, Any]], deployment: dict[str, Any], values: dict[str, Any]
) -> dict[Path, str]:
    """A template per object of the base (the CRDs apart)."""
    t, head = TEMPLATES, HEAD
    out = {t / "service-account.yaml": head + _template(find(objs, "ServiceAccount", NAME))}
    cluster_scope = "not .Values.watchNamespace"
    out[t / "cluster-role.yaml"] = head + _template(find(objs, "ClusterRole", NAME), cluster_scope)
    out[t / "cluster-role-binding.yaml"] = head + _template(
        find(objs, "ClusterRoleBinding", NAME), cluster_scope
    )
    role, binding = role_objects(objs)
    out[t / "role.yaml"] = (
        head
        + "{{- /* watchNamespace set: the ClusterRole's namespaced rules, in that namespace. */}}\n"
        + _template(role, ".Values.watchNamespace", namespace=".Values.watchNamespace")
        + "---\n"
        + _template(binding, ".Values.watchNamespace", namespace=".Values.watchNamespace")
    )
    leader = [o for o in objs if o["metadata"]["name"] == f"{NAME}-leader-election"]
    out[t / "leader-election-role.yaml"] = head + "---\n".join(
        _template(o, ".Values.leaderElection.enabled") for o in leader
    )
    priority = [
        {**o, "preemptionPolicy": "@@=.Values.priorityClasses.preemptionPolicy@@"}
        for o in objs
        if o["kind"] == "PriorityClass"
    ]
    out[t / "priority-classes.yaml"] = head + "---\n".join(
        _template(o, ".Values.priorityClasses.install") for o in priority
    )
    out[t / "deployment.yaml"] = head + deployment_template(deployment, values)
    out[t / "service.yaml"] = head + _template(
        find(objs, "Service", f"{NAME}-metrics"), ".Values.metrics.service.enabled"
    )
    progress = [o for o in objs if o["metadata"]["name"] == f"{NAME}-progress"]
    out[t / "progress.yaml"] = head + "---\n".join(_template(o) for o in progress)
    out[t / "console.yaml"] = head + console_template(_template)
    return out


def _monitoring_files() -> dict[Path, str]:
    """The ServiceMonitor and PrometheusRule templates, the rules, and the
    Grafana dashboard's template (failing when the chart has no dashboard)."""
    out = {
        TEMPLATES / "service-monitor.yaml": HEAD + _service_monitor_template(),
        TEMPLATES / "prometheus-rule.yaml": RULE_TEMPLATE,
        CHART / "files" / "rules.yaml": RULES.read_text(),
    }
    if DASHBOARD.exists():
        out[TEMPLATES / "grafana-dashboard.yaml"] = DASHBOARD_TEMPLATE
        out[CHART / "files" / "dashboard.json"] = DASHBOARD.read_text()
    else:
        out[TEMPLATES / "grafana-dashboard.yaml"] = NO_DASHBOARD_TEMPLATE
    return out


def _service_monitor_template() -> str:
    monitor = copy.deepcopy(SERVICE_MONITOR)
    monitor["spec"]["endpoints"][0]["interval"] = "@@=.Values.serviceMonitor.interval@@"
    text = _template(monitor, ".Values.serviceMonitor.enabled")
    text = (
        "{{- if and .Values.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}\n"
        '{{- fail "serviceMonitor.enabled needs metrics.service.enabled: it scrapes that '
        'Service" }}\n'
        "{{- end }}\n" + text
    )
    extra = (
        "    {{- with .Values.serviceMonitor.labels }}\n"
        "    {{- toYaml . | nindent 4 }}\n"
        "    {{- end }}\n"
    )
    return text.replace(" . | nindent 4 }}\n", " . | nindent 4 }}\n" + extra, 1)
