"""``fairness`` and ``scale``: the reporters' process (hack/bench/common/
reporters.py) driven against the served endpoint, and what the endpoint
spent meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hack.bench.common.procstat import proc_cpu, proc_kib
from hack.cluster.handle import ROOT
from t9k_operator.integrations.progress.endpoint import ProgressEndpoint
from t9k_operator.integrations.progress.pods import job_path

from ..common.figures import quantile
from .world import KIND, served, world


def drive(
    endpoint: ProgressEndpoint,
    workdir: Path,
    ranks: list[dict[str, Any]],
    seconds: float,
    measure_from: float,
) -> tuple[list[Any], Cost]:
    """Run ``ranks`` in a process of their own against ``endpoint`` served here:
    their results and what the endpoint spent from ``measure_from`` on."""
    with served(endpoint, workdir) as (port, ca, server):
        began = time.time()
        spec = {"port": port, "ca": str(ca), "stop": began + seconds, "ranks": ranks}
        spec_file = workdir / "spec.json"
        spec_file.write_text(json.dumps(spec))
        child = subprocess.Popen(
            [sys.executable, "-m", "hack.bench.common.reporters", str(spec_file)], cwd=ROOT
        )
        time.sleep(measure_from)
        assert server.front is not None and server.fronts_started == 1
        cpu0, front0, wall0 = time.process_time(), proc_cpu(server.front.pid), time.monotonic()
        time.sleep(max(0.0, began + seconds - time.time()))
        wall = time.monotonic() - wall0
        front = proc_cpu(server.front.pid) - front0
        rss = proc_kib(server.front.pid, "VmRSS") / 1024
        cost = Cost((time.process_time() - cpu0) / wall, front / wall, rss)
        child.wait()
    out = json.loads((workdir / "spec.json.out").read_text())
    return [x for x in out if x[3] >= began + measure_from], cost


@dataclass(frozen=True)
class Cost:
    """What the endpoint spent: its CPU in cores, in the operator's interpreter
    (the answers) and in its front (the connections), and its front's memory."""

    answers: float
    front: float
    front_rss_mib: float

    @property
    def cores(self) -> float:
        return self.answers + self.front

    def __str__(self) -> str:
        return f"{self.cores:.2f} cores (answers {self.answers:.2f}, front {self.front:.2f})"


def rank_specs(
    job: str, pods: int, ranks: int, paced: bool, group: str, ramp: float
) -> list[dict[str, Any]]:
    path = job_path("ns", KIND.plural, job)
    return [
        {
            "path": path,
            "token": f"t:{job}:{p}",
            "rank": r,
            "paced": paced,
            "group": group,
            "delay": ramp * ((p * ranks + r) % 997) / 997,
        }
        for p in range(pods)
        for r in range(ranks)
    ]


def summary(results: list[Any], group: str, seconds: float) -> str:
    mine = [x for x in results if x[0] == group]
    lat = [x[2] for x in mine if x[1] == 202]
    n429 = sum(1 for x in mine if x[1] == 429)
    other = sum(1 for x in mine if x[1] not in (202, 429))
    return (
        f"{len(mine) / seconds:>8.0f}/s  p50 {quantile(lat, 0.5) * 1e3:>7.1f} ms  "
        f"p99 {quantile(lat, 0.99) * 1e3:>7.1f} ms  429s {n429} "
        f"({n429 / max(1, len(mine)):.1%})  errors {other}"
    )


def part_fairness(workdir: Path, seconds: float) -> None:
    print(
        f"\n## fairness: a 512-rank job as fast as it may, 50 small jobs (8 ranks each), "
        f"{seconds:g} s measured"
    )
    jobs = {"noisy": 64, **{f"small{j}": 1 for j in range(50)}}
    for paced in (True, False):
        endpoint, _, _ = world(jobs)
        ranks = rank_specs("noisy", 64, 8, paced, "noisy", 2.0)
        for j in range(50):
            ranks += rank_specs(f"small{j}", 1, 8, True, "small", 2.0)
        results, cost = drive(endpoint, workdir, ranks, seconds + 10, 10)
        how = "at the told pace" if paced else "ignoring the pace"
        print(f"noisy job {how}: endpoint CPU {cost}")
        print(f"  noisy  {summary(results, 'noisy', seconds)}")
        print(f"  small  {summary(results, 'small', seconds)}")


def part_scale(workdir: Path, seconds: float, ramp: float, pods: int) -> None:
    print(
        f"\n## scale: {pods * 8:,} ranks ({pods:,} pods x 8, 10 jobs) at the default pace, "
        f"connecting over {ramp:g} s, then {seconds:g} s measured"
    )
    endpoint, _, reviews = world({f"job{j}": pods // 10 for j in range(10)})
    ranks: list[dict[str, Any]] = []
    for j in range(10):
        ranks += rank_specs(f"job{j}", pods // 10, 8, True, "all", ramp)
    results, cost = drive(endpoint, workdir, ranks, ramp + seconds, ramp)
    print(
        f"ranks counted {endpoint.pacer.ranks}, pace {endpoint.pacer.pace():.1f} s, "
        f"token reviews {reviews.asked}"
    )
    print(f"  all    {summary(results, 'all', seconds)}")
    print(f"endpoint CPU {cost} = {cost.cores / 0.5:.2f} of the half core allowed")
    print(f"the front's RSS {cost.front_rss_mib:.0f} MiB")
