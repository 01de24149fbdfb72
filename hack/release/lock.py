"""The project's lock files: every Python distribution it installs, pinned.

pyproject.toml says which versions the operator works with (ranges); the lock
files say which exact files get installed, so that two builds a week apart
install the same thing and a new upload to PyPI changes nothing until someone
re-locks and the tests pass with it:

- ``requirements/operator.txt``: the operator's runtime dependencies and the
  build backend (setuptools), for the image (Dockerfile, hack/release/rootfs);
- ``requirements/dev.txt``: those at the same versions, plus the test and
  lint extras and pip itself, for ``make venv``.

Each pin carries the sha256 of every file the index has for that version
(wheels for every platform, and the sdist), and is installed with
``pip install --require-hashes``: a file that differs from the one locked, or
a dependency that is not locked, stops the install.

    python3 -m hack.release.lock            # re-resolve, keeping the pins pyproject still allows
    python3 -m hack.release.lock --upgrade  # re-resolve to the newest versions pyproject allows
    python3 -m hack.release.lock --check    # the locks agree with pyproject.toml (no network)

Resolution is pip's own (``pip install --dry-run --report``), for the Python
running this script: the locks are made for CPython 3.11 on Linux, the
image's Python (Debian bookworm) and the one the tests run on. The hashes come
from the index's JSON simple API (PEP 691) at ``$PIP_INDEX_URL`` (default
PyPI).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import ssl
import subprocess
import sys
import tempfile
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_LOCK = ROOT / "requirements" / "operator.txt"
DEV_LOCK = ROOT / "requirements" / "dev.txt"
INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
HEADER = """\
# {what}
# Every version pinned, with the sha256 of each file the index has for it;
# install with `pip install --require-hashes -r {path}`.
# Made by `make lock` (hack/release/lock.py) for CPython {py} on Linux, from the
# ranges in pyproject.toml. Do not edit by hand: change pyproject.toml and
# run `make lock` (`make lock UPGRADE=1` for the newest versions allowed).
"""


@dataclass
class Pin:
    name: str  # canonical
    version: str
    hashes: list[str] = field(default_factory=list)
    via: set[str] = field(default_factory=set)


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def roots(p: dict | None = None) -> tuple[list[str], list[str]]:
    """The requirements each lock is resolved from: (operator, dev)."""
    p = p if p is not None else pyproject()
    build = p["build-system"]["requires"]
    runtime = p["project"]["dependencies"]
    extras = p["project"]["optional-dependencies"]
    operator = [*runtime, *build]
    dev = [*operator, *extras["test"], *extras["lint"], "pip"]
    return operator, dev


def read_lock(path: Path) -> dict[str, Pin]:
    pins: dict[str, Pin] = {}
    if not path.exists():
        return pins
    current: Pin | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if m := re.match(r"^([A-Za-z0-9._-]+)==([^\s\\]+)", line):
            current = Pin(canonicalize_name(m[1]), m[2])
            pins[current.name] = current
        if current is not None:
            current.hashes += re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
    return pins


def resolve(requirements: list[str], constraints: list[Path]) -> dict[str, Pin]:
    """pip's resolution of ``requirements`` for this Python, as pins."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        reqs = Path(tmp) / "requirements.txt"
        reqs.write_text("\n".join(requirements) + "\n")
        argv = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            str(report),
            "-r",
            str(reqs),
        ]
        for c in constraints:
            argv += ["-c", str(c)]
        proc = subprocess.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"lock: pip could not resolve:\n{proc.stderr[-3000:]}")
        data = json.loads(report.read_text())
    pins: dict[str, Pin] = {}
    requires: dict[str, tuple[list[str], list[str]]] = {}
    for item in data["install"]:
        meta = item["metadata"]
        name = canonicalize_name(meta["name"])
        pins[name] = Pin(name, meta["version"])
        requires[name] = (meta.get("requires_dist") or [], item.get("requested_extras") or [])
    for name, (reqs_dist, extras) in requires.items():
        for text in reqs_dist:
            req = Requirement(text)
            # Only what this Python, with the extras asked for, needs.
            if req.marker is not None and not any(
                req.marker.evaluate({"extra": e}) for e in [*extras, ""]
            ):
                continue
            dep = canonicalize_name(req.name)
            if dep in pins:
                pins[dep].via.add(name)
    return pins


