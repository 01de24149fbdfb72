"""The binary cache, ``CACHE/bin/<tag>/``: a folder is made whole under a
lock, in a temporary folder renamed into place once complete, and used only
when its completion mark is there."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .common import CACHE, log
from .gotool import BuildError, _go_caches_in_use

# A folder is used only when its build finished: the mark is written last.
COMPLETE_MARK = ".complete"


class MissingBinaries(SystemExit):
    """Binaries absent with ``T9K_NO_BUILD=1``: ``main`` exits with
    ``EXIT_MISSING_BINARIES`` so that callers can tell it from a failure."""


EXIT_MISSING_BINARIES = 3


@contextlib.contextmanager
def _locked(path: Path, what: str = "obtaining the binaries") -> Iterator[None]:
    """An exclusive lock on ``path`` (released when the process dies), so that
    two runs (a demo and the tests, say) never build into the same folder."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another run is {what}; waiting for it ({path})")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _missing(folder: Path, tools: Iterable[str], files: Iterable[str] = ()) -> list[str]:
    return [t for t in tools if not os.access(folder / t, os.X_OK)] + [
        f for f in files if not (folder / f).is_file()
    ]


def _obtain(
    tag: str,
    what: str,
    tools: Iterable[str],
    files: Iterable[str],
    produce: Callable[[Path], None],
) -> Path:
    """``CACHE/bin/<tag>``, made by ``produce`` first when it is not complete.

    ``produce`` fills a fresh temporary folder beside the final one, which is
    marked complete and only then renamed into place, all under a lock: a
    folder is never used half-built, and a build that was interrupted leaves
    only a temporary folder, removed by the next run. ``T9K_NO_BUILD=1`` fails
    at once instead of building.
    """
    tools, files = tuple(tools), tuple(files)
    folder = CACHE / "bin" / tag

    def complete(path: Path) -> bool:
        return (path / COMPLETE_MARK).exists() and not _missing(path, tools, files)

    if complete(folder):
        return folder
    if os.environ.get("T9K_NO_BUILD") == "1":
        raise MissingBinaries(
            f"cluster: {what} not in {folder} and T9K_NO_BUILD=1: "
            "run `make binaries` (or `python3 -m hack.cluster binaries`) first"
        )
    with _locked(CACHE / "bin" / f".{tag}.lock"):
        if complete(folder):  # another run finished them while we waited
            return folder
        for stale in (CACHE / "bin").glob(f".{tag}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if folder.exists():
            log(f"{folder} is incomplete (an interrupted build?): building it again")
            shutil.rmtree(folder)
        tmp = CACHE / "bin" / f".{tag}.tmp-{os.getpid()}"
        tmp.mkdir(parents=True)
        try:
            with _go_caches_in_use():
                produce(tmp)
            missing = _missing(tmp, tools, files)
            if missing:
                raise BuildError(f"cluster: after the build, {', '.join(missing)} missing")
            (tmp / COMPLETE_MARK).write_text(tag + "\n")
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
