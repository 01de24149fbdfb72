"""Building an image folder, ``$T9K_CACHE_DIR/rootfs/<key>/``: the base copied,
the Dockerfile's steps carried out, ``config.json`` and ``build.json``
written, then the folder renamed into place, all under the lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from .base import build_base, need_root_tools
from .cache import cache_dir, locked, log, prune, used
from .dockerfile import debian_suite, plan
from .key import image_key
from .steps import carry_out

ROOT = Path(__file__).resolve().parents[3]


def build(dockerfile: Path, context: Path, build_args: dict[str, str]) -> Path:
    """The image folder of the Dockerfile with these build arguments, built
    first unless the cache has it."""
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
        base = build_base(debian_suite(p.base))
        base_seconds = time.monotonic() - started
        tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        root = tmp / "root"
        subprocess.run(["cp", "-a", "--reflink=auto", str(base / "root"), str(root)], check=True)
        config = carry_out(root, context, p, build_args)
        seconds = time.monotonic() - started
        (tmp / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        record = {
            "key": key,
            "base": p.base,
            "base_folder": str(base),
            "seconds": round(seconds, 1),
            "base_seconds": round(base_seconds, 1),
            "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (tmp / "build.json").write_text(json.dumps(record, indent=2) + "\n")
        tmp.rename(folder)
        log(f"built {folder} in {seconds:.0f}s (base: {base_seconds:.0f}s)")
        return folder
