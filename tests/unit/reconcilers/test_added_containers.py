"""A container the operator adds that runs the user's image (the ssh set-up
init container): its failure, in the job's condition, names the image and
where in the job it comes from, and what the image must provide."""

from __future__ import annotations

import copy
from typing import Any

from t9k_operator.builders import colossalai, deepspeed
from t9k_operator.kinds.pods import replica_state
from t9k_operator.resources import PODS
from tests.unit.reconcilers.test_job_reconciler import JOBS, NS, Harness

NO_BASH = (
    "an earlier line of its log\n"
    "t9k: this image has no /bin/bash, which the operator's launch scripts run under:"
    " use an image with bash, the OpenSSH server and client\n"
)
MUST = (
    "the image must provide /bin/sh (and /bin/bash for DeepSpeed and the ColossalAI"
    " launcher), and the ssh directory must be below directories that only root or the"
    ' container\'s user may write (docs/kinds.md, "The ssh key in a pod")'
)


def setup_failed(pod: dict[str, Any], message: str = NO_BASH) -> dict[str, Any]:
    """``pod`` as kubelet reports it when its ssh set-up exited 1 with ``message``
    (the setup's log, its termination message) and the training never started."""
    pod = copy.deepcopy(pod)
    term = {"exitCode": 1, "reason": "Error", "message": message}
    pod["status"] = {
        "phase": "Failed",
        "initContainerStatuses": [{"name": "t9k-ssh-setup", "state": {"terminated": term}}],
        "containerStatuses": [
            {"name": c["name"], "state": {"waiting": {"reason": "PodInitializing"}}}
            for c in pod["spec"]["containers"]
        ],
    }
    return pod


def test_the_jobs_condition_names_the_image_and_the_template_to_fix() -> None:
    body = copy.deepcopy(JOBS["DeepSpeedJob"][1])
    body["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] = "me/train:1"
    body["spec"]["runPolicy"] = {"backoffLimit": 0}
    h = Harness("DeepSpeedJob", body)
    h.run()
    h.fake.put(PODS, setup_failed(h.fake.get(PODS, "j-worker-1", NS)))
    h.sync()
    h.run()
    failed = next(c for c in h.job()["status"]["conditions"] if c["type"] == "Failed")
    assert failed["message"] == (
        "pod j-worker-1 failed: the ssh set-up container t9k-ssh-setup (image me/train:1,"
        " from spec.worker.template) failed with exit code 1: t9k: this image has no"
        " /bin/bash, which the operator's launch scripts run under: use an image with bash,"
        " the OpenSSH server and client; " + MUST + "; backoffLimit 0 reached, not restarting"
    )


def test_the_colossalai_launchers_setup_comes_from_spec_launcher() -> None:
    j = colossalai.Job.from_dict({**JOBS["ColossalAIJob"][1], "metadata": {"name": "c"}})
    pod = setup_failed(colossalai.build_launcher(j), "")
    assert replica_state(pod).describe_failure() == (
        "pod c-launcher failed: the ssh set-up container t9k-ssh-setup (image img,"
        " from spec.launcher) failed with exit code 1 (Error); " + MUST
    )


def test_a_setup_that_cannot_pull_the_users_image_names_it() -> None:
    j = deepspeed.Job.from_dict({**JOBS["DeepSpeedJob"][1], "metadata": {"name": "d"}})
    pod = deepspeed.build_pod(j, 1)
    waiting = {"reason": "ErrImagePull", "message": "pull access denied for img"}
    pod["status"] = {
        "phase": "Pending",
        "initContainerStatuses": [{"name": "t9k-ssh-setup", "state": {"waiting": waiting}}],
    }
    state = replica_state(pod)
    assert state.waiting is not None
    assert state.waiting.describe() == (
        "the ssh set-up container t9k-ssh-setup (image img, from spec.worker.template):"
        " ErrImagePull: pull access denied for img"
    )
