"""Where a TensorBoard's logs are, as its pod reads them: the run groups of
either layout (``spec.logDir`` or the older ``spec.trainingLogFilesets``), the
claims to mount, the S3 credentials to pass, the HTTP files to fetch.

Pure functions. Each place of logs is one run group of TensorBoard's
``--logdir_spec``, ``<name>:<path>``:

* a claim's directory, ``t9k://pvc/<claim>/<path>`` or ``logDir.pvc[i]``
  with ``subPath`` ``<path>``: mounted read-only at
  ``/t9k/pvc/<claim>`` (:data:`MOUNT_ROOT`), read at ``/t9k/pvc/<claim>/<path>``,
  named ``<claim>/<path>`` (``<claim>`` for the whole claim);
* an S3 URI ``s3://<bucket>/<prefix>``: read by TensorBoard itself, named
  ``<bucket>/<prefix>``; the Secret's keys reach the container as environment
  variables by reference (:func:`s3_env`), never as values;
* an HTTP URL: fetched into ``/t9k/http/<i>`` (:data:`HTTP_ROOT`) by the pod's
  ``fetch`` container (``fetch.py``), named after the URL without its scheme.

TensorBoard splits each ``--logdir_spec`` entry at its first colon, so a colon
in a group's name becomes ``_`` (one in a path is kept). Two places naming the
same directory (``.../x`` and ``.../x/``) are one group.
"""

from __future__ import annotations

from dataclasses import dataclass

from t9k_operator.api.tensorboard import FILESET_SCHEME, TensorBoardSpec
from t9k_operator.objects import Obj

MOUNT_ROOT = "/t9k/pvc"
"""Where the claims are mounted, each at ``<MOUNT_ROOT>/<claim>``."""
HTTP_ROOT = "/t9k/http"
"""Where the fetched HTTP files are, each URL's in ``<HTTP_ROOT>/<i>``."""
S3_KEYS = (
    ("AWS_ACCESS_KEY_ID", False),
    ("AWS_SECRET_ACCESS_KEY", False),
    ("S3_ENDPOINT", True),
    ("AWS_REGION", True),
)
"""The keys of an S3 Secret the container gets, each an environment variable
of its name, and whether it may be missing. TensorBoard's S3 reader (boto3)
takes the credentials and region from these variables, and the store's URL
from ``S3_ENDPOINT``."""


@dataclass(frozen=True)
class Run:
    """One place of logs as TensorBoard serves it."""

    name: str  # the run group's name
    fileset: str  # the place as the user wrote it
    path: str  # where TensorBoard reads it: a directory in the container, or an S3 URI


def _clean(path: str) -> str:
    """A relative path without empty or ``.`` segments ("" for none)."""
    return "/".join(part for part in path.split("/") if part not in ("", "."))


def split_fileset(url: str) -> tuple[str, str]:
    """``t9k://pvc/<claim>/<path>`` -> (claim, path in the claim, cleaned; "" for
    the whole claim). The model has checked the form."""
    claim, _, rest = url.removeprefix(FILESET_SCHEME).partition("/")
    return claim, _clean(rest)


def claim_dirs(spec: TensorBoardSpec) -> list[tuple[str, str, str]]:
    """(claim, directory in it, the place as written) of every claim directory."""
    if spec.training_log_filesets is not None:
        return [(*split_fileset(url), url) for url in spec.training_log_filesets]
    out = []
    for source in (spec.log_dir.pvc if spec.log_dir else None) or []:
        for sub in source.sub_path or [""]:
            written = f"{FILESET_SCHEME}{source.name}" + (f"/{sub}" if sub else "")
            out.append((source.name, _clean(sub), written))
    return out


def runs(spec: TensorBoardSpec, mount_root: str = MOUNT_ROOT) -> list[Run]:
    """The run groups, one per distinct place, in the spec's order."""
    out: list[Run] = []
    seen: set[str] = set()

    def add(name: str, written: str, path: str) -> None:
        if path not in seen:
            seen.add(path)
            out.append(Run(name.replace(":", "_"), written, path))

    for claim, sub, written in claim_dirs(spec):
        name = f"{claim}/{sub}" if sub else claim
        add(name, written, "/".join(p for p in (mount_root, claim, sub) if p))
    log_dir = spec.log_dir
    if log_dir is not None and log_dir.s3 is not None:
        for uri in log_dir.s3.uri:
            add(uri.removeprefix("s3://").rstrip("/"), uri, uri)
    for i, url in enumerate(http_urls(spec)):
        add(url.split("://", 1)[1], url, f"{HTTP_ROOT}/{i}")
    return out


def claims(spec: TensorBoardSpec) -> list[str]:
    """The claims to mount, each once, in the spec's order."""
    return list(dict.fromkeys(claim for claim, _, _ in claim_dirs(spec)))


def http_urls(spec: TensorBoardSpec) -> list[str]:
    """The HTTP URLs to fetch, in the spec's order."""
    log_dir = spec.log_dir
    return list(log_dir.http.url) if log_dir is not None and log_dir.http is not None else []


def s3_env(spec: TensorBoardSpec) -> list[Obj]:
    """The container's S3 variables, each taken from the Secret by reference."""
    log_dir = spec.log_dir
    if log_dir is None or log_dir.s3 is None:
        return []
    secret = log_dir.s3.secret_ref.name
    return [
        {
            "name": key,
            "valueFrom": {
                "secretKeyRef": {"name": secret, "key": key}
                | ({"optional": True} if optional else {})
            },
        }
        for key, optional in S3_KEYS
    ]
