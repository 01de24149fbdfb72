"""`make image`, for real: buildah builds the Dockerfile (no registry:
``BASE=debootstrap`` makes its base the Debian base hack/release/rootfs
debootstraps, imported as a local image),
and the image it makes is the one hack/release/rootfs makes from the same file:
the same configuration and the same Python packages, and its entrypoint runs
as its user on a read-only root.

buildah keeps its images in a storage of this test's own under the project
cache (``$T9K_CACHE_DIR/containers``), not the machine's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from t9k_operator import __version__
from tests import hack_scripts
from tests.integration.cluster import ROOT
from tests.integration.incluster import run_image

# Run on one pytest-xdist worker: one buildah store, set up once.
pytestmark = pytest.mark.xdist_group("image")

SITE = "opt/t9k-operator/lib/python3.11/site-packages"


def dist_version(dist_info: str) -> tuple[str, str]:
    """``Foo_Bar-1.0.dist-info`` -> ("foo-bar", "1.0")."""
    name, version = dist_info.removesuffix(".dist-info").rsplit("-", 1)
    return canonicalize_name(name), version


def read_lock(path: Path) -> dict[str, Any]:
    pins: dict[str, Any] = hack_scripts.load("release.lock").read_lock(path)
    return pins


@pytest.fixture(scope="module")
def buildah_env(operator_image: Path) -> dict[str, str]:
    if not shutil.which("buildah"):
        pytest.fail("buildah is not installed (bash hack/ensure-test-deps.sh)", pytrace=False)
    cache = Path(json.loads((operator_image / "build.json").read_text())["base_folder"]).parents[1]
    store = cache / "containers"
    store.mkdir(parents=True, exist_ok=True)
    conf = store / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{store / "storage"}"\n'
        f'runroot = "/run/t9k-operator-containers"\n'
    )
    return {**os.environ, "CONTAINERS_STORAGE_CONF": str(conf)}


def buildah(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["buildah", *args], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"buildah {' '.join(args)}: {proc.stderr[-3000:]}"
    return proc.stdout.strip()


@pytest.fixture
def built(buildah_env: dict[str, str]) -> Iterator[tuple[str, dict[str, Any]]]:
    img = "localhost/t9k-operator:make-image-test"
    proc = subprocess.run(
        # kubebuilder's name for `make image`, which it runs.
        ["make", "-s", "docker-build", f"IMG={img}", "BASE=debootstrap", "BUILDER=buildah"],
        cwd=ROOT,
        env=buildah_env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    try:
        info = json.loads(buildah(buildah_env, "inspect", "--type", "image", img))
        yield img, info["OCIv1"]["config"]
    finally:
        buildah(buildah_env, "rmi", img)


@pytest.mark.timeout(900)
def test_make_image_builds_the_image_rootfs_makes(
    built: tuple[str, dict[str, Any]],
    operator_image: Path,
    buildah_env: dict[str, str],
    tmp_path: Path,
) -> None:
    img, config = built
    rootfs_config = json.loads((operator_image / "config.json").read_text())
    for key in ("User", "Entrypoint", "WorkingDir", "Cmd"):
        assert config.get(key) == rootfs_config.get(key), key
    assert config["User"] == "65532:65532"
    assert sorted(config["Env"]) == sorted(rootfs_config["Env"])
    ctr = buildah(buildah_env, "from", img)
    try:
        root = Path(buildah(buildah_env, "mount", ctr))
        # The same distributions installed, at the same versions.
        built_dists = sorted(p.name for p in (root / SITE).glob("*.dist-info"))
        rootfs_dists = sorted(p.name for p in (operator_image / "root" / SITE).glob("*.dist-info"))
        assert built_dists == rootfs_dists
        # And those are the lock's, exactly: the operator itself, pip (Debian's
        # python3-venv brings it), and the pins of requirements/operator.txt.
        locked = {
            n: p.version for n, p in read_lock(ROOT / "requirements" / "operator.txt").items()
        }
        for dists in (built_dists, rootfs_dists):
            installed = dict(dist_version(d) for d in dists)
            assert installed.pop("t9k-operator") == __version__
            assert installed.pop("pip")
            assert installed == locked
        # Nothing of the build's CA bundle is left in the image (at most the
        # empty mount point buildah made for it).
        ca = root / "run" / "t9k-build" / "ca.crt"
        assert not ca.exists() or ca.stat().st_size == 0
        version = run_image(root, config, ["--version"], tmp_path / "version")
        assert version.stdout.strip() == f"t9k-operator {__version__}", version.stdout
    finally:
        buildah(buildah_env, "rm", ctr)
    # make docker-push, to a destination of the builder's own (no registry here).
    layout = tmp_path / "pushed"
    proc = subprocess.run(
        ["make", "-s", "docker-push", f"IMG={img}", f"PUSH_DEST=oci:{layout}", "BUILDER=buildah"],
        cwd=ROOT,
        env=buildah_env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    index = json.loads((layout / "index.json").read_text())
    assert len(index["manifests"]) == 1, index
