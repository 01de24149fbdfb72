"""A pod's volumes, laid out on this machine as kubelet lays them out: see
the package docstring for what each kind of volume is."""

from __future__ import annotations

import base64
import datetime
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from t9k_operator.kube import NotFound
from t9k_operator.resources import CONFIGMAPS, SERVICEACCOUNTS
from tests.integration.podhost.lifecycle import PodFailed
from tests.integration.podhost.network import run

if TYPE_CHECKING:
    from tests.integration.podhost.pod import PodRun

# The API's default for a serviceAccountToken projection's expirationSeconds.
TOKEN_SECONDS = 3600


def make_volumes(pod_run: PodRun) -> None:
    """Every volume of the pod, under its directory's ``volumes``, with
    kubelet's ``fsGroup`` ownership where kubelet applies it."""
    for vol in pod_run.pod["spec"].get("volumes") or []:
        target = pod_run.dir / "volumes" / vol["name"]
        target.mkdir(parents=True)
        target.chmod(0o777)  # emptyDir's setupDir
        if "secret" in vol:
            _secret(pod_run, vol["secret"], target)
        elif "configMap" in vol:
            src = vol["configMap"]
            obj = _config_map(pod_run, src) or {}
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
            # kubelet's MakePayload (pkg/volume/configmap/configmap.go) writes
            # binaryData's keys as files as it writes data's.
            binary = obj.get("binaryData") or {}
            data.update({k: base64.b64decode(v) for k, v in binary.items()})
            atomic_write(target, payload(data, src, 0o644))
        elif "emptyDir" in vol:
            if (vol["emptyDir"] or {}).get("medium") == "Memory":
                _tmpfs(pod_run, target)
        elif "persistentVolumeClaim" in vol:
            _claim(pod_run, vol["persistentVolumeClaim"], target)
        elif "projected" in vol:
            _tmpfs(pod_run, target)
            files, owners = _projected(pod_run, vol["projected"])
            atomic_write(target, files)
            for rel, uid in owners.items():
                # The AtomicWriter's chown of a file whose projection has an FsUser.
                os.chown(target / "..data" / rel, uid, -1)
        else:
            raise AssertionError(f"the pod host cannot make volume {vol}")
        fs_group = (pod_run.pod["spec"].get("securityContext") or {}).get("fsGroup")
        if fs_group is not None and "persistentVolumeClaim" not in vol:
            # kubelet's SetVolumeOwnership (pkg/volume/volume_linux.go):
            # Secret, ConfigMap and projected volumes are read-only ones.
            set_volume_ownership(target, int(fs_group), read_only="emptyDir" not in vol)


def _secret(pod_run: PodRun, src: Mapping[str, Any], target: Path) -> None:
    """A Secret volume: a tmpfs holding the Secret's files."""
    obj = pod_run.node.objects[("Secret", src["secretName"])]
    data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    data.update({k: v.encode() for k, v in (obj.get("stringData") or {}).items()})
    _tmpfs(pod_run, target)
    atomic_write(target, payload(data, src, 0o644))


def _claim(pod_run: PodRun, src: Mapping[str, Any], target: Path) -> None:
    """A PersistentVolumeClaim's volume: kubelet mounts the claim's volume
    for the pod; the volume's readOnly makes that mount read-only, whatever
    the containers ask."""
    contents = pod_run.node.claims.get(src["claimName"])
    if contents is None:
        raise PodFailed(
            f"{pod_run.name}: claim {src['claimName']} does not exist "
            "(the scheduler leaves such a pod Pending)"
        )
    run("mount", "--bind", str(contents), str(target))
    pod_run.mounts.append(target)
    if src.get("readOnly"):
        run("mount", "-o", "remount,bind,ro", str(target))


def _tmpfs(pod_run: PodRun, target: Path) -> None:
    run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(target))
    pod_run.mounts.append(target)


def _projected(
    pod_run: PodRun, source: Mapping[str, Any]
) -> tuple[dict[str, tuple[bytes, int]], dict[str, int]]:
    """The projected volume's files, and the owner of those kubelet
    chowns (a token's, to the pod's FsUser)."""
    mode = source.get("defaultMode", 0o644)
    files: dict[str, tuple[bytes, int]] = {}
    owners: dict[str, int] = {}
    fields = {"metadata.name": pod_run.name, "metadata.namespace": pod_run.node.namespace}
    for src in source.get("sources") or []:
        if "serviceAccountToken" in src:
            projection = src["serviceAccountToken"]
            # pkg/volume/projected/projected.go collectData: the token file
            # is 0600 when the pod has an FsUser or an fsGroup (fsGroup's
            # SetVolumeOwnership then makes it 0640), else defaultMode; it
            # is owned by the FsUser when there is one.
            user = fs_user(pod_run.pod)
            fs_group = (pod_run.pod["spec"].get("securityContext") or {}).get("fsGroup")
            token_mode = 0o600 if user is not None or fs_group is not None else mode
            files[projection["path"]] = (_token(pod_run, projection), token_mode)
            if user is not None:
                owners[projection["path"]] = user
        elif "configMap" in src:
            obj = _config_map(pod_run, src["configMap"])
            if obj is None:
                continue  # optional and missing: kubelet projects nothing of it
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
            files.update(payload(data, src["configMap"], mode))
        elif "downwardAPI" in src:
            for item in src["downwardAPI"]["items"]:
                value = fields[item["fieldRef"]["fieldPath"]]
                files[item["path"]] = (value.encode(), item.get("mode", mode))
        else:
            raise AssertionError(f"the pod host cannot project {src}")
    return files, owners


