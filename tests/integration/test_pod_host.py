"""The pod host (tests/integration/podhost/) against what kubelet and the
container runtime give a pod, so the launch-path tests run the operator's pods
as a cluster would:

* runc's default /dev, no host devices, and the pod's ``/dev/shm``: one
  64 MiB tmpfs per pod, mounted into each of its containers (containerd's
  CRI), never the host's;
* one IPC namespace per pod, shared by its containers (the CRI sandbox's),
  and a UTS namespace with the pod's hostname;
* ``securityContext``: ``runAsUser``/``runAsGroup``/``supplementalGroups``/
  ``fsGroup`` (and ``fsGroup``'s ownership of the pod's volumes), the
  container's settings over the pod's;
* ``envFrom`` from ConfigMaps and Secrets, with ``prefix``, before ``env``;
  ``env`` from a Secret's key (``secretKeyRef``), an optional missing one left
  unset;
* projected ServiceAccount tokens: real ones from the cluster's API server
  (TokenRequest), for the projection's audience, bound to the pod, with
  kubelet's file modes;
* a Service whose endpoint is a process of this machine (the operator's, in
  these tests), reached from a pod by the Service's names;
* the pod's lifecycle: container statuses in kubelet's order and the
  ``PodInitializing`` wait, native sidecars started in order and stopped
  after the regular containers, graceful deletion (SIGTERM, then SIGKILL
  after the grace period) with a terminal phase while the pod is still being
  deleted, and a log of each container's own.
"""

from __future__ import annotations

import base64
import http.server
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from t9k_operator.kube import KubeClient
from t9k_operator.resources import CONFIGMAPS, PODS
from tests.integration.podhost import Node
from tests.integration.podhost.host import ENTRY, PodFailed, container_process

SLEEP = ["sleep", "600"]
AUDIENCE = "t9k-test-audience"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    n = Node(
        tmp_path,
        objects=[
            {"kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"A": "1", "B": "2"}},
            {
                "kind": "Secret",
                "metadata": {"name": "creds"},
                "data": {"TOKEN": base64.b64encode(b"s3cret").decode()},
            },
        ],
    )
    yield n
    n.close()


@pytest.fixture
def api_node(tmp_path: Path, admin: KubeClient, namespace: str) -> Iterator[Node]:
    """A node whose kubelet talks to the test cluster's API server."""
    root_ca = admin.get(CONFIGMAPS, "kube-root-ca.crt", namespace)
    n = Node(tmp_path, namespace, [root_ca], client=admin)
    yield n
    n.close()


def pod(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"hostname": name, "containers": containers, **spec},
    }


def sh(node_pod: Any, container: str, script: str) -> str:
    out = node_pod.exec(container, ["sh", "-c", script])
    assert out.returncode == 0, out.stderr
    return str(out.stdout).strip()


def test_dev_shm_is_the_runtimes_64_mib_and_no_host_device_shows(node: Node) -> None:
    run = node.run_pod(pod("shm", [{"name": "c", "image": "x", "command": SLEEP}]))
    # 64 MiB = 65536 KiB, as df reports a tmpfs's size.
    assert sh(run, "c", "df -k /dev/shm | tail -1 | awk '{print $2}'") == "65536"
    assert sh(run, "c", "stat -f -c %T /dev/shm") == "tmpfs"
    devices = set(sh(run, "c", "ls /dev").split())
    assert {"null", "zero", "random", "urandom", "tty", "shm", "pts", "ptmx"} <= devices
    assert not devices & {"sda", "vda", "kvm", "loop0", "mem"}
    assert sh(run, "c", "touch /sys/x 2>&1 || echo read-only").endswith("read-only")


def test_a_pods_containers_share_one_ipc_namespace_and_its_hostname(node: Node) -> None:
    both = [{"name": n, "image": "x", "command": SLEEP} for n in ("a", "b")]
    first = node.run_pod(pod("ipc", both))
    other = node.run_pod(pod("other", [{"name": "a", "image": "x", "command": SLEEP}]))
    ipc = {c: sh(first, c, "readlink /proc/self/ns/ipc") for c in ("a", "b")}
    assert ipc["a"] == ipc["b"]
    assert sh(other, "a", "readlink /proc/self/ns/ipc") != ipc["a"]
    # Shared memory made by one container is seen by the other, as in a pod.
    sh(first, "a", "echo hello > /dev/shm/x")
    assert sh(first, "b", "cat /dev/shm/x") == "hello"
    assert {sh(first, c, "hostname") for c in ("a", "b")} == {"ipc"}
    # Mount and PID namespaces stay per container.
    assert sh(first, "a", "readlink /proc/self/ns/pid") != sh(
        first, "b", "readlink /proc/self/ns/pid"
    )


