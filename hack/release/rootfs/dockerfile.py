"""The Dockerfile as the root filesystem's build reads it: instructions with
Docker's rules for continuation lines, comments and variable substitution,
one stage on a Debian base."""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Instruction:
    op: str
    args: str
    line: int


def parse(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buf: list[str] = []
    start = 0
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("#") or (not line and not buf):
            continue
        if not buf:
            start = no
        if line.endswith("\\"):
            buf.append(line[:-1].strip())
            continue
        buf.append(line)
        joined = " ".join(part for part in buf if part)
        buf = []
        op, _, args = joined.partition(" ")
        out.append(Instruction(op.upper(), args.strip(), start))
    if buf:
        raise SystemExit("Dockerfile ends in a continuation line")
    return out


def substitute(value: str, env: dict[str, str]) -> str:
    """``$NAME``, ``${NAME}`` and ``${NAME:-default}`` as Dockerfile
    instructions expand them (an unset name is empty)."""

    def repl(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        default = m.group(3)
        got = env.get(name, "")
        return got if got or default is None else default

    return re.sub(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\})",
                  repl, value)  # fmt: skip


def pairs(args: str, env: dict[str, str]) -> list[tuple[str, str]]:
    """``K=V K2="V 2"`` (or the legacy ``K V``) of ENV, ARG and LABEL."""
    words = shlex.split(args)
    if words and "=" not in words[0]:
        return [(words[0], substitute(" ".join(words[1:]), env))]
    out = []
    for word in words:
        key, sep, value = word.partition("=")
        out.append((key, substitute(value, env) if sep else ""))
    return out


def exec_form(args: str) -> list[str]:
    if args.startswith("["):
        value = json.loads(args)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SystemExit(f"bad exec form: {args}")
        return value
    return ["/bin/sh", "-c", args]


@dataclass
class Plan:
    """The Dockerfile read with its build arguments: the base, then the steps."""

    base: str
    steps: list[Instruction]
    args: dict[str, str] = field(default_factory=dict)


def plan(dockerfile: Path, build_args: dict[str, str]) -> Plan:
    instructions = parse(dockerfile.read_text())
    global_args: dict[str, str] = {}
    base = None
    steps: list[Instruction] = []
    for ins in instructions:
        if base is None:
            if ins.op == "ARG":
                for key, value in pairs(ins.args, global_args):
                    global_args[key] = build_args.get(key, value)
                continue
            if ins.op != "FROM":
                raise SystemExit(f"Dockerfile:{ins.line}: {ins.op} before FROM")
            words = substitute(ins.args, global_args).split()
            if len(words) not in (1, 3) or (len(words) == 3 and words[1].upper() != "AS"):
                raise SystemExit(f"Dockerfile:{ins.line}: FROM {ins.args}: not understood")
            base = words[0]
            continue
        if ins.op == "FROM":
            raise SystemExit(f"Dockerfile:{ins.line}: one stage only (a second FROM)")
        steps.append(ins)
    if base is None:
        raise SystemExit("Dockerfile has no FROM")
    return Plan(base=base, steps=steps, args=global_args)


def debian_suite(base: str) -> str:
    m = re.fullmatch(r"(?:docker\.io/)?(?:library/)?debian:([a-z]+)(-slim)?", base)
    if not m:
        raise SystemExit(
            f"base {base!r}: only debian:<suite>[-slim] can be made here without a registry "
            "(a debootstrap of that suite)"
        )
    return m.group(1)
