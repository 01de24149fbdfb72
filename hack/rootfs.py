#!/usr/bin/env python3
"""The operator image's root filesystem, made by carrying out the Dockerfile.

No registry is needed: ``FROM debian:<suite>[-slim]`` is a debootstrap of
that suite (``--variant=minbase``, with the APT sources Debian's images
carry), every ``RUN`` runs under chroot in a mount namespace of its own (with
/proc, /dev and this machine's resolv.conf, as a build's RUN sees them),
``COPY`` copies from the build context with the Dockerfile's rules, and
``ENV``, ``ARG``, ``WORKDIR``, ``USER``, ``ENTRYPOINT`` and ``CMD`` go into
the image configuration kept beside the filesystem (``config.json``, the
fields of an OCI image config). The Dockerfile stays the one description of
the image: this script and ``make image`` read the same file.

    python3 hack/rootfs.py build [--build-arg K=V ...]   # prints the image folder
    python3 hack/rootfs.py key                           # the cache key only
    python3 hack/rootfs.py base                          # the debootstrapped base only

The image folder is ``$T9K_CACHE_DIR/rootfs/<key>/`` (default cache
``~/.cache/t9k-operator``): ``root/`` (the filesystem), ``config.json`` and
``build.json`` (how long the build took). The key hashes every input (the
Dockerfile, the build arguments, the files COPY reads, this script), so a
change to any of them builds anew; the debootstrapped base is cached on its
own (``rootfs/base-<suite>-<key>/``), so a change to the operator's code
redoes only the steps after FROM. Builds run under a lock, and a folder is
used only once its build has finished (it is renamed into place).

Cold, on 2 cores: 65 to 135 s (the debootstrap 35 to 80 s of it, as Debian's
mirror answers); a change to the operator's code alone: about 35 s; cached:
instant. Each build records its times in ``build.json``.

Needs root (chroot, mounts), debootstrap and unshare (util-linux).
Build-time network settings of this machine reach the RUN steps without
entering the image: the CA bundle pip is told to trust here (``PIP_CERT``,
``SSL_CERT_FILE``) is bind-mounted for the step only, and proxy variables
are passed on.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MIRROR = os.environ.get("T9K_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get(
    "T9K_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security"
)
BUILD_CA = "/run/t9k-build/ca.crt"  # where a RUN step finds this machine's CA bundle
PASSED_ON = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
UNSHARE = ("unshare", "--mount", "--pid", "--fork", "--propagation", "private", "--")
IGNORED_IN_HASH = ("__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache")


def cache_dir() -> Path:
    return Path(os.environ.get("T9K_CACHE_DIR") or Path.home() / ".cache" / "t9k-operator")


# -- the Dockerfile ------------------------------------------------------------


@dataclass
class Instruction:
    op: str
    args: str
    line: int


def parse(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#") or (not line and not buf):
            continue
        if not buf:
            start = no
        if line.endswith("\\"):
            buf.append(line[:-1].strip())
            continue
        buf.append(line)
        joined = " ".join(part for part in buf if part)
        buf = []
        op, _, args = joined.partition(" ")
        out.append(Instruction(op.upper(), args.strip(), start))
    if buf:
        raise SystemExit("Dockerfile ends in a continuation line")
    return out


def substitute(value: str, env: dict[str, str]) -> str:
    """``$NAME``, ``${NAME}`` and ``${NAME:-default}`` as Dockerfile
    instructions expand them (an unset name is empty)."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        default = m.group(3)
        got = env.get(name, "")
        return got if got or default is None else default

    return re.sub(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})",
                  repl, value)  # fmt: skip


