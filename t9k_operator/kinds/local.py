"""What a kind gives ``t9k run --local``: the :class:`LocalRun` hook and the
types it exchanges with the local runner (``t9k_operator.local``).

The local runner builds the job's pods with the kind's own builders and
resolves each pod's training container as kubelet would on one machine (env,
addresses, ports, mounted files); that machinery is the runner's. A kind
says only what differs between kinds:

* where a program given after ``--`` goes in its manifest
  (:meth:`LocalRun.program`): the field its training program is run from, and
  whether a leading Python interpreter is kept or left to a launcher;
* which processes stand for its replicas (:meth:`LocalRun.launch`): each
  replica's own training container (:class:`EachReplica`), or, for a kind
  whose launcher starts every rank over ssh, those ranks started directly
  with what the launcher's per-node step would give each (:class:`Launch`).

Which replica's exit decides the job stays the kind's ``outcome`` rule: the
processes of a launch stand for the launcher's replica.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Protocol, TypeVar

from t9k_operator.api.crd import JobObject
from t9k_operator.objects import Obj

LOOPBACK = "127.0.0.1"
"""Every address of a replica, and of a Service, on this machine."""
PYTHON_NAME = re.compile(r"python[0-9.]*$")

J_contra = TypeVar("J_contra", bound=JobObject[Any, Any], contravariant=True)


@dataclass(frozen=True)
class Process:
    """One local process: a replica's container, or one rank a launcher would start."""

    label: str
    """What prefixes its log lines: ``worker-0``, ``scheduler-0``, ``worker-1:0``."""
    replica: tuple[str, int]
    """The replica (pod) whose exit it stands for, as the kind's rules name it."""
    argv: tuple[str, ...]
    env: Mapping[str, str]
    """The environment the pod gives it; the caller's environment goes under it."""


@dataclass(frozen=True)
class Program:
    """A manifest with the user's program in it (:meth:`LocalRun.program`)."""

    manifest: Obj
    python: str | None = None
    """The interpreter the program names when the kind's field holds a script
    its launcher runs with Python; None: the runner's default interpreter."""
    as_is: bool = False
    """Whether the launcher must run the kind's field as a command, not with
    Python (a ColossalAI ``worker.command`` that is not a script)."""


@dataclass(frozen=True)
class Replica:
    """One replica's training container as the local runner resolved it."""

    container: Mapping[str, Any]
    """The container as the kind's builders made it."""
    env: Mapping[str, str]
    """Its environment as kubelet gives it (names and ports still the cluster's)."""


@dataclass(frozen=True)
class Launch:
    """The ranks a launcher would start over ssh, to be started here directly."""

    launcher: str
    """The replica (by label: ``worker-0``, ``launcher``) that runs the launcher
    on the cluster: the ranks get its environment, so only its notes are said."""
    cluster_command: str
    """What the launcher runs on the cluster, as a shell line."""
    processes: tuple[Process, ...]
    failed_exit_code: int | None = None
    """The exit code a failed job reports when the launcher's is fixed
    (ColossalAI's exits 1 whichever host failed); None: the failed rank's own."""


class Here(Protocol):
    """This machine, as the local runner offers it to a kind's :meth:`LocalRun.launch`."""

    @property
    def python(self) -> str:
        """The interpreter that runs what a launcher runs with Python."""
        ...

    @property
    def as_is(self) -> bool:
        """:attr:`Program.as_is` of the user's program (False without one)."""
        ...

    def text(self, value: str) -> str:
        """``value`` with the cluster's names, ports and mount paths made this machine's."""
        ...

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """:meth:`text` of every value, and every ``*PORT`` this machine's port."""
        ...

    def port(self, port: int) -> int:
        """This machine's port for the cluster's ``port``: a free one, the same for
        every process, chosen the first time it is asked for."""
        ...

    def argv(self, label: str, replica: Replica) -> list[str]:
        """The command and args of replica ``label`` as kubelet expands them
        (``$(NAME)`` from its env), made this machine's (:meth:`text`); the run
        stops, saying so, when its container gives no command."""
        ...

    def free_port(self) -> int:
        """A free port of this machine of the caller's own (for a process that
        listens where, on the cluster, every replica has the same port)."""
        ...

    def file(self, name: str, content: str, *, mounted_at: str) -> str:
        """Write ``content`` to ``name`` in the run's directory, which then stands
        for ``mounted_at`` in what :meth:`text` rewrites; its local path."""
        ...

    def note(self, text: str) -> None:
        """Say what differs from the cluster."""
        ...


class LocalRun(Protocol[J_contra]):
    """What ``t9k run --local`` needs of one kind (the module docstring)."""

    def program(self, manifest: Obj, argv: Sequence[str]) -> Program:
        """``manifest`` (a copy) with its training program replaced by ``argv``, a
        whole command line, in the field the kind runs it from."""
        ...

    def launch(self, job: J_contra, replicas: Mapping[str, Replica], here: Here) -> Launch | None:
        """The ranks the job's launcher starts (``replicas`` by label); None when
        each replica runs its own training container, as its pod would."""
        ...


class EachReplica:
    """The kinds whose every replica runs its own training container locally."""

    def launch(self, job: Any, replicas: Mapping[str, Replica], here: Here) -> Launch | None:
        return None


# -- what the kinds' hooks share ------------------------------------------------------------


def is_python(program: str) -> bool:
    """Whether ``program`` names a Python interpreter (``python``, ``/usr/bin/python3.11``)."""
    return bool(PYTHON_NAME.fullmatch(PurePosixPath(program).name))


def split_python(argv: Sequence[str]) -> tuple[str | None, list[str] | None]:
    """A command line's interpreter and script with its arguments, when it runs a
    Python interpreter with something after it; else (None, None)."""
    python = argv[0] if len(argv) > 1 and is_python(argv[0]) else None
    return python, ([*argv[1:]] if python else None)


def rank_env(base: Mapping[str, str], extra: Mapping[str, object]) -> dict[str, str]:
    """``base`` with ``extra``'s values as strings over it."""
    return {**base, **{k: str(v) for k, v in extra.items()}}
