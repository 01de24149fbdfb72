"""The instructions after FROM, carried out into a root filesystem: ``RUN``
under chroot in a mount namespace of its own, ``COPY`` with Docker's rules,
and the rest into the image configuration (the fields of an OCI image
config)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from .cache import IGNORED_IN_HASH, log
from .dockerfile import Plan, exec_form, pairs, substitute

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

BUILD_CA = "/run/t9k-build/ca.crt"  # where a RUN step finds this machine's CA bundle
PASSED_ON = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
UNSHARE = ("unshare", "--mount", "--pid", "--fork", "--propagation", "private", "--")


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


def carry_out(root: Path, context: Path, p: Plan, build_args: dict[str, str]) -> dict[str, object]:
    """Every step of ``p`` into ``root``; the image configuration they make."""
    env = {"PATH": DEFAULT_PATH}
    args: dict[str, str] = {}
    # The fields of an OCI image config; WorkingDir only when WORKDIR set it
    # (an unset one is "/"), as builders write it.
    config: dict[str, object] = {"Env": env, "User": "", "Labels": {}}
    for ins in p.steps:
        scope = {**args, **env}
        workdir = str(config.get("WorkingDir") or "/")
        if ins.op == "RUN":
            run_step(root, exec_form(ins.args), {**args, **env}, workdir, ins.line)
        elif ins.op == "COPY":
            copy_step(root, context, ins.args, scope, workdir)
        elif ins.op == "ENV":
            env.update(pairs(ins.args, scope))
        elif ins.op == "ARG":
            args.update(_arg_values(ins.args, build_args, p.args, scope))
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
    return config


def _arg_values(
    words: str, build_args: dict[str, str], global_args: dict[str, str], scope: dict[str, str]
) -> dict[str, str]:
    """An ARG's values, by Docker's rule: the build argument, else the ARG's
    own default, else the global ARG's value; else it stays unset."""
    out = {}
    for word in shlex.split(words):
        k, has_default, v = word.partition("=")
        if k in build_args:
            out[k] = build_args[k]
        elif has_default:
            out[k] = substitute(v, scope)
        elif k in global_args:
            out[k] = global_args[k]
    return out
