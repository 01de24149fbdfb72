"""Run by tests/unit/test_removing_an_integration.py in a copy of the package
from which one integration's folder and registry line are gone: the operator
configures its integrations from its default flags, `t9k` and the SDK import,
a PyTorchTrainingJob runs to Succeeded through the job reconciler with
every integration the registry still lists (the API is tests' fake), and
`t9k list` and `t9k describe` show it; and a job that sets every field an
integration acts on is told, when accepted, of those that none left acts on
(the fields expected, comma-separated, are the second argument); and
`t9k create --workdir` packs the directory, or (a third argument "refused")
says that this t9k has no workdir support, creating nothing."""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from t9k_operator import registry
from t9k_operator.__main__ import parse_args
from t9k_operator.builders.common import CHILD_SELECTOR
from t9k_operator.cli import main as t9k
from t9k_operator.cli import render
from t9k_operator.informers.factory import InformerFactory
from t9k_operator.kinds.registry import KINDS
from t9k_operator.reconcilers.pipeline.job import JobReconciler
from t9k_operator.resources import CONFIGMAPS, PODS, SECRETS, SERVICES
from t9k_operator.runtime.controller import ControllerContext
from t9k_operator.sdk import Client  # noqa: F401  (the SDK still imports)
from tests.fakes import FakeRecorder
from tests.unit.reconcilers.fake_kube import FakeKube

SAMPLE = Path(__file__).resolve().parents[2] / "manifests" / "samples" / "pytorch-basic.yaml"


def pods_are(fake: FakeKube, phase: str) -> None:
    for pod in fake.of_kind("Pod"):
        state: dict[str, Any] = (
            {"running": {}} if phase == "Running" else {"terminated": {"exitCode": 0}}
        )
        pod["spec"]["nodeName"] = "node-0"
        pod["status"] = {
            "phase": phase,
            "containerStatuses": [
                {"name": c["name"], "state": state} for c in pod["spec"]["containers"]
            ],
        }
        fake.put(PODS, pod)


def shown(fake: FakeKube, resource: Any, removed: str) -> None:
    """`t9k list` and `t9k describe` of the finished job, with the views of the
    integrations left (none from the removed folder)."""
    package = f"t9k_operator.integrations.{removed}."
    assert not [v for v in registry.views() if type(v).__module__.startswith(package)]
    job, pods, now = fake.get(resource, "j", "ns"), fake.of_kind("Pod"), datetime.now(UTC)
    listed = render.jobs_table([job], pods, now).splitlines()
    assert listed[1].split()[:3] == ["j", "PyTorchTrainingJob", "Succeeded"], listed
    assert "Phase:       Succeeded" in render.describe(job, pods, [], now)


def main() -> int:
    removed = sys.argv[1]
    assert all(s.name != removed for s in registry.INTEGRATIONS), removed
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            t9k(["--help"])
        except SystemExit as exit_:
            assert exit_.code == 0, exit_.code
    assert "usage" in out.getvalue().lower()
    integrations = registry.configure(parse_args([]))
    (kind,) = [k for k in KINDS if k.crd.kind == "PyTorchTrainingJob"]
    fake = FakeKube()
    informers = InformerFactory(fake)  # type: ignore[arg-type]
    ctx = ControllerContext(
        client=fake,  # type: ignore[arg-type]
        informers=informers,
        recorder=FakeRecorder(),  # type: ignore[arg-type]
        workers=1,
    )
    reconciler = JobReconciler(kind, ctx, integrations)
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"] = {"name": "j", "namespace": "ns", "generation": 1, "uid": "u-1"}
    fake.put(reconciler.resource, job)
    caches = [(reconciler.resource, None)] + [
        (r, CHILD_SELECTOR) for r in (PODS, SERVICES, CONFIGMAPS, SECRETS)
    ]
    caches += [
        (w.resource, CHILD_SELECTOR if w.owned else None) for i in integrations for w in i.watches()
    ]

    def run(passes: int = 4) -> dict[str, Any]:
        for _ in range(passes):
            fake.sync(informers, *caches)
            reconciler.reconcile("ns/j")
        fake.sync(informers, *caches)
        return fake.get(reconciler.resource, "j", "ns")

    run()
    assert fake.of_kind("Pod"), "no pod created"
    pods_are(fake, "Running")
    assert run()["status"]["phase"] == "Running", run()["status"]
    pods_are(fake, "Succeeded")
    status = run()["status"]
    assert status["phase"] == "Succeeded", status
    shown(fake, reconciler.resource, removed)
    recorder = ctx.recorder
    assert isinstance(recorder, FakeRecorder)
    told_of(fake, reconciler, informers, recorder, [f for f in sys.argv[2].split(",") if f])
    with_workdir(refused=sys.argv[3] == "refused")
    print("ran", [i.name for i in integrations])
    return 0


def with_workdir(refused: bool) -> None:
    """``t9k create --workdir --dry-run``: the job annotated with its workdir's
    ConfigMap, or (``refused``) the workdir integration's absence said, exit 1."""
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "train.py").write_text("print('hi')\n")
        argv = ["create", "pytorch", "w", "--image", "i", "--workdir", directory]
        argv += ["--dry-run", "-o", "yaml", "--", "python", "train.py"]
        with (
            contextlib.redirect_stdout(io.StringIO()) as out,
            contextlib.redirect_stderr(io.StringIO()) as err,
        ):
            code = t9k(argv)
    if refused:
        assert code == 1 and "no workdir support" in err.getvalue(), (code, err.getvalue())
        assert not out.getvalue(), out.getvalue()
    else:
        assert code == 0, err.getvalue()
        assert "batch.tensorstack.dev/workdir: w-workdir" in out.getvalue(), out.getvalue()


ASKING = {
    "runPolicy": {"progress": {"hangTimeoutSeconds": 600}, "checkpoint": {"graceSeconds": 60}},
    "tensorboardSpec": {"image": "tb", "trainingLogFilesets": ["t9k://pvc/logs/train"]},
    "scheduler": {"t9kScheduler": {"queue": "default"}},
}
"""What a PyTorchTrainingJob may ask of the integrations."""


def told_of(
    fake: FakeKube,
    reconciler: JobReconciler,
    informers: InformerFactory,
    recorder: FakeRecorder,
    expected: list[str],
) -> None:
    """A job asking everything is accepted with a Warning naming ``expected``
    (none when empty)."""
    job = yaml.safe_load(SAMPLE.read_text())
    job["metadata"] = {"name": "asks", "namespace": "ns", "generation": 1, "uid": "u-2"}
    job["spec"].update(ASKING)
    fake.put(reconciler.resource, job)
    fake.sync(informers, (reconciler.resource, None))
    reconciler.reconcile("ns/asks")
    warned = [
        e.message
        for e in recorder.events
        if e.name == "asks" and (e.type, e.reason) == ("Warning", "FieldNotActedOn")
    ]
    if expected:
        (message,) = warned
        assert message.startswith(f"{', '.join(expected)}: stored as written, but"), message
    else:
        assert not warned, warned


if __name__ == "__main__":
    sys.exit(main())
