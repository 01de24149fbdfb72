"""Each channel's request for a message: the generic webhook's JSON (schema
``notifications.tensorstack.dev/v1``, signed), Slack's, Feishu's, DingTalk's
and WeCom's incoming-webhook payloads, and the e-mail.

The webhook's headers: ``X-T9k-Delivery`` (the message's id, the same on
every try: a receiver dedupes on it), ``X-T9k-Event``, ``X-T9k-Timestamp``
(Unix seconds of this try) and ``X-T9k-Signature``: ``v1=`` and the hex
HMAC-SHA256, keyed with the endpoint's secret, of the timestamp, a dot and
the body's bytes.

Pure: the time is given.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import quote_plus

from t9k_operator.integrations.notifications.channels import (
    DINGTALK,
    FEISHU,
    SLACK,
    WEBHOOK,
    WECOM,
    Endpoint,
)
from t9k_operator.integrations.notifications.message import Message, subject, text

SCHEMA = "notifications.tensorstack.dev/v1"
DELIVERY, EVENT, TIMESTAMP, SIGNATURE = (
    "X-T9k-Delivery",
    "X-T9k-Event",
    "X-T9k-Timestamp",
    "X-T9k-Signature",
)


@dataclass(frozen=True)
class HttpRequest:
    url: str
    headers: dict[str, str]
    body: bytes

    def __repr__(self) -> str:  # never the URL: it may carry a token
        return f"HttpRequest({len(self.body)} bytes)"


def _json(payload: object) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()


def document(m: Message) -> dict[str, object]:
    """The webhook's JSON document (schema v1)."""
    return {
        "schema": SCHEMA,
        "id": m.id,
        "event": m.event,
        "time": m.time,
        "reason": m.reason,
        "message": m.text,
        "job": {
            "kind": m.kind,
            "namespace": m.namespace,
            "name": m.name,
            "uid": m.uid,
            "phase": m.phase,
            "durationSeconds": m.duration_seconds,
            "progress": m.progress,
            "url": m.link,
        },
        "text": text(m),
    }


def signature(key: str, timestamp: int, body: bytes) -> str:
    """``X-T9k-Signature`` of ``body`` sent at ``timestamp``."""
    mac = hmac.new(key.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def feishu_sign(secret: str, timestamp: int) -> str:
    """A Feishu robot's ``sign``: HMAC-SHA256 keyed with the timestamp (seconds),
    a newline and the secret, of nothing, in base64."""
    key = f"{timestamp}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """A DingTalk robot's ``sign``: HMAC-SHA256 keyed with the secret, of the
    timestamp (milliseconds), a newline and the secret, in base64 (not yet
    URL-encoded)."""
    mac = hmac.new(secret.encode(), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256)
    return base64.b64encode(mac.digest()).decode()


def request(m: Message, ep: Endpoint, now: float) -> HttpRequest:
    """The HTTP request that delivers ``m`` to ``ep`` (not e-mail) at ``now``
    (Unix seconds)."""
    json_type = {"Content-Type": "application/json; charset=utf-8"}
    if ep.type == WEBHOOK:
        body = _json(document(m))
        ts = int(now)
        headers = {
            **json_type,
            DELIVERY: m.id,
            EVENT: m.event,
            TIMESTAMP: str(ts),
            SIGNATURE: signature(ep.key, ts, body),
        }
        return HttpRequest(ep.url, headers, body)
    if ep.type == SLACK:
        return HttpRequest(ep.url, json_type, _json({"text": text(m)}))
    if ep.type == FEISHU:
        payload: dict[str, object] = {"msg_type": "text", "content": {"text": text(m)}}
        if ep.key:
            ts = int(now)
            payload = {"timestamp": str(ts), "sign": feishu_sign(ep.key, ts), **payload}
        return HttpRequest(ep.url, json_type, _json(payload))
    if ep.type == DINGTALK:
        url = ep.url
        if ep.key:
            ms = int(now * 1000)
            sep = "&" if "?" in url else "?"
            url = f"{url}{sep}timestamp={ms}&sign={quote_plus(dingtalk_sign(ep.key, ms))}"
        body = _json({"msgtype": "text", "text": {"content": text(m)}})
        return HttpRequest(url, json_type, body)
    if ep.type == WECOM:
        body = _json({"msgtype": "text", "text": {"content": text(m)}})
        return HttpRequest(ep.url, json_type, body)
    raise ValueError(f"no HTTP request for an endpoint of type {ep.type}")


def email(m: Message, ep: Endpoint) -> EmailMessage:
    """The e-mail that delivers ``m`` to ``ep``'s recipients; its Message-ID
    carries the delivery id."""
    assert ep.smtp is not None
    mail = EmailMessage()
    mail["Subject"] = subject(m)
    mail["From"] = ep.smtp.sender
    mail["To"] = ", ".join(ep.smtp.to)
    mail["Message-ID"] = f"<{m.id}@notifications.tensorstack.dev>"
    mail[DELIVERY] = m.id
    mail.set_content(text(m) + "\n")
    return mail
