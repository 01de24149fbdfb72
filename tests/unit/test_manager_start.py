"""The manager's start-up order under leader election (pure threads, no API)."""

from __future__ import annotations

import threading
from typing import Any

from t9k_operator.manager import Manager, ManagerOptions
from t9k_operator.runtime.leaderelection import LeaderElectionOptions


class FakeController:
    name = "fake"

    def __init__(self) -> None:
        self.started = 0
        self.stopped = 0

    def start(self) -> None:
        self.started += 1

    def stop(self) -> None:
        self.stopped += 1


def manager_with(controller: FakeController) -> Manager:
    options = ManagerOptions(
        leader_elect=True, leader_election=LeaderElectionOptions(lease_name="unit")
    )
    return Manager(object(), options, lambda ctx: [controller])  # type: ignore[arg-type, list-item]


def test_leadership_lost_during_the_first_cache_sync_starts_no_controller() -> None:
    controller = FakeController()
    manager = manager_with(controller)
    syncing, release = threading.Event(), threading.Event()

    def slow_sync(*_: Any, **__: Any) -> None:
        syncing.set()
        release.wait(10)

    manager.informers.wait_for_sync = slow_sync  # type: ignore[method-assign]
    manager._on_started_leading()
    assert syncing.wait(5)
    manager._on_stopped_leading()  # lost while the caches were still syncing
    release.set()
    for thread in threading.enumerate():
        if thread.name == "start-controllers":
            thread.join(5)
    assert controller.started == 0
    assert manager._stop.is_set() and manager._exit_code == 1


def test_controllers_start_once_the_caches_are_synced_while_leading() -> None:
    controller = FakeController()
    manager = manager_with(controller)
    manager.informers.wait_for_sync = lambda *a, **k: None  # type: ignore[method-assign]
    manager._on_started_leading()
    for thread in threading.enumerate():
        if thread.name == "start-controllers":
            thread.join(5)
    assert controller.started == 1
