#!/usr/bin/env python3
"""The container logs of the local cluster's pods, as KWOK's kubelets serve them.

A kubelet keeps one CRI log file per container and serves it on its
``/containerLogs/<namespace>/<pod>/<container>`` endpoint, which
``kubectl logs`` (and ``t9k logs``) reach through the API server. KWOK's
kubelet endpoint serves, for a pod, the file its ``Logs`` object
(``kwok.x-k8s.io/v1alpha1``, namespaced, named after the pod) names for the
container asked (KWOK's pkg/kwok/server/debugging_logs.go, getPodLogs).

This process, started beside KWOK by hack/cluster, watches every pod and,
for each one it has not seen, as soon as it is created (kube-scheduler's pods:
KWOK starts a pod as soon as it is bound, so the logs are there first) or else
once it is bound to a node (other schedulers' pods, some of which no scheduler
ever places: the benchmarks' thousands), writes one file per container (init containers,
sidecars, containers and ephemeral containers), each line carrying the pod's
and the container's names (hack/third_party/kwok/container.log's streams and texts,
each text after ``<pod>/<container> ``, stamped with the seconds up to when
the file is written), then applies the pod's ``Logs`` object naming them.
The files are in the CRI log format a container runtime writes for the
kubelet (one line per entry: an RFC 3339 timestamp, the stream, ``F`` for a
full line, the text: kubernetes' design-proposals node/kubelet-cri-logging.md),
which KWOK reads with the kubelet's own reader (k8s.io/cri-client/pkg/logs).
A pod of the same name created anew (a restarted replica) gets files of its
own (they are kept under its UID) and its ``Logs`` object is pointed at them;
a pod deleted has its ``Logs`` object deleted (its files stay until the
cluster is removed). So a client that printed
another replica's or another container's log prints the wrong names.

Only the standard library: hack/cluster runs before the project's
virtualenv exists. Its own log is ``pod-logs.log`` in the cluster's folder.
"""

from __future__ import annotations

import argparse
import http.client
import json
import ssl
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GROUP = "/apis/kwok.x-k8s.io/v1alpha1"
MANAGER = "t9k-kwok-pod-logs"
MANAGED_BY = "app.kubernetes.io/managed-by"
POD_UID = "kwok.t9k.dev/pod-uid"
DEFAULT_SCHEDULER = "default-scheduler"  # the API server's default for spec.schedulerName


class ApiError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"{status} {body[:300]!r}")
        self.status = status


class Api:
    """The API server, as the client certificate in ``pki`` (``pod-logs.crt``):
    requests over one kept-alive connection, a watch over one of its own."""

    def __init__(self, server: str, pki: Path) -> None:
        self.server = server
        self.host = urllib.parse.urlsplit(server).netloc
        self.ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self.ctx.load_cert_chain(str(pki / "pod-logs.crt"), str(pki / "pod-logs.key"))
        self.conn: http.client.HTTPSConnection | None = None

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):  # once more on a fresh connection: the kept one may be closed
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, context=self.ctx, timeout=30)
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                payload = resp.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
                continue
            if resp.status >= 400:
                raise ApiError(resp.status, payload)
            return json.loads(payload or b"{}")

    def watch(self, path: str, version: str) -> Iterator[dict[str, Any]]:
        query = urllib.parse.urlencode(
            {
                "watch": "true",
                "resourceVersion": version,
                "allowWatchBookmarks": "true",
                "timeoutSeconds": "300",
            }
        )
        req = urllib.request.Request(f"{self.server}{path}?{query}")
        with urllib.request.urlopen(req, context=self.ctx, timeout=330) as resp:
            for line in resp:
                if line.strip():
                    yield json.loads(line)


