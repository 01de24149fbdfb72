"""The job kinds, for the tests: every per-kind test table derives from here.

The kinds come from the operator's one registry, imported here and nowhere
else in tests/ (tests/unit/reconcilers/ and tests/unit/api/ aside, which test
the kinds themselves), so a move of it is one edit. A test parametrized over
the kinds uses :data:`KIND_NAMES`, or a subset derived from a property of the
kinds (:func:`spec_fields`, :func:`kubeflow_status`, ``uses_ssh``).

Each kind's test data is one module of this package, named as the kind's
modules are (``tests/kinds/<kind>.py`` for ``t9k_operator/kinds/<kind>.py``):
its entry in every per-kind table of the tests, each written out there, never
computed by the code under test. :data:`ALL` finds them through the registry.
A test reads its table with :func:`kind_table` (``{kind: entry}``), and fails
when a kind it should cover has no entry in it (:func:`per_kind`,
:func:`kind_entry`): a new kind is never silently left out. A new kind's test
data is one new module here, and nothing else.

The tables, by the name a kind's module gives its entry (and the test's table):

- ``SAMPLE``, ``LOCAL_PROCESSES``, ``MORE_SAMPLES`` (a kind with more than one
  sample only): tests/unit/test_local_run.py (``EXPECTED``)
- ``API_MODELS``: tests/unit/api/test_job_objects.py (``KINDS``)
- ``RULES``: tests/unit/api/test_rules.py (``CASES``)
- ``RECONCILED``: tests/unit/reconcilers/test_job_reconciler.py (``JOBS``)
- ``HOOKS``, ``NEVER_RESTARTS``: tests/unit/reconcilers/test_kinds.py (``CASES``,
  ``NEVER_RESTART``)
- ``KUEUE_POD_SETS``: tests/unit/reconcilers/test_kueue_reconciler.py (``POD_SETS``)
- ``GANG_MIN_MEMBER``: tests/unit/reconcilers/test_gang_reconciler.py (``MIN_MEMBER``)
- ``crd_case``: tests/integration/test_crd_kinds.py (``CASES``)
- ``FUZZ_BASE_SPEC``, ``fuzz_templates``, ``FUZZ_TEMPLATE_PATH``,
  ``FUZZ_OWN_QUANTITY_SPOTS``, ``FUZZ_RESUMES``: tests/integration/test_fuzz_specs.py
  (``BASE_SPECS``, ``TEMPLATES``, ``TEMPLATE_PATHS``, ``OWN_QUANTITY_SPOTS``, ``RESUMES``)
- ``gang_gpu_spec``, ``GANG_RESTARTING``, ``GANG_ELASTIC_NEEDS`` (a kind with
  ``spec.elastic`` only): tests/integration/test_gang_jobs.py (``GPU_SPECS``,
  ``RESTARTING``, ``ELASTIC_NEEDS``)
- ``schema_template``, ``SCHEMA_EXPLAIN``: tests/integration/test_pod_template_schema.py
  (``TEMPLATES``, ``EXPLAIN``)
- ``SSH_LAUNCH_TEST`` (a kind whose replicas talk over ssh only):
  tests/integration/test_ssh_launch.py (``LAUNCHED``)
- ``tensorboard_job`` (a kind with ``spec.tensorboardSpec`` only):
  tests/integration/test_tensorboard.py (``JOBS``)

The order of :data:`ALL` is the registry's (tests/unit/test_entry_points.py
``BUILT_IN`` reads it): a kind's test data module is found from its kind, so a
kind registered without one is missing from it, which
tests/unit/test_registry.py reports.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, TypeVar

from t9k_operator.kinds import registry
from t9k_operator.kube import Resource

T = TypeVar("T")

KINDS = registry.KINDS
"""Every registered job kind (each with ``.crd`` and ``.model``), in the registry's order."""

KIND_NAMES: tuple[str, ...] = tuple(kind.crd.kind for kind in KINDS)
"""The CRD kind of every registered job kind (``PyTorchTrainingJob``, ...), in the same order."""

