"""Reading kubeconfig files: the files a path list names, merged as kubectl
merges them, and the cluster and user of one context.

``KUBECONFIG`` may name several files (``:``-separated): the first file to
set ``current-context`` sets it, and the first file to define a cluster, user
or context by a name defines it. Relative paths in an entry (a CA, a client
certificate or key, a token file, an exec command) are relative to the file
that entry came from, which :class:`Entry` keeps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import yaml


class KubeconfigError(Exception):
    """The kubeconfig cannot be read or does not name what is asked of it."""


@dataclass(frozen=True)
class Entry:
    """One named cluster or user: its fields and the folder of its file."""

    fields: dict[str, Any]
    folder: str

    def path(self, key: str) -> str | None:
        """The field ``key`` as a path, relative paths taken from the file's folder."""
        value = self.fields.get(key)
        if not value:
            return None
        path = os.path.expanduser(str(value))
        return path if os.path.isabs(path) else os.path.join(self.folder, path)


@dataclass(frozen=True)
class Selected:
    """The context chosen, and the cluster and user it names."""

    context: str
    cluster: Entry
    user: Entry


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise KubeconfigError(f"cannot read {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"{path} is not YAML: {exc}") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{path} is not a kubeconfig (a mapping)")
    return doc


def select(paths: str, context: str | None = None) -> Selected:
    """The cluster and user of ``context`` (else the current context) in the
    files ``paths`` names, ``os.pathsep``-separated; files that do not exist
    are passed over, as kubectl does, unless none does."""
    files = [os.path.expanduser(p) for p in paths.split(os.pathsep) if p]
    present = [p for p in files if os.path.exists(p)]
    if not present:
        raise KubeconfigError(f"no kubeconfig file at {paths}")
    current: str | None = None
    named: dict[str, dict[str, Entry]] = {"clusters": {}, "users": {}, "contexts": {}}
    for path in present:
        doc = _read(path)
        folder = os.path.dirname(os.path.abspath(path))
        current = current or doc.get("current-context") or None
        for section, field in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            for item in doc.get(section) or []:
                name = item.get("name") if isinstance(item, dict) else None
                if name is not None and name not in named[section]:
                    named[section][name] = Entry(dict(item.get(field) or {}), folder)
    chosen = context or current
    if not chosen:
        raise KubeconfigError("the kubeconfig names no current context, and none was given")
    ctx = named["contexts"].get(chosen)
    if ctx is None:
        raise KubeconfigError(f"the kubeconfig has no context {chosen!r}")
    cluster = named["clusters"].get(str(ctx.fields.get("cluster") or ""))
    if cluster is None:
        raise KubeconfigError(f"context {chosen!r} names no cluster the kubeconfig has")
    user_name = ctx.fields.get("user")
    user = named["users"].get(str(user_name)) if user_name else None
    if user_name and user is None:
        raise KubeconfigError(f"context {chosen!r} names no user the kubeconfig has")
    return Selected(chosen, cluster, user or Entry({}, cluster.folder))
