"""``spec.config`` of a DeepSpeedJob: what the deepspeed launcher runs, and how.

worker-0 of a DeepSpeedJob runs the ``deepspeed`` launcher, which starts the
training on every worker over ssh. :class:`DeepSpeedConfig` says with which
options: slots (training processes) per worker, whether LOCAL_RANK is passed,
autotuning, and further launcher options; :class:`RunConfig` says what it
launches: a script (``run.python``), a module (``run.module``) or an
executable (``run.exec``), each with its arguments.

``run.python`` / ``run.module`` / ``run.exec`` are each a string command line
*or* a list of strings (:data:`Command`). A structural schema can only spell
that as an untyped node (``x-kubernetes-preserve-unknown-fields``), which CEL
cannot see into. So the schema holds ``run`` to at most one of them
(``maxProperties``; errors name ``spec.config.run``) and a list's items to
strings, and the model checks the rest (a number, say, or a string that
shlex cannot split). That ``run`` names something to train is required only
outside debug mode, so that rule sits on the spec, in
:mod:`t9k_operator.api.deepspeed`: its CEL sees that ``run`` is there, its
Python side also that it is not empty.

The options the operator sets itself (:data:`RESERVED_ARGS`) are refused in
``otherArgs``, and ``--launcher`` may only be pdsh: two
rules (:class:`~t9k_operator.api.rules.Rule`) on the field.

``customCommand`` replaces all of that: worker-0 runs it (through bash) in
place of the ``deepspeed`` command the operator would build, and of the
config only ``slotsPerWorker`` (the hostfile's slots) still counts. The kind
says so in a Warning when the job also sets the options it then ignores
(:data:`IGNORED_BY_CUSTOM_COMMAND`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from t9k_operator.api.base import T9kModel
from t9k_operator.api.rules import Rule, Rules
from t9k_operator.api.schema import MAX_ARG_LENGTH, MAX_ARGS, MAX_PROCS, Arg, cel_strings

DEFAULT_SLOTS = 1
IGNORED_BY_CUSTOM_COMMAND = ("run", "localRank", "autotune", "otherArgs")
"""The options of spec.config that spec.config.customCommand makes void."""
RESERVED_ARGS = ("--no_local_rank", "--autotuning", "--module", "--no_python", "--hostfile")
"""deepspeed options the operator sets from spec.config (and its own hostfile)."""

Autotune = Literal["none", "run", "tune"]
RunKind = Literal["python", "module", "exec"]
RUN_KINDS: tuple[RunKind, ...] = ("python", "module", "exec")

# What the models say (and, for a rule, the API server too).
MSG_RUN_EXACTLY_ONE = "spec.config.run must set exactly one of python, module and exec"
MSG_RESERVED_ARGS = (
    "spec.config.otherArgs must not contain --no_local_rank, --autotuning, --module, "
    "--no_python or --hostfile (nor --autotuning=... or --hostfile=...): the operator sets "
    "them from spec.config.localRank, spec.config.autotune, spec.config.run and its own hostfile"
)

MSG_LAUNCHER_PDSH = (
    "spec.config.otherArgs may give --launcher only as pdsh (--launcher pdsh or "
    "--launcher=pdsh, once): the only launcher a DeepSpeedJob supports (it reaches the "
    "workers over ssh through the job's hostfile); openmpi, mvapich, slurm, mpich and "
    "impi are not"
)


def launcher_not_pdsh(args: Sequence[str]) -> bool:
    """Whether ``args`` give deepspeed's ``--launcher`` as anything but pdsh (either
    spelling, any case as deepspeed reads it), more than once, or without a value."""
    if any(a.startswith("--launcher=") and a.lower() != "--launcher=pdsh" for a in args):
        return True
    at = [i for i, a in enumerate(args) if a == "--launcher"]
    if not at:
        return False
    return len(at) > 1 or at[0] + 1 >= len(args) or args[at[0] + 1].lower() != "pdsh"


def is_reserved_arg(arg: str) -> bool:
    """Whether ``arg`` is one of :data:`RESERVED_ARGS`, alone or as ``--flag=value``."""
    return any(arg == flag or arg.startswith(flag + "=") for flag in RESERVED_ARGS)


# -- spec.config.run ------------------------------------------------------------------


_COMMAND_SCHEMA: dict[str, Any] = {
    # Untyped: a string or a list of strings (a structural schema has no unions).
    # May be empty: a debug job's file may say `python: []`. Outside debug mode
    # the operator wants it non-empty (MSG_RUN_REQUIRED): CEL cannot see an
    # untyped field, so admission checks only that config.run is there.
    "x-kubernetes-preserve-unknown-fields": True,
    "items": {"type": "string"},
}

Command = Annotated[str | list[str], WithJsonSchema(_COMMAND_SCHEMA)]
"""A command line (split with shlex) or a list of strings (used as is)."""


def command_argv(value: str | Sequence[str]) -> list[str]:
    """A :data:`Command` as an argument list: a string is split with shlex."""
    if isinstance(value, str):
        return shlex.split(value)
    return list(value)


class RunConfig(T9kModel):
    """What deepspeed launches on every worker: exactly one of python, module and exec."""

    model_config = ConfigDict(json_schema_extra={"maxProperties": 1})

    python: Command | None = Field(
        default=None,
        description=(
            "A Python script and its arguments (`deepspeed ... script.py args`): a command "
            "line, split like a shell would, or a list of strings."
        ),
    )
    module: Command | None = Field(
        default=None,
        description=(
            "A Python module and its arguments (`deepspeed --module ... module args`): a "
            "command line or a list of strings."
        ),
    )
    exec: Command | None = Field(
        default=None,
        description=(
            "An executable and its arguments (`deepspeed --no_python ... executable args`): "
            "a command line or a list of strings."
        ),
    )

    @field_validator("python", "module", "exec")
    @classmethod
    def _check_command(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, str):
            try:
                shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"not a valid command line: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _check_at_most_one(self) -> RunConfig:
        if sum(getattr(self, kind) is not None for kind in RUN_KINDS) > 1:
            raise ValueError(MSG_RUN_EXACTLY_ONE)
        return self

    @property
    def given(self) -> bool:
        """Whether exactly one of python, module and exec is set, and not empty."""
        chosen = [getattr(self, kind) for kind in RUN_KINDS if getattr(self, kind) is not None]
        return len(chosen) == 1 and bool(command_argv(chosen[0]))

    @property
    def kind(self) -> RunKind:
        """Which of python, module and exec is set."""
        for kind in RUN_KINDS:
            if getattr(self, kind) is not None:
                return kind
        raise ValueError(MSG_RUN_EXACTLY_ONE)  # unreachable after validation

    @property
    def argv(self) -> list[str]:
        """The script, module or executable, then its arguments."""
        value: str | list[str] = getattr(self, self.kind)
        return command_argv(value)


# -- spec.config ----------------------------------------------------------------------

RESERVED_ARGS_RULE: Rule[Sequence[str]] = Rule(
    f"!self.exists(a, {cel_strings(RESERVED_ARGS)}.exists(f, a == f || a.startsWith(f + '=')))",
    MSG_RESERVED_ARGS,
    lambda args: not any(is_reserved_arg(a) for a in args),
)
LAUNCHER_PDSH_RULE: Rule[Sequence[str]] = Rule(
    "self.all(a, !a.startsWith('--launcher=') || a.lowerAscii() == '--launcher=pdsh') && "
    "(!('--launcher' in self) || (self.indexOf('--launcher') == self.lastIndexOf('--launcher') "
    "&& self.indexOf('--launcher') + 1 < size(self) "
    "&& self[self.indexOf('--launcher') + 1].lowerAscii() == 'pdsh'))",
    MSG_LAUNCHER_PDSH,
    lambda args: not launcher_not_pdsh(args),
)


class DeepSpeedConfig(T9kModel):
    """How the deepspeed launcher runs the training."""

    custom_command: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ARG_LENGTH,
        description=(
            "A launch command of your own, run by bash on worker-0 in place of the deepspeed "
            "command the operator builds (e.g. `deepspeed --hostfile=/t9k/hostfile train.py`; "
            "the job's hostfile is /t9k/hostfile). When set, every other option of "
            "spec.config but slotsPerWorker (and slotPerWorker) is ignored: run, localRank, "
            "autotune and otherArgs (a job that sets them gets a Warning Event "
            "FieldNotActedOn)."
        ),
    )

    slots_per_worker: int | None = Field(
        default=None,
        ge=1,
        le=MAX_PROCS,
        description=(
            "Slots per worker in the hostfile: how many training processes each worker runs, "
            "usually its number of GPUs. Unset: slotPerWorker if set, else 1."
        ),
    )
    slot_per_worker: int | None = Field(
        default=None,
        ge=1,
        le=MAX_PROCS,
        description=(
            "Another spelling of slotsPerWorker (used by early examples); "
            "slotsPerWorker wins when both are set."
        ),
    )
    run: RunConfig | None = Field(
        default=None,
        description=(
            "What to train: exactly one of python (a script), module or exec (an executable), "
            "each with its arguments. Required unless debug mode is on."
        ),
    )
    local_rank: bool = Field(
        default=True,
        description=(
            "Pass LOCAL_RANK to the training processes; false adds deepspeed --no_local_rank."
        ),
    )
    autotune: Autotune = Field(
        default="none",
        description=(
            "DeepSpeed autotuning: none (off), tune (search the best settings, do not train) "
            "or run (search, then train with them); deepspeed --autotuning=<tune|run>."
        ),
    )
    other_args: Annotated[list[Arg], Rules(RESERVED_ARGS_RULE, LAUNCHER_PDSH_RULE)] = Field(
        default=[],
        max_length=MAX_ARGS,
        description=(
            "Further deepspeed launcher options, passed verbatim before the script "
            "(e.g. --master_port=12346). Options set from the fields above are refused: "
            "--no_local_rank, --autotuning, --module, --no_python and --hostfile; --launcher "
            "may only be pdsh."
        ),
    )

    @property
    def custom(self) -> bool:
        """Whether customCommand replaces the command the operator builds."""
        return self.custom_command is not None

    @property
    def slots(self) -> int:
        """The effective slots per worker: slotsPerWorker, else slotPerWorker, else 1."""
        if self.slots_per_worker is not None:
            return self.slots_per_worker
        if self.slot_per_worker is not None:
            return self.slot_per_worker
        return DEFAULT_SLOTS
