"""The certificates of the operator's own HTTPS endpoints: a CA of its own
(ten years), serving certificates it signs (one year, for the names the
endpoint is reached by), and the checks of whether one still serves: it names
every host and stays valid for :data:`RENEW_BEFORE`, or a CA can still sign
one that lasts its lifetime.

``cryptography`` does the key and certificate work (it is already the
operator's dependency for ssh keys).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIME = dt.timedelta(days=3650)
CERT_LIFETIME = dt.timedelta(days=365)
RENEW_BEFORE = dt.timedelta(days=30)
"""A certificate this close to its end is renewed (on start, and by the check
every :data:`~t9k_operator.runtime.tls.CHECK_EVERY` seconds)."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    now: dt.datetime,
    not_after: dt.datetime,
) -> x509.CertificateBuilder:
    """What every certificate here starts from: its names, its key, a random
    serial, and a validity from five minutes ago (clocks differ) to ``not_after``."""
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(not_after)
    )


def new_ca(common: str) -> tuple[bytes, bytes]:
    """A self-signed CA: (certificate, key), PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        _builder(_name(common), _name(common), key, now, now + CA_LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def new_serving(ca_cert: bytes, ca_key: bytes, hosts: Sequence[str]) -> tuple[bytes, bytes]:
    """A serving certificate for ``hosts`` (DNS names or IP addresses), signed
    by the CA: (certificate, key), PEM."""
    ca = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA's key is not an EC key")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    not_after = min(now + CERT_LIFETIME, ca.not_valid_after_utc)
    cert = (
        _builder(_name(hosts[0]), ca.subject, key, now, not_after)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
            critical=False,
        )
        .sign(signer, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def covers(cert_pem: bytes, hosts: Sequence[str], *, at: dt.datetime | None = None) -> bool:
    """Whether the certificate names every host and stays valid for
    :data:`RENEW_BEFORE` from ``at``."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    have = {str(n) for n in names.get_values_for_type(x509.DNSName)}
    have |= {str(n) for n in names.get_values_for_type(x509.IPAddress)}
    when = at or _now()
    return set(hosts) <= have and cert.not_valid_after_utc - RENEW_BEFORE > when


def ca_usable(ca_cert: bytes, ca_key: bytes) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(ca_cert)
        serialization.load_pem_private_key(ca_key, password=None)
    except ValueError:
        return False
    return cert.not_valid_after_utc - CERT_LIFETIME > _now()
