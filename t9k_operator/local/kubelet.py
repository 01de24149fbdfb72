"""Kubelet's part of a local run: a pod's training container resolved as kubelet
would resolve it on one machine (pure).

* ``value`` as written, with kubelet's ``$(NAME)`` expansion (``$$`` is a
  literal ``$``; an unknown name stays as written), in env values and then in
  the command and arguments;
* ``valueFrom.fieldRef``: ``metadata.name``/``namespace``/``uid``/``labels``/
  ``annotations``, ``spec.nodeName``/``serviceAccountName``, and every IP field
  (``status.podIP``, ``status.hostIP``...) as 127.0.0.1;
* ``valueFrom.configMapKeyRef`` of a ConfigMap the operator builds (the
  hostfile); any other ConfigMap, every ``secretKeyRef``, ``resourceFieldRef``
  and ``envFrom`` cannot be read without a cluster: the variable is left out
  (so a value exported in the caller's shell, which every process inherits,
  is what the program sees) and a note says so;
* the operator's ConfigMaps mounted (the hostfile): written under the run's
  directory, their mount paths pointing there; other volumes are noted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from t9k_operator.builders import ssh
from t9k_operator.kinds.local import LOOPBACK
from t9k_operator.objects import Obj

LOCAL_NODE = "localhost"
DEFAULT_NAMESPACE = "default"
OPERATOR_VOLUMES = frozenset({ssh.KEY_VOLUME, ssh.AUTH_VOLUME})
"""The operator's ssh volumes: the key is not used locally, so not worth a note."""

_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubelet's ``$(NAME)`` expansion: a known name is replaced, an unknown one kept
    as written, ``$$`` becomes ``$``."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def _field_ref(path: str, pod: Obj) -> str | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace") or DEFAULT_NAMESPACE,
        "metadata.uid": f"local-{meta.get('name')}",
        "spec.nodeName": LOCAL_NODE,
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": LOOPBACK,
        "status.podIPs": LOOPBACK,
        "status.hostIP": LOOPBACK,
        "status.hostIPs": LOOPBACK,
    }
    if path in simple:
        value = simple[path]
        return None if value is None else str(value)
    m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']*)'\]", path)
    if m:
        value = (meta.get(m.group(1)) or {}).get(m.group(2))
        return None if value is None else str(value)
    return None


def resolve_env(
    container: Mapping[str, Any],
    pod: Obj,
    config_maps: Mapping[str, Mapping[str, str]],
    label: str,
    notes: list[str],
) -> dict[str, str]:
    """The container's environment as kubelet would give it here (module docstring)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        what = "configMapRef" if "configMapRef" in source else "secretRef"
        ref = (source.get(what) or {}).get("name", "?")
        if what == "configMapRef" and ref in config_maps:
            prefix = source.get("prefix") or ""
            env.update({prefix + k: v for k, v in config_maps[ref].items()})
            continue
        notes.append(
            f"{label}: envFrom {what} {ref!r} cannot be read without a cluster; "
            "export what the program needs in this shell (every replica inherits it)"
        )
    for item in container.get("env") or []:
        name = str(item.get("name"))
        source = item.get("valueFrom")
        if source is None:
            env[name] = expand(str(item.get("value", "")), env)
            continue
        value: str | None = None
        why = ""
        if "fieldRef" in source:
            path = str((source["fieldRef"] or {}).get("fieldPath"))
            value = _field_ref(path, pod)
            why = f"fieldRef {path} has no local value"
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"] or {}
            value = config_maps.get(ref.get("name", ""), {}).get(ref.get("key", ""))
            why = f"configMapKeyRef {ref.get('name')}/{ref.get('key')} needs the cluster"
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"] or {}
            why = f"secretKeyRef {ref.get('name')}/{ref.get('key')} needs the cluster"
        elif "resourceFieldRef" in source:
            ref = source["resourceFieldRef"] or {}
            why = f"resourceFieldRef {ref.get('resource')} is the node's to say"
        else:
            why = "its valueFrom is of a kind unknown here"
        if value is None:
            notes.append(
                f"{label}: {name} is left unset ({why}); export it in this shell to give it a value"
            )
            continue
        env[name] = value
    return env


def config_maps(extras: Iterable[Obj]) -> dict[str, dict[str, str]]:
    return {
        o["metadata"]["name"]: {str(k): str(v) for k, v in (o.get("data") or {}).items()}
        for o in extras
        if o.get("kind") == "ConfigMap"
    }


def mounts(
    pod: Obj,
    container: Mapping[str, Any],
    config_maps: Mapping[str, Mapping[str, str]],
    run_dir: str,
    files: dict[str, str],
    paths: dict[str, str],
    label: str,
    notes: list[str],
) -> None:
    """Materialize the container's mounts of the operator's ConfigMaps under the
    run's directory (``files``, ``paths``); note the mounts that stay behind."""
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or []}
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name")) or {}
        path = str(mount.get("mountPath"))
        cm = str((volume.get("configMap") or {}).get("name"))
        if cm in config_maps:
            data = config_maps[cm]
            items = (volume.get("configMap") or {}).get("items")
            layout = {i["path"]: data.get(i["key"], "") for i in items} if items else dict(data)
            base = f"configmaps/{cm}"
            for rel, content in layout.items():
                files[f"{base}/{rel}"] = content
            sub = mount.get("subPath")
            paths[path] = f"{run_dir}/{base}/{sub}" if sub else f"{run_dir}/{base}"
            continue
        if mount.get("name") in OPERATOR_VOLUMES:
            continue
        what = next((k for k in volume if k != "name"), "volume")
        notes.append(f"{label}: {what} volume {mount.get('name')!r} at {path} is not mounted here")
