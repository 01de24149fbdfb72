"""The notifications' pure parts: each channel's payload and signature, the
backoff and Retry-After, the annotations and the endpoint Secrets. Expected
values are written out here (the signatures computed with openssl), never by
the code under test."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from t9k_operator.integrations.notifications import annotations as notes
from t9k_operator.integrations.notifications.backoff import backoff, retry_after, retryable, wait
from t9k_operator.integrations.notifications.channels import Invalid, endpoint
from t9k_operator.integrations.notifications.formats import (
    dingtalk_sign,
    email,
    feishu_sign,
    request,
    signature,
)
from t9k_operator.integrations.notifications.message import Message

MSG = Message(
    id="abc123",
    event="failed",
    time="2026-01-01T00:00:00Z",
    reason="ReplicaFailed",
    text="worker-1 exited with code 3",
    kind="PyTorchTrainingJob",
    namespace="team-a",
    name="mnist",
    uid="uid-1",
    phase="Failed",
    duration_seconds=3725,
    progress="420/1000 (42%)",
    link="https://console.example.com/team-a/mnist",
)
TEXT = (
    "[t9k] Failed: PyTorchTrainingJob team-a/mnist\n"
    "phase Failed, ran 1h02m, progress 420/1000 (42%)\n"
    "ReplicaFailed: worker-1 exited with code 3\n"
    "https://console.example.com/team-a/mnist"
)


def secret(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, object]:
    return {
        "metadata": {"name": name, "namespace": "team-a", "labels": labels or {}},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


# -- signatures ---------------------------------------------------------------------


def test_webhook_signature_is_hmac_sha256_of_timestamp_dot_body() -> None:
    # openssl: printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac k3y
    assert signature("k3y", 1700000000, b'{"a":1}') == (
        "v1=fd5a70e965043f7df6309c2c3b5ff5a8ffa99b1f5175e9a311459e73c4634d4a"
    )


def test_feishu_sign_keys_with_timestamp_newline_secret_over_nothing() -> None:
    assert feishu_sign("sec", 1700000000) == "ttGYnPblC3CcNExnS7y5igm57JhpqZJtHpJ+TURiUeg="


def test_dingtalk_sign_keys_with_the_secret_over_milliseconds_newline_secret() -> None:
    assert dingtalk_sign("sec", 1700000000123) == "X4GzXrREC0BuuR0foEQVzeRBqW4ve0PLqw2ufqpOJvA="


# -- payloads -----------------------------------------------------------------------


def test_webhook_request_carries_schema_v1_and_its_headers() -> None:
    ep = endpoint(secret("hook", type="webhook", url="https://hooks.example/t9k", secret="k3y"))
    req = request(MSG, ep, 1700000000.9)
    assert req.url == "https://hooks.example/t9k"
    assert json.loads(req.body) == {
        "schema": "notifications.tensorstack.dev/v1",
        "id": "abc123",
        "event": "failed",
        "time": "2026-01-01T00:00:00Z",
        "reason": "ReplicaFailed",
        "message": "worker-1 exited with code 3",
        "job": {
            "kind": "PyTorchTrainingJob",
            "namespace": "team-a",
            "name": "mnist",
            "uid": "uid-1",
            "phase": "Failed",
            "durationSeconds": 3725,
            "progress": "420/1000 (42%)",
            "url": "https://console.example.com/team-a/mnist",
        },
        "text": TEXT,
    }
    assert req.headers["X-T9k-Delivery"] == "abc123"
    assert req.headers["X-T9k-Event"] == "failed"
    assert req.headers["X-T9k-Timestamp"] == "1700000000"
    assert req.headers["X-T9k-Signature"] == signature("k3y", 1700000000, req.body)
    assert "k3y" not in repr(req) and "hooks.example" not in repr(req)


def test_slack_wecom_and_unsigned_chat_payloads() -> None:
    slack = endpoint(secret("s", type="slack", url="https://hooks.slack.example/T/B/x"))
    assert json.loads(request(MSG, slack, 0).body) == {"text": TEXT}
    wecom = endpoint(secret("w", type="wecom", url="https://qyapi.example/send?key=k"))
    assert json.loads(request(MSG, wecom, 0).body) == {
        "msgtype": "text",
        "text": {"content": TEXT},
    }
    feishu = endpoint(secret("f", type="feishu", url="https://open.feishu.example/hook/x"))
    assert json.loads(request(MSG, feishu, 0).body) == {
        "msg_type": "text",
        "content": {"text": TEXT},
    }


def test_signed_feishu_puts_timestamp_and_sign_in_the_body() -> None:
    ep = endpoint(
        secret("f", type="feishu", url="https://open.feishu.example/hook/x", secret="sec")
    )
    body = json.loads(request(MSG, ep, 1700000000.5).body)
    assert body == {
        "timestamp": "1700000000",
        "sign": "ttGYnPblC3CcNExnS7y5igm57JhpqZJtHpJ+TURiUeg=",
        "msg_type": "text",
        "content": {"text": TEXT},
    }


def test_signed_dingtalk_adds_timestamp_and_sign_to_the_query() -> None:
    url = "https://oapi.dingtalk.example/robot/send?access_token=t0k"
    ep = endpoint(secret("d", type="dingtalk", url=url, secret="sec"))
    req = request(MSG, ep, 1700000000.123)
    query = parse_qs(urlsplit(req.url).query)
    assert query == {
        "access_token": ["t0k"],
        "timestamp": ["1700000000123"],
        "sign": ["X4GzXrREC0BuuR0foEQVzeRBqW4ve0PLqw2ufqpOJvA="],
    }
    assert json.loads(req.body) == {"msgtype": "text", "text": {"content": TEXT}}


def test_email_names_the_delivery_in_its_message_id() -> None:
    ep = endpoint(
        secret(
            "m",
            type="email",
            host="smtp.example",
            to="a@example.com, b@example.com",
            **{"from": "t9k@example.com"},
        )
    )
    mail = email(MSG, ep)
    assert mail["Subject"] == "[t9k] Failed: PyTorchTrainingJob team-a/mnist"
    assert mail["To"] == "a@example.com, b@example.com"
    assert mail["Message-ID"] == "<abc123@notifications.tensorstack.dev>"
    assert mail.get_content() == TEXT + "\n"
    assert ep.smtp is not None and ep.smtp.port == 25


# -- endpoints ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"type": "fax", "url": "https://x"}, "key type must be one of"),
        ({"type": "slack", "url": "ftp://x"}, "key url must be an http"),
        ({"type": "webhook", "url": "https://x"}, "needs key secret"),
        ({"type": "email", "host": "h", "to": "a@b"}, "needs key(s) from"),
        ({"type": "slack", "url": "https://x", "on": "failed,exploded"}, "exploded"),
        (
            {"type": "email", "host": "h", "to": "a@b", "from": "c@d", "starttls": "true"}
            | {"caCert": "not a certificate"},
            "key caCert must be PEM certificate(s)",
        ),
        (
            {"type": "email", "host": "h", "to": "a@b", "from": "c@d"}
            | {"caCert": "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----"},
            "key caCert needs starttls or tls",
        ),
    ],
)
def test_a_malformed_endpoint_is_named_without_its_values(data: dict[str, str], says: str) -> None:
    with pytest.raises(Invalid) as raised:
        endpoint(secret("bad", **data))
    assert says in str(raised.value)
    assert "https://x" not in str(raised.value)


def test_an_endpoint_default_label_and_its_events() -> None:
    ep = endpoint(
        secret(
            "s",
            {"notifications.tensorstack.dev/default": "true"},
            type="slack",
            url="https://hooks.slack.example/T/B/x",
            on="failed, hung",
        )
    )
    assert ep.default is True
    assert ep.on == frozenset({"failed", "hung"})
    assert ep.ref == "team-a/s"
    assert "hooks.slack" not in repr(ep)


# -- backoff ------------------------------------------------------------------------


def test_backoff_doubles_from_one_second_to_five_minutes_less_the_jitter() -> None:
    assert [backoff(n, 0.0) for n in (1, 2, 3, 4, 9, 10, 20)] == [
        1.0,
        2.0,
        4.0,
        8.0,
        256.0,
        300.0,
        300.0,
    ]
    assert backoff(3, 0.5) == 3.0  # 4 less a quarter
    assert backoff(3, 0.999) == pytest.approx(2.002)


def test_a_lower_backoff_cap_stops_the_doubling_there() -> None:
    # --notification-backoff-cap 10s
    assert [backoff(n, 0.0, 10.0) for n in (1, 4, 5, 6, 20)] == [1.0, 8.0, 10.0, 10.0, 10.0]
    assert backoff(9, 0.5, 10.0) == 7.5  # the jitter still takes its part
    assert wait(9, None, 0.0, 10.0) == 10.0
    assert wait(9, 30.0, 0.0, 10.0) == 30.0  # a Retry-After above the cap is honoured


def test_an_email_endpoints_password_and_ca_are_never_in_its_repr() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----"
    ep = endpoint(
        secret(
            "m",
            type="email",
            host="smtp.example",
            port="587",
            starttls="true",
            username="t9k",
            password="pa55-word",
            caCert=pem,
            to="a@example.com",
            **{"from": "t9k@example.com"},
        )
    )
    assert ep.smtp is not None and ep.smtp.ca_cert == pem and ep.smtp.starttls
    assert "pa55-word" not in repr(ep.smtp) and "BEGIN" not in repr(ep.smtp)


def test_retry_after_in_seconds_or_as_a_date_and_honoured() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after("7", now) == 7.0
    assert retry_after("Thu, 01 Jan 2026 12:00:30 GMT", now) == 30.0
    assert retry_after("99999", now) == 3600.0
    assert retry_after("soon", now) is None
    assert retry_after(None, now) is None
    assert wait(1, 7.0, 0.0) == 7.0  # what the receiver asked, not the backoff's 1 s
    assert wait(1, None, 0.0) == 1.0


def test_which_answers_are_tried_again() -> None:
    assert [c for c in (200, 400, 401, 404, 408, 425, 429, 500, 502, 503) if retryable(c)] == [
        408,
        425,
        429,
        500,
        502,
        503,
    ]


# -- annotations --------------------------------------------------------------------


def test_annotations_choose_endpoints_events_and_the_threshold() -> None:
    found = notes.choice(
        {
            "notifications.tensorstack.dev/to": "team-slack, oncall,team-slack",
            "notifications.tensorstack.dev/on": "failed,hung",
            "notifications.tensorstack.dev/start-estimate-over": "30m",
        }
    )
    assert found.to == ("team-slack", "oncall")
    assert found.on == frozenset({"failed", "hung", "start-estimate"})
    assert found.over == 1800
    assert found.problems == ()


def test_malformed_annotations_are_named_and_left_out() -> None:
    found = notes.choice(
        {
            "notifications.tensorstack.dev/to": "Bad_Name,ok",
            "notifications.tensorstack.dev/on": "failed,exploded",
            "notifications.tensorstack.dev/start-estimate-over": "soon",
        }
    )
    assert found.to == ("ok",)
    assert found.on == frozenset({"failed"})
    assert found.over is None
    assert found.problems == (
        "annotation notifications.tensorstack.dev/to: 'Bad_Name' is not a Secret's name",
        "annotation notifications.tensorstack.dev/on: unknown event(s) exploded (known: "
        "succeeded, failed, hung, gpus-idle, preempted, restarted, start-estimate)",
        "annotation notifications.tensorstack.dev/start-estimate-over: 'soon' is not a "
        "duration (30m, 2h, 90s)",
    )


def test_no_annotations_every_event_but_the_start_estimate() -> None:
    assert notes.choice({}).on == frozenset(
        {"succeeded", "failed", "hung", "gpus-idle", "preempted", "restarted"}
    )
