"""The operator's serving certificates and its HTTPS server (the Secret the
operator keeps is met in tests/integration/test_progress.py)."""

from __future__ import annotations

import datetime as dt
import os
import socket
import ssl
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509

from t9k_operator.runtime import certs, tls


class Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"hi\n")

    def log_message(self, format: str, *args: Any) -> None:
        return


def write_dir(path: Path, hosts: list[str]) -> tuple[bytes, bytes]:
    ca, ca_key = certs.new_ca("test CA")
    cert, key = certs.new_serving(ca, ca_key, hosts)
    path.mkdir(exist_ok=True)
    (path / "ca.crt").write_bytes(ca)
    (path / "tls.crt").write_bytes(cert)
    (path / "tls.key").write_bytes(key)
    return ca, cert


def get(port: int, ca: Path, host: str = "localhost") -> bytes:
    ctx = ssl.create_default_context(cafile=str(ca))
    url = f"https://{host}:{port}/"
    with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:
        return bytes(resp.read())


def served_serial(port: int, ca: Path) -> int:
    ctx = ssl.create_default_context(cafile=str(ca))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as conn,
    ):
        der = conn.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der).serial_number


def test_the_server_presents_a_certificate_its_ca_signed_for_its_names(tmp_path: Path) -> None:
    write_dir(tmp_path / "certs", ["localhost", "127.0.0.1"])
    server = tls.TLSServer(("127.0.0.1", 0), Hello, tls.DirSource(tmp_path / "certs"))
    server.start()
    try:
        assert get(server.port, tmp_path / "certs" / "ca.crt") == b"hi\n"
        assert get(server.port, tmp_path / "certs" / "ca.crt", "127.0.0.1") == b"hi\n"
        # Another CA's clients do not trust it.
        other_ca, _ = certs.new_ca("another CA")
        (tmp_path / "other.crt").write_bytes(other_ca)
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            get(server.port, tmp_path / "other.crt")
    finally:
        server.stop()


def test_a_silent_client_holds_up_no_other(tmp_path: Path) -> None:
    write_dir(tmp_path / "certs", ["localhost"])
    server = tls.TLSServer(("127.0.0.1", 0), Hello, tls.DirSource(tmp_path / "certs"))
    server.start()
    try:
        with socket.create_connection(("127.0.0.1", server.port)):  # says nothing
            assert get(server.port, tmp_path / "certs" / "ca.crt") == b"hi\n"
        with socket.create_connection(("127.0.0.1", server.port)) as plain:
            plain.sendall(b"GET / HTTP/1.0\r\n\r\n")  # not TLS: closed, no HTTP answer
            plain.settimeout(5)
            received = b""
            try:
                while chunk := plain.recv(100):
                    received += chunk
            except ConnectionResetError:
                pass  # closed with unread data: a reset
            assert b"HTTP" not in received
        assert get(server.port, tmp_path / "certs" / "ca.crt") == b"hi\n"
    finally:
        server.stop()


def test_a_renewed_certificate_in_the_directory_is_served_without_a_restart(
    tmp_path: Path,
) -> None:
    certs = tmp_path / "certs"
    write_dir(certs, ["localhost"])
    server = tls.TLSServer(("127.0.0.1", 0), Hello, tls.DirSource(certs))
    renewed: list[tls.Bundle] = []
    server.on_renew = renewed.append
    server.start()
    try:
        first = served_serial(server.port, certs / "ca.crt")
        assert not server.reload()  # nothing changed
        time.sleep(0.01)
        _, cert = write_dir(certs, ["localhost"])
        os.utime(certs / "tls.crt", (time.time() + 5, time.time() + 5))
        assert server.reload()
        second = served_serial(server.port, certs / "ca.crt")
        assert second != first
        assert second == x509.load_pem_x509_certificate(cert).serial_number
        assert [b.cert for b in renewed] == [cert]
    finally:
        server.stop()


def test_a_certificate_covers_its_names_until_shortly_before_its_end() -> None:
    ca, ca_key = certs.new_ca("test CA")
    cert, _ = certs.new_serving(ca, ca_key, ["svc.ns.svc", "10.0.0.1"])
    assert certs.covers(cert, ["svc.ns.svc", "10.0.0.1"])
    assert not certs.covers(cert, ["svc.ns.svc", "other.ns.svc"])
    end = x509.load_pem_x509_certificate(cert).not_valid_after_utc
    assert certs.covers(cert, ["svc.ns.svc"], at=end - certs.RENEW_BEFORE - dt.timedelta(days=1))
    assert not certs.covers(
        cert, ["svc.ns.svc"], at=end - certs.RENEW_BEFORE + dt.timedelta(days=1)
    )
    assert not certs.covers(b"not a certificate", ["svc.ns.svc"])


def test_the_ca_signs_and_is_a_ca() -> None:
    ca, ca_key = certs.new_ca("test CA")
    cert, _ = certs.new_serving(ca, ca_key, ["svc.ns.svc"])
    ca_cert = x509.load_pem_x509_certificate(ca)
    leaf = x509.load_pem_x509_certificate(cert)
    assert ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert not leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    leaf.verify_directly_issued_by(ca_cert)
    assert (
        leaf.not_valid_after_utc - leaf.not_valid_before_utc
        <= certs.CERT_LIFETIME + dt.timedelta(minutes=5)
    )


def test_many_replicas_connecting_at_once_are_queued_not_dropped() -> None:
    # socketserver's default backlog (5) drops SYNs beyond it, each retried a
    # second later: hack/bench/progress/ measured p99 1.1 s with 32 reporters.
    assert tls._TLSHTTPServer.request_queue_size >= 128
