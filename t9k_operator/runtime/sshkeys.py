"""ssh key pairs for jobs whose replicas talk over ssh (DeepSpeed, ColossalAI).

One Ed25519 pair per job, never shared between jobs, generated when the job's
Secret is first created. ``cryptography`` does the key work: it is a
well-kept library, and writing OpenSSH key serialization by hand would be
code to get wrong. It is imported with the first key made (about 8 MiB of
resident memory), so an operator that runs no job over ssh never loads it
for this.
"""

from __future__ import annotations


def generate_keypair(comment: str) -> tuple[str, str]:
    """(private key in OpenSSH format, ``ssh-ed25519 ... comment`` public line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return private, f"{public} {comment}\n"
