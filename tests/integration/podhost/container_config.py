"""What a container runs and how, as kubelet and the runtime work it out
from the pod: its user and groups, its environment, its command, its
mounts. The spec written here is what entry.py carries out."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.integration.podhost.lifecycle import PodFailed

if TYPE_CHECKING:
    from tests.integration.podhost.pod import PodRun

# containerd's and Docker's default capability set for a container.
RUNTIME_CAPABILITIES = (
    "chown",
    "dac_override",
    "fsetid",
    "fowner",
    "mknod",
    "net_raw",
    "setgid",
    "setuid",
    "setfcap",
    "setpcap",
    "net_bind_service",
    "sys_chroot",
    "kill",
    "audit_write",
)
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SERVICE_ENV = {  # what kubelet gives every container for the API server's Service
    "KUBERNETES_SERVICE_HOST": "10.0.0.1",
    "KUBERNETES_SERVICE_PORT": "443",
    "KUBERNETES_SERVICE_PORT_HTTPS": "443",
    "KUBERNETES_PORT": "tcp://10.0.0.1:443",
    "KUBERNETES_PORT_443_TCP": "tcp://10.0.0.1:443",
    "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
    "KUBERNETES_PORT_443_TCP_PORT": "443",
    "KUBERNETES_PORT_443_TCP_ADDR": "10.0.0.1",
}


def kubelet_expand(text: str, env: Mapping[str, str]) -> str:
    """kubelet's ``$(NAME)`` expansion of a command, argument or env value:
    ``$$`` gives ``$``; ``$(NAME)`` gives NAME's value when NAME is defined and
    stays as written when it is not; any other ``$`` is kept."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "$" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(":
            close = text.find(")", i + 2)
            if close < 0:
                out.append("$(")
                i += 2
                continue
            name = text[i + 2 : close]
            out.append(env.get(name, f"$({name})"))
            i = close + 1
        else:
            out.append("$" + nxt)
            i += 2
    return "".join(out)


def container_spec(pod_run: PodRun, c: Mapping[str, Any]) -> dict[str, Any]:
    """The spec entry.py starts container ``c`` of the pod from; its
    scratch directory is made here."""
    account = user(pod_run.pod, c)
    env = container_env(pod_run, c, account["home"])
    argv = [kubelet_expand(a, env) for a in [*(c.get("command") or []), *(c.get("args") or [])]]
    if not c.get("command"):
        raise AssertionError(
            f"{pod_run.name}/{c['name']}: the pod host's images have no entrypoint"
        )
    mounts = _mounts(pod_run, c)
    scratch = pod_run.dir / "containers" / c["name"]
    scratch.mkdir(parents=True)
    return {
        "scratch": str(scratch),
        "layer": str(pod_run.image_for(c["name"]).layer(pod_run.node.root)),
        "hostname": pod_run.hostname,
        "hosts": str(pod_run.dir / "hosts"),
        "hostnameFile": str(pod_run.dir / "hostname"),
        "resolv": str(pod_run.dir / "resolv.conf"),
        "mounts": mounts,
        "workingDir": c.get("workingDir") or "/",
        "argv": argv,
        "env": env,
        "user": account,
        "shm": str(pod_run.dir / "shm"),
        "capabilities": list(RUNTIME_CAPABILITIES),
    }


