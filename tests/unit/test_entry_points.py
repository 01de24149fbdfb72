"""Kinds and integrations of other distributions: the registries list what
the entry points declare, and the toy kind and toy integration
(tests/toykind/), declared only by an entry point, reach the registries and
the CRD and ClusterRole generators."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml

from t9k_operator import entry_points
from t9k_operator import registry as integrations
from t9k_operator.builders.common import NORMAL
from t9k_operator.kinds import registry
from t9k_operator.kinds.contract import JobKind, read
from tests import toy_plugin
from tests.kinds import ALL
from tests.toykind.api import ToyJobObject
from tests.toykind.kind import ToyKind

BUILT_IN = [data.KIND for data in ALL]
"""The built-in kinds, in the registry's order: as tests/kinds/__init__.py lists them."""


def python(code: str, plugin_dir: Path) -> subprocess.CompletedProcess[str]:
    """``code`` run by a fresh interpreter with ``plugin_dir`` installed."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=toy_plugin.ROOT,
        env=toy_plugin.env(plugin_dir),
        timeout=120,
    )


def test_without_plugins_the_registries_hold_the_built_ins() -> None:
    assert [k.crd.kind for k in registry.KINDS] == BUILT_IN
    assert [s.name for s in integrations.INTEGRATIONS] == [
        "kueue",
        "gang",
        "tensorboard",
        "progress",
        "checkpoint",
        "gpu-usage",
        "workdir",
        "start-estimate",
        "notifications",
    ]


def test_the_toy_kind_and_integration_load_through_their_entry_points(tmp_path: Path) -> None:
    toy_plugin.write_dist(tmp_path)
    proc = python(
        "from t9k_operator.kinds import registry\n"
        "from t9k_operator import registry as integrations\n"
        "print([k.crd.kind for k in registry.KINDS])\n"
        "print([s.name for s in integrations.INTEGRATIONS])\n",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    kinds, setups = proc.stdout.splitlines()
    assert kinds == repr([*BUILT_IN, "ToyJob"])
    assert setups == repr(
        [
            "kueue",
            "gang",
            "tensorboard",
            "progress",
            "checkpoint",
            "gpu-usage",
            "workdir",
            "start-estimate",
            "notifications",
            "toy-seen",
        ]
    )


def test_the_generators_make_the_toy_crd_and_its_cluster_role_rules(tmp_path: Path) -> None:
    toy_plugin.write_dist(tmp_path)
    proc = python(
        "import json\n"
        "from tests import hack_scripts\n"
        "crds = hack_scripts.load('generate.crds').rendered()\n"
        "print(json.dumps({'crds': crds, 'role': hack_scripts.load('generate.rbac').render()}))\n",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    crd = yaml.safe_load(out["crds"]["toy.t9k.dev_toyjobs.yaml"])
    assert crd["spec"]["names"]["kind"] == "ToyJob"
    # The toy integration's part of the status, in every job kind's CRD:
    part = {
        "type": "object",
        "description": "What the toy integration saw of the job (with --toy-seen).",
        "properties": {
            "seen": {"type": "boolean", "description": "Whether the toy integration saw the job."}
        },
        "required": ["seen"],
    }
    for name in ("toy.t9k.dev_toyjobs.yaml", "batch.tensorstack.dev_pytorchtrainingjobs.yaml"):
        schema = yaml.safe_load(out["crds"][name])["spec"]["versions"][0]["schema"]
        assert schema["openAPIV3Schema"]["properties"]["status"]["properties"]["toy"] == part
    rules = yaml.safe_load(out["role"])["rules"]
    toy_rules = [r for r in rules if r["apiGroups"] == ["toy.t9k.dev"]]
    # The kind's, as every kind's, in order:
    assert toy_rules[:3] == [
        {"apiGroups": ["toy.t9k.dev"], "resources": ["toyjobs"], "verbs": ["list", "watch"]},
        {"apiGroups": ["toy.t9k.dev"], "resources": ["toyjobs/status"], "verbs": ["update"]},
        {"apiGroups": ["toy.t9k.dev"], "resources": ["toyjobs/finalizers"], "verbs": ["update"]},
    ]
    # The toy integration's own, stated by its rbac():
    assert toy_rules[3:] == [
        {"apiGroups": ["toy.t9k.dev"], "resources": ["toyjobs"], "verbs": ["get"]}
    ]


def test_a_plugin_that_fails_to_import_fails_the_registry_naming_its_entry_point(
    tmp_path: Path,
) -> None:
    toy_plugin.write_dist(
        tmp_path, "[t9k_operator.kinds]\nbroken = tests.no_such_kind:Kind\n", name="t9k-broken"
    )
    proc = python("from t9k_operator.kinds import registry", tmp_path)
    assert proc.returncode == 1
    assert (
        "t9k_operator.entry_points.PluginError: entry point broken = tests.no_such_kind:Kind "
        "(group t9k_operator.kinds, from t9k-broken) cannot be loaded: "
        "ModuleNotFoundError: No module named 'tests.no_such_kind'"
    ) in proc.stderr


def _listed(
    monkeypatch: pytest.MonkeyPatch, group: str, *declared: tuple[str, str]
) -> list[EntryPoint]:
    eps = [EntryPoint(name, value, group) for name, value in declared]
    monkeypatch.setattr(entry_points, "entry_points", lambda group: eps)
    return eps


def _kinds(listed: tuple[JobKind[Any], ...]) -> tuple[JobKind[Any], ...]:
    return entry_points.plugins(
        entry_points.KINDS, listed, make=lambda cls: cls(), names=lambda k: (k.crd.kind,)
    )


def test_plugins_come_in_the_order_of_their_entry_points_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _listed(
        monkeypatch,
        entry_points.INTEGRATIONS,
        ("b", "tests.toykind.integration:ToySeen"),
        ("a", "t9k_operator.integrations.kueue.integration:Kueue"),
    )
    found = entry_points.plugins(
        entry_points.INTEGRATIONS, (), make=lambda setup: setup, names=lambda s: (s.__name__,)
    )
    assert [s.__name__ for s in found] == ["Kueue", "ToySeen"]


def test_a_plugin_whose_kind_is_taken_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _listed(monkeypatch, entry_points.KINDS, ("again", "t9k_operator.kinds.pytorch:PyTorchKind"))
    with pytest.raises(entry_points.PluginError) as err:
        _kinds(registry.KINDS)
    assert str(err.value) == (
        "entry point again = t9k_operator.kinds.pytorch:PyTorchKind (group t9k_operator.kinds, "
        "from an unknown distribution): PyTorchTrainingJob is already a built-in's"
    )
    # Two plugins of one kind: the second names the first.
    _listed(
        monkeypatch,
        entry_points.KINDS,
        ("toy", "tests.toykind.kind:ToyKind"),
        ("toy2", "tests.toykind.kind:ToyKind"),
    )
    with pytest.raises(entry_points.PluginError, match=r"ToyJob is already entry point toy = "):
        _kinds(registry.KINDS)


def test_a_plugin_that_is_not_a_kind_is_refused_naming_its_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _listed(monkeypatch, entry_points.KINDS, ("odd", "tests.toykind.api:CRD"))
    with pytest.raises(entry_points.PluginError, match=r"^entry point odd = tests.toykind.api:CRD"):
        _kinds(registry.KINDS)


def test_the_toy_kind_is_a_job_kind_of_its_own_files() -> None:
    kind: JobKind[ToyJobObject] = ToyKind()  # mypy checks the contract here
    job = {
        "apiVersion": "toy.t9k.dev/v1",
        "kind": "ToyJob",
        "metadata": {"name": "t", "namespace": "ns", "uid": "u"},
        "spec": {"worker": {"replicas": 2, "template": {"spec": {"containers": [{"image": "x"}]}}}},
    }
    got = read(kind, job)
    assert got.job is not None and got.view.spec_error is None
    assert [(r.type, r.replicas) for r in got.view.roles] == [("worker", 2)]
    assert got.view.backoff_limit == 3  # the shared runPolicy's default
    pod = kind.build_pod(got.job, "worker", 1, NORMAL, {})
    assert pod["metadata"]["name"] == "t-worker-1"
    assert pod["spec"]["containers"][0]["env"] == [{"name": "TOY_WORKER_INDEX", "value": "1"}]


def test_a_plugin_integration_whose_name_is_taken_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _listed(
        monkeypatch,
        entry_points.INTEGRATIONS,
        ("progress", "t9k_operator.integrations.progress.integration:JobProgress"),
    )
    with pytest.raises(entry_points.PluginError, match=r": progress is already a built-in's$"):
        entry_points.plugins(
            entry_points.INTEGRATIONS,
            integrations.INTEGRATIONS,
            make=lambda setup: setup,
            names=lambda s: (getattr(s, "name", s.__name__),),
        )
