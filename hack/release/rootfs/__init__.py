"""The operator image's root filesystem, made by carrying out the Dockerfile.

No registry is needed: ``FROM debian:<suite>[-slim]`` is a debootstrap of
that suite (``--variant=minbase``, with the APT sources Debian's images
carry), every ``RUN`` runs under chroot in a mount namespace of its own (with
/proc, /dev and this machine's resolv.conf, as a build's RUN sees them),
``COPY`` copies from the build context with the Dockerfile's rules, and
``ENV``, ``ARG``, ``WORKDIR``, ``USER``, ``ENTRYPOINT`` and ``CMD`` go into
the image configuration kept beside the filesystem (``config.json``, the
fields of an OCI image config). The Dockerfile stays the one description of
the image: this package and ``make image`` read the same file.

    python3 -m hack.release.rootfs build [--build-arg K=V ...]   # prints the image folder
    python3 -m hack.release.rootfs key                           # the cache key only
    python3 -m hack.release.rootfs base                          # the debootstrapped base only

The image folder is ``$T9K_CACHE_DIR/rootfs/<key>/`` (default cache
``~/.cache/t9k-operator``): ``root/`` (the filesystem), ``config.json`` and
``build.json`` (how long the build took). The key hashes every input (the
Dockerfile, the build arguments, the files COPY reads, the modules here), so a
change to any of them builds anew; the debootstrapped base is cached on its
own (``rootfs/base-<suite>-<key>/``), so a change to the operator's code
redoes only the steps after FROM. Builds run under a lock, and a folder is
used only once its build has finished (it is renamed into place).

Cold, on 2 cores: 65 to 135 s (the debootstrap 35 to 80 s of it, as Debian's
mirror answers); a change to the operator's code alone: about 35 s; cached:
instant. Each build records its times in ``build.json``.

Needs root (chroot, mounts), debootstrap and unshare (util-linux).
Its parts: :mod:`.dockerfile` reads the Dockerfile, :mod:`.base` makes the
Debian base, :mod:`.steps` carries out the instructions, :mod:`.key` and
:mod:`.cache` say what is built anew and keep what was, :mod:`.build` puts
them together.

Build-time network settings of this machine reach the RUN steps without
entering the image: the CA bundle pip is told to trust here (``PIP_CERT``,
``SSL_CERT_FILE``) is bind-mounted for the step only, and proxy variables
are passed on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .base import build_base, debian_sources, need_root_tools
from .build import ROOT, build
from .cache import cache_dir, locked, prune, used
from .dockerfile import Instruction, Plan, debian_suite, exec_form, pairs, parse, plan, substitute
from .key import base_key, image_key
from .steps import copy_step, run_step

__all__ = [
    "ROOT",
    "Instruction",
    "Plan",
    "base_key",
    "build",
    "build_base",
    "copy_step",
    "debian_sources",
    "debian_suite",
    "exec_form",
    "image_key",
    "main",
    "pairs",
    "parse",
    "plan",
    "prune",
    "run_step",
    "substitute",
    "used",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m hack.release.rootfs", description=__doc__.split("\n\n")[0]
    )
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
        # The Dockerfile's base, made here (for hack/release/image.sh's BASE=debootstrap).
        suite = debian_suite(plan(ns.dockerfile, build_args).base)
        need_root_tools()
        with locked(cache_dir() / "rootfs" / ".lock"):
            print(build_base(suite))
        return 0
    print(build(ns.dockerfile, ns.context, build_args))
    return 0
