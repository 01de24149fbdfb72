"""The console's screenshots in docs/images/, taken as a person sees the pages.

    .venv/bin/python -m hack.screenshots         # docs/images/console-{jobs,job,gpus}.png
    .venv/bin/python -m hack.screenshots --keep  # and leave the cluster running

It starts a local cluster of its own (``t9k-screenshots``, hack/demo.py's
steps: the CRDs, the RBAC, the operator as its ServiceAccount), submits the
sample jobs of manifests/samples/ and a few of its own (one that trains for an
hour on 4 GPUs per worker, one that fails), starts ``t9k console`` as a user
does, signs in with the URL it prints, and has Debian's Chromium (headless,
1280x800, driven by Playwright's Python package as in
tests/integration/test_console_browser.py) take the Jobs page once every
sample has ended, the Job page of the job still training, its log followed,
and the GPUs page (the cluster's KWOK nodes have 8 ``nvidia.com/gpu`` each).
Then it stops everything it started.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from hack.demo import Demo, say

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 800}
URL = re.compile(r"(http://127\.0\.0\.1:\d+)/\?token=(\S+)")
NAMESPACE = "default"

JOBS = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: mnist-long
  annotations:
    description: trains for an hour on the local cluster's KWOK nodes
spec:
  replicaSpecs:
  - type: worker
    replicas: 2
    restartPolicy: OnFailure
    template:
      metadata:
        annotations:
          kwok.t9k.dev/run-duration: 1h
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.4.0
          command: [python, train.py]
          resources:
            limits:
              nvidia.com/gpu: 4
---
apiVersion: batch.tensorstack.dev/v1beta1
kind: PyTorchTrainingJob
metadata:
  name: resnet-oom
spec:
  runPolicy:
    backoffLimit: 0
  replicaSpecs:
  - type: worker
    replicas: 1
    restartPolicy: Never
    template:
      metadata:
        annotations:
          kwok.t9k.dev/exit-code: "137"
          kwok.t9k.dev/exit-reason: OOMKilled
      spec:
        containers:
        - name: pytorch
          image: pytorch/pytorch:2.4.0
          command: [python, resnet.py]
"""

FINAL = ("Succeeded", "Failed")


def phases(demo: Demo) -> dict[str, str]:
    out = demo.kubectl(
        "get",
        "t9k",
        "-n",
        NAMESPACE,
        "-o",
        'jsonpath={range .items[*]}{.metadata.name}={.status.phase}{"\\n"}{end}',
        check=False,
        capture=True,
    )
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def submit(demo: Demo) -> None:
    say("submitting the sample jobs and two of the screenshots' own")
    for sample in sorted((ROOT / "manifests" / "samples").glob("*.yaml")):
        demo.kubectl("apply", "-n", NAMESPACE, "-f", str(sample))
    own = demo.tmp / "jobs.yaml"
    own.write_text(JOBS)
    demo.kubectl("apply", "-n", NAMESPACE, "-f", str(own))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        now = phases(demo)
        rest = {n: p for n, p in now.items() if n != "mnist-long" and p not in FINAL}
        if now.get("mnist-long") == "Running" and not rest:
            return
        time.sleep(2)
    raise SystemExit(f"the jobs did not settle in 300 s: {phases(demo)}")


def start_console(demo: Demo) -> tuple[subprocess.Popen[str], str, str]:
    out = demo.tmp / "console.out"
    t9k = [str(Path(sys.executable).with_name("t9k")), "--kubeconfig", str(demo.cluster.kubeconfig)]
    with out.open("w") as sink:
        proc = subprocess.Popen(
            [*t9k, "-n", NAMESPACE, "console", "--no-browser", "--port", "0"],
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
        )
    deadline = time.monotonic() + 60
    while not (match := URL.search(out.read_text())):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"t9k console printed no URL:\n{out.read_text()}")
        time.sleep(0.2)
    return proc, match.group(1), match.group(2)


def shoot(base: str, token: str) -> None:
    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(f"{base}/?token={token}")
        live = "() => document.getElementById('status').textContent === 'Live'"
        page.wait_for_function(live)
        page.wait_for_function("() => document.querySelectorAll('#jobs tbody tr').length > 3")
        page.screenshot(path=str(IMAGES / "console-jobs.png"))
        say(f"wrote {IMAGES / 'console-jobs.png'}")

        page.goto(f"{base}/jobs/{NAMESPACE}/PyTorchTrainingJob/mnist-long")
        page.wait_for_function(live)
        page.wait_for_function("() => document.querySelectorAll('#log .line').length >= 4")
        page.screenshot(path=str(IMAGES / "console-job.png"))
        say(f"wrote {IMAGES / 'console-job.png'}")

        page.goto(f"{base}/gpus")
        page.wait_for_function(live)
        holding = "() => document.querySelector('#nodes tbody').textContent.includes('mnist-long')"
        page.wait_for_function(holding)
        page.screenshot(path=str(IMAGES / "console-gpus.png"))
        say(f"wrote {IMAGES / 'console-gpus.png'}")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--name", default="t9k-screenshots", help="the local cluster's name")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: run `make test-deps` (Debian's chromium)")
    demo = Demo(args.name)
    console: subprocess.Popen[str] | None = None
    try:
        demo.up()
        demo.install()
        demo.start_operator()
        submit(demo)
        console, base, token = start_console(demo)
        shoot(base, token)
    finally:
        if console is not None:
            console.terminate()
            console.wait(15)
        if not args.keep:
            demo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
