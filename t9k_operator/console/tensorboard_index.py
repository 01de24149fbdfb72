"""TensorBoard's own page (its index), which the API server's service proxy
cannot carry, fetched through a port-forward to its pod instead.

TensorBoard serves its index (``/`` and ``/index.html``) as ``text/html``
with ``Content-Encoding: identity``. The API server's proxy rewrites the
links of every ``text/html`` answer; for an encoding other than gzip or
deflate it gives up (logging "Proxy encountered encoding identity for
text/html; can't understand this so not fixing links") but has closed the
answer's body by then, so the connection is dropped without an answer
(k8s.io/apimachinery pkg/util/proxy/transport.go, ``rewriteResponse``;
seen with kube-apiserver 1.34). So the console asks for these two paths
through ``pods/portforward`` to the TensorBoard's pod, which is named, as
its Service, from the job (``<name>-tensorboard``), never from the request,
with the same person's client (RBAC decides: ``create`` on
``pods/portforward``); one request per connection, spoken and read by the
standard library's HTTP client, its answer read whole (at most
:data:`MAX_ANSWER` bytes).
"""

from __future__ import annotations

import http.client
from collections.abc import Mapping
from dataclasses import dataclass, field

from t9k_operator import kube
from t9k_operator.kube.portforward import open_pod_port
from t9k_operator.sdk.forward import TENSORBOARD_PORT

INDEX_PATHS = ("", "index.html")
"""The paths TensorBoard answers with its index page."""
MAX_ANSWER = 8 * 1024 * 1024
TIMEOUT = 30.0


@dataclass
class PageAnswer:
    """An HTTP answer read off the pod's port: as urllib3's (status, headers, data)."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    data: bytes = b""


def fetch_index(client: kube.KubeClient, namespace: str, pod: str, path: str) -> PageAnswer:
    """GET ``path`` (one of :data:`INDEX_PATHS`, its query quoted already)
    from the pod's TensorBoard port, through a port-forward;
    :class:`kube.TransportError` when no whole HTTP answer comes back."""
    port = open_pod_port(client.connection, namespace, pod, TENSORBOARD_PORT)
    try:
        port.socket.settimeout(TIMEOUT)
        connection = http.client.HTTPConnection("localhost", timeout=TIMEOUT)
        connection.sock = port.socket  # the forwarded connection, already open
        connection.request("GET", f"/{path}", headers={"Connection": "close"})
        answer = connection.getresponse()
        data = answer.read(MAX_ANSWER + 1)
    except (http.client.HTTPException, OSError) as exc:
        raise kube.TransportError(f"TensorBoard's pod gave no HTTP answer: {exc}") from None
    finally:
        port.close()
    if len(data) > MAX_ANSWER:
        raise kube.TransportError("TensorBoard's page is too large")
    headers = {name.lower(): value for name, value in answer.getheaders()}
    return PageAnswer(answer.status, headers, data)
