"""An endpoint, as its Secret states it.

A Secret labelled ``notifications.tensorstack.dev/endpoint: "true"`` is an
endpoint; with ``notifications.tensorstack.dev/default: "true"`` too it is a
default one (in the operator's namespace: of every job; in another: of the
namespace's jobs that name none). Its keys:

- ``type``: ``webhook`` (JSON of schema v1, signed with HMAC-SHA256),
  ``slack``, ``feishu``, ``dingtalk``, ``wecom`` (their incoming-webhook
  formats) or ``email``;
- ``url``: where to POST (all but email);
- ``secret``: the HMAC key (webhook: required), or the signing secret of a
  Feishu or DingTalk robot (optional);
- ``on``: the events it takes, comma-separated (default: all);
- email: ``host``, ``port`` (default 25), ``from``, ``to`` (comma-separated),
  ``username`` and ``password`` (optional), ``starttls`` (``true``) or
  ``tls`` (``true``: SMTP over TLS, port 465), ``caCert`` (optional: the PEM
  certificate(s) of the CA the server's certificate is checked against,
  instead of the system's).

Pure: :func:`endpoint` reads a Secret and says what is wrong with it, never
quoting a value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from t9k_operator.integrations.notifications.annotations import EVENTS

LABEL = "notifications.tensorstack.dev/endpoint"
DEFAULT_LABEL = "notifications.tensorstack.dev/default"
SELECTOR = f"{LABEL}=true"
WEBHOOK, SLACK, FEISHU, DINGTALK, WECOM, EMAIL = (
    "webhook",
    "slack",
    "feishu",
    "dingtalk",
    "wecom",
    "email",
)
TYPES = (WEBHOOK, SLACK, FEISHU, DINGTALK, WECOM, EMAIL)


@dataclass(frozen=True)
class Smtp:
    host: str
    port: int
    sender: str
    to: tuple[str, ...]
    username: str = ""
    password: str = field(default="", repr=False)
    starttls: bool = False
    tls: bool = False
    ca_cert: str = field(default="", repr=False)  # PEM; empty: the system's CAs


@dataclass(frozen=True)
class Endpoint:
    ref: str  # namespace/name of its Secret: how records and Events name it
    type: str
    url: str = ""
    key: str = ""
    on: frozenset[str] = frozenset(EVENTS)
    default: bool = False
    smtp: Smtp | None = None

    def __repr__(self) -> str:  # never the URL (it may carry a token) or a key
        return f"Endpoint({self.ref}, {self.type})"


class Invalid(ValueError):
    """A Secret that is not a usable endpoint; the message names its keys, never a value."""


def _data(secret: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            out[key] = base64.b64decode(str(value), validate=True).decode().strip()
        except (binascii.Error, UnicodeDecodeError):
            raise Invalid(f"key {key} is not base64 of UTF-8 text") from None
    for key, value in (secret.get("stringData") or {}).items():
        out[key] = str(value).strip()
    return out


def _flag(value: str) -> bool:
    return value.lower() in ("true", "yes", "1")


def endpoint(secret: Mapping[str, Any]) -> Endpoint:
    """The endpoint ``secret`` states; raises :class:`Invalid`."""
    meta = secret.get("metadata") or {}
    ref = f"{meta.get('namespace')}/{meta.get('name')}"
    data = _data(secret)
    type_ = data.get("type", "")
    if type_ not in TYPES:
        raise Invalid(f"key type must be one of {', '.join(TYPES)}")
    on = frozenset(EVENTS)
    if data.get("on"):
        chosen = [e.strip() for e in data["on"].split(",") if e.strip()]
        unknown = [e for e in chosen if e not in EVENTS]
        if unknown:
            raise Invalid(f"key on names unknown event(s) {', '.join(unknown)}")
        on = frozenset(chosen)
    default = _flag(str((meta.get("labels") or {}).get(DEFAULT_LABEL, "")))
    if type_ == EMAIL:
        return Endpoint(ref, type_, on=on, default=default, smtp=_smtp(data))
    url = data.get("url", "")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise Invalid("key url must be an http:// or https:// address")
    key = data.get("secret", "")
    if type_ == WEBHOOK and not key:
        raise Invalid("a webhook needs key secret, the HMAC key its messages are signed with")
    return Endpoint(ref, type_, url=url, key=key, on=on, default=default)


def _smtp(data: Mapping[str, str]) -> Smtp:
    missing = [k for k in ("host", "from", "to") if not data.get(k)]
    if missing:
        raise Invalid(f"an email endpoint needs key(s) {', '.join(missing)}")
    try:
        port = int(data.get("port") or (465 if _flag(data.get("tls", "")) else 25))
    except ValueError:
        raise Invalid("key port must be a number") from None
    if not 0 < port < 65536:
        raise Invalid("key port must be from 1 to 65535")
    to = tuple(a.strip() for a in data["to"].split(",") if a.strip())
    if not to or any("@" not in a for a in (*to, data["from"])):
        raise Invalid("keys from and to must be e-mail addresses")
    if bool(data.get("username")) != bool(data.get("password")):
        raise Invalid("keys username and password go together")
    ca = data.get("caCert", "")
    if ca and "-----BEGIN CERTIFICATE-----" not in ca:
        raise Invalid("key caCert must be PEM certificate(s)")
    if ca and not (_flag(data.get("starttls", "")) or _flag(data.get("tls", ""))):
        raise Invalid("key caCert needs starttls or tls")
    return Smtp(
        data["host"],
        port,
        data["from"],
        to,
        data.get("username", ""),
        data.get("password", ""),
        _flag(data.get("starttls", "")),
        _flag(data.get("tls", "")),
        ca,
    )