def pairs(args: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """``K=V K2="V 2"`` (or the legacy ``K V``) of ENV, ARG and LABEL."""
    words = shlex.split(args)
    if words and "=" not in words[0]:
        return [(words[0], substitute(" ".join(words[1:]), env))]
    out = []
    for word in words:
        key, sep, value = word.partition("=")
        out.append((key, substitute(value, env) if sep else ""))
    return out


def exec_form(args: str) -> list[str]:
    if args.startswith("["):
        value = json.loads(args)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SystemExit(f"bad exec form: {args}")
        return value
    return ["/bin/sh", "-c", args]


@dataclass
class Plan:
    """The Dockerfile read with its build arguments: the base, then the steps."""

    base: str
    steps: list[Instruction]
    args: dict[str, str] = field(default_factory=dict)


def plan(dockerfile: Path, build_args: dict[str, str]) -> Plan:
    instructions = parse(dockerfile.read_text())
    global_args: dict[str, str] = {}
    base = None
    steps: list[Instruction] = []
    for ins in instructions:
        if base is None:
            if ins.op == "ARG":
                for key, value in pairs(ins.args, global_args):
                    global_args[key] = build_args.get(key, value)
                continue
            if ins.op != "FROM":
                raise SystemExit(f"Dockerfile:{ins.line}: {ins.op} before FROM")
            words = substitute(ins.args, global_args).split()
            if len(words) not in (1, 3) or (len(words) == 3 and words[1].upper() != "AS"):
                raise SystemExit(f"Dockerfile:{ins.line}: FROM {ins.args}: not understood")
            base = words[0]
            continue
        if ins.op == "FROM":
            raise SystemExit(f"Dockerfile:{ins.line}: one stage only (a second FROM)")
        steps.append(ins)
    if base is None:
        raise SystemExit("Dockerfile has no FROM")
    return Plan(base=base, steps=steps, args=global_args)


def debian_suite(base: str) -> str:
    m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?debian:([a-z]+)(-slim)?", base)
    if not m:
        raise SystemExit(
            f"base {base!r}: only debian:<suite>[-slim] can be made here without a registry "
            "(a debootstrap of that suite)"
        )
    return m.group(1)


# -- the cache key -------------------------------------------------------------


def _hash_tree(h: hashlib._Hash, path: Path, context: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        for child in sorted(path.iterdir()):
            if child.name in IGNORED_IN_HASH or child.suffix == ".pyc":
                continue
            _hash_tree(h, child, context)
        return
    h.update(str(path.relative_to(context)).encode() + b"\0")
    h.update(oct(path.lstat().st_mode).encode() + b"\0")
    h.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    h.update(b"\0")


def base_key(suite: str) -> str:
    h = hashlib.sha256()
    h.update(f"{suite}\0{MIRROR}\0{SECURITY_MIRROR}\0".encode())
    # The recipe of the base only: other changes to this script keep it.
    h.update(inspect.getsource(build_base).encode())
    h.update(inspect.getsource(debian_sources).encode())
    return h.hexdigest()[:16]


def image_key(dockerfile: Path, context: Path, build_args: dict[str, str]) -> str:
    h = hashlib.sha256()
    h.update(Path(__file__).read_bytes())
    h.update(dockerfile.read_bytes())
    h.update(json.dumps(sorted(build_args.items())).encode())
    p = plan(dockerfile, build_args)
    h.update(base_key(debian_suite(p.base)).encode())
    for ins in p.steps:
        if ins.op == "COPY":
            for src in shlex.split(ins.args)[:-1]:
                if not src.startswith("--"):
                    _hash_tree(h, context / src, context)
    return h.hexdigest()[:16]


# -- building ------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"rootfs: {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def need_root_tools() -> None:
    if os.geteuid() != 0:
        raise SystemExit("rootfs: needs root (debootstrap, chroot and mounts)")
    for tool in ("debootstrap", "unshare", "chroot", "mount"):
        if not shutil.which(tool):
            raise SystemExit(f"rootfs: {tool} not found (bash hack/ensure-test-deps.sh)")


def debian_sources(suite: str) -> str:
    """The APT sources of Debian's own images of ``suite``."""
    return (
        f"Types: deb\nURIs: {MIRROR}\nSuites: {suite} {suite}-updates\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        f"Types: deb\nURIs: {SECURITY_MIRROR}\nSuites: {suite}-security\nComponents: main\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def build_base(suite: str) -> Path:
    """``debian:<suite>-slim`` from Debian's packages, cached."""
    folder = cache_dir() / "rootfs" / f"base-{suite}-{base_key(suite)}"
    if (folder / "root").is_dir():
        os.utime(folder)  # used: prune() keeps it
        return folder
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"debootstrap {suite} (minbase) from {MIRROR}")
    proc = subprocess.run(
        ["debootstrap", "--variant=minbase", suite, str(tmp / "root"), MIRROR],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr)[-3000:]
        raise SystemExit(f"rootfs: debootstrap failed:\n{tail}")
    root = tmp / "root"
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    (root / "etc/apt/sources.list.d").mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(debian_sources(suite))
    # What a built image never carries: debootstrap's downloads and logs.
    shutil.rmtree(root / "var/cache/apt/archives", ignore_errors=True)
    (root / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "debootstrap", ignore_errors=True)
    # As Debian's images are set up: apt keeps no downloaded packages and no
    # package caches in the image.
    (root / "etc/apt/apt.conf.d/docker-clean").write_text(
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb '
        '/var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };\n'
        'Dir::Cache::pkgcache "";\nDir::Cache::srcpkgcache "";\n'
    )
    for path in (root / "var/cache/apt").glob("*.bin"):
        path.unlink()
    for name in ("etc/hostname", "etc/resolv.conf"):
        (root / name).unlink(missing_ok=True)
        (root / name).touch()
    tmp.rename(folder)
    return folder


def host_ca() -> Path | None:
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return None


def run_step(root: Path, argv: list[str], env: dict[str, str], workdir: str, line: int) -> None:
    """One RUN: chroot into ``root`` in a mount namespace of its own."""
    env = dict(env)
    for name in PASSED_ON:
        if os.environ.get(name):
            env.setdefault(name, os.environ[name])
    ca = host_ca()
    build_dir = root / BUILD_CA.lstrip("/")
    mounts = [
        f"mount -t proc proc {shlex.quote(str(root / 'proc'))}",
        f"mount --rbind /dev {shlex.quote(str(root / 'dev'))}",
        f"mount --rbind /sys {shlex.quote(str(root / 'sys'))}",
        f"mount --bind /etc/resolv.conf {shlex.quote(str(root / 'etc/resolv.conf'))}",
    ]
    created = False
    if ca is not None:
        if not build_dir.parent.exists():
            build_dir.parent.mkdir(parents=True)
            created = True
        build_dir.touch()
        mounts.append(f"mount --bind -o ro {shlex.quote(str(ca))} {shlex.quote(str(build_dir))}")
        for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
            env.setdefault(name, BUILD_CA)
    chroot = ["chroot", str(root), "/bin/sh", "-c", 'cd "$0" && exec "$@"', workdir, *argv]
    script = " && ".join([*mounts, "exec " + shlex.join(chroot)])
    log(f"Dockerfile:{line}: RUN {' '.join(argv[2:] if argv[:2] == ['/bin/sh', '-c'] else argv)}")
    try:
        proc = subprocess.run(
            [*UNSHARE, "sh", "-c", script],
            env=env,
        )
    finally:
        if ca is not None:
            build_dir.unlink(missing_ok=True)
            if created:
                build_dir.parent.rmdir()
    if proc.returncode != 0:
        raise SystemExit(f"rootfs: Dockerfile:{line}: RUN failed ({proc.returncode})")


def copy_step(root: Path, context: Path, args: str, env: dict[str, str], workdir: str) -> None:
    words = [substitute(w, env) for w in shlex.split(args)]
    if any(w.startswith("--") for w in words):
        raise SystemExit(f"rootfs: COPY {args}: flags are not supported")
    *sources, dest = words
    if not sources:
        raise SystemExit(f"rootfs: COPY {args}: no source")
    if not dest.startswith("/"):
        dest = f"{workdir.rstrip('/')}/{dest}"
    if len(sources) > 1 and not dest.endswith("/"):
        raise SystemExit(f"rootfs: COPY {args}: several sources need a folder ending in /")
    target = root / dest.lstrip("/")
    for src in sources:
        path = (context / src).resolve()
        if context.resolve() not in (path, *path.parents):
            raise SystemExit(f"rootfs: COPY {src}: outside the build context")
        if path.is_dir():
            # A folder's contents, not the folder itself (Docker's rule).
            target.mkdir(parents=True, exist_ok=True)
            shutil.copytree(
                path,
                target,
                symlinks=True,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns(*IGNORED_IN_HASH, "*.pyc"),
            )
        else:
            dst = target / path.name if dest.endswith("/") else target
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dst)
    # Files a COPY adds belong to root, whoever owns them in the context.
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "0:0", str(target)], check=True)


