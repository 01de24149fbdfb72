"""Notifications for real: the operator (as its ServiceAccount, under the
shipped RBAC, ``--notifications``) tells a real HTTP receiver and a real SMTP
server (tests/integration/notification_receivers.py) of the jobs' events.

A failed job's message reaches a signed webhook (the HMAC checked here) and
a mailbox once, with the replica and exit code that failed it, ``t9k
describe`` shows the deliveries, and an operator restarted afterwards sends
nothing again; an operator killed while the receiver holds the request, or
a leader killed so that its standby takes over, sends it again under the
same delivery id, once, and the record says it was delivered; an endpoint
that is down and comes up later gets it; a 429 with Retry-After is waited
out; a dead endpoint is given up with a Warning and a metric; a job naming
an endpoint that does not exist gets a Warning naming the annotation; the
administrator's default endpoint hears of a job that names none; a
disruption, a whole-job restart and a start estimated never are told;
Feishu, DingTalk and WeCom robots get their own payloads and signatures.
"""

from __future__ import annotations

import base64
import contextlib
import email
import email.policy
import hashlib
import hmac
import io
import json
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from t9k_operator.cli import main as t9k_main
from t9k_operator.kube import KubeClient
from t9k_operator.resources import SECRETS
from tests.integration.cluster import Cluster
from tests.integration.conftest import OPERATOR_NAMESPACE
from tests.integration.jobs import Jobs, pytorch_job
from tests.integration.kubelet import Kubelet
from tests.integration.notification_receivers import HttpReceiver, SmtpReceiver, eventually
from tests.integration.operator_process import OperatorProcess, free_port
from tests.integration.test_manager import FAST_ELECTION, leader_status

KEY = "hmac-key-of-the-test"
CONSOLE = "https://console.example/{namespace}/{plural}/{name}"
ARGS = ("--notifications", "--console-url", CONSOLE)


@pytest.fixture
def jobs(admin: KubeClient, namespace: str) -> Jobs:
    return Jobs(admin, namespace)


def endpoint(admin: KubeClient, namespace: str, name: str, **data: str) -> None:
    admin.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"notifications.tensorstack.dev/endpoint": "true"},
            },
            "stringData": data,
        },
    )


def submit(jobs: Jobs, name: str, to: str) -> None:
    body = pytorch_job(name, [("master", 1, "Never")])
    body["metadata"]["annotations"] = {"notifications.tensorstack.dev/to": to}
    jobs.create(body)


def end(jobs: Jobs, kubelet: Kubelet, name: str, exit_code: int = 0) -> None:
    pod = f"{name}-master-0"
    jobs.wait_pods(name, [pod])
    kubelet.run(jobs.namespace, pod)
    jobs.wait_phase(name, "Running")
    if exit_code:
        kubelet.fail(jobs.namespace, pod, exit_code=exit_code)
        jobs.wait_phase(name, "Failed")
    else:
        kubelet.succeed(jobs.namespace, pod)
        jobs.wait_phase(name, "Succeeded")


def message(jobs: Jobs, name: str) -> dict[str, Any]:
    record = jobs.status(name).get("notifications") or {}
    found = record.get("messages") or []
    return dict(found[-1]) if found else {}


def delivered(jobs: Jobs, name: str) -> Callable[[], dict[str, Any] | None]:
    def check() -> dict[str, Any] | None:
        m = message(jobs, name)
        return m if m.get("state") == "Delivered" else None

    return check


