"""The older layout's ``spec.trainingLogFilesets`` of a TensorBoard: training log
filesets as URLs. The one form served is ``t9k://pvc/<claim>/<path>``: a claim
of the TensorBoard's namespace, mounted read-only, and a directory in it
(none: the whole claim). Every other form (S3, http, a bare path) is refused
at admission with :data:`MSG_FILESET_FORM`: those sources are ``spec.logDir``'s
(``api/tensorboard_logdir.py``). Each rule is a
:class:`~t9k_operator.api.rules.Rule`: its CEL checks it at admission, its
Python side on parsing, with the same message.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

from t9k_operator.api.rules import Rule, Rules

FILESET_SCHEME = "t9k://pvc/"
"""The one fileset form served: ``t9k://pvc/<claim>/<path>``."""
MAX_FILESETS = 32
MAX_FILESET_LENGTH = 1024
MAX_CLAIM_LENGTH = 253
_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
CLAIM_PATTERN = f"{_LABEL}([.]{_LABEL})*"
"""A PersistentVolumeClaim name: a lower-case DNS subdomain."""
FILESET_PATTERN = f"^t9k://pvc/{CLAIM_PATTERN}(/.*)?$"
_CLAIM_LENGTH_PATTERN = f"^t9k://pvc/[^/]{{0,{MAX_CLAIM_LENGTH}}}(/|$)"
_PARENT_PATTERN = "(^|/)[.][.](/|$)"

MSG_FILESET_FORM = (
    "a training log fileset must be t9k://pvc/<claim>/<path>: a PersistentVolumeClaim of "
    "the namespace (a lower-case DNS name) and a directory in it (none: the whole claim); "
    "other forms are not filesets: S3 and http logs are spec.logDir's (s3, http)"
)
MSG_FILESET_COMMA = (
    "a training log fileset must not contain a comma: TensorBoard's --logdir_spec "
    "separates filesets with commas"
)
MSG_FILESET_PARENT = (
    "a training log fileset's path must not contain a '..' segment: it stays inside its claim"
)
MSG_CLAIM_TOO_LONG = f"a claim name has at most {MAX_CLAIM_LENGTH} characters"
MSG_DUPLICATE_FILESET = "each training log fileset may appear only once"
FILESET_RULES: tuple[Rule[str], ...] = (
    Rule(
        f"self.matches('{FILESET_PATTERN}')",
        MSG_FILESET_FORM,
        # As RE2 (the API server's) does, ``.`` stops at a newline.
        lambda url: re.fullmatch(FILESET_PATTERN, url) is not None,
    ),
    Rule(
        # Only for the served form: any other already has its message.
        f"!self.startsWith('{FILESET_SCHEME}') || self.matches('{_CLAIM_LENGTH_PATTERN}')",
        MSG_CLAIM_TOO_LONG,
        lambda url: (
            not url.startswith(FILESET_SCHEME) or re.match(_CLAIM_LENGTH_PATTERN, url) is not None
        ),
    ),
    Rule("!self.contains(',')", MSG_FILESET_COMMA, lambda url: "," not in url),
    Rule(
        f"!self.matches('{_PARENT_PATTERN}')",
        MSG_FILESET_PARENT,
        lambda url: re.search(_PARENT_PATTERN, url) is None,
    ),
)
"""The rules of one fileset URL, in the order their messages are given."""


def fileset_error(url: str) -> str | None:
    """What is wrong with a fileset URL (the message of the first rule it breaks), or None."""
    return next((r.message for r in FILESET_RULES if r.holds and not r.holds(url)), None)


Fileset = Annotated[str, Field(max_length=MAX_FILESET_LENGTH), Rules(*FILESET_RULES)]
