"""An image folder's cache key: a hash of every input of the build (the
Dockerfile, the build arguments, the files COPY reads, the modules here, the
base's own key)."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path

from .base import base_key
from .cache import IGNORED_IN_HASH
from .dockerfile import debian_suite, plan


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


def image_key(dockerfile: Path, context: Path, build_args: dict[str, str]) -> str:
    h = hashlib.sha256()
    for module in sorted(Path(__file__).parent.glob("*.py")):  # how it is built
        h.update(module.read_bytes())
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