def test_a_failed_job_is_told_once_to_a_signed_webhook_and_a_mailbox(
    cluster: Cluster,
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    smtp = SmtpReceiver(free_port())
    try:
        ns = jobs.namespace
        endpoint(admin, ns, "hook", type="webhook", url=receiver.url, secret=KEY)
        endpoint(
            admin,
            ns,
            "mail",
            type="email",
            host="127.0.0.1",
            port=str(smtp.port),
            to="owner@example.com",
            **{"from": "t9k@example.com"},
        )
        operator = start_operator(*ARGS)
        operator.wait_ready()
        submit(jobs, "broke", "hook,mail")
        end(jobs, kubelet, "broke", exit_code=3)
        m = eventually(delivered(jobs, "broke"), 60, "the message delivered to both")
        assert m["event"] == "failed"
        assert m["to"] == [f"{ns}/hook", f"{ns}/mail"]
        assert "exit code 3" in m["message"], m
        assert [d["state"] for d in m["deliveries"]] == ["Delivered", "Delivered"]

        assert receiver.ids() == [m["id"]]
        got = receiver.received[0]
        assert got.path == "/hook/t0ken"
        stamp = got.headers["x-t9k-timestamp"]
        mac = hmac.new(KEY.encode(), stamp.encode() + b"." + got.body, hashlib.sha256)
        assert got.headers["x-t9k-signature"] == "v1=" + mac.hexdigest()
        doc = json.loads(got.body)
        assert doc["schema"] == "notifications.tensorstack.dev/v1"
        assert doc["event"] == "failed"
        assert doc["job"]["kind"] == "PyTorchTrainingJob"
        assert doc["job"]["namespace"] == ns and doc["job"]["name"] == "broke"
        assert doc["job"]["phase"] == "Failed"
        assert doc["job"]["url"] == f"https://console.example/{ns}/pytorchtrainingjobs/broke"
        assert isinstance(doc["job"]["durationSeconds"], int)
        assert "exit code 3" in doc["message"]

        assert len(smtp.messages) == 1
        sender, rcpts, raw = smtp.messages[0]
        mail = email.message_from_bytes(raw, policy=email.policy.default)
        assert (sender, rcpts) == ("t9k@example.com", ["owner@example.com"])
        assert mail["Subject"] == f"[t9k] Failed: PyTorchTrainingJob {ns}/broke"
        assert mail["X-T9k-Delivery"] == m["id"]
        assert KEY not in raw.decode(errors="replace")

        # t9k describe shows the deliveries.
        out = io.StringIO()
        argv = ["--kubeconfig", str(cluster.kubeconfig), "-n", ns, "describe", "broke"]
        with contextlib.redirect_stdout(out):
            assert t9k_main(argv) == 0, out.getvalue()
        shown = out.getvalue()
        assert "Notifications:" in shown, shown
        assert (
            f"failed at {m['time']}: Delivered; {ns}/hook Delivered (1 attempt), "
            f"{ns}/mail Delivered (1 attempt)"
        ) in shown, shown

        # A restarted operator reads the record: nothing is sent again.
        operator.kill()
        again = start_operator(*ARGS)
        again.wait_ready()
        time.sleep(12)  # past the deliverer's first pass over every job
        assert receiver.ids() == [m["id"]]
        assert len(smtp.messages) == 1
        assert KEY not in again.logs() and "t0ken" not in again.logs()
        events = jobs.events("broke")
        assert [e for e in events if e[1] == "NotificationSent"], events
    finally:
        smtp.close()


def test_killed_mid_delivery_the_message_is_delivered_after_a_restart(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    receiver.script.hold = threading.Event()
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    operator = start_operator(*ARGS)
    operator.wait_ready()
    submit(jobs, "cut", "hook")
    end(jobs, kubelet, "cut")
    eventually(receiver.ids, 30, "the first try to reach the receiver")
    operator.kill()  # while the receiver holds its answer
    assert message(jobs, "cut")["state"] == "Pending"
    receiver.script.hold.set()
    receiver.script.hold = None
    again = start_operator(*ARGS)
    again.wait_ready()
    try:
        m = eventually(delivered(jobs, "cut"), 60, "the message delivered after the restart")
    except AssertionError:
        raise AssertionError(f"{message(jobs, 'cut')}\n{again.logs()}") from None
    # The one message, under its one delivery id (a receiver dedupes on it).
    assert set(receiver.ids()) == {m["id"]}
    assert len(receiver.ids()) == 2
    assert m["deliveries"][0]["attempts"] == 1


def test_an_endpoint_down_then_up_and_a_429_with_retry_after(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    port = free_port()  # nothing listens there yet
    url = f"http://127.0.0.1:{port}/hook/t0ken"
    endpoint(admin, jobs.namespace, "later", type="webhook", url=url, secret=KEY)
    operator = start_operator(*ARGS)
    operator.wait_ready()
    submit(jobs, "down", "later")
    end(jobs, kubelet, "down")
    eventually(lambda: "a try failed" in operator.logs(), 30, "a failed try")
    time.sleep(5)
    assert message(jobs, "down")["state"] == "Pending"
    receiver = HttpReceiver(port)
    try:
        receiver.script.answers = [(429, {"Retry-After": "4"})]
        m = eventually(delivered(jobs, "down"), 90, "the message delivered once it is up")
        assert m["deliveries"][0]["attempts"] >= 3  # refused, 429, then taken
        first, second = receiver.received[0], receiver.received[1]
        assert second.at - first.at >= 3.9, "the 429's Retry-After was waited out"
        assert set(receiver.ids()) == {m["id"]}
        assert operator.metric("t9k_notifications_total", {"result": "retried"}) >= 2
    finally:
        receiver.close()


def test_a_missing_endpoint_is_a_warning_naming_the_annotation(
    jobs: Jobs, start_operator: Callable[..., OperatorProcess]
) -> None:
    operator = start_operator(*ARGS)
    operator.wait_ready()
    submit(jobs, "lost", "nowhere")
    warning = jobs.wait_event("lost", "NotificationsMisconfigured")
    assert warning[0] == "Warning"
    assert "annotation notifications.tensorstack.dev/to: no endpoint nowhere" in warning[2]
    problems = jobs.status("lost")["notifications"]["problems"]
    assert problems == [
        f"annotation notifications.tensorstack.dev/to: no endpoint nowhere in namespace "
        f"{jobs.namespace} (a Secret labelled notifications.tensorstack.dev/endpoint=true)"
    ]
    time.sleep(3)
    told = [e for e in jobs.events("lost") if e[1] == "NotificationsMisconfigured"]
    assert len(told) == 1, told  # told once, not on every reconcile


def test_the_administrators_default_endpoint_hears_of_every_job(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The operator's namespace, as a pod's would be: where the administrator's
    # endpoints are.
    monkeypatch.setenv("POD_NAMESPACE", OPERATOR_NAMESPACE)
    name = f"default-{jobs.namespace}"[:63]
    admin.create(
        SECRETS,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": OPERATOR_NAMESPACE,
                "labels": {
                    "notifications.tensorstack.dev/endpoint": "true",
                    "notifications.tensorstack.dev/default": "true",
                },
            },
            "stringData": {"type": "slack", "url": receiver.url, "on": "succeeded"},
        },
    )
    try:
        operator = start_operator(*ARGS)
        operator.wait_ready()
        jobs.create(pytorch_job("plain", [("master", 1, "Never")]))  # names no endpoint
        end(jobs, kubelet, "plain")
        m = eventually(delivered(jobs, "plain"), 60, "the default endpoint told")
        assert m["to"] == [f"{OPERATOR_NAMESPACE}/{name}"]
        assert len(receiver.received) == 1
        body = json.loads(receiver.received[0].body)
        assert set(body) == {"text"}  # Slack's incoming-webhook payload
        assert body["text"].startswith(
            f"[t9k] Succeeded: PyTorchTrainingJob {jobs.namespace}/plain"
        )
    finally:
        admin.delete(SECRETS, name, OPERATOR_NAMESPACE)


def test_a_disruption_and_a_whole_job_restart_are_told(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    operator = start_operator(*ARGS)
    operator.wait_ready()
    body = pytorch_job("whole", [("master", 1, "OnFailure"), ("worker", 1, "OnFailure")])
    body["spec"]["runPolicy"] = {"restartScope": "Job"}
    body["metadata"]["annotations"] = {
        "notifications.tensorstack.dev/to": "hook",
        "notifications.tensorstack.dev/on": "preempted,restarted",
    }
    jobs.create(body)
    names = ["whole-master-0", "whole-worker-0"]
    pods = jobs.wait_pods("whole", names)
    for name in names:
        kubelet.run(jobs.namespace, name)
    jobs.wait_phase("whole", "Running")
    kubelet.evict(jobs.namespace, "whole-worker-0")
    jobs.wait_new_pod("whole", "whole-worker-0", pods["whole-worker-0"]["metadata"]["uid"], 30)

    def told(event: str) -> Callable[[], dict[str, Any] | None]:
        def check() -> dict[str, Any] | None:
            for r in receiver.received:
                doc = json.loads(r.body)
                if doc["event"] == event:
                    return dict(doc)
            return None

        return check

    preempted = eventually(told("preempted"), 60, "the disruption told")
    assert preempted["reason"] == "Disrupted"
    assert "whole-worker-0" in preempted["message"]

    pods = jobs.wait_pods("whole", names)
    for name in names:
        kubelet.run(jobs.namespace, name)
    kubelet.fail(jobs.namespace, "whole-master-0", exit_code=2)
    restarted = eventually(told("restarted"), 60, "the whole job's restart told")
    assert restarted["reason"] == "Restarting"
    assert "(exit code 2)" in restarted["message"] and "restart 1" in restarted["message"]
    assert sorted(json.loads(r.body)["event"] for r in receiver.received) == [
        "preempted",
        "restarted",
    ]


def test_a_dead_endpoint_is_given_up_with_a_warning_and_a_metric(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    url = f"http://127.0.0.1:{free_port()}/hook/t0ken"  # nothing listens there
    endpoint(admin, jobs.namespace, "dead", type="webhook", url=url, secret=KEY)
    operator = start_operator(*ARGS, "--notification-give-up", "6s")
    operator.wait_ready()
    submit(jobs, "lonely", "dead")
    end(jobs, kubelet, "lonely")
    warning = jobs.wait_event("lonely", "NotificationFailed", timeout=60)
    assert warning[0] == "Warning"
    assert warning[2].startswith(f"gave up telling {jobs.namespace}/dead of succeeded")
    assert "cannot reach the endpoint" in warning[2]
    assert "t0ken" not in warning[2]
    m = message(jobs, "lonely")
    assert m["state"] == "Failed"
    assert m["deliveries"][0]["state"] == "GaveUp"
    assert m["deliveries"][0]["attempts"] >= 3
    assert operator.metric("t9k_notifications_total", {"result": "gave_up"}) == 1
    assert "t0ken" not in operator.logs()


def test_feishu_dingtalk_and_wecom_get_their_own_payloads(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    base = f"http://127.0.0.1:{receiver.port}"
    ns = jobs.namespace
    endpoint(admin, ns, "fs", type="feishu", url=f"{base}/feishu", secret="fs-sec")
    endpoint(admin, ns, "dt", type="dingtalk", url=f"{base}/ding?access_token=t", secret="dt-sec")
    endpoint(admin, ns, "wc", type="wecom", url=f"{base}/wecom?key=k")
    operator = start_operator(*ARGS)
    operator.wait_ready()
    submit(jobs, "chat", "fs,dt,wc")
    end(jobs, kubelet, "chat")
    eventually(delivered(jobs, "chat"), 60, "the message delivered to the three")
    got = {r.path.split("?")[0]: r for r in receiver.received}
    assert sorted(got) == ["/ding", "/feishu", "/wecom"]
    head = f"[t9k] Succeeded: PyTorchTrainingJob {ns}/chat"

    feishu = json.loads(got["/feishu"].body)
    assert feishu["msg_type"] == "text" and feishu["content"]["text"].startswith(head)
    stamp = feishu["timestamp"]
    key = f"{stamp}\nfs-sec".encode()
    assert feishu["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()

    query = parse_qs(urlsplit(got["/ding"].path).query)
    assert query["access_token"] == ["t"]
    signed = f"{query['timestamp'][0]}\ndt-sec".encode()
    mac = hmac.new(b"dt-sec", signed, hashlib.sha256).digest()
    assert query["sign"] == [base64.b64encode(mac).decode()]
    ding = json.loads(got["/ding"].body)
    assert ding["msgtype"] == "text" and ding["text"]["content"].startswith(head)

    wecom = json.loads(got["/wecom"].body)
    assert wecom["msgtype"] == "text" and wecom["text"]["content"].startswith(head)


def test_a_leader_change_mid_delivery_sends_under_the_same_id_and_records_once(
    admin: KubeClient,
    jobs: Jobs,
    kubelet: Kubelet,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    lease = f"test-notify-{int(time.time())}"
    args = (*ARGS, "--leader-elect", f"--leader-election-id={lease}", *FAST_ELECTION)
    a, b = start_operator(*args), start_operator(*args)
    a.wait_ready()
    b.wait_ready()
    eventually(lambda: leader_status(a, lease) + leader_status(b, lease) == 1, 30, "a leader")
    leader, standby = (a, b) if leader_status(a, lease) == 1 else (b, a)
    receiver.script.hold = threading.Event()
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    submit(jobs, "handover", "hook")
    end(jobs, kubelet, "handover")
    eventually(receiver.ids, 30, "the leader's try to reach the receiver")
    time.sleep(2)
    assert len(receiver.ids()) == 1  # the standby sends nothing
    leader.kill()
    receiver.script.hold.set()
    receiver.script.hold = None
    eventually(lambda: leader_status(standby, lease) == 1, 30, "the standby to lead")
    m = eventually(delivered(jobs, "handover"), 60, "the new leader to deliver it")
    assert set(receiver.ids()) == {m["id"]}
    assert len(receiver.ids()) == 2
    time.sleep(12)  # past the new leader's next pass over every job
    assert len(receiver.ids()) == 2
    assert [d["endpoint"] for d in message(jobs, "handover")["deliveries"]] == [
        f"{jobs.namespace}/hook"
    ]


def test_a_job_that_never_fits_is_told_past_the_threshold_its_submitter_chose(
    admin: KubeClient,
    jobs: Jobs,
    receiver: HttpReceiver,
    start_operator: Callable[..., OperatorProcess],
) -> None:
    endpoint(admin, jobs.namespace, "hook", type="webhook", url=receiver.url, secret=KEY)
    operator = start_operator(*ARGS)
    operator.wait_ready()
    body = pytorch_job("huge", [("worker", 2, "Never")])
    container = body["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": "16"}}  # a node has 8
    body["metadata"]["annotations"] = {
        "notifications.tensorstack.dev/to": "hook",
        "notifications.tensorstack.dev/start-estimate-over": "30m",
    }
    jobs.create(body)
    m = eventually(delivered(jobs, "huge"), 60, "the late start told")
    assert m["event"] == "start-estimate"
    assert m["message"].startswith("the job never starts as it is: "), m
    doc = json.loads(receiver.received[0].body)
    assert doc["event"] == "start-estimate" and doc["job"]["phase"] == "Pending"
    time.sleep(5)
    assert len(receiver.ids()) == 1  # told once, however often it is estimated again
