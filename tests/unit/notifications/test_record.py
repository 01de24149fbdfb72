"""Which messages a status calls for, and the delivery record: expected values
written out here (the ids with sha256sum)."""

from __future__ import annotations

from datetime import UTC, datetime

from t9k_operator.integrations.notifications.annotations import Choice, choice
from t9k_operator.integrations.notifications.events import Due, derive
from t9k_operator.integrations.notifications.record import Outcome, merge, pending

NOW = datetime(2026, 1, 1, 0, 10, 0, tzinfo=UTC)
ALL = choice({"notifications.tensorstack.dev/start-estimate-over": "30m"})
FAILED_STATUS = {
    "phase": "Failed",
    "startTime": "2025-12-31T23:00:00Z",
    "completionTime": "2026-01-01T00:00:00Z",
    "restartCount": 0,
    "conditions": [
        {
            "type": "Failed",
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": "Pod mnist-worker-1 failed (exit code 3); backoffLimit 3 reached",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ],
}
# printf 'uid-1/Failed@2026-01-01T00:00:00Z' | sha256sum | cut -c1-32
FAILED_ID = "56fae10ff91a4765fba8b5ce92902ab1"


def test_a_failed_job_calls_for_one_message_with_its_reason() -> None:
    assert derive("uid-1", FAILED_STATUS, ALL, "Replica", NOW) == [
        Due(
            FAILED_ID,
            "failed",
            "2026-01-01T00:00:00Z",
            "BackoffLimitExceeded",
            "Pod mnist-worker-1 failed (exit code 3); backoffLimit 3 reached",
        )
    ]
    # The same status, whenever read, calls for the same message.
    assert derive("uid-1", FAILED_STATUS, ALL, "Replica", NOW)[0].id == FAILED_ID


def test_events_the_job_did_not_choose_or_too_old_are_not_sent() -> None:
    assert derive("uid-1", FAILED_STATUS, Choice(on=frozenset({"succeeded"})), "Replica", NOW) == []
    two_days_later = datetime(2026, 1, 3, 0, 0, 0, tzinfo=UTC)
    assert derive("uid-1", FAILED_STATUS, ALL, "Replica", two_days_later) == []


def test_hung_idle_evicted_disrupted_restarted_and_late_start() -> None:
    running = {
        "phase": "Running",
        "restartCount": 2,
        "disruptionCount": 1,
        "restarts": [
            {"time": "2026-01-01T00:01:00Z", "replica": "w-0", "exitCode": 1, "counted": True},
            {"time": "2026-01-01T00:02:00Z", "replica": "w-1", "reason": "Evicted",
             "counted": False},
            {"time": "2026-01-01T00:03:00Z", "replica": "w-0", "exitCode": 137, "counted": True},
        ],
        "conditions": [
            {"type": "Hung", "status": "True", "reason": "Hung", "message": "silent 10m",
             "lastTransitionTime": "2026-01-01T00:04:00Z"},
            {"type": "GPUsIdle", "status": "True", "reason": "GPUsIdle", "message": "idle",
             "lastTransitionTime": "2026-01-01T00:05:00Z"},
            {"type": "Running", "status": "False", "reason": "EvictedByKueue",
             "message": "preempted", "lastTransitionTime": "2026-01-01T00:06:00Z"},
        ],
    }  # fmt: skip
    found = derive("uid-1", running, ALL, "Job", NOW)
    assert [(d.event, d.time, d.reason, d.message) for d in found] == [
        ("preempted", "2026-01-01T00:02:00Z", "Disrupted",
         "pod w-1 Evicted: disruption 1, the replica is recreated"),
        ("restarted", "2026-01-01T00:03:00Z", "Restarting",
         "every replica restarted after w-0 (exit code 137): restart 2"),
        ("hung", "2026-01-01T00:04:00Z", "Hung", "silent 10m"),
        ("gpus-idle", "2026-01-01T00:05:00Z", "GPUsIdle", "idle"),
        ("preempted", "2026-01-01T00:06:00Z", "EvictedByKueue", "preempted"),
    ]  # fmt: skip
    # restartScope Replica: a replica's restart is not the whole job's.
    assert "restarted" not in [d.event for d in derive("uid-1", running, ALL, "Replica", NOW)]
    pending_job = {
        "phase": "Pending",
        "startEstimate": {"estimatedStartTime": "2026-01-01T01:10:00Z", "reason": "after job b"},
    }
    late = derive("uid-1", pending_job, ALL, "Replica", NOW)
    assert [(d.event, d.message) for d in late] == [
        (
            "start-estimate",
            "the job is estimated to start at 2026-01-01T01:10:00Z, in 60 min: after job b",
        )
    ]
    soon = {"phase": "Pending", "startEstimate": {"estimatedStartTime": "2026-01-01T00:30:00Z"}}
    assert derive("uid-1", soon, ALL, "Replica", NOW) == []  # 20 min: under the 30 chosen
    never = {"phase": "Pending", "startEstimate": {"neverFits": True, "reason": "asks 128 GPUs"}}
    assert [d.message for d in derive("uid-1", never, ALL, "Replica", NOW)] == [
        "the job never starts as it is: asks 128 GPUs"
    ]


DUE = Due(FAILED_ID, "failed", "2026-01-01T00:00:00Z", "BackoffLimitExceeded", "exit code 3")


def to_both(event: str) -> tuple[str, ...]:
    return ("team-a/hook", "team-a/mail")


def test_a_message_is_recorded_pending_before_anything_is_sent() -> None:
    record, events = merge(None, [DUE], to_both, {}, [], "2026-01-01T00:00:01Z")
    assert record == {
        "messages": [
            {
                "id": FAILED_ID,
                "event": "failed",
                "time": "2026-01-01T00:00:00Z",
                "reason": "BackoffLimitExceeded",
                "message": "exit code 3",
                "queuedTime": "2026-01-01T00:00:01Z",
                "to": ["team-a/hook", "team-a/mail"],
                "deliveries": [],
                "state": "Pending",
            }
        ]
    }
    assert events == []
    assert [m["id"] for m in pending(record)] == [FAILED_ID]


def test_outcomes_are_recorded_once_and_settle_the_message() -> None:
    first, _ = merge(None, [DUE], to_both, {}, [], "2026-01-01T00:00:01Z")
    hook = Outcome("team-a/hook", "Delivered", 1, "2026-01-01T00:00:02Z")
    second, events = merge(first, [DUE], to_both, {FAILED_ID: {"team-a/hook": hook}}, [], "x")
    assert second is not None
    assert second["messages"][0]["deliveries"] == [
        {"endpoint": "team-a/hook", "state": "Delivered", "attempts": 1,
         "time": "2026-01-01T00:00:02Z"}
    ]  # fmt: skip
    assert second["messages"][0]["state"] == "Pending"  # the mail has no outcome yet
    assert events == [("Normal", "NotificationSent", "told team-a/hook of failed (56fae10f)")]
    # The same outcome again (the deliverer has not forgotten it yet): recorded once.
    again, told = merge(second, [DUE], to_both, {FAILED_ID: {"team-a/hook": hook}}, [], "x")
    assert again == second and told == []
    mail = Outcome("team-a/mail", "GaveUp", 7, "2026-01-01T01:00:02Z", "SMTP 451")
    third, events = merge(second, [DUE], to_both, {FAILED_ID: {"team-a/mail": mail}}, [], "x")
    assert third is not None
    assert third["messages"][0]["state"] == "Failed"
    assert pending(third) == []
    assert events == [
        (
            "Warning",
            "NotificationFailed",
            "gave up telling team-a/mail of failed (56fae10f) after 7 attempt(s): SMTP 451",
        )
    ]


def test_no_endpoint_nothing_recorded_and_problems_told_once() -> None:
    assert merge(None, [DUE], lambda e: (), {}, [], "x") == (None, [])
    record, events = merge(None, [], lambda e: (), {}, ["annotation to: no endpoint x"], "x")
    assert record == {"messages": [], "problems": ["annotation to: no endpoint x"]}
    assert events == [("Warning", "NotificationsMisconfigured", "annotation to: no endpoint x")]
    _, again = merge(record, [], lambda e: (), {}, ["annotation to: no endpoint x"], "x")
    assert again == []


def test_the_record_keeps_the_latest_twenty_settled_messages() -> None:
    record = None
    for n in range(25):
        due = Due(f"id{n:02d}", "restarted", f"2026-01-01T00:00:{n:02d}Z", "Restarting", "")
        done = {f"id{n:02d}": {"team-a/hook": Outcome("team-a/hook", "Delivered", 1, "t")}}
        record, _ = merge(record, [due], lambda e: ("team-a/hook",), done, [], "t")
    assert record is not None
    assert [m["id"] for m in record["messages"]] == [f"id{n:02d}" for n in range(5, 25)]


def test_t9k_describe_shows_each_message_and_each_endpoint() -> None:
    from t9k_operator.integrations.notifications.build import NOTIFICATIONS_PART

    part = {
        "problems": ["annotation notifications.tensorstack.dev/to: no endpoint x"],
        "messages": [
            {
                "id": FAILED_ID,
                "event": "failed",
                "time": "2026-01-01T00:00:00Z",
                "state": "Pending",
                "to": ["team-a/hook", "team-a/mail"],
                "deliveries": [
                    {"endpoint": "team-a/hook", "state": "GaveUp", "attempts": 7,
                     "time": "t", "error": "HTTP 503 Service Unavailable"}
                ],
            }
        ],
    }  # fmt: skip
    assert NOTIFICATIONS_PART.section == "Notifications"
    assert NOTIFICATIONS_PART.lines(part) == [
        "problem: annotation notifications.tensorstack.dev/to: no endpoint x",
        "failed at 2026-01-01T00:00:00Z: Pending; team-a/hook GaveUp (7 attempts): "
        "HTTP 503 Service Unavailable, team-a/mail pending",
    ]
