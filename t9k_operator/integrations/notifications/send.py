"""One try of a delivery: an HTTP POST (standard library) or an e-mail over
SMTP (``smtplib``, with STARTTLS or TLS and a login when the endpoint says so).

What a try says (:class:`Answer`) never quotes the endpoint's URL or
credentials: a chat webhook's URL carries its token.
"""

from __future__ import annotations

import smtplib
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import EmailMessage

from t9k_operator.integrations.notifications.backoff import retry_after, retryable
from t9k_operator.integrations.notifications.channels import Smtp
from t9k_operator.integrations.notifications.formats import HttpRequest

TIMEOUT = 10.0
"""Seconds a try may take (connect, send, answer)."""


@dataclass(frozen=True)
class Answer:
    ok: bool
    retry: bool = False  # another try may succeed
    asked: float | None = None  # seconds the receiver asked to wait (Retry-After)
    error: str = ""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a redirect is an answer of its own, not followed with the body


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(req: HttpRequest, timeout: float = TIMEOUT) -> Answer:
    """POST ``req``: a 2xx delivers it."""
    request = urllib.request.Request(req.url, data=req.body, headers=req.headers, method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as resp:
            resp.read(65536)
            return Answer(ok=True)
    except urllib.error.HTTPError as exc:
        asked = retry_after(exc.headers.get("Retry-After"), datetime.now(UTC))
        error = f"HTTP {exc.code} {exc.reason}"
        return Answer(ok=False, retry=retryable(exc.code), asked=asked, error=error)
    except urllib.error.URLError as exc:
        return Answer(ok=False, retry=True, error=f"cannot reach the endpoint: {exc.reason}")
    except (OSError, ValueError) as exc:  # a reset, a timeout reading the answer
        return Answer(ok=False, retry=True, error=f"the endpoint did not answer: {exc}")


def mail(message: EmailMessage, smtp: Smtp, timeout: float = TIMEOUT) -> Answer:
    """Send ``message`` through ``smtp``: a 4xx answer or a lost connection is
    tried again, a 5xx refusal is not."""
    try:
        client: smtplib.SMTP
        if smtp.tls:
            client = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=timeout, context=_context(smtp))
        else:
            client = smtplib.SMTP(smtp.host, smtp.port, timeout=timeout)
        with client:
            if smtp.starttls and not smtp.tls:
                client.starttls(context=_context(smtp))
            if smtp.username:
                client.login(smtp.username, smtp.password)
            client.send_message(message)
        return Answer(ok=True)
    except smtplib.SMTPAuthenticationError as exc:
        return Answer(ok=False, retry=False, error=f"SMTP login refused ({exc.smtp_code})")
    except smtplib.SMTPRecipientsRefused:
        return Answer(ok=False, retry=False, error="SMTP server refused every recipient")
    except smtplib.SMTPResponseException as exc:
        code = int(exc.smtp_code)
        return Answer(ok=False, retry=400 <= code < 500, error=f"SMTP {code}")
    except ssl.SSLCertVerificationError as exc:
        error = f"SMTP server's certificate not trusted: {exc.verify_message}"
        return Answer(ok=False, retry=True, error=error)
    except (TimeoutError, smtplib.SMTPException, OSError) as exc:
        return Answer(ok=False, retry=True, error=f"SMTP server unreachable: {type(exc).__name__}")


def _context(smtp: Smtp) -> ssl.SSLContext:
    """The server's certificate checked against the endpoint's ``caCert``, or
    the system's CAs without one; its name checked against ``host``."""
    return ssl.create_default_context(cadata=smtp.ca_cert or None)
