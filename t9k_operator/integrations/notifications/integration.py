"""Notifications: a job's end, a hang, idle GPUs, a preemption, a restart of
the whole job and a late start estimate, told to the endpoints its namespace
and the administrator chose (docs/notifications.md). On with
``--notifications``.

Per job, in a reconcile: ``observe`` reads the job's annotations
(``annotations.py``), finds its endpoints among the endpoint Secrets the
deliverer caches (``Caches.source("notifications")``: the administrator's
defaults in the operator's namespace, the namespace's own, the ones the job
names) and the deliverer's outcomes of its messages; ``status`` records the
messages the new status calls for (``events.py``) and those outcomes in
``status.notifications`` (``record.py``), with Events. The deliverer
(``outbox.py``, this integration's server) sends what the record holds
pending.

Pure: the endpoints and outcomes come in through the caches.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol, cast

from t9k_operator.api.parts import StatusPart
from t9k_operator.integrations.notifications import annotations as notes
from t9k_operator.integrations.notifications.build import NOTIFICATIONS_PART
from t9k_operator.integrations.notifications.channels import (
    LABEL,
    Endpoint,
    Invalid,
    endpoint,
)
from t9k_operator.integrations.notifications.events import derive
from t9k_operator.integrations.notifications.message import PLACEHOLDERS
from t9k_operator.integrations.notifications.record import Outcome, merge
from t9k_operator.kinds.view import JobView
from t9k_operator.objects import Obj, format_time
from t9k_operator.reconcilers.pipeline.contract import Base, Caches, Event, JobInput, Rule

DEFAULT_GIVE_UP = 3600
DEFAULT_QUEUE = 1000
DEFAULT_BACKOFF_CAP = 300


class Directory(Protocol):
    """What the deliverer provides this integration (``Caches.source``)."""

    namespace: str | None
    """The operator's namespace: where the administrator's endpoints are."""

    def secrets(self, namespace: str) -> Sequence[Obj]:
        """The endpoint Secrets of ``namespace`` (labelled), as cached."""
        ...

    def outcomes(self, uid: str) -> Mapping[str, Mapping[str, Outcome]]:
        """The outcomes of the job's messages not yet recorded, by message id
        and endpoint."""
        ...


@dataclass(frozen=True)
class Options:
    """The flags, as given (the deliverer reads them)."""

    console_url: str | None = None
    give_up: int = DEFAULT_GIVE_UP
    queue: int = DEFAULT_QUEUE
    backoff_cap: int = DEFAULT_BACKOFF_CAP


@dataclass(frozen=True)
class NotifyState:
    choice: notes.Choice
    endpoints: tuple[Endpoint, ...]
    problems: tuple[str, ...]
    outcomes: Mapping[str, Mapping[str, Outcome]] = field(default_factory=dict)
    now: datetime | None = None


def parse_duration(text: str) -> int:
    seconds = notes.duration(text)
    if seconds is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 1h, 30m, 90s)")
    return seconds


def endpoints(
    directory: Directory, namespace: str, choice: notes.Choice
) -> tuple[tuple[Endpoint, ...], tuple[str, ...]]:
    """The job's endpoints (the administrator's defaults, then the namespace's
    defaults, or the ones the job names instead of those) and what is wrong
    with the ones it names or its namespace offers."""
    found: list[Endpoint] = []
    problems = list(choice.problems)
    if directory.namespace:
        for secret in directory.secrets(directory.namespace):
            try:
                ep = endpoint(secret)
            except Invalid:
                continue  # the administrator's to fix: the deliverer logs it
            if ep.default:
                found.append(ep)
    own = {str(s["metadata"]["name"]): s for s in directory.secrets(namespace)}
    if choice.to:
        for name in choice.to:
            named = own.get(name)
            if named is None:
                problems.append(
                    f"annotation {notes.TO}: no endpoint {name} in namespace {namespace} "
                    f"(a Secret labelled {LABEL}=true)"
                )
                continue
            try:
                found.append(endpoint(named))
            except Invalid as exc:
                problems.append(f"annotation {notes.TO}: endpoint {namespace}/{name}: {exc}")
    else:
        for name, labelled in sorted(own.items()):
            try:
                ep = endpoint(labelled)
            except Invalid as exc:
                problems.append(f"endpoint {namespace}/{name}: {exc}")
                continue
            if ep.default:
                found.append(ep)
    unique = {ep.ref: ep for ep in found}
    return tuple(unique.values()), tuple(problems)


class Notifications(Base[NotifyState]):
    """Tell people of their jobs: the record in the status; the deliverer sends."""

    name = "notifications"
    parts: ClassVar[tuple[StatusPart, ...]] = (NOTIFICATIONS_PART,)

    def __init__(self, options: Options) -> None:
        self.options = options

    # -- flags ----------------------------------------------------------------------

    @staticmethod
    def add_flags(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("notifications (docs/notifications.md)")
        g.add_argument(
            "--notifications",
            action="store_true",
            help="tell jobs' endpoints (Secrets labelled "
            f"{LABEL}=true) when a job ends, hangs, idles, is preempted or restarted",
        )
        g.add_argument(
            "--console-url",
            default=None,
            help="the link each message carries, a template naming "
            + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            + " (https://console.example.com/{namespace}/{plural}/{name})",
        )
        g.add_argument(
            "--notification-give-up",
            type=parse_duration,
            default=DEFAULT_GIVE_UP,
            help="how long a message is tried before it is given up (default 1h)",
        )
        g.add_argument(
            "--notification-queue",
            type=int,
            default=DEFAULT_QUEUE,
            help="messages queued per endpoint at most; the rest wait in the jobs' records "
            f"(default {DEFAULT_QUEUE})",
        )
        g.add_argument(
            "--notification-backoff-cap",
            type=parse_duration,
            default=DEFAULT_BACKOFF_CAP,
            help="the longest wait between two tries of a delivery, however many "
            "failed (default 5m; a Retry-After is still honoured)",
        )

    @staticmethod
    def check_flags(args: argparse.Namespace) -> str | None:
        if args.console_url:
            try:
                args.console_url.format(**{p: p for p in PLACEHOLDERS})
            except (KeyError, IndexError, ValueError):
                return "--console-url may name only " + ", ".join(
                    "{" + p + "}" for p in PLACEHOLDERS
                )
        if args.notification_give_up < 1:
            return "--notification-give-up must be at least a second"
        if args.notification_queue < 1:
            return "--notification-queue must be at least 1"
        if args.notification_backoff_cap < 1:
            return "--notification-backoff-cap must be at least a second"
        return None

    @classmethod
    def from_flags(cls, args: argparse.Namespace) -> Notifications | None:
        if not args.notifications:
            return None
        return cls(
            Options(
                args.console_url,
                args.notification_give_up,
                args.notification_queue,
                args.notification_backoff_cap,
            )
        )

    @staticmethod
    def rbac() -> tuple[Rule, ...]:
        return ()  # endpoint Secrets: read under the operator's rule on Secrets (list, watch)

    # -- hooks ----------------------------------------------------------------------

    def observe(self, job: JobInput, caches: Caches) -> tuple[NotifyState, JobView] | None:
        directory = cast("Directory | None", caches.source(self.name))
        if directory is None:
            return None
        meta: Mapping[str, Any] = job.stored.get("metadata") or {}
        choice = notes.choice(meta.get("annotations") or {})
        found, problems = endpoints(directory, job.view.namespace, choice)
        state = NotifyState(choice, found, problems, directory.outcomes(job.view.uid), job.now)
        return state, job.view

    def status(self, state: NotifyState, view: JobView, status: Obj) -> list[Event]:
        assert state.now is not None
        due = derive(view.uid, status, state.choice, view.restart_scope, state.now)

        def targets(event: str) -> tuple[str, ...]:
            return tuple(ep.ref for ep in state.endpoints if event in ep.on)

        record, events = merge(
            view.status.get("notifications"),
            due,
            targets,
            state.outcomes,
            state.problems,
            format_time(state.now),
        )
        if record is not None:
            status["notifications"] = record
        return events
