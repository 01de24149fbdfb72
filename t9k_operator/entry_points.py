"""Kinds and integrations that other Python distributions add: the entry points
the two registries read.

A distribution adds a job kind by declaring, in its metadata, an entry point
in the group :data:`KINDS` (``t9k_operator.kinds``) that names the kind's
class (a :class:`~t9k_operator.kinds.contract.KindBase` subclass, built with
no arguments); it adds an integration by one in :data:`INTEGRATIONS`
(``t9k_operator.integrations``) that names its ``Setup`` class. The operator,
``t9k``, the SDK and the local runner then know them as they know the
built-ins: :data:`t9k_operator.kinds.registry.KINDS` and
:data:`t9k_operator.registry.INTEGRATIONS` list the
built-ins first, then the plugins in the order of their entry points' names.

A plugin that cannot be loaded, or that takes a name already taken, is a
:class:`PluginError` naming its entry point, raised when the registry is
imported: a process never runs without a kind or an integration it was given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any, TypeVar

KINDS = "t9k_operator.kinds"
"""The entry-point group of job kinds: ``<name> = <module>:<kind class>``."""
INTEGRATIONS = "t9k_operator.integrations"
"""The entry-point group of integrations: ``<name> = <module>:<Setup class>``."""
STATUS_PARTS = "t9k_operator.status_parts"
"""The entry-point group of integrations' status parts: ``<name> = <module>:<StatusPart>``
(:mod:`t9k_operator.registry`)."""

T = TypeVar("T")


class PluginError(RuntimeError):
    """A plugin that cannot be listed; the message names its entry point."""


def where(ep: EntryPoint) -> str:
    """How a message names an entry point: its name, its object, its
    group and the distribution that declares it."""
    dist = ep.dist.name if ep.dist is not None else "an unknown distribution"
    return f"entry point {ep.name} = {ep.value} (group {ep.group}, from {dist})"


def plugins(
    group: str,
    listed: Sequence[T],
    make: Callable[[Any], T],
    names: Callable[[T], Iterable[str]],
) -> tuple[T, ...]:
    """The plugins of ``group``, in the order of their entry points' names: each
    entry point's object, loaded and given to ``make``. ``names`` says what
    an item is known by; none may be one of ``listed`` (the built-ins) or of
    a plugin before it."""
    taken = {name: "a built-in's" for item in listed for name in names(item)}
    found: list[T] = []
    for ep in sorted(entry_points(group=group), key=lambda ep: (ep.name, ep.value)):
        try:
            item = make(ep.load())
            known = list(names(item))
        except Exception as exc:
            raise PluginError(f"{where(ep)} cannot be loaded: {type(exc).__name__}: {exc}") from exc
        for name in known:
            if name in taken:
                raise PluginError(f"{where(ep)}: {name} is already {taken[name]}")
            taken[name] = f"{where(ep)}'s"
        found.append(item)
    return tuple(found)