by_kind = registry.by_kind
"""The registered kind whose CRD's kind is ``name`` (KeyError if none)."""


def kind_resource(name: str) -> Resource:
    """The API resource of the registered kind ``name``, from the identity its CRD declares."""
    return by_kind(name).resource


def spec_fields(name: str) -> frozenset[str]:
    """The top-level fields of the kind's spec as users write them (``runMode``, ``elastic``)."""
    model = by_kind(name).crd.spec_model
    return frozenset(field.alias or key for key, field in model.model_fields.items())


def status_fields(name: str) -> frozenset[str]:
    """The top-level fields of the kind's status as stored (``t9kConditions``, ...)."""
    model = by_kind(name).crd.status_model
    return frozenset(field.alias or key for key, field in model.model_fields.items())


def kubeflow_status(name: str) -> bool:
    """Whether the kind stores a Kubeflow-style status (MSJob: its own conditions, the
    engine's apart in ``t9kConditions``) rather than the engine's (``phase``)."""
    return "t9kConditions" in status_fields(name)


BUILT_IN_KINDS = "t9k_operator.kinds."
"""The package of the built-in kinds' classes; a plugin's kind class lives elsewhere."""


def data_module_of(kind: Any) -> ModuleType | None:
    """The test data module of a built-in kind: ``tests.kinds.<kind>`` for the kind
    class of ``t9k_operator.kinds.<kind>`` (None: a plugin's kind, or no such module)."""
    module = type(kind).__module__
    if not module.startswith(BUILT_IN_KINDS):
        return None
    name = f"{__name__}.{module.removeprefix(BUILT_IN_KINDS)}"
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


ALL: list[ModuleType] = [data for kind in KINDS if (data := data_module_of(kind)) is not None]
"""The test data of every built-in kind, a module each, in the registry's order."""


def kind_table(name: str) -> dict[str, Any]:
    """The per-kind table ``name``: ``{kind: its module's name}``, for each module of
    :data:`ALL` that gives one (in that order). Whether the table has the kinds
    it should is for the test to say (:func:`per_kind`, :func:`kind_entry`)."""
    return {data.KIND: getattr(data, name) for data in ALL if hasattr(data, name)}


def per_kind(
    table: Mapping[str, T], name: str, kinds: Iterable[str] = KIND_NAMES
) -> Mapping[str, T]:
    """``table``, asserting it has an entry for each of ``kinds`` (every registered
    kind unless told) and for no other. ``name`` says which table, for the message."""
    wanted = list(kinds)
    missing = [kind for kind in wanted if kind not in table]
    unknown = sorted(set(table) - set(wanted))
    problems = []
    if missing:
        problems.append(
            f"{name} has no entry for {', '.join(missing)}: add one "
            f"(its kinds, from the registry: {', '.join(wanted)})"
        )
    if unknown:
        problems.append(
            f"{name} has an entry for {', '.join(unknown)}, which it should not have "
            f"(its kinds: {', '.join(wanted) or 'none'})"
        )
    if problems:
        raise AssertionError("; ".join(problems))
    return table


def kind_entry(table: Mapping[str, T], name: str, kind: str) -> T:
    """``table[kind]``, or a failure naming the kind and the table (``name``) to add it to."""
    if kind not in table:
        raise AssertionError(f"{name} has no entry for {kind}, a registered kind: add one")
    return table[kind]


def in_turn(
    options: Sequence[str], offset: int = 0, kinds: Sequence[str] = KIND_NAMES
) -> list[tuple[str, str]]:
    """One (kind, option) pair per option (a gang backend, say), the kinds taken
    in turn from ``offset``: a scenario run once per option, with a different
    kind in each, and with another offset in the next scenario, so that the
    scenarios together run every kind without running every kind on every one."""
    return [(kinds[(offset + i) % len(kinds)], o) for i, o in enumerate(options)]


def each_kind(options: Sequence[str], kinds: Sequence[str] = KIND_NAMES) -> list[tuple[str, str]]:
    """Every kind once (a smoke run of each), on the options in turn."""
    return [(k, options[i % len(options)]) for i, k in enumerate(kinds)]
