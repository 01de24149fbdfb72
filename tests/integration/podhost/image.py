"""The images a pod host's containers run: this machine's root file system
changed by a layer of its own, as an image's layers change a base."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


class Image:
    """A container image: this machine's root file system with some paths
    removed (overlay whiteouts) and some files added."""

    def __init__(
        self,
        name: str,
        *,
        remove: Iterable[str] = (),
        files: Mapping[str, tuple[str, int]] | None = None,
        dirs: Mapping[str, int] | None = None,
        symlinks: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.remove = tuple(remove)
        self.files = dict(files or {})
        self.dirs = dict(dirs or {})
        self.symlinks = dict(symlinks or {})

    def derive(self, name: str, **changes: Any) -> Image:
        return Image(
            name,
            remove=(*self.remove, *changes.get("remove", ())),
            files={**self.files, **changes.get("files", {})},
            dirs={**self.dirs, **changes.get("dirs", {})},
            symlinks={**self.symlinks, **changes.get("symlinks", {})},
        )

    def layer(self, root: Path) -> Path:
        layer = root / "images" / self.name
        if layer.exists():
            return layer
        layer.mkdir(parents=True)

        def place(path: str) -> Path:
            # Through the lower layer's symlinked folders (Debian's /bin is
            # usr/bin): a real folder in this layer would hide the symlink.
            target = layer / os.path.realpath(os.path.dirname(path)).lstrip("/")
            target.mkdir(parents=True, exist_ok=True)
            return target / os.path.basename(path)

        for path in self.remove:
            target = place(path)
            if not target.exists():
                os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))  # a whiteout
        for path, mode in self.dirs.items():
            target = place(path)
            target.mkdir(exist_ok=True)
            target.chmod(mode)
        for path, (content, mode) in self.files.items():
            target = place(path)
            target.write_text(content)
            target.chmod(mode)
        for path, dest in self.symlinks.items():
            place(path).symlink_to(dest)
        return layer


# What a stock image with OpenSSH installed looks like: Debian's packages and
# their configuration as installed, but nothing left behind by a running
# system (no /run/sshd) and no ssh directory for root.
STOCK = Image("stock", remove=("/root/.ssh", "/run/sshd", "/root/.deepspeed_env"))
NO_HOST_KEYS = STOCK.derive(
    "stock-no-host-keys",
    remove=[
        f"/etc/ssh/ssh_host_{t}_key{s}" for t in ("rsa", "ecdsa", "ed25519") for s in ("", ".pub")
    ],
)
