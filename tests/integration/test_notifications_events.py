"""Notifications for real, continued (tests/integration/test_notifications.py
has the channels and the delivery): the events judged by other parts of the
operator, each told once to a real HTTP receiver with the job's kind,
namespace, name and phase, checked after the job has settled: a job whose
progress reports stop (``Hung``, the reporter on the pod host as in
test_progress), idle GPUs (``GPUsIdle``, a real Prometheus scraping DCGM
stand-ins as in test_gpu_usage), a preemption by the real Kueue (as in
test_kueue_jobs) and a waiting job's start estimated past the threshold it
chose (behind a job whose reported progress ends in hours, as in
test_start_estimate), while one that chose a longer threshold is not told.
And the delivery's harder cases: e-mail through an SMTP server that
requires STARTTLS, with a certificate of the test's own CA the endpoint's
``caCert`` trusts, and a login (LOGIN on one server, PLAIN on the other)
whose password appears nowhere in the operator's log, the Events or the
job, the same server without the CA given up as untrusted; an endpoint down
for over two minutes, the backoff capped by ``--notification-backoff-cap``,
delivered once within the cap of its coming up.
"""

from __future__ import annotations

import email
import email.policy
import ipaddress
import json
import ssl
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from t9k_operator.kube import KubeClient
from tests.integration.cluster import wait_for
from tests.integration.dcgm_exporter import DCGMExporter
from tests.integration.jobs import Jobs, finish, pytorch_job, run_all
from tests.integration.kubelet import Kubelet
from tests.integration.notification_receivers import HttpReceiver, SmtpReceiver, eventually
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.podhost import Node
from tests.integration.prometheus import Prometheus
from tests.integration.test_gang_jobs import bound, gpu_job
from tests.integration.test_gang_schedulers import gpus_in_use
from tests.integration.test_gpu_usage import WINDOW, exporters, prometheus  # noqa: F401 (fixtures)
from tests.integration.test_gpu_usage import gpu_job as one_gpu_job
from tests.integration.test_kueue_jobs import kueue_ready, preempting_queue  # noqa: F401 (fixtures)
from tests.integration.test_notifications import (
    ARGS,
    KEY,
    delivered,
    end,
    endpoint,
    message,
    submit,
)
from tests.integration.test_progress import SERVICE, job_body, start
from tests.integration.test_start_estimate import PERIOD, reporting, run_with_eta, with_time
from tests.kinds import kind_resource

TO, ON = "notifications.tensorstack.dev/to", "notifications.tensorstack.dev/on"
OVER = "notifications.tensorstack.dev/start-estimate-over"
PASSWORD = "s3cret-Pa55-of-the-test"


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


@pytest.fixture
def pod_host(tmp_path: Path, admin: KubeClient, namespace: str) -> Iterator[Node]:
    """Where the replicas run and report (test_progress's ``node``)."""
    n = Node(tmp_path / "node", namespace, client=admin, host_services=[SERVICE])
    yield n
    n.close()


def told_once(got: HttpReceiver, settle: float = 5.0) -> dict[str, Any]:
    """The one message the receiver got, once no other came for ``settle`` s."""
    time.sleep(settle)
    assert len(got.received) == 1, [json.loads(r.body) for r in got.received]
    doc: dict[str, Any] = json.loads(got.received[0].body)
    return doc


# -- events -------------------------------------------------------------------------


