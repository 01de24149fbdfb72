#!/usr/bin/env python3
"""`make demo`: the operator doing its job on a local cluster.

1. Starts the local cluster (hack/cluster; builds the binaries the first
   time, about 6 minutes on 2 cores, then seconds).
2. Installs the CRDs and the operator's RBAC.
3. Runs the operator as its own ServiceAccount, with leader election on.
4. Submits the sample jobs in manifests/samples/ (if any) and shows them
   with kubectl until they finish.
5. Ctrl-C (or the end with --once) stops the operator gracefully and tears
   the cluster down; nothing is left running.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from hack.cluster import Cluster

ROOT = Path(__file__).resolve().parents[1]


def say(msg: str) -> None:
    print(f"\n\033[1m==> {msg}\033[0m" if sys.stdout.isatty() else f"\n==> {msg}", flush=True)


class Demo:
    def __init__(self, name: str) -> None:
        self.name = name
        # The first demo builds the binaries: the cluster's log shows it.
        self.cluster = Cluster(name, build=True, echo=True)
        self.operator: subprocess.Popen[bytes] | None = None
        self.tmp = Path(tempfile.mkdtemp(prefix="t9k-demo-"))

    def kubectl(self, *args: str, check: bool = True, capture: bool = False) -> str:
        proc = self.cluster.kubectl(*args, check=False, capture=capture)
        if check and proc.returncode != 0:
            raise SystemExit(f"kubectl {' '.join(args)} failed:\n{proc.stderr or ''}")
        return proc.stdout or ""

    def up(self) -> None:
        say(f"starting the local cluster {self.name!r}")
        self.cluster.up()
        print(self.kubectl("get", "nodes", capture=True))

    def install(self) -> None:
        crds = sorted((ROOT / "manifests" / "crds").glob("*.yaml"))
        if crds:
            say("installing the CRDs")
            self.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "crds"))
            self.kubectl(
                "wait",
                "--for=condition=Established",
                "--timeout=60s",
                "crd",
                "-l",
                "app.kubernetes.io/part-of=t9k-operator",
            )
        say("installing the operator's ServiceAccount and least-privilege RBAC")
        self.kubectl("apply", "--server-side", "-f", str(ROOT / "manifests" / "rbac"))

    def start_operator(self) -> None:
        say("running the operator as system:serviceaccount:t9k-system:t9k-operator")
        token = self.kubectl(
            "create", "token", "t9k-operator", "-n", "t9k-system", "--duration=24h", capture=True
        ).strip()
        sa_kubeconfig = self.cluster.token_kubeconfig(self.tmp / "operator.kubeconfig", token)
        self.log_path = self.tmp / "operator.log"
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.operator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "t9k_operator",
                "--kubeconfig",
                str(sa_kubeconfig),
                "--leader-elect",
                "--metrics-bind-address",
                "127.0.0.1:18080",
                "--health-probe-bind-address",
                "127.0.0.1:18081",
            ],
            cwd=ROOT,
            env=env,
            stdout=open(self.log_path, "ab"),  # noqa: SIM115 - the child owns it
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.operator.poll() is not None:
                raise SystemExit(f"the operator exited:\n{self.log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen("http://127.0.0.1:18081/readyz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.3)
        print(f"operator ready: /metrics on 127.0.0.1:18080, logs in {self.log_path}")
        print(self.kubectl("get", "lease", "-n", "t9k-system", capture=True))

    def run_samples(self) -> None:
        samples = sorted((ROOT / "manifests" / "samples").glob("*.yaml"))
        if not samples:
            say("no sample jobs yet: the operator is running and leading; Ctrl-C to stop")
            return
        say("submitting the sample jobs")
        for sample in samples:
            self.kubectl("apply", "-f", str(sample))
        say("watching them (what `kubectl get t9k` shows)")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            out = self.kubectl("get", "t9k", "-o", "wide", check=False, capture=True)
            print(out, flush=True)
            phases = self.kubectl(
                "get", "t9k", "-o", "jsonpath={.items[*].status.phase}", check=False, capture=True
            ).split()
            if phases and all(p in ("Succeeded", "Failed") for p in phases):
                say("every sample job has finished; its pods and Events:")
                print(
                    self.kubectl(
                        "get",
                        "pods",
                        "-l",
                        "app.kubernetes.io/managed-by=t9k-operator",
                        capture=True,
                        check=False,
                    )
                )
                print(
                    self.kubectl(
                        "get",
                        "events",
                        "--field-selector",
                        "source=t9k-operator",  # the operator's Events, MSJobs' too
                        capture=True,
                        check=False,
                    )
                )
                return
            time.sleep(3)

    def stop(self) -> None:
        if self.operator is not None and self.operator.poll() is None:
            say("stopping the operator (SIGTERM: drain, release the lease)")
            self.operator.send_signal(signal.SIGTERM)
            try:
                code = self.operator.wait(40)
                print(f"operator exited with {code}")
            except subprocess.TimeoutExpired:
                self.operator.kill()
        say(f"tearing down the cluster {self.name!r}")
        self.cluster.stop()
        # The operator's kubeconfig there holds a ServiceAccount token.
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="t9k-operator demo")
    parser.add_argument("--name", default="t9k")
    parser.add_argument(
        "--once",
        action="store_true",
        help="stop after the samples finish instead of waiting for Ctrl-C",
    )
    args = parser.parse_args()
    demo = Demo(args.name)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        demo.up()
        demo.install()
        demo.start_operator()
        demo.run_samples()
        if not args.once:
            say("the operator keeps running; press Ctrl-C to stop and clean up")
            while demo.operator is not None and demo.operator.poll() is None:
                time.sleep(1)
    except KeyboardInterrupt:
        print()
    finally:
        demo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