KEEP_UNUSED = 6 * 3600  # seconds an unused image folder is kept
KEEP_NEWEST = 3  # image folders always kept, the most recently used


def used(folder: Path) -> Path:
    """Mark ``folder`` used now (its build.json's time), and return it."""
    os.utime(folder / "build.json")
    return folder


def prune(keep: Path) -> None:
    """Remove image folders (each some 400 MB; every change to the operator's
    code makes one) unused for KEEP_UNUSED, but never the KEEP_NEWEST most
    recently used nor ``keep``; and bases no build has used for as long."""
    now = time.time()
    for tmp in (cache_dir() / "rootfs").glob("*.tmp*"):
        # Left by a build that died: builds run under the lock prune() is under.
        shutil.rmtree(tmp, ignore_errors=True)
    folders = [f for f in (cache_dir() / "rootfs").iterdir() if (f / "build.json").is_file()]
    folders.sort(key=lambda f: (f / "build.json").stat().st_mtime, reverse=True)
    bases_in_use = set()
    for i, folder in enumerate(folders):
        age = now - (folder / "build.json").stat().st_mtime
        if folder == keep or i < KEEP_NEWEST or age < KEEP_UNUSED:
            with contextlib.suppress(ValueError, KeyError, OSError):
                info = json.loads((folder / "build.json").read_text())
                bases_in_use.add(Path(info["base_folder"]).name)
            continue
        log(f"removing {folder.name}, unused for {age / 3600:.0f} h")
        shutil.rmtree(folder, ignore_errors=True)
    for base in (cache_dir() / "rootfs").glob("base-*"):
        if base.name in bases_in_use or now - base.stat().st_mtime < KEEP_UNUSED:
            continue
        log(f"removing {base.name}, no build uses it")
        shutil.rmtree(base, ignore_errors=True)


