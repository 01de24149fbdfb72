"""A stand-in OpenID Connect identity provider for the tests: the two
documents a real one publishes, served over HTTPS on 127.0.0.1, and its
signature on the ID tokens it gives people.

kube-apiserver's JWT authenticator (``--authentication-config``, a ``jwt``
authenticator naming :attr:`Issuer.url`) fetches
``<issuer>/.well-known/openid-configuration`` and the key set it names
(``jwks_uri``), trusting :attr:`Issuer.ca_pem`, and then validates each
token itself: its RS256 signature against those keys, ``iss``, ``aud`` and
``exp``. Nothing here validates anything; a token is only a JWT signed with
the issuer's RSA key (:meth:`Issuer.id_token`), or with another key, as a
forger would sign it (:func:`forged_id_token`).
"""

from __future__ import annotations

import base64
import datetime
import http.server
import ipaddress
import json
import ssl
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

KEY_ID = "t9k-test-key"
DISCOVERY = "/.well-known/openid-configuration"
KEYS = "/keys"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _uint(n: int) -> str:
    return _b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _sign(key: rsa.RSAPrivateKey, claims: dict[str, Any]) -> str:
    """A compact JWS of ``claims``, RS256 under ``key``."""
    header = {"alg": "RS256", "typ": "JWT", "kid": KEY_ID}
    signed = ".".join(_b64(json.dumps(p, separators=(",", ":")).encode()) for p in (header, claims))
    signature = key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signed}.{_b64(signature)}"


def _self_signed(key: rsa.RSAPrivateKey) -> x509.Certificate:
    """A CA certificate for 127.0.0.1 that is also the server's own: the API
    server trusts it as the issuer's certificateAuthority."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "t9k test OIDC issuer")])
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )


class Issuer:
    """The identity provider, serving from construction until :meth:`close`."""

    def __init__(self, audience: str) -> None:
        self.audience = audience
        self._key = _new_key()
        tls_key = _new_key()
        self.ca_pem = _self_signed(tls_key).public_bytes(serialization.Encoding.PEM).decode()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"https://127.0.0.1:{self._server.server_address[1]}"
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as folder:  # ssl loads a chain from files only
            cert, key = Path(folder, "tls.crt"), Path(folder, "tls.key")
            cert.write_text(self.ca_pem)
            key.write_bytes(
                tls_key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.PKCS8,
                    serialization.NoEncryption(),
                )
            )
            context.load_cert_chain(cert, key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def documents(self) -> dict[str, dict[str, Any]]:
        """What it serves, by path: its discovery document and its key set."""
        public = self._key.public_key().public_numbers()
        jwk = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID}
        jwk |= {"n": _uint(public.n), "e": _uint(public.e)}
        return {
            DISCOVERY: {
                "issuer": self.url,
                "jwks_uri": self.url + KEYS,
                "authorization_endpoint": self.url + "/authorize",
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
            },
            KEYS: {"keys": [jwk]},
        }

    def claims(self, email: str, seconds: int = 3600) -> dict[str, Any]:
        """An ID token's claims for ``email``, valid for ``seconds`` from now
        (negative: expired that long ago)."""
        now = int(time.time())
        return {
            "iss": self.url,
            "aud": self.audience,
            "sub": email.split("@")[0],
            "email": email,
            "email_verified": True,
            "name": email.split("@")[0].title(),
            "iat": now - max(0, -seconds) - 60,
            "exp": now + seconds,
        }

    def id_token(self, email: str, seconds: int = 3600) -> str:
        """An ID token for ``email``, signed with this issuer's key."""
        return _sign(self._key, self.claims(email, seconds))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                document = issuer.documents().get(self.path)
                body = json.dumps(document).encode()
                self.send_response(200 if document is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def forged_id_token(issuer: Issuer, email: str) -> str:
    """An ID token with ``issuer``'s claims for ``email`` but signed with
    another key, under the issuer's key id."""
    return _sign(_new_key(), issuer.claims(email))
