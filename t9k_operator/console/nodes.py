"""The cluster's nodes for the GPUs page: a Node informer, as the board's.

It lists and watches the nodes with the console's client (the user's
kubeconfig, or the person's token in a console for everyone), from the first
time the GPUs page is asked for, so that a console whose GPUs page is never
opened asks the API server nothing more. A user who may not list nodes gets
the reason instead (nodes are cluster-scoped: there is no namespace to fall
back to). Each node is cached with its name, labels and GPUs only (a node's
status carries its images, which the page never shows). It stops when the
board closes (the console, or the person's workspace, stops).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from t9k_operator import kube
from t9k_operator.console.board import Change, JobBoard, remover
from t9k_operator.informers import ResourceListerWatcher, SharedInformer
from t9k_operator.resources import NODES

Obj = Mapping[str, Any]
SYNC_SECONDS = 20.0


def slim_node(node: dict[str, Any]) -> dict[str, Any]:
    """What the GPUs page reads of a node: name, labels, allocatable and capacity."""
    meta = node.get("metadata") or {}
    status = node.get("status") or {}
    return {
        "metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta},
        "status": {k: status[k] for k in ("allocatable", "capacity") if k in status},
    }


class NodeWatch:
    """The nodes, from an informer started on the first :meth:`start`; thread-safe."""

    def __init__(self, client: kube.KubeClient | None, board: JobBoard) -> None:
        self._client = client
        self._board = board
        self._lock = threading.Lock()
        self._informer: SharedInformer | None = None
        self._unlisten: Callable[[], None] | None = None
        self._listeners: list[Callable[[], None]] = []
        self.reason = "" if client is not None else "the console has no client to list nodes"

    def start(self) -> bool:
        """Watch the nodes (once), waiting for their first list; ``False`` with
        :attr:`reason` when the user may not list them. Blocks: call it off the
        event loop."""
        with self._lock:
            if self._informer is not None or self._client is None:
                informer = self._informer
            else:
                informer = self._informer_or_reason(self._client)
        return informer is not None and informer.wait_for_sync(SYNC_SECONDS)

    def _informer_or_reason(self, client: kube.KubeClient) -> SharedInformer | None:
        try:
            client.list(NODES, None, limit=1)
        except kube.Forbidden:
            self.reason = "you may not list the cluster's nodes"
            return None
        except kube.ApiError as exc:
            self.reason = f"the nodes could not be listed: {exc}"
            return None
        informer = SharedInformer(
            ResourceListerWatcher(client, NODES, None),
            name="console-nodes",
            transform=slim_node,
        )
        tell = self._tell
        informer.add_event_handler(lambda _n: tell(), lambda _o, _n: tell(), lambda _n: tell())
        self._unlisten = self._board.listen(self._on_board)
        informer.start()
        self._informer = informer
        self.reason = ""
        return informer

    def nodes(self) -> list[Obj]:
        """The nodes as the informer has them (none before :meth:`start`)."""
        informer = self._informer
        return list(informer.list()) if informer is not None else []

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` (from the informer's thread) at each change of a node."""
        with self._lock:
            self._listeners.append(listener)
        return remover(self._lock, self._listeners, listener)

    def stop(self) -> None:
        with self._lock:
            informer, self._informer = self._informer, None
            unlisten, self._unlisten = self._unlisten, None
            self._client = None
            self.reason = "the console is closing"
        if unlisten is not None:
            unlisten()
        if informer is not None:
            informer.stop(timeout=2.0)

    def _tell(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def _on_board(self, change: Change) -> None:
        if change.type == "close":  # under the board's lock: stop elsewhere
            threading.Thread(target=self.stop, name="console-nodes-stop", daemon=True).start()
