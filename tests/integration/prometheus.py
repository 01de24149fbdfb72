"""A real Prometheus (Debian's package) for the tests: scrapes operator
processes the way the prometheus-operator would scrape the t9k-operator-metrics
Service, loads manifests/monitoring/rules.yaml, and answers PromQL queries."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.integration.cluster import ROOT, env_flag, wait_for
from tests.integration.operator_process import free_port

RULES = ROOT / "manifests" / "monitoring" / "rules.yaml"
DASHBOARD = ROOT / "manifests" / "monitoring" / "dashboard.json"

JOB = "t9k-operator-metrics"
"""The ``job`` label rules.yaml and the dashboard assume: a ServiceMonitor
selecting the Service t9k-operator-metrics, with no jobLabel, gets the
Service's name."""

Series = dict[str, Any]  # {"metric": {label: value}, "value": [ts, "1"]}


def tool(name: str) -> str:
    """The path of a Prometheus tool; missing, the remedy (never a skip)."""
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(
            f"{name} is not installed: run `bash hack/ensure-test-deps.sh` (as root, it "
            "installs the Debian package prometheus)"
        )
    return path


def value(series: Series) -> float:
    return float(series["value"][1])


def finite(result: list[Series]) -> list[Series]:
    return [s for s in result if math.isfinite(value(s))]


class Prometheus:
    """A Prometheus server on a free port, its data in ``workdir``."""

    def __init__(
        self,
        workdir: Path,
        targets: dict[str, int],
        scrape_configs: list[dict[str, Any]] | None = None,
        port: int | None = None,
    ) -> None:
        """``targets``: pod name -> metrics port of an operator process on
        127.0.0.1; ``scrape_configs``: more jobs to scrape (an exporter's);
        ``port``: where it listens (default: a free port)."""
        self.port = port or free_port()
        self.workdir = workdir
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {
                    "job_name": JOB,
                    "scrape_timeout": "1s",
                    # As the ServiceMonitor must (honorLabels: true): the
                    # operator's `namespace` label (the job's) wins over the
                    # target's (the operator's), which stays on the other series.
                    "honor_labels": True,
                    "static_configs": [
                        {
                            "targets": [f"127.0.0.1:{port}"],
                            "labels": {
                                "namespace": "t9k-system",
                                "service": JOB,
                                "endpoint": "metrics",
                                "container": "manager",
                                "pod": pod,
                            },
                        }
                        for pod, port in targets.items()
                    ],
                },
                *(scrape_configs or []),
            ],
        }
        (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.log_path = workdir / "prometheus.log"
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                tool("prometheus"),
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
                "--log.level=warn",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ},
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        if env_flag("T9K_KEEP_PROMETHEUS"):
            return
        shutil.rmtree(self.workdir / "data", ignore_errors=True)

    def logs(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-4000:]

    def api(self, path: str, **params: str) -> Any:
        assert self.proc.poll() is None, f"prometheus exited:\n{self.logs()}"
        query = urllib.parse.urlencode(params)
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}" + (f"?{query}" if query else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
            raise AssertionError(f"{path} {params}: HTTP {exc.code}: {body}") from exc
        assert body.get("status") == "success", body
        return body["data"]

    def wait_ready(self, timeout: float = 30) -> None:
        def ready() -> bool:
            assert self.proc.poll() is None, f"prometheus exited:\n{self.logs()}"
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.port}/-/ready", timeout=2
                ) as resp:
                    return bool(resp.status == 200)
            except OSError:
                return False

        wait_for(ready, timeout, "prometheus /-/ready")

    def query(self, expr: str) -> list[Series]:
        """An instant vector (a scalar comes back as one series without labels)."""
        data = self.api("query", query=expr, time=f"{time.time():.3f}")
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        assert data["resultType"] == "vector", f"{expr}: {data['resultType']}"
        result: list[Series] = data["result"]
        return result

    def query_range(self, expr: str, seconds: float, step: float = 2) -> list[Series]:
        end = time.time()
        data = self.api(
            "query_range",
            query=expr,
            start=f"{end - seconds:.3f}",
            end=f"{end:.3f}",
            step=str(step),
        )
        result: list[Series] = data["result"]
        return result

    def wait_query(self, expr: str, timeout: float, what: str) -> list[Series]:
        """``expr``'s result once it is not empty."""
        return list(wait_for(lambda: self.query(expr) or None, timeout, what, interval=0.25))
