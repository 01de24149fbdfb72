"""The workdir packer: a local directory as the one compressed archive a job's
replicas unpack at their working directory (docs/workdir.md).

:func:`pack` walks a directory and returns a :class:`Packed` (a gzip'd tar
and the list of what it holds); :func:`check_size` refuses one larger than
the object that carries it can hold, naming its size, the limit and its
largest files. It reads files and nothing else (no cluster, no clock), and
imports nothing of the project, so ``t9k``, the SDK and the tests use it alike.

What is left out, with git's ignore rules for the common cases:

- ``.git/`` always;
- the patterns of every ``.gitignore`` and then ``.t9kignore`` found on the
  way down (a directory's own files apply below it, after its parents'; the
  last pattern that matches a path decides): blank lines and ``#`` comments
  skipped, ``!`` re-includes, a trailing ``/`` matches directories only, a
  ``/`` at the start or in the middle anchors the pattern to the directory of
  its file (else it matches a name at any depth), ``*``, ``?``, ``[...]`` and
  ``**`` (``**/x``, ``x/**``, ``a/**/b``) as git reads them. As in git, a file
  in an excluded directory cannot be re-included. Not read: ``.git/info/exclude``,
  the global excludes file, and backslash escapes other than ``\\#`` and ``\\!``.

Files keep their permission bits; owners become root (uid 0), as the
replicas' user extracts them. A symbolic link whose target stays inside the
directory is kept as a link; one that leaves it (absolute, or through ``..``)
is refused, naming it, as is anything that is not a file, directory or link.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

LIMIT = 1024 * 1024
"""Bytes the archive may have: what one ConfigMap holds (the API server's
validation adds up the sizes of a ConfigMap's ``data`` and ``binaryData``
values and refuses more than 1 MiB, ``corev1.MaxSecretSize``)."""
IGNORE_FILES = (".gitignore", ".t9kignore")
"""Read in this order in every directory: ``.t9kignore`` has the last word."""
LARGEST = 5
"""How many of the largest files a refusal names."""


class WorkdirError(ValueError):
    """A directory that cannot be packed, or whose archive is too large."""


@dataclass(frozen=True)
class Packed:
    """A packed directory: the archive (gzip'd tar) and its members' sizes."""

    root: str
    archive: bytes
    files: tuple[tuple[str, int], ...]
    """Each regular file packed (its path in the directory) and its size."""

    def largest(self, n: int = LARGEST) -> list[tuple[str, int]]:
        return sorted(self.files, key=lambda f: (-f[1], f[0]))[:n]


@dataclass(frozen=True)
class _Rule:
    base: str  # the directory of the ignore file, relative to the root ("" at the root)
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _translate(glob: str) -> str:
    """A gitignore glob (no leading or trailing slash) as a regular expression
    over a path relative to the pattern's base."""
    out, i, n = [], 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == n:
            out.append("/.*")
            i += 3
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def parse_rules(text: str, base: str = "") -> list[_Rule]:
    """The rules of one ignore file whose directory is ``base``."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith(("\\#", "\\!")):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/")
        body = _translate(line)
        regex = re.compile(body if anchored else f"(?:.*/)?{body}", re.S)
        rules.append(_Rule(base, regex, negate, dir_only))
    return rules


def ignored(rules: Sequence[_Rule], path: str, is_dir: bool) -> bool:
    """Whether ``path`` (relative to the root) is left out: the last rule that
    matches it decides."""
    out = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.base:
            if not path.startswith(rule.base + "/"):
                continue
            rel = path[len(rule.base) + 1 :]
        else:
            rel = path
        if rule.regex.fullmatch(rel):
            out = not rule.negate
    return out


@dataclass
class _Walk:
    root: Path
    tar: tarfile.TarFile
    skip: frozenset[str] = frozenset()  # paths the caller's own files take
    files: list[tuple[str, int]] = field(default_factory=list)
    escaping: list[str] = field(default_factory=list)
    odd: list[str] = field(default_factory=list)

    def info(self, rel: str, st: os.stat_result, kind: bytes) -> tarfile.TarInfo:
        info = tarfile.TarInfo(rel)
        info.type = kind
        info.mode = stat.S_IMODE(st.st_mode)
        info.mtime = int(st.st_mtime)
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    def directory(self, rel: str, rules: list[_Rule]) -> None:
        path = self.root / rel if rel else self.root
        for name in IGNORE_FILES:
            own = path / name
            if own.is_file() and not own.is_symlink():
                rules = [*rules, *parse_rules(own.read_text(errors="replace"), rel)]
        for entry in sorted(os.scandir(path), key=lambda e: e.name):
            child = f"{rel}/{entry.name}" if rel else entry.name
            st = entry.stat(follow_symlinks=False)
            is_dir = stat.S_ISDIR(st.st_mode)
            if (is_dir and entry.name == ".git") or child in self.skip:
                continue
            if ignored(rules, child, is_dir):
                continue
            if stat.S_ISLNK(st.st_mode):
                self.link(child, st)
            elif is_dir:
                self.tar.addfile(self.info(child, st, tarfile.DIRTYPE))
                self.directory(child, rules)
            elif stat.S_ISREG(st.st_mode):
                info = self.info(child, st, tarfile.REGTYPE)
                info.size = st.st_size
                with open(self.root / child, "rb") as f:
                    self.tar.addfile(info, f)
                self.files.append((child, st.st_size))
            else:
                self.odd.append(child)

    def link(self, rel: str, st: os.stat_result) -> None:
        target = os.readlink(self.root / rel)
        resolved = os.path.normpath(os.path.join(os.path.dirname(rel), target))
        if os.path.isabs(target) or resolved == ".." or resolved.startswith("../"):
            self.escaping.append(f"{rel} -> {target}")
            return
        info = self.info(rel, st, tarfile.SYMTYPE)
        info.mode = 0o777
        info.linkname = target
        self.tar.addfile(info)


def pack(
    directory: str | os.PathLike[str] | None, extra: Mapping[str, bytes] | None = None
) -> Packed:
    """``directory`` as a gzip'd tar of what its ignore files leave in, with the
    files of ``extra`` (by their path, mode 0644) in place of any of the same
    path (None: those alone); :class:`WorkdirError` when it is no directory,
    or holds a symbolic link leaving it or something that is not a file,
    directory or link."""
    extra = dict(extra or {})
    if directory is not None and not Path(directory).is_dir():
        raise WorkdirError(f"workdir {directory}: not a directory")
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as gz,
        tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        walk = _Walk(Path(directory or ".").resolve(), tar, skip=frozenset(extra))
        if directory is not None:
            walk.directory("", [])
        for rel, content in sorted(extra.items()):
            info = tarfile.TarInfo(rel)
            info.mode, info.size = 0o644, len(content)
            tar.addfile(info, io.BytesIO(content))
            walk.files.append((rel, len(content)))
    if walk.escaping:
        raise WorkdirError(
            f"workdir {directory}: symbolic links leave the directory (the replicas would not "
            f"have their targets): {', '.join(walk.escaping)}; copy the targets in, "
            "or list the links in .t9kignore"
        )
    if walk.odd:
        raise WorkdirError(
            f"workdir {directory}: not a file, directory or symbolic link: "
            f"{', '.join(walk.odd)}; list them in .t9kignore"
        )
    return Packed(str(directory or "(generated)"), buffer.getvalue(), tuple(walk.files))


def unpack(packed: Packed, into: str | os.PathLike[str]) -> None:
    """Lay ``packed`` out in the directory ``into``, as a replica's init container does."""
    with tarfile.open(fileobj=io.BytesIO(packed.archive), mode="r:gz") as tar:
        tar.extractall(into, filter="fully_trusted")  # modes as the init container keeps them


def check_size(packed: Packed, limit: int = LIMIT) -> None:
    """:class:`WorkdirError` naming the archive's size, ``limit`` and the largest
    files when the archive is larger than ``limit`` bytes."""
    size = len(packed.archive)
    if size <= limit:
        return
    largest = ", ".join(f"{path} ({_size(n)})" for path, n in packed.largest())
    raise WorkdirError(
        f"workdir {packed.root} packs to {_size(size)} compressed ({size} bytes), over the "
        f"limit of {_size(limit)} ({limit} bytes) one ConfigMap holds; its largest files: "
        f"{largest}; leave what the job does not need out with .t9kignore, or put data "
        "on a volume"
    )


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
