"""The engine's stop gates are a hook any integration may give, not the
checkpoint integration's alone: a toy integration whose gate holds a pause
until it is let go goes through the apply step and the engine, which never
name it. The pods stay while it holds (the pass asks to be woken when the
gate says), and go once it lets the stop through; a fresh gate is made for
every pass, and hears of the pass's start and end."""

from __future__ import annotations

from typing import Any

from t9k_operator.kinds.view import JobView
from t9k_operator.reconcilers.engine.planning import Pass
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, JobInput
from tests.unit.reconcilers.test_job_reconciler import Harness

WAKE = 42.0


class Hold:
    """A stop gate that holds every stop while ``holding``, and records what
    the engine told it."""

    def __init__(self, toy: Toy) -> None:
        self.toy = toy
        toy.made += 1

    def begin(self, p: Pass) -> None:
        self.toy.heard.append("begin")

    def may_stop(self, p: Pass, reason: str) -> bool:
        self.toy.heard.append(f"may_stop {reason}")
        if self.toy.holding:
            p.out.wake_in(WAKE)
        return not self.toy.holding

    def drain_coming(self, p: Pass) -> None:
        self.toy.heard.append("drain_coming")

    def end(self, p: Pass) -> None:
        self.toy.heard.append("end")

    def resume_step(self, p: Pass) -> int | None:
        return None


class Toy(Base[None]):
    name = "toy-hold"

    def __init__(self) -> None:
        self.holding = True
        self.made = 0
        self.heard: list[str] = []

    def observe(self, job: JobInput, caches: Caches) -> tuple[None, JobView]:
        return None, job.view

    def stop_gate(self, state: None, view: JobView) -> Hold:
        return Hold(self)


def paused(h: Harness) -> None:
    job = h.job()
    job["spec"]["runMode"] = {"pause": {"enabled": True}}
    h.fake.put(h.reconciler.resource, job)
    h.sync()


def test_a_toy_stop_gate_holds_a_pause_until_it_lets_it_go() -> None:
    toy = Toy()
    h = Harness("PyTorchTrainingJob", integrations=(toy,))
    h.run()
    pods = h.pod_names()
    assert pods and toy.heard[:1] == ["begin"] and "drain_coming" in toy.heard
    paused(h)
    toy.heard.clear()
    made = toy.made
    result: Any = h.reconcile()
    assert result.requeue_after == WAKE
    assert toy.heard == ["begin", "may_stop Paused", "end"]
    assert toy.made == made + 1  # a gate for this pass
    h.sync()
    assert h.pod_names() == pods and h.job()["status"]["phase"] != "Paused"
    toy.holding = False
    h.run()
    assert h.pod_names() == [] and h.job()["status"]["phase"] == "Paused"