def test_a_job_whose_reports_stop_is_told_hung_once(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    pod_host: Node,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    port = free_port()
    progress = ("--progress-bind-address", f"0.0.0.0:{port}", "--progress-service-port", str(port))
    operator = start_operator(*ARGS, *progress)
    operator.wait_ready()
    body = job_body("stuck", hangTimeoutSeconds=60, onHang="Fail")
    body["metadata"]["annotations"] = {TO: "hook", ON: "hung"}
    jobs.create(body)
    start(jobs, kubelet, pod_host, "stuck", ["stuck-master-0", "stuck-worker-0"])
    jobs.wait_phase("stuck", "Failed", timeout=120)  # the worker went silent after 15 steps
    m = eventually(delivered(jobs, "stuck"), 30, "the hang told")
    doc = told_once(receiver)
    assert (doc["event"], doc["reason"], doc["id"]) == ("hung", "Hung", m["id"])
    assert "stuck-worker-0" in doc["message"], doc
    assert doc["job"]["kind"] == "PyTorchTrainingJob"
    assert (doc["job"]["namespace"], doc["job"]["name"]) == (jobs.namespace, "stuck")
    assert doc["job"]["phase"] == "Failed"  # onHang: Fail
    assert doc["job"]["progress"] is not None and "/100000 (" in doc["job"]["progress"]


def test_a_job_idling_its_gpus_is_told_once(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    prometheus: tuple[Prometheus, int],  # noqa: F811
    exporters: tuple[DCGMExporter, DCGMExporter],  # noqa: F811
    start_operator: Callable[..., OperatorProcess],
) -> None:
    prom, metrics_port = prometheus
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    operator = start_operator(
        *ARGS,
        "--prometheus-url",
        f"http://127.0.0.1:{prom.port}",
        "--gpu-idle-window",
        f"{WINDOW}s",
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
    )
    operator.wait_ready()
    exporters[0].set(0, 1.0, used_mib=1024, pod=(jobs.namespace, "idle-master-0", "pytorch"))
    body = one_gpu_job("idle")
    body["metadata"]["annotations"] = {TO: "hook", ON: "gpus-idle"}
    jobs.create(body)
    jobs.wait_pods("idle", ["idle-master-0"])
    run_all(kubelet, jobs, "idle", ["idle-master-0"])
    m = eventually(delivered(jobs, "idle"), 120, "the idle GPUs told")
    doc = told_once(receiver)
    assert (doc["event"], doc["reason"], doc["id"]) == ("gpus-idle", "GPUsIdle", m["id"])
    assert "1 GPU(s) stayed under 5.0% utilization for 10s" in doc["message"], doc
    assert doc["job"]["kind"] == "PyTorchTrainingJob"
    assert (doc["job"]["namespace"], doc["job"]["name"]) == (jobs.namespace, "idle")
    assert doc["job"]["phase"] == "Running"  # idle GPUs are told, the job left as it is
    assert jobs.status("idle")["phase"] == "Running"


@pytest.mark.xdist_group("add-ons")
def test_a_job_preempted_by_kueue_is_told_once(
    admin: KubeClient,
    namespace: str,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    preempting_queue: str,  # noqa: F811
    start_operator: Callable[..., OperatorProcess],
) -> None:
    kind = "PyTorchTrainingJob"
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    endpoint(admin, namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    operator = start_operator("--kueue", *ARGS)
    operator.wait_ready()
    ptj = Jobs(admin, namespace, kind_resource(kind))
    low = gpu_job(kind, "low", manual=True, queue=preempting_queue, priority=10)
    low["metadata"]["annotations"] = {TO: "hook", ON: "preempted"}
    ptj.create(low)
    wait_for(lambda: bound(ptj, "low") == 3, 60, "low admitted")
    for name in ptj.pods("low"):
        kubelet.run(namespace, name)
    ptj.wait_phase("low", "Running")
    high = gpu_job(kind, "high", manual=True, queue=preempting_queue, priority=90)
    high["metadata"]["annotations"] = {TO: "hook"}  # told of everything but it is not preempted
    ptj.create(high)
    m = eventually(delivered(ptj, "low"), 60, "low's preemption told")
    wait_for(lambda: bound(ptj, "high") == 3, 60, "high admitted and bound")
    finish(kubelet, ptj, "high")
    ptj.wait_phase("high", "Succeeded", 30)
    eventually(lambda: len(receiver.received) == 2, 30, "high's success told")
    wait_for(
        lambda: (
            bound(ptj, "low") == 3
            and not any(p["metadata"].get("deletionTimestamp") for p in ptj.pods("low").values())
        ),
        60,
        "low admitted again",
    )
    finish(kubelet, ptj, "low")
    ptj.wait_phase("low", "Succeeded", 30)
    time.sleep(5)  # settled: low's success is not among its events
    docs = {json.loads(r.body)["job"]["name"]: json.loads(r.body) for r in receiver.received}
    assert len(receiver.received) == 2 and sorted(docs) == ["high", "low"], docs
    assert (docs["high"]["event"], docs["high"]["job"]["phase"]) == ("succeeded", "Succeeded")
    doc = docs["low"]
    assert (doc["event"], doc["reason"], doc["id"]) == ("preempted", "EvictedByKueue", m["id"])
    assert "Preempted" in doc["message"], doc
    assert doc["job"]["kind"] == kind
    assert (doc["job"]["namespace"], doc["job"]["name"]) == (namespace, "low")
    assert doc["job"]["phase"] == "Pending"  # stopped, waiting to be admitted again


@pytest.mark.xdist_group("add-ons")
def test_a_waiting_jobs_start_estimate_past_its_threshold_is_told_once(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    wait_for(lambda: gpus_in_use(admin) == 0, 120, "the GPUs of earlier tests freed")
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    port, flags = reporting(*ARGS)
    operator = start_operator(*flags)
    operator.wait_ready()

    def gpus(name: str, workers: int, over: str | None = None) -> dict[str, Any]:
        body = pytorch_job(name, [("worker", workers, "Never")])
        template = body["spec"]["replicaSpecs"][0]["template"]["spec"]
        template["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}}
        if over:
            body["metadata"]["annotations"] = {TO: "hook", OVER: over}
        return body

    # The holder takes every GPU of the four 8-GPU nodes and reports 20,000
    # steps to go at a few steps a second: an ETA of one to a few hours.
    jobs.create(gpus("holder", 4))
    wait_for(lambda: bound(jobs, "holder") == 4, 60, "holder's pods bound")
    ends = run_with_eta(admin, kubelet, jobs, "holder", port, 20110)
    ahead = (ends - datetime.now(UTC)).total_seconds()
    assert 3600 <= ahead <= 12 * 3600, f"the holder ends in {ahead:.0f} s"
    # Both wait for it: told past 30 minutes, one is; past a day, the other is not.
    jobs.create(gpus("impatient", 1, "30m"))
    jobs.create(gpus("patient", 1, "24h"))
    for name in ("impatient", "patient"):
        wait_for(lambda n=name: with_time(jobs, n), 60, f"{name}'s start estimate")
    m = eventually(delivered(jobs, "impatient"), 30, "impatient told its late start")
    doc = told_once(receiver, settle=2 * int(PERIOD) + 2)  # two passes of the estimates more
    assert (doc["event"], doc["reason"], doc["id"]) == ("start-estimate", "StartLate", m["id"])
    assert doc["message"].startswith("the job is estimated to start at "), doc
    assert doc["job"]["kind"] == "PyTorchTrainingJob"
    assert (doc["job"]["namespace"], doc["job"]["name"]) == (jobs.namespace, "impatient")
    assert doc["job"]["phase"] == "Pending"
    assert message(jobs, "patient") == {}  # recorded nothing: nothing to tell


# -- delivery -----------------------------------------------------------------------


def mail_server_tls(tmp: Path) -> tuple[str, ssl.SSLContext]:
    """A CA of the test's own (its certificate, PEM) and a server context with
    a certificate it signed for 127.0.0.1."""
    now = datetime.now(UTC)
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "t9k test mail CA")])
    usage = dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement"), False
    )

    def signed(builder: x509.CertificateBuilder) -> x509.Certificate:
        return (
            builder.issuer_name(ca_name)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(hours=2))
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
            )
            .sign(ca_key, hashes.SHA256())
        )

    ca = signed(
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .public_key(ca_key.public_key())
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
                **usage,
            ),
            True,
        )
    )
    leaf = signed(
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .public_key(key.public_key())
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
    )
    (tmp / "tls.crt").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp / "tls.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp / "tls.crt", tmp / "tls.key")
    return ca.public_bytes(serialization.Encoding.PEM).decode(), context