def _config_map(pod_run: PodRun, source: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ConfigMap a volume source names: given to the node, else (with a
    client) read from the API server as kubelet reads it. A missing one is
    None when ``optional``; else the pod cannot start (kubelet holds it in
    ContainerCreating)."""
    node = pod_run.node
    name = source["name"]
    obj = node.objects.get(("ConfigMap", name))
    if obj is None and node.client is not None:
        try:
            obj = node.client.get(CONFIGMAPS, name, node.namespace)
        except NotFound:
            obj = None
    if obj is None and not source.get("optional"):
        raise PodFailed(f"{pod_run.name}: configmap {name} not found (the pod cannot start)")
    return obj


def _token(pod_run: PodRun, projection: Mapping[str, Any]) -> bytes:
    """The ServiceAccount token kubelet asks for (pkg/volume/projected,
    pkg/kubelet/token): a TokenRequest for the pod's ServiceAccount, for
    the projection's ``audience`` (none given: the API server's own) and
    ``expirationSeconds``, bound to the pod by name and uid. Without a
    client, a placeholder."""
    client = pod_run.node.client
    if client is None:
        return b"pod-host-token"
    meta = pod_run.pod["metadata"]
    if not meta.get("uid"):
        raise AssertionError(
            f"{pod_run.name}: a token is bound to the pod's uid: give the pod as the API has it"
        )
    spec: dict[str, Any] = {
        "expirationSeconds": int(projection.get("expirationSeconds", TOKEN_SECONDS)),
        "boundObjectRef": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "uid": meta["uid"],
        },
    }
    if projection.get("audience"):
        spec["audiences"] = [projection["audience"]]
    account = pod_run.pod["spec"].get("serviceAccountName") or "default"
    namespace = meta.get("namespace") or pod_run.node.namespace
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
    path = SERVICEACCOUNTS.path(namespace, account, "token")
    answer = client.request("POST", path, body=body)
    return str(answer["status"]["token"]).encode()


def fs_user(pod: Mapping[str, Any]) -> int | None:
    """kubelet's FsUserFrom (pkg/volume/util): the runAsUser every
    container (init ones too) runs as, when each has one set (its own or
    the pod's) and they agree; else none."""
    pod_sc = pod["spec"].get("securityContext") or {}
    users: set[int] = set()
    for c in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
        uid = (c.get("securityContext") or {}).get("runAsUser", pod_sc.get("runAsUser"))
        if uid is None:
            return None
        users.add(int(uid))
    return users.pop() if len(users) == 1 else None


def set_volume_ownership(target: Path, fs_group: int, *, read_only: bool) -> None:
    """What kubelet does to a volume for a pod's ``fsGroup``: every file and
    folder (symlinks too, not followed) group-owned by it, group-readable
    (and writable unless the volume is read-only), folders searchable and
    setgid so new files inherit the group."""
    for path in [target, *target.rglob("*")]:
        os.lchown(path, -1, fs_group)
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            continue
        mask = 0o440 if read_only else 0o660
        if stat.S_ISDIR(info.st_mode):
            mask |= stat.S_ISGID | 0o110
        path.chmod(stat.S_IMODE(info.st_mode) | mask)


def payload(
    data: Mapping[str, bytes], source: Mapping[str, Any], default_mode: int
) -> dict[str, tuple[bytes, int]]:
    """The files of a Secret or ConfigMap volume: ``items`` if given (each with
    its own mode or the default), else every key; ``defaultMode`` as given."""
    mode = source.get("defaultMode", default_mode)
    if source.get("items"):
        return {i["path"]: (data[i["key"]], i.get("mode", mode)) for i in source["items"]}
    return {k: (v, mode) for k, v in data.items()}


def atomic_write(target: Path, files: Mapping[str, tuple[bytes, int]]) -> None:
    """kubelet's AtomicWriter layout for a fresh volume."""
    stamp = datetime.datetime.now(datetime.UTC).strftime("..%Y_%m_%d_%H_%M_%S.")
    ts_dir = target / f"{stamp}{secrets.randbelow(10**9)}"
    ts_dir.mkdir(mode=0o700)
    ts_dir.chmod(0o755)
    for rel, (content, mode) in files.items():
        path = ts_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_bytes(content)
        path.chmod(mode)
    (target / "..data_tmp").symlink_to(ts_dir.name)
    (target / "..data_tmp").rename(target / "..data")
    for top in sorted({rel.split("/")[0] for rel in files}):
        (target / top).symlink_to(f"..data/{top}")