def test_security_context_user_groups_and_fs_group(node: Node) -> None:
    containers = [
        {"name": "pod-level", "image": "x", "command": SLEEP},
        {
            "name": "own",
            "image": "x",
            "command": SLEEP,
            "securityContext": {"runAsUser": 2000, "runAsGroup": 3000},
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        },
    ]
    run = node.run_pod(
        pod(
            "sc",
            containers,
            securityContext={"runAsUser": 1234, "supplementalGroups": [4000], "fsGroup": 5000},
            volumes=[{"name": "scratch", "emptyDir": {}}],
        )
    )
    assert sh(run, "pod-level", "id -u; id -g; id -G").split() == ["1234", "0", "0", "4000", "5000"]
    assert sh(run, "own", "id -u; id -g").split() == ["2000", "3000"]
    # fsGroup owns the volume: group 5000, setgid, and a new file inherits it.
    assert sh(run, "own", "stat -c '%g %A' /scratch") == "5000 drwxrwsrwx"
    assert sh(run, "own", "touch /scratch/f && stat -c %g /scratch/f") == "5000"
    # A non-root user has no capabilities: root's files stay closed to it.
    assert "Permission denied" in run.exec("own", ["cat", "/etc/shadow"]).stderr
    assert sh(run, "own", "echo $HOME") == "/"


def test_run_as_non_root_refuses_a_root_container(node: Node) -> None:
    with pytest.raises(PodFailed, match="runAsNonRoot"):
        node.run_pod(
            pod(
                "nonroot",
                [{"name": "c", "image": "x", "command": SLEEP}],
                securityContext={"runAsNonRoot": True},
            )
        )


def test_env_from_config_maps_and_secrets_then_env(node: Node) -> None:
    container = {
        "name": "c",
        "image": "x",
        "command": SLEEP,
        "envFrom": [
            {"configMapRef": {"name": "settings"}},
            {"secretRef": {"name": "creds"}, "prefix": "APP_"},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        "env": [{"name": "B", "value": "from-env $(A)"}],
    }
    run = node.run_pod(pod("envfrom", [container]))
    assert sh(run, "c", 'echo "$A|$B|$APP_TOKEN"') == "1|from-env 1|s3cret"
    with pytest.raises(PodFailed, match="configmap missing not found"):
        node.run_pod(
            pod(
                "envfrom-missing",
                [{**container, "envFrom": [{"configMapRef": {"name": "missing"}}]}],
            )
        )


def test_env_from_a_secrets_key_and_an_optional_key_left_unset(node: Node) -> None:
    """As kubelet resolves ``secretKeyRef``: the key's value; an optional key or
    Secret that is missing leaves the variable unset; a required one that is
    missing fails the container (CreateContainerConfigError)."""
    ref = {"name": "creds", "key": "TOKEN"}
    container = {
        "name": "c",
        "image": "x",
        "command": SLEEP,
        "env": [
            {"name": "T", "valueFrom": {"secretKeyRef": ref}},
            {"name": "U", "valueFrom": {"secretKeyRef": {**ref, "key": "NONE", "optional": True}}},
            {
                "name": "V",
                "valueFrom": {"secretKeyRef": {"name": "gone", "key": "K", "optional": True}},
            },
        ],
    }
    run = node.run_pod(pod("secretkey", [container]))
    assert sh(run, "c", 'echo "$T|${U-unset}|${V-unset}"') == "s3cret|unset|unset"
    for name, missing, message in [
        ("secretkey-nokey", {**ref, "key": "NONE"}, "couldn't find key NONE in Secret creds"),
        ("secretkey-nosecret", {"name": "gone", "key": "K"}, 'secret "gone" not found'),
    ]:
        env = [{"name": "T", "valueFrom": {"secretKeyRef": missing}}]
        with pytest.raises(PodFailed, match=message):
            node.run_pod(pod(name, [{**container, "env": env}]))


def token_review(admin: KubeClient, token: str, audiences: list[str]) -> dict[str, Any]:
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences},
    }
    status: dict[str, Any] = admin.request(
        "POST", "/apis/authentication.k8s.io/v1/tokenreviews", body=body
    )["status"]
    return status