def build(dockerfile: Path, context: Path, build_args: dict[str, str]) -> Path:
    key = image_key(dockerfile, context, build_args)
    folder = cache_dir() / "rootfs" / key
    if (folder / "config.json").is_file():
        return used(folder)
    need_root_tools()
    with locked(cache_dir() / "rootfs" / ".lock"):
        if (folder / "config.json").is_file():
            return used(folder)
        prune(folder)
        started = time.monotonic()
        p = plan(dockerfile, build_args)
        suite = debian_suite(p.base)
        base = build_base(suite)
        base_seconds = time.monotonic() - started
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        root = tmp / "root"
        subprocess.run(["cp", "-a", "--reflink=auto", str(base / "root"), str(root)], check=True)
        env = {"PATH": DEFAULT_PATH}
        args: dict[str, str] = {}
        # The fields of an OCI image config; WorkingDir only when WORKDIR set it
        # (an unset one is "/"), as builders write it.
        config: dict[str, object] = {"Env": env, "User": "", "Labels": {}}
        for ins in p.steps:
            scope = {**args, **env}
            workdir = str(config.get("WorkingDir") or "/")
            if ins.op == "RUN":
                run_env = {**args, **env}
                run_step(root, exec_form(ins.args), run_env, workdir, ins.line)
            elif ins.op == "COPY":
                copy_step(root, context, ins.args, scope, workdir)
            elif ins.op == "ENV":
                for k, v in pairs(ins.args, scope):
                    env[k] = v
                    scope[k] = v
            elif ins.op == "ARG":
                for word in shlex.split(ins.args):
                    # Docker's rule: the build argument, else the ARG's own
                    # default, else the global ARG's value; else it stays unset.
                    k, has_default, v = word.partition("=")
                    if k in build_args:
                        args[k] = build_args[k]
                    elif has_default:
                        args[k] = substitute(v, scope)
                    elif k in p.args:
                        args[k] = p.args[k]
            elif ins.op == "WORKDIR":
                path = substitute(ins.args, scope)
                path = path if path.startswith("/") else f"{workdir.rstrip('/')}/{path}"
                (root / path.lstrip("/")).mkdir(parents=True, exist_ok=True)
                config["WorkingDir"] = path
            elif ins.op == "USER":
                config["User"] = substitute(ins.args, scope)
            elif ins.op == "ENTRYPOINT":
                config["Entrypoint"] = exec_form(ins.args)
                config.pop("Cmd", None)  # Docker's rule: a new ENTRYPOINT resets CMD
            elif ins.op == "CMD":
                config["Cmd"] = exec_form(ins.args)
            elif ins.op == "LABEL":
                labels = config["Labels"]
                assert isinstance(labels, dict)
                labels.update(pairs(ins.args, scope))
            else:
                raise SystemExit(f"rootfs: Dockerfile:{ins.line}: {ins.op} is not supported")
        config["Env"] = [f"{k}={v}" for k, v in env.items()]
        if not config["Labels"]:
            del config["Labels"]
        seconds = time.monotonic() - started
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        (tmp / "build.json").write_text(
            json.dumps(
                {
                    "key": key,
                    "base": p.base,
                    "base_folder": str(base),
                    "seconds": round(seconds, 1),
                    "base_seconds": round(base_seconds, 1),
                    "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                indent=2,
            )
            + "\n"
        )
        tmp.rename(folder)
        log(f"built {folder} in {seconds:.0f}s (base: {base_seconds:.0f}s)")
        return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("build", "key", "base"))
    ap.add_argument("--dockerfile", type=Path, default=ROOT / "Dockerfile")
    ap.add_argument("--context", type=Path, default=ROOT)
    ap.add_argument("--build-arg", action="append", default=[], metavar="NAME=VALUE")
    ns = ap.parse_args(argv)
    build_args = dict(a.split("=", 1) for a in ns.build_arg)
    if ns.command == "key":
        print(image_key(ns.dockerfile, ns.context, build_args))
        return 0
    if ns.command == "base":
        # The Dockerfile's base, made here (for hack/image.sh's BASE=debootstrap).
        suite = debian_suite(plan(ns.dockerfile, build_args).base)
        need_root_tools()
        with locked(cache_dir() / "rootfs" / ".lock"):
            print(build_base(suite))
        return 0
    print(build(ns.dockerfile, ns.context, build_args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
