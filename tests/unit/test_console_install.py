"""The in-cluster console as shipped (manifests/console, deploy/console, the
chart's console.enabled): off by default in every install form, and its
ServiceAccount holds no rights at all: nothing anywhere binds a role to it,
and its pod mounts no token, so it can act only with the tokens people sign
in with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "t9k-operator"
SHIPPED = ROOT / "deploy" / "console" / "console.yaml"
CONSOLE_SA = "t9k-console"
BINDINGS = {"RoleBinding", "ClusterRoleBinding"}


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _every_manifest() -> list[dict[str, Any]]:
    files = [*(ROOT / "manifests").rglob("*.yaml"), *(ROOT / "deploy").rglob("*.yaml")]
    return [d for f in sorted(files) for d in _docs(f)]


def test_nothing_binds_a_role_to_the_consoles_service_account() -> None:
    bindings = [d for d in _every_manifest() if d.get("kind") in BINDINGS]
    assert bindings, "no binding found: the test reads the wrong files"
    for binding in bindings:
        for subject in binding.get("subjects") or []:
            assert subject.get("name") != CONSOLE_SA, binding["metadata"]["name"]
    # The chart's templates are Go templates: read as text, no binding names it.
    for template in (CHART / "templates").glob("*.yaml"):
        text = template.read_text()
        if "Binding" in text:
            assert CONSOLE_SA not in text, template.name


def test_the_console_mounts_no_token_and_no_secret() -> None:
    objs = {d["kind"]: d for d in _docs(SHIPPED)}
    assert set(objs) == {"ServiceAccount", "Deployment", "Service"}
    assert objs["ServiceAccount"]["metadata"]["name"] == CONSOLE_SA
    assert objs["ServiceAccount"]["automountServiceAccountToken"] is False
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == CONSOLE_SA
    assert pod["automountServiceAccountToken"] is False
    for volume in pod.get("volumes") or []:
        assert set(volume) == {"name", "configMap"}, volume  # the API server's CA only
        assert volume["configMap"]["name"] == "kube-root-ca.crt"
    container = pod["containers"][0]
    assert [*container["command"], *container["args"][:2]] == ["t9k", "console", "--in-cluster"]
    assert not container.get("env") and not container.get("envFrom")
    template = (CHART / "templates" / "console.yaml").read_text()
    assert template.count("automountServiceAccountToken: false") == 2


def test_the_console_is_off_by_default_in_every_form() -> None:
    base = yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())
    assert not any("console" in r for r in base["resources"])
    assert CONSOLE_SA not in (ROOT / "deploy" / "install.yaml").read_text()
    for overlay in ("cluster-wide", "namespaced"):
        assert "console" not in (ROOT / "deploy" / overlay / "kustomization.yaml").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["console"]["enabled"] is False
    template = (CHART / "templates" / "console.yaml").read_text()
    body = template.split("\n", 1)[1]
    assert body.startswith("{{- if .Values.console.enabled }}\n")
    assert body.rstrip().endswith("{{- end }}") and body.count("{{- end }}") == 1
    component = yaml.safe_load((ROOT / "deploy" / "console" / "kustomization.yaml").read_text())
    assert (component["kind"], component["resources"]) == ("Component", ["console.yaml"])