def index_hashes(name: str, version: str) -> list[str]:
    """The sha256 of every file the index has for ``name`` ``version``."""
    ctx = ssl.create_default_context(cafile=os.environ.get("PIP_CERT") or None)
    req = urllib.request.Request(
        f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(req, context=ctx, timeout=60) as resp:
        files = json.load(resp)["files"]
    want = Version(version)
    out = []
    for f in files:
        fname = f["filename"]
        try:
            if fname.endswith(".whl"):
                got = parse_wheel_filename(fname)[1]
            else:
                got = parse_sdist_filename(fname)[1]
        except (InvalidWheelFilename, InvalidSdistFilename):
            continue
        if got == want and "sha256" in f.get("hashes", {}):
            out.append(f["hashes"]["sha256"])
    if not out:
        raise SystemExit(f"lock: {INDEX}/{name}/ lists no file of version {version}")
    return sorted(set(out))


def render(path: Path, what: str, pins: dict[str, Pin], top: set[str]) -> str:
    lines = [HEADER.format(what=what, path=path.relative_to(ROOT), py=PY)]
    for name in sorted(pins):
        pin = pins[name]
        lines.append(f"{pin.name}=={pin.version} \\")
        lines += [f"    --hash=sha256:{h} \\" for h in pin.hashes[:-1]]
        lines.append(f"    --hash=sha256:{pin.hashes[-1]}")
        via = sorted(pin.via)
        if name in top:
            via.insert(0, "pyproject.toml")
        lines.append(f"    # via {', '.join(via)}")
    return "\n".join(lines) + "\n"


def names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def check(
    project: dict | None = None, operator_path: Path = OPERATOR_LOCK, dev_path: Path = DEV_LOCK
) -> list[str]:
    """What is wrong between pyproject.toml and the locks (empty: nothing)."""
    problems = []
    operator_roots, dev_roots = roots(project)
    operator, dev = read_lock(operator_path), read_lock(dev_path)
    for path, pins, reqs in ((operator_path, operator, operator_roots), (dev_path, dev, dev_roots)):
        if not pins:
            problems.append(f"{path.name}: missing or empty")
            continue
        for text in reqs:
            req = Requirement(text)
            pin = pins.get(canonicalize_name(req.name))
            if pin is None:
                problems.append(f"{path.name}: {req.name} ({text} in pyproject.toml) is not pinned")
            elif not req.specifier.contains(pin.version, prereleases=True):
                problems.append(f"{path.name}: {req.name}=={pin.version} is outside {text}")
        problems += [f"{path.name}: {p.name} has no hash" for p in pins.values() if not p.hashes]
    for name, pin in operator.items():
        other = dev.get(name)
        if dev and (other is None or other.version != pin.version):
            got = "missing" if other is None else other.version
            problems.append(
                f"{dev_path.name}: {name} is {got}, {operator_path.name} has {pin.version}"
            )
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--upgrade", action="store_true", help="ignore the current pins")
    ap.add_argument("--check", action="store_true", help="compare the locks with pyproject.toml")
    ns = ap.parse_args()
    if ns.check:
        problems = check()
        for p in problems:
            print(f"lock: {p}", file=sys.stderr)
        if problems:
            raise SystemExit("lock: run `make lock` (hack/release/lock.py)")
        print("lock: requirements/*.txt agree with pyproject.toml")
        return
    if sys.version_info[:2] != (3, 11):
        raise SystemExit(f"lock: the locks are for CPython 3.11; this is {PY}")
    operator_roots, dev_roots = roots()
    operator, dev = relock(operator_roots, dev_roots, upgrade=ns.upgrade)
    write_locks(operator, dev, operator_roots, dev_roots)
    problems = check()
    if problems:
        raise SystemExit("lock: " + "; ".join(problems))


def relock(
    operator_roots: list[str], dev_roots: list[str], upgrade: bool
) -> tuple[dict[str, Pin], dict[str, Pin]]:
    """The operator's pins and the dev set's, each with its files' hashes."""
    with tempfile.TemporaryDirectory() as tmp:
        keep: list[Path] = []
        if not upgrade:
            # The current pins as constraints, for the names pyproject still
            # allows them for; a name whose pin it no longer allows is re-resolved.
            old = {**read_lock(DEV_LOCK), **read_lock(OPERATOR_LOCK)}
            ranges = {
                canonicalize_name(Requirement(r).name): Requirement(r).specifier for r in dev_roots
            }
            kept = [
                f"{p.name}=={p.version}"
                for p in old.values()
                if p.name not in ranges or ranges[p.name].contains(p.version, prereleases=True)
            ]
            (Path(tmp) / "pins.txt").write_text("\n".join(kept) + "\n")
            keep.append(Path(tmp) / "pins.txt")
        operator = resolve(operator_roots, keep)
        # The dev set at the operator's versions: the tests run what ships.
        (Path(tmp) / "operator.txt").write_text(
            "".join(f"{p.name}=={p.version}\n" for p in operator.values())
        )
        dev = resolve(dev_roots, [*keep, Path(tmp) / "operator.txt"])
    # dev holds every operator pin, at the same version.
    for pin in dev.values():
        pin.hashes = index_hashes(pin.name, pin.version)
    for pin in operator.values():
        pin.hashes = dev[pin.name].hashes
    return operator, dev


def write_locks(
    operator: dict[str, Pin], dev: dict[str, Pin], operator_roots: list[str], dev_roots: list[str]
) -> None:
    OPERATOR_LOCK.parent.mkdir(exist_ok=True)
    OPERATOR_LOCK.write_text(
        render(
            OPERATOR_LOCK,
            "The operator image's Python distributions: the runtime dependencies and\n"
            "# the build backend.",
            operator,
            names(operator_roots),
        )
    )
    DEV_LOCK.write_text(
        render(
            DEV_LOCK,
            "The development environment (make venv): the operator's pins, the test\n"
            "# and lint extras, and pip.",
            dev,
            names(dev_roots),
        )
    )
    for path, pins in ((OPERATOR_LOCK, operator), (DEV_LOCK, dev)):
        print(f"lock: {path.relative_to(ROOT)}: {len(pins)} distributions")


if __name__ == "__main__":
    main()
