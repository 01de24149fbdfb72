"""The operator process: probes, leader election hand-over, graceful shutdown."""

from __future__ import annotations

import time
from collections.abc import Callable

from t9k_operator.kube import KubeClient, NotFound
from t9k_operator.resources import LEASES
from tests.integration.cluster import wait_for
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.leases import recording
from tests.integration.operator_process import OperatorProcess

LEASE_NS = "t9k-system"
FAST_ELECTION = (
    "--leader-elect-lease-duration=6",
    "--leader-elect-renew-deadline=4",
    "--leader-elect-retry-period=1",
)


def leader_status(proc: OperatorProcess, lease: str) -> float:
    return proc.metric("leader_election_master_status", {"name": lease}) or 0.0


def lease_holder(admin: KubeClient, name: str) -> str:
    try:
        return str(admin.get(LEASES, name, LEASE_NS)["spec"].get("holderIdentity") or "")
    except NotFound:
        return ""


def reconciles(proc: OperatorProcess) -> float:
    return sum(
        proc.metric(
            "controller_runtime_reconcile_total", {"controller": "pytorchtrainingjob", "result": r}
        )
        or 0.0
        for r in ("success", "error", "requeue", "requeue_after")
    )


def test_two_managers_one_leader_and_handover_on_kill(
    start_operator: Callable[..., OperatorProcess], admin: KubeClient, namespace: str
) -> None:
    lease = f"test-handover-{int(time.time())}"
    args = ("--leader-elect", f"--leader-election-id={lease}", *FAST_ELECTION)
    a, b = start_operator(*args), start_operator(*args)
    a.wait_ready()
    b.wait_ready()
    wait_for(lambda: leader_status(a, lease) + leader_status(b, lease) == 1, 20, "a leader")
    # For a while, sampled often: never two leaders at once.
    deadline = time.monotonic() + 4
    while time.monotonic() < deadline:
        assert leader_status(a, lease) + leader_status(b, lease) <= 1
        time.sleep(0.2)
    leader, standby = (a, b) if leader_status(a, lease) == 1 else (b, a)
    holder = lease_holder(admin, lease)
    assert holder
    # Only the leader reconciles: a job is seen by both caches, handled by one.
    Jobs(admin, namespace).create(pytorch_job("le", [("worker", 1, "OnFailure")]))
    Jobs(admin, namespace).wait_pods("le", ["le-worker-0"])
    wait_for(lambda: reconciles(leader) > 0, 10, "the leader to reconcile")
    assert reconciles(standby) == 0
    with recording(admin, LEASE_NS, lease) as record:
        leader.kill()  # kill -9: no release, the lease must expire
        wait_for(lambda: leader_status(standby, lease) == 1, 15, "the standby to take over")
        wait_for(lambda: lease_holder(admin, lease) != holder, 5, "the Lease to name it")
    # The standby may take the lease only once it expired: 6 s after it saw the
    # last renewal, which it looks for once per retry period (1 s, 1.2 with
    # jitter). Read from the Lease, as the electors wrote it.
    last = record.last_by(holder)
    took = record.gap(last, record.first_after(last, lease_holder(admin, lease)))
    assert 6 <= took <= 6 + 2 * 1.2 + 1.0, f"hand-over took {took:.2f}s: {record.versions()}"
    new_holder = lease_holder(admin, lease)
    assert new_holder and new_holder != holder
    # The new leader starts its workers and takes up the job.
    wait_for(lambda: reconciles(standby) > 0, 10, "the new leader to reconcile")
    assert standby.proc.poll() is None


def test_sigterm_exits_zero_and_releases_the_lease(
    start_operator: Callable[..., OperatorProcess], admin: KubeClient
) -> None:
    lease = f"test-sigterm-{int(time.time())}"
    proc = start_operator("--leader-elect", f"--leader-election-id={lease}", *FAST_ELECTION)
    proc.wait_ready()
    assert proc.get("/healthz")[0] == 200
    wait_for(lambda: leader_status(proc, lease) == 1, 20, "leadership")
    assert lease_holder(admin, lease)
    code = proc.terminate(timeout=40)
    assert code == 0, proc.logs()
    assert lease_holder(admin, lease) == ""
    assert admin.get(LEASES, lease, LEASE_NS)["spec"]["leaseDurationSeconds"] == 1


def test_released_lease_is_taken_at_once(
    start_operator: Callable[..., OperatorProcess], admin: KubeClient
) -> None:
    lease = f"test-release-{int(time.time())}"
    args = ("--leader-elect", f"--leader-election-id={lease}", *FAST_ELECTION)
    a = start_operator(*args)
    a.wait_ready()
    wait_for(lambda: leader_status(a, lease) == 1, 20, "a leads")
    a_holder = lease_holder(admin, lease)
    b = start_operator(*args)
    b.wait_ready()
    with recording(admin, LEASE_NS, lease) as record:
        assert a.terminate() == 0
        wait_for(lambda: leader_status(b, lease) == 1, 10, "b takes the released lease")
        wait_for(lambda: lease_holder(admin, lease) not in ("", a_holder), 5, "the Lease names b")
    # Released, not expired: b takes it at its next try, well under the 6 s
    # lease duration. Read from the Lease, as the electors wrote it.
    released = record.released()
    took = record.gap(released, record.first_after(released, lease_holder(admin, lease)))
    assert 0 <= took < 4, f"b took the lease {took:.2f}s after the release: {record.versions()}"


def test_readyz_waits_for_caches_and_bad_flags_fail_fast(
    start_operator: Callable[..., OperatorProcess],
) -> None:
    proc = start_operator()
    proc.wait_ready()
    assert proc.get("/readyz") == (200, "ok\n")
    assert proc.get("/nope")[0] == 404
    bad = start_operator("--concurrent-reconciles=0")
    assert bad.proc.wait(20) == 2
    assert "--concurrent-reconciles must be at least 1" in bad.logs()


def test_a_burst_of_jobs_never_starves_the_lease_renewals(
    start_operator: Callable[..., OperatorProcess], admin: KubeClient, namespace: str
) -> None:
    """Renewals have their own client and limiter (as controller-runtime's
    leader election does): a reconcile budget of 1 request/s, swamped by a
    burst of jobs, does not cost the leadership."""
    lease = f"test-starve-{int(time.time())}"
    proc = start_operator(
        "--leader-elect",
        f"--leader-election-id={lease}",
        *FAST_ELECTION,
        "--kube-api-qps=1",
        "--kube-api-burst=1",
    )
    proc.wait_ready()
    wait_for(lambda: leader_status(proc, lease) == 1, 20, "leadership")
    jobs = Jobs(admin, namespace)
    for i in range(30):
        jobs.create(pytorch_job(f"burst-{i}", [("worker", 2, "Never")]))
    deadline = time.monotonic() + 20  # over three lease durations
    while time.monotonic() < deadline:
        assert proc.proc.poll() is None, "the operator lost its lease and exited"
        assert leader_status(proc, lease) == 1
        time.sleep(0.5)
