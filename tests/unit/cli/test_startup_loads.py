"""`t9k` reads the registry for the integrations' status parts but loads
none of the operator's machinery: no runtime (workqueues, controllers), no
integration's servers or controllers, no TLS library. What it loads is its
own start-up time on every command."""

from __future__ import annotations

import subprocess
import sys

NEVER = (
    "t9k_operator.runtime",
    "t9k_operator.reconcilers.pipeline.job",
    "t9k_operator.reconcilers.controllers",
    "t9k_operator.reconcilers.serving",
    "t9k_operator.integrations.progress.server",
    "t9k_operator.integrations.progress.endpoint",
    "t9k_operator.integrations.tensorboard.controller",
    "t9k_operator.integrations.gpu_usage.watch",
    "t9k_operator.integrations.start_estimate.poller",
    "cryptography",
)


def test_the_t9k_command_loads_no_server_or_controller() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, t9k_operator.cli.commands, t9k_operator.registry\n"
            "print('\\n'.join(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(proc.stdout.split())
    assert "t9k_operator.registry" in loaded  # the status parts are read through it
    found = sorted(m for m in loaded for n in NEVER if m == n or m.startswith(n + "."))
    assert found == []
