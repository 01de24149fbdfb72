"""``cryptography`` (about 8 MiB of resident memory) is loaded by the operator
only when it makes or checks a key: an ssh key pair for a job, or the
progress endpoint's certificate. Importing the entry point alone does not
load it; a child interpreter shows what a fresh process imports."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import json, sys
loaded = lambda: sorted({m.partition(".")[0] for m in sys.modules} & {"cryptography"})
import t9k_operator.__main__
at_start = loaded()
from t9k_operator.runtime.sshkeys import generate_keypair
private, public = generate_keypair("job@ns")
print(json.dumps([at_start, loaded(), private.splitlines()[0], public.split()[0]]))
"""


def test_cryptography_is_imported_with_the_first_key_not_at_start() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True)
    at_start, after_key, first_line, key_type = json.loads(done.stdout)
    assert at_start == []
    assert after_key == ["cryptography"]
    assert first_line == "-----BEGIN OPENSSH PRIVATE KEY-----"
    assert key_type == "ssh-ed25519"