def _mounts(pod_run: PodRun, c: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The container's volume mounts: a ``subPath`` one binds the file the
    path resolves to now, as kubelet does."""
    mounts = []
    volumes = {v["name"]: v for v in pod_run.pod["spec"].get("volumes") or []}
    for m in c.get("volumeMounts") or []:
        if m["name"] not in volumes:
            raise PodFailed(f"{pod_run.name}/{c['name']}: no volume {m['name']}")
        src = pod_run.dir / "volumes" / m["name"]
        if m.get("subPath"):
            src = Path(os.path.realpath(src / m["subPath"]))
        mounts.append(
            {"source": str(src), "path": m["mountPath"], "readOnly": bool(m.get("readOnly"))}
        )
    return mounts


def user(pod: Mapping[str, Any], c: Mapping[str, Any]) -> dict[str, Any]:
    """The container's uid, gid and supplementary groups: its
    securityContext over the pod's (``runAsUser``, ``runAsGroup``), the
    pod's ``supplementalGroups`` and ``fsGroup``; root by default (these
    images name no user). A uid the image's /etc/passwd lacks gets gid 0,
    as containerd gives it."""
    pod_sc = pod["spec"].get("securityContext") or {}
    sc = c.get("securityContext") or {}
    uid = int(sc.get("runAsUser", pod_sc.get("runAsUser", 0)))
    if (sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot")) is True) and uid == 0:
        # kubelet refuses to start it: CreateContainerConfigError.
        name = pod["metadata"]["name"]
        raise PodFailed(f"{name}/{c['name']}: runAsNonRoot and the image runs as root")
    entry = next((e for e in _passwd() if e[1] == uid), None)
    gid = int(sc.get("runAsGroup", pod_sc.get("runAsGroup", entry[2] if entry else 0)))
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or []]
    if "fsGroup" in pod_sc:
        groups.append(int(pod_sc["fsGroup"]))
    return {
        "uid": uid,
        "gid": gid,
        "groups": sorted(set(groups)),
        "home": entry[3] if entry else "/",
    }


def _passwd() -> list[tuple[str, int, int, str]]:
    """The image's users (this machine's /etc/passwd): name, uid, gid, home."""
    out = []
    for line in Path("/etc/passwd").read_text().splitlines():
        parts = line.split(":")
        if len(parts) >= 7 and parts[2].isdigit() and parts[3].isdigit():
            out.append((parts[0], int(parts[2]), int(parts[3]), parts[5]))
    return out


def container_env(pod_run: PodRun, c: Mapping[str, Any], home: str) -> dict[str, str]:
    """kubelet's makeEnvironmentVariables: ``envFrom`` sources in order (a
    key with '=' is skipped; ``prefix`` prepended), then ``env`` (values
    ``$(NAME)``-expanded against what came before), then the Service
    variables not already set; ``HOSTNAME``, ``HOME`` and the image's
    ``PATH`` under them (``home``: the user's, :func:`user`)."""
    env: dict[str, str] = {"PATH": IMAGE_PATH, "HOSTNAME": pod_run.hostname, "HOME": home}
    fields = {
        "metadata.name": pod_run.name,
        "metadata.namespace": pod_run.node.namespace,
        "status.podIP": pod_run.ip,
    }
    declared: dict[str, str] = {}
    for source in c.get("envFrom") or []:
        declared.update(_env_from(pod_run, c, source))
    for item in c.get("env") or []:
        if "secretKeyRef" in item.get("valueFrom", {}):
            found = _secret_key(pod_run, c, item["valueFrom"]["secretKeyRef"])
            if found is None:
                continue  # an optional key that is missing: kubelet leaves it unset
            value = found
        elif "valueFrom" in item:
            ref = (item["valueFrom"].get("fieldRef") or {}).get("fieldPath")
            if ref not in fields:
                raise AssertionError(f"the pod host cannot resolve env {item}")
            value = fields[ref]
        else:
            value = kubelet_expand(str(item.get("value", "")), {**SERVICE_ENV, **declared})
        declared[item["name"]] = value
    env.update(SERVICE_ENV)
    env.update(declared)
    env.update(pod_run.extra_env)
    return env


def _secret_key(pod_run: PodRun, c: Mapping[str, Any], ref: Mapping[str, Any]) -> str | None:
    """An ``env`` item's ``secretKeyRef``, as kubelet resolves it: the key's
    value; None when it is optional and missing; a missing Secret or key that
    is not optional fails the container (CreateContainerConfigError)."""
    obj = pod_run.node.objects.get(("Secret", ref["name"]))
    data = (
        {}
        if obj is None
        else {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
    )
    data.update((obj or {}).get("stringData") or {})
    if ref["key"] in data:
        return data[ref["key"]]
    if ref.get("optional"):
        return None
    what = (
        f'secret "{ref["name"]}" not found'
        if obj is None
        else f"couldn't find key {ref['key']} in Secret {ref['name']}"
    )  # kubelet's words (makeEnvironmentVariables)
    raise PodFailed(f"{pod_run.name}/{c['name']}: {what} (CreateContainerConfigError)")


def _env_from(pod_run: PodRun, c: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, str]:
    """The variables one ``envFrom`` source gives: a ConfigMap's or a
    Secret's keys; a missing non-optional one fails the pod."""
    for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
        if key not in source:
            continue
        ref = source[key]
        obj = pod_run.node.objects.get((kind, ref["name"]))
        if obj is None:
            if ref.get("optional"):
                return {}
            raise PodFailed(
                f"{pod_run.name}/{c['name']}: {kind.lower()} {ref['name']} not found "
                "(CreateContainerConfigError)"
            )
        data = {k: str(v) for k, v in (obj.get("data") or {}).items()}
        if kind == "Secret":
            data = {k: base64.b64decode(v).decode() for k, v in data.items()}
            data.update(obj.get("stringData") or {})
        prefix = source.get("prefix", "")
        return {prefix + k: v for k, v in data.items() if "=" not in prefix + k}
    raise AssertionError(f"the pod host cannot read envFrom {source}")
