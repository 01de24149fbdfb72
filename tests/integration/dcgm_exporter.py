"""A stand-in for NVIDIA's DCGM exporter on one GPU node: the real one needs
GPUs and NVIDIA's driver, which the test machine has not. It serves, on
``/metrics``, what the exporter's default counters (its
``etc/default-counters.csv``) give for the fields t9k reads, under the
exporter's names, help texts and labels: per GPU ``DCGM_FI_DEV_GPU_UTIL``
(percent), ``DCGM_FI_DEV_FB_FREE`` and ``DCGM_FI_DEV_FB_USED`` (MiB), labelled
``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``,
``DCGM_FI_DRIVER_VERSION`` and, as its Kubernetes mapping writes them, the
``container``, ``namespace`` and ``pod`` holding the GPU (empty for a GPU no
pod holds). Which pod holds which GPU, and how busy each is, the test sets and
changes while Prometheus scrapes."""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.integration.operator_process import free_port

MEMORY_MIB = 81920  # an 80 GB card
MODEL = "NVIDIA A100-SXM4-80GB"
DRIVER = "535.104.05"

HELP = {
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
    "DCGM_FI_DEV_FB_FREE": "Framebuffer memory free (in MiB).",
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
}


@dataclass
class GPU:
    util: float = 0.0
    used_mib: float = 0.0
    pod: tuple[str, str, str] | None = None  # namespace, pod, container


class DCGMExporter:
    """One node's exporter, serving ``gpus`` GPUs on 127.0.0.1 (``port``)."""

    def __init__(self, hostname: str, gpus: int = 8) -> None:
        self.hostname = hostname
        self.gpus = [GPU() for _ in range(gpus)]
        self._lock = threading.Lock()
        self.port = free_port()
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = exporter.render().encode()
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def set(
        self,
        index: int,
        util: float,
        *,
        used_mib: float | None = None,
        pod: tuple[str, str, str] | None = None,
    ) -> None:
        """GPU ``index``'s utilization (and memory in use, and the pod holding it)."""
        with self._lock:
            gpu = self.gpus[index]
            gpu.util = util
            if used_mib is not None:
                gpu.used_mib = used_mib
            if pod is not None:
                gpu.pod = pod

    def uuid(self, index: int) -> str:
        return f"GPU-{zlib.crc32(self.hostname.encode()):08x}-0000-0000-0000-{index:012d}"

    def render(self) -> str:
        with self._lock:
            gpus = [GPU(g.util, g.used_mib, g.pod) for g in self.gpus]
        lines: list[str] = []
        for metric, text in HELP.items():
            lines += [f"# HELP {metric} {text}", f"# TYPE {metric} gauge"]
            for i, gpu in enumerate(gpus):
                namespace, pod, container = gpu.pod or ("", "", "")
                labels = (
                    f'gpu="{i}",UUID="{self.uuid(i)}",pci_bus_id="00000000:{0x10 + i:02X}:00.0",'
                    f'device="nvidia{i}",modelName="{MODEL}",Hostname="{self.hostname}",'
                    f'DCGM_FI_DRIVER_VERSION="{DRIVER}",container="{container}",'
                    f'namespace="{namespace}",pod="{pod}"'
                )
                value = {
                    "DCGM_FI_DEV_GPU_UTIL": gpu.util,
                    "DCGM_FI_DEV_FB_USED": gpu.used_mib,
                    "DCGM_FI_DEV_FB_FREE": MEMORY_MIB - gpu.used_mib,
                }[metric]
                lines.append(f"{metric}{{{labels}}} {value:g}")
        return "\n".join(lines) + "\n"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