class PodLogs:
    """Writes the pods' log files and keeps their ``Logs`` objects."""

    def __init__(self, api: Api, folder: Path, template: list[tuple[str, str, str]]) -> None:
        self.api = api
        self.folder = folder
        self.template = template  # (stream, tag, text) of each line
        self.made: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}

    def sync(self) -> str:
        """Every pod's logs made, the ``Logs`` objects of pods gone deleted;
        the pods' list's resourceVersion, to watch from."""
        pods = self.api.call("GET", "/api/v1/pods")
        current = {}
        for pod in pods["items"]:
            meta = pod["metadata"]
            current[(meta["namespace"], meta["name"])] = meta["uid"]
            self.seen(pod)
        selector = urllib.parse.quote(f"{MANAGED_BY}={MANAGER}")
        for logs in self.api.call("GET", f"{GROUP}/logs?labelSelector={selector}")["items"]:
            meta = logs["metadata"]
            key = (meta["namespace"], meta["name"])
            if current.get(key) != (meta.get("annotations") or {}).get(POD_UID):
                self.made.pop(key, None)
                self.delete(*key)
        return str(pods["metadata"]["resourceVersion"])

    def seen(self, pod: dict[str, Any]) -> None:
        """The pod's logs made, unless they were for this pod and these containers."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        if not spec.get("nodeName") and spec.get("schedulerName") != DEFAULT_SCHEDULER:
            return  # another scheduler's, which may never place it: logs once it is bound
        key = (meta["namespace"], meta["name"])
        names = tuple(
            c["name"]
            for part in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(part) or ()
        )
        if self.made.get(key) == (meta["uid"], names):
            return
        folder = self.folder / meta["namespace"] / meta["name"] / meta["uid"]
        folder.mkdir(parents=True, exist_ok=True)
        # Whole seconds, the last line's now: a CRI log's timestamps are
        # RFC 3339 with nanoseconds, and a reader may compare them as text.
        start = int(time.time()) - len(self.template) + 1
        logs = []
        for name in names:
            path = folder / f"{name}.log"
            if not path.exists():
                path.write_text(
                    "".join(
                        f"{_stamp(start + i)} {stream} {tag} {meta['name']}/{name} {text}\n"
                        for i, (stream, tag, text) in enumerate(self.template)
                    )
                )
            logs.append({"containers": [name], "logsFile": str(path), "follow": True})
        ns, name = key
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Logs",
            "metadata": {
                "name": name,
                "namespace": ns,
                "labels": {MANAGED_BY: MANAGER},
                "annotations": {POD_UID: meta["uid"]},
            },
            "spec": {"logs": logs},
        }
        path = f"{GROUP}/namespaces/{ns}/logs/{name}?fieldManager={MANAGER}&force=true"
        try:
            self.api.call("PATCH", path, body, "application/apply-patch+yaml")
        except ApiError as exc:
            # A namespace being deleted refuses new objects: its pods go with it.
            say(f"Logs {ns}/{name}: {exc}")
            return
        self.made[key] = (meta["uid"], names)

    def gone(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        key = (meta["namespace"], meta["name"])
        made = self.made.get(key)
        if made is not None and made[0] == meta["uid"]:
            del self.made[key]
            self.delete(*key)

    def delete(self, ns: str, name: str) -> None:
        try:
            self.api.call("DELETE", f"{GROUP}/namespaces/{ns}/logs/{name}")
        except ApiError as exc:
            if exc.status != 404:
                say(f"deleting Logs {ns}/{name}: {exc}")


def _stamp(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000000000Z", time.gmtime(seconds))


def say(msg: str) -> None:
    print(f"[pod-logs] {time.strftime('%H:%M:%S')} {msg}", file=sys.stderr, flush=True)


def read_template(path: Path) -> list[tuple[str, str, str]]:
    """The (stream, tag, text) of each line of a CRI log file."""
    lines = []
    for line in path.read_text().splitlines():
        if line.strip():
            _, stream, tag, text = line.split(" ", 3)
            lines.append((stream, tag, text))
    return lines


def run(logs: PodLogs, ready: Path) -> None:
    version = ""
    while True:
        try:
            if not version:
                version = logs.sync()
                ready.touch()
            for event in logs.api.watch("/api/v1/pods", version):
                obj = event["object"]
                if event["type"] == "ERROR":  # 410 Gone: list again
                    say(f"watch: {obj.get('message')}")
                    version = ""
                    break
                version = obj["metadata"]["resourceVersion"]
                if event["type"] in ("ADDED", "MODIFIED"):
                    logs.seen(obj)
                elif event["type"] == "DELETED":
                    logs.gone(obj)
        except (OSError, ValueError, KeyError, ApiError, http.client.HTTPException) as exc:
            say(f"{exc.__class__.__name__}: {exc}; listing again")
            version = ""
            time.sleep(0.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--pki", type=Path, required=True)
    p.add_argument("--dir", type=Path, required=True, help="where the log files go")
    p.add_argument("--template", type=Path, required=True, help="the lines of every log")
    p.add_argument("--ready", type=Path, required=True, help="touched once every pod has logs")
    args = p.parse_args()
    api = Api(args.server, args.pki)
    run(PodLogs(api, args.dir, read_template(args.template)), args.ready)


if __name__ == "__main__":
    main()
