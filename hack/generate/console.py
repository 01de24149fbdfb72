"""The in-cluster console's install forms, from manifests/console/console.yaml
(not in the base: the console is off by default in every form):

- kustomize: the component ``deploy/console`` (``components: [../console]``
  in an overlay);
- one file: ``deploy/console/console.yaml``, applied after deploy/install.yaml;
- Helm: ``templates/console.yaml``, rendered when ``console.enabled``.

Its image must be the operator's (the generator refuses a drift); its
ServiceAccount is bound to nothing (tests/unit/test_console_install.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from .install_sources import DEPLOY, GENERATED, MANIFESTS, docs, dump

SOURCE = MANIFESTS / "console" / "console.yaml"
NAME = "t9k-console"
HEAD = f"# {GENERATED}\n"
SESSION_HOURS = "--session-hours=@@session-hours@@"  # a flag's value from values.yaml


def console_objects() -> list[dict[str, Any]]:
    return docs(SOURCE)


def _find(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in objs if o["kind"] == kind)


def _container(objs: list[dict[str, Any]]) -> dict[str, Any]:
    pod = _find(objs, "Deployment")["spec"]["template"]["spec"]
    container: dict[str, Any] = pod["containers"][0]
    return container


def check_image(operator: dict[str, Any]) -> None:
    """The console's image is the operator's Deployment's."""
    image = operator["spec"]["template"]["spec"]["containers"][0]["image"]
    if _container(console_objects())["image"] != image:
        raise SystemExit(f"generate.install: {SOURCE} must run the operator's image, {image}")


def kustomize_console() -> dict[Path, str]:
    """``deploy/console``: the component, and its objects in one file."""
    folder = DEPLOY / "console"
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1alpha1",
        "kind": "Component",
        "resources": ["console.yaml"],
    }
    return {
        folder / "kustomization.yaml": (
            HEAD + "# The web console for everyone (docs/console.md), off by default:\n"
            "# `components: [<path>/deploy/console]` in an overlay.\n" + dump(kustomization)
        ),
        folder / "console.yaml": (
            HEAD + "# The web console for everyone (docs/console.md), in one file: apply it\n"
            "# after deploy/install.yaml (kubectl apply --server-side -f console.yaml).\n"
            + SOURCE.read_text()
        ),
    }


def console_values() -> dict[str, Any]:
    """values.yaml's ``console``: the manifests' settings, off."""
    container = _container(console_objects())
    args = dict(a.partition("=")[::2] for a in container["args"])
    service = _find(console_objects(), "Service")["spec"]["ports"][0]
    return {
        "enabled": False,
        "sessionHours": float(args["--session-hours"]),
        "service": {"type": "ClusterIP", "port": service["port"]},
        "resources": container["resources"],
    }


def console_template(template: Any) -> str:
    """The chart's ``templates/console.yaml``: ``template(obj)`` (the chart's
    own: Helm's labels, the release's namespace) over each object, the image
    and settings from values, all under ``console.enabled``."""
    objs = copy.deepcopy(console_objects())
    container = _container(objs)
    container["image"] = (
        '@@=printf "%s:%s" .Values.image.repository'
        " (.Values.image.tag | default .Chart.AppVersion)@@"
    )
    container["imagePullPolicy"] = "@@=.Values.image.pullPolicy@@"
    container["args"] = [
        SESSION_HOURS if a.startswith("--session-hours=") else a for a in container["args"]
    ]
    container["resources"] = "@@yaml=.Values.console.resources@@"
    service = _find(objs, "Service")["spec"]
    service["type"] = "@@=.Values.console.service.type@@"
    service["ports"][0]["port"] = "@@=.Values.console.service.port@@"
    body = "---\n".join(template(o) for o in objs).replace(
        SESSION_HOURS, "--session-hours={{ .Values.console.sessionHours }}"
    )
    return f"{{{{- if .Values.console.enabled }}}}\n{body}{{{{- end }}}}\n"