def test_email_through_starttls_and_a_login_never_shows_the_password(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    tmp_path: Path,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    ca, tls = mail_server_tls(tmp_path)
    # Each server requires STARTTLS, then a login; one offers only PLAIN, the other only LOGIN.
    plain = SmtpReceiver(free_port(), tls=tls, login=("t9k", PASSWORD), exclude=("LOGIN",))
    login = SmtpReceiver(free_port(), tls=tls, login=("t9k", PASSWORD), exclude=("PLAIN",))
    try:
        common = {"type": "email", "host": "127.0.0.1", "starttls": "true", "username": "t9k"}
        common |= {"password": PASSWORD, "to": "owner@example.com", "from": "t9k@example.com"}
        ns = jobs.namespace
        endpoint(admin, ns, "mail-plain", port=str(plain.port), caCert=ca, **common)
        endpoint(admin, ns, "mail-login", port=str(login.port), caCert=ca, **common)
        # The same server without the CA: its certificate is not trusted, nothing is sent.
        endpoint(admin, ns, "mail-untrusted", port=str(plain.port), **common)
        operator = start_operator(*ARGS, "--notification-give-up", "15s")
        operator.wait_ready()
        submit(jobs, "mailed", "mail-plain,mail-login,mail-untrusted")
        end(jobs, kubelet, "mailed", exit_code=3)
        warning = jobs.wait_event("mailed", "NotificationFailed", timeout=60)
        assert warning[2].startswith(f"gave up telling {ns}/mail-untrusted of failed"), warning
        assert "SMTP server's certificate not trusted" in warning[2], warning
        m = message(jobs, "mailed")
        assert {d["endpoint"]: d["state"] for d in m["deliveries"]} == {
            f"{ns}/mail-plain": "Delivered",
            f"{ns}/mail-login": "Delivered",
            f"{ns}/mail-untrusted": "GaveUp",
        }
        # Each server had one login, by its mechanism, and one message, both after STARTTLS.
        assert (plain.logins, login.logins) == ([("PLAIN", True)], [("LOGIN", True)])
        for server in (plain, login):
            assert server.over_tls == [True]
            (sender, rcpts, raw) = server.messages[0]
            assert (sender, rcpts) == ("t9k@example.com", ["owner@example.com"])
            mail = email.message_from_bytes(raw, policy=email.policy.default)
            assert mail["Subject"] == f"[t9k] Failed: PyTorchTrainingJob {ns}/mailed"
            assert mail["X-T9k-Delivery"] == m["id"]
            assert PASSWORD not in raw.decode(errors="replace")

        # The password nowhere: the operator's whole log, the job's Events, the job.
        log = operator.log_path.read_text(errors="replace")
        assert "give_up_seconds" in log  # the deliverer's own line: the log is the operator's
        assert "certificate not trusted" in log  # its tries of mail-untrusted, logged
        assert PASSWORD not in log
        events = jobs.events("mailed")
        assert [e[1] for e in events if e[1].startswith("Notification")].count(
            "NotificationSent"
        ) == 2, events
        assert PASSWORD not in json.dumps(events)
        assert PASSWORD not in json.dumps(jobs.get("mailed"))
    finally:
        plain.close()
        login.close()


DOWN = 125
"""Seconds the endpoint stays down: over two minutes."""
CAP = 10
"""The test's --notification-backoff-cap, seconds (the default, 5 minutes,
would leave up to that long between the endpoint's coming up and the try)."""


def test_an_endpoint_down_for_minutes_gets_the_message_once_within_the_cap(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    down = free_port()  # nothing listens there for DOWN seconds
    url = f"http://127.0.0.1:{down}/hook/t0ken"
    endpoint(admin, jobs.namespace, "later", type="webhook", url=url, secret=KEY)
    operator = start_operator(*ARGS, "--notification-backoff-cap", f"{CAP}s")
    operator.wait_ready()
    submit(jobs, "outage", "later")
    end(jobs, kubelet, "outage")
    eventually(lambda: "a try failed" in operator.logs(), 30, "a failed try")
    time.sleep(DOWN)
    assert message(jobs, "outage")["state"] == "Pending"
    # Waits of 0.5 to 10 s after the first four: 15 to 30 tries in 125 s; the
    # default cap would have made 8 at most.
    retried = operator.metric("t9k_notifications_total", {"result": "retried"}) or 0
    assert 13 <= retried <= 32, retried
    up_receiver = HttpReceiver(down)
    up = time.monotonic()
    try:
        m = eventually(delivered(jobs, "outage"), 30, "the message delivered once it is up")
        assert up_receiver.received[0].at - up <= CAP + 1, "tried again within the cap"
        doc = told_once(up_receiver)
        assert (doc["event"], doc["id"]) == ("succeeded", m["id"])
        assert doc["job"]["kind"] == "PyTorchTrainingJob"
        assert (doc["job"]["namespace"], doc["job"]["name"]) == (jobs.namespace, "outage")
        assert doc["job"]["phase"] == "Succeeded"
        # Every try failed but the last: each a retry counted.
        retries = operator.metric("t9k_notifications_total", {"result": "retried"})
        assert m["deliveries"][0]["attempts"] == (retries or 0) + 1
        assert [e[1] for e in jobs.events("outage") if e[1].startswith("Notification")] == [
            "NotificationSent"
        ]
    finally:
        up_receiver.close()