def token_pod(name: str, **spec: Any) -> dict[str, Any]:
    """A pod with a projected token for AUDIENCE and a CA, as the operator's
    replicas get them."""
    container = {
        "name": "c",
        "image": "x",
        "command": SLEEP,
        "volumeMounts": [{"name": "progress", "mountPath": "/var/run/t9k", "readOnly": True}],
    }
    sources = [
        {"serviceAccountToken": {"audience": AUDIENCE, "expirationSeconds": 3600, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    ]
    return pod(
        name, [container], volumes=[{"name": "progress", "projected": {"sources": sources}}], **spec
    )


def test_a_projected_token_is_the_api_servers_bound_to_the_pod(
    api_node: Node, admin: KubeClient, namespace: str
) -> None:
    created = admin.create(PODS, token_pod("tok"), namespace)
    run = api_node.run_pod(created)
    token = sh(run, "c", "cat /var/run/t9k/token")
    # The projected volume's defaultMode (0644, the API's default).
    assert sh(run, "c", "stat -L -c %a /var/run/t9k/token") == "644"
    assert sh(run, "c", "head -1 /var/run/t9k/ca.crt") == "-----BEGIN CERTIFICATE-----"
    review = token_review(admin, token, [AUDIENCE])
    assert review.get("authenticated") is True, review
    assert review["audiences"] == [AUDIENCE]
    user = review["user"]
    assert user["username"] == f"system:serviceaccount:{namespace}:default"
    assert user["extra"]["authentication.kubernetes.io/pod-name"] == ["tok"]
    assert user["extra"]["authentication.kubernetes.io/pod-uid"] == [created["metadata"]["uid"]]
    # For its audience only.
    assert not token_review(admin, token, ["some-other-audience"]).get("authenticated")
    # The ServiceAccount volume the API server's admission added has a real
    # token too, for the API server's own audience.
    admitted = sh(run, "c", "cat /var/run/secrets/kubernetes.io/serviceaccount/token")
    assert token_review(admin, admitted, []).get("authenticated") is True


def test_a_token_for_a_pod_with_a_user_and_fs_group_is_0640_and_theirs(
    api_node: Node, admin: KubeClient, namespace: str
) -> None:
    spec = {"securityContext": {"runAsUser": 1234, "fsGroup": 5000}}
    created = admin.create(PODS, token_pod("tok-fs", **spec), namespace)
    run = api_node.run_pod(created)
    # kubelet writes it 0600 for the FsUser, and fsGroup's ownership adds g+r.
    assert sh(run, "c", "stat -L -c '%a %u %g' /var/run/t9k/token") == "640 1234 5000"
    token = sh(run, "c", "cat /var/run/t9k/token")
    assert token_review(admin, token, [AUDIENCE]).get("authenticated") is True


FETCH = (
    "import sys, urllib.request; "
    "print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"
)


class Pong(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = f"pong {self.path} from {self.client_address[0]}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def host_server() -> Iterator[int]:
    """A plain HTTP server of this machine's, on 0.0.0.0: its port."""
    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Pong)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def host_links() -> str:
    return subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout


def test_a_service_whose_endpoint_is_this_machine_is_reached_by_its_names(
    tmp_path: Path, host_server: int
) -> None:
    service = "t9k-operator-progress.t9k-system"
    first = Node(tmp_path / "a", "demo", host_services=[service])
    other = Node(tmp_path / "b", "demo", host_services=[service])
    try:
        assert first.host_address and other.host_address
        # Two nodes at once (as two test workers may have): no shared network.
        assert first.net != other.net
        run = first.run_pod(pod("client", [{"name": "c", "image": "x", "command": SLEEP}]))
        for name in (f"{service}.svc", f"{service}.svc.cluster.local"):
            url = f"http://{name}:{host_server}/progress"
            out = run.exec("c", ["python3", "-c", FETCH, url])
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == f"pong /progress from {run.ip}"
        hosts = sh(run, "c", "cat /etc/hosts")
        assert f"{first.host_address}\t{service}.svc.cluster.local\t{service}.svc" in hosts
        other_run = other.run_pod(pod("client", [{"name": "c", "image": "x", "command": SLEEP}]))
        out = other_run.exec("c", ["python3", "-c", FETCH, f"http://{service}.svc:{host_server}/"])
        assert out.returncode == 0, out.stderr
    finally:
        first.close()
        other.close()
    # Nothing is left in this machine's network.
    assert first.host_link not in host_links()
    assert other.host_link not in host_links()


# ------------------------------------------------------------ the pod's lifecycle

# A process that leaves on SIGTERM, as a program with a handler does: it exits
# 128+15. (A container's first process is pid 1 of its PID namespace: the
# kernel gives it no signal it has no handler for, so a bare ``sleep`` never
# sees SIGTERM and is SIGKILLed at the end of the grace period.)
TRAPS_TERM = "trap 'exit 143' TERM"
LEAVES_ON_TERM = f"{TRAPS_TERM}; sleep 600 & wait"


def until(check: Any, timeout: float = 30, every: float = 0.1) -> Any:
    """``check()``'s first true value, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not so after {timeout}s: {check}")


def states(statuses: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """Each status's name, state and the state's reason or exit code."""
    out = []
    for s in statuses:
        (kind, detail), *_ = s["state"].items()
        out.append((s["name"], kind, detail.get("exitCode", detail.get("reason"))))
    return out


WAIT_FOR_GO = "until [ -e /work/go ]; do sleep 0.1; done"


def shared(*extra: Any) -> dict[str, Any]:
    return {"volumeMounts": [{"name": "work", "mountPath": "/work"}], **dict(extra)}


def test_init_statuses_keep_spec_order_and_the_others_wait_pod_initializing(node: Node) -> None:
    init = [
        {"name": "zeta", "image": "x", "command": ["true"], **shared()},
        {"name": "alpha", "image": "x", "command": ["sh", "-c", WAIT_FOR_GO], **shared()},
    ]
    containers = [{"name": n, "image": "x", "command": SLEEP} for n in ("b", "a")]
    run = node.start_pod(
        pod("init", containers, initContainers=init, volumes=[{"name": "work", "emptyDir": {}}])
    )
    until(lambda: states(run.status()["initContainerStatuses"])[1][1] == "running")
    status = run.status()
    assert status["phase"] == "Pending"
    # Init containers in the spec's order (zeta before alpha), the others by name.
    assert states(status["initContainerStatuses"]) == [
        ("zeta", "terminated", 0),
        ("alpha", "running", None),
    ]
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert states(status["containerStatuses"]) == [
        ("a", "waiting", "PodInitializing"),
        ("b", "waiting", "PodInitializing"),
    ]
    (run.dir / "volumes" / "work" / "go").touch()
    until(lambda: run.status()["phase"] == "Running")
    status = run.status()
    assert [s["name"] for s in status["initContainerStatuses"]] == ["zeta", "alpha"]
    assert states(status["containerStatuses"]) == [("a", "running", None), ("b", "running", None)]


def test_native_sidecars_start_in_order_run_beside_and_stop_after_the_others(node: Node) -> None:
    side = {
        "name": "side",
        "image": "x",
        "restartPolicy": "Always",
        "command": [
            "sh",
            "-c",
            f"echo side >> /work/order; {TRAPS_TERM}; touch /work/up; sleep 600 & wait",
        ],
        # The next init container waits for this, as kubelet waits for a
        # sidecar's startupProbe.
        "startupProbe": {"exec": {"command": ["test", "-e", "/work/up"]}, "periodSeconds": 1},
        **shared(),
    }
    idle = {"name": "idle", "image": "x", "restartPolicy": "Always", "command": SLEEP}
    check = {"name": "check", "image": "x", "command": ["sh", "-c", "echo check >> /work/order"],
             **shared()}  # fmt: skip
    main = {
        "name": "main",
        "image": "x",
        "command": ["sh", "-c", "echo main >> /work/order; sleep 2"],
    }
    main.update(shared())
    run = node.run_pod(
        pod(
            "sidecars",
            [main],
            initContainers=[side, idle, check],
            volumes=[{"name": "work", "emptyDir": {}}],
            restartPolicy="Never",
            terminationGracePeriodSeconds=2,
        )
    )
    status = run.status()
    assert status["phase"] == "Running"
    assert states(status["initContainerStatuses"]) == [
        ("side", "running", None),
        ("idle", "running", None),
        ("check", "terminated", 0),
    ]
    assert all(s["started"] for s in status["initContainerStatuses"][:2])
    assert run.wait("main", 30) == 0
    # The sidecars are stopped once the regular containers have exited: the
    # one that leaves on SIGTERM ends 143, the one that cannot (a bare pid 1)
    # is SIGKILLed after the grace period.
    assert run.wait("side", 30) == 143
    assert run.wait("idle", 30) == 137
    # After main, in the reverse of their order: idle (SIGKILLed after the
    # grace period) before side.
    ended = {n: c.finished_at for n, c in run.containers.items() if c.finished_at}
    assert sorted(ended, key=ended.__getitem__)[-3:] == ["main", "idle", "side"]
    until(lambda: run.status()["phase"] == "Succeeded")
    status = run.status()
    assert states(status["initContainerStatuses"]) == [
        ("side", "terminated", 143),
        ("idle", "terminated", 137),
        ("check", "terminated", 0),
    ]
    assert status["initContainerStatuses"][0]["state"]["terminated"]["reason"] == "Error"
    order = (run.dir / "volumes" / "work" / "order").read_text().split()
    assert order == ["side", "check", "main"]


def test_deletion_sends_sigterm_then_sigkill_after_the_grace_period(node: Node) -> None:
    containers = [
        {"name": "leaves", "image": "x", "command": ["sh", "-c", LEAVES_ON_TERM]},
        {"name": "stays", "image": "x", "command": SLEEP},
    ]
    run = node.run_pod(pod("graceful", containers, terminationGracePeriodSeconds=3))
    # A shell's SIGTERM that comes before its trap is set is dropped (it is
    # the PID namespace's init), as under kubelet; the deletion waits for it.
    until(lambda: run.handles("leaves", signal.SIGTERM), timeout=10)
    start = time.monotonic()
    run.delete()
    assert run.deletion_timestamp is not None
    assert run.wait("leaves", 10) == 143
    assert time.monotonic() - start < 2.5
    assert run.wait("stays", 10) == 137
    assert time.monotonic() - start >= 3
    # Still being deleted (kubelet's last status comes before the API
    # server removes the pod), yet already terminal.
    until(lambda: run.status()["phase"] == "Failed")
    terminated = {s["name"]: s["state"]["terminated"] for s in run.status()["containerStatuses"]}
    assert {n: (t["exitCode"], t["reason"]) for n, t in terminated.items()} == {
        "leaves": (143, "Error"),
        "stays": (137, "Error"),
    }
    assert run.deletion_timestamp is not None


def test_exec_waits_for_the_container_root_even_across_an_execve(tmp_path: Path) -> None:
    # A pid 1 that never gets past the runtime's set-up: it execs itself
    # over and over, entry.py in its arguments. Inside each execve the
    # kernel shows its command line empty; a check of the command line alone
    # then takes it for the container's process, and an exec into it would
    # see this machine's root and /etc/hosts.
    loop = tmp_path / "loop.sh"
    loop.write_text(f'exec /bin/sh {loop} "$1"\n')
    argv = ["unshare", "--pid", "--fork", "--kill-child", "--", "/bin/sh", str(loop), str(ENTRY)]
    proc = subprocess.Popen(argv)
    try:
        assert container_process(proc.pid, timeout=3) is None
    finally:
        proc.kill()  # and with it (--kill-child) the loop
        proc.wait()


def test_each_container_logs_its_own_stdout_and_stderr(node: Node) -> None:
    def talker(name: str, then: str) -> dict[str, Any]:
        script = f"echo out-{name}; echo err-{name} >&2; {then}"
        return {"name": name, "image": "x", "command": ["sh", "-c", script]}

    containers = [talker("a", "exec sleep 600"), talker("b", "exec sleep 600")]
    run = node.run_pod(pod("logs", containers, initContainers=[talker("i", "true")]))
    assert run.wait("i", 10) == 0
    for name in ("i", "a", "b"):
        until(lambda name=name: f"err-{name}" in run.logs(name), timeout=10)
        assert run.logs(name) == f"out-{name}\nerr-{name}\n"
