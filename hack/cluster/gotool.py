"""The Go toolchain, as the builds of the binaries run it: its environment,
its scratch caches (removed once every binary is built), one ``go`` command
with its output kept, and a module's source from the module cache."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from .common import CACHE, log

# The Go module and build caches of these builds, unless the environment names
# its own: scratch, removed once every binary is built (``drop_go_caches``).
_GO_SCRATCH = {"GOMODCACHE": "gomod", "GOCACHE": "gocache"}
_GO_CACHES_LOCK = CACHE / "bin" / ".go-caches.lock"


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    for var, folder in _GO_SCRATCH.items():
        env.setdefault(var, str(CACHE / folder))
    env["CGO_ENABLED"] = "0"
    env.setdefault("GOFLAGS", "-mod=mod")
    return env


def drop_go_caches() -> None:
    """Remove the Go caches ``_go_env`` made under the cache (not a GOCACHE or
    GOMODCACHE the environment names: those are the user's). A cold build of
    every binary leaves about 11 GB in them (8.4 GB of build cache, 2.6 GB of
    module sources, measured in docs/benchmarks.md) that nothing reads again:
    the binaries are cached by version, and a version bump builds anew. A CI
    run with them in place ran out of disk in the image test."""
    import fcntl

    mine = [(v, CACHE / f) for v, f in _GO_SCRATCH.items() if v not in os.environ]
    if not any(path.exists() for _, path in mine):
        return
    _GO_CACHES_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(_GO_CACHES_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another run is building with the Go caches: they are left for it to remove")
            return
        for var, path in mine:
            if path.exists():
                _remove_go_cache(var, path)


def _remove_go_cache(var: str, path: Path) -> None:
    size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())

    def writable(func, name, _exc):  # type: ignore[no-untyped-def]
        # The module cache's folders are read-only, as Go makes them.
        os.chmod(os.path.dirname(name), 0o755)
        if os.path.isdir(name):
            os.chmod(name, 0o755)
        func(name)

    shutil.rmtree(path, onerror=writable)
    log(f"removed the Go {var} of the builds ({size / 2**30:.1f} GiB): {path}")


@contextlib.contextmanager
def _go_caches_in_use() -> Iterator[None]:
    """A shared lock on the Go caches for a build: ``drop_go_caches`` never
    removes them under another run's build."""
    import fcntl

    _GO_CACHES_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(_GO_CACHES_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield


class BuildError(SystemExit):
    pass


def _go(what: str, args: list[str], cwd: Path | None, env: dict[str, str], logfile: Path) -> None:
    """One ``go`` command, its output kept in ``logfile``; a failure names the
    binary, go's exit code and the end of what go said."""
    with open(logfile, "ab") as out:
        out.write(f"\n$ {' '.join(args)}   # {what}\n".encode())
        out.flush()
        proc = subprocess.run(args, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = logfile.read_text(errors="replace").splitlines()[-25:]
        raise BuildError(
            f"cluster: building {what} failed (go exited {proc.returncode}); "
            f"the end of its output ({logfile}):\n" + "\n".join(tail)
        )


def _need_go() -> None:
    if not shutil.which("go"):
        raise BuildError(
            "cluster: no Go toolchain on PATH, and no binaries to use: "
            "install Go or set T9K_CLUSTER_BIN_DIR"
        )


def _module_source(
    module: str, version: str, env: dict[str, str], logfile: Path, cwd: Path | None = None
) -> Path:
    """The folder of ``module@version``'s source in the Go module cache (``go mod
    download``, its errors in ``logfile``), or a BuildError naming the module."""
    with open(logfile, "ab") as out:
        proc = subprocess.run(
            ["go", "mod", "download", "-json", f"{module}@{version}"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=out,
        )
    try:
        return Path(json.loads(proc.stdout)["Dir"])
    except (ValueError, KeyError) as exc:
        raise BuildError(
            f"cluster: `go mod download {module}@{version}` gave no source folder "
            f"(exit {proc.returncode}, {exc.__class__.__name__}); see {logfile}"
        ) from None
