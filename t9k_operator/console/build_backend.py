"""The package's build backend (pyproject.toml's ``build-system``):
setuptools' own, except that a wheel, an editable install or an sdist is not
built without the console's scripts (:mod:`t9k_operator.console.assets`),
which ``make console-assets`` builds: stopping the build, with the command
that fixes it, beats shipping a console whose pages do nothing.

It imports nothing of the operator but :mod:`~t9k_operator.console.assets`,
so that it runs with setuptools alone.
"""

from __future__ import annotations

from typing import Any

from setuptools import build_meta  # type: ignore[import-untyped]
from setuptools.build_meta import *  # type: ignore[import-untyped]  # noqa: F403 - the other hooks, as they are

from t9k_operator.console.assets import require_built

Settings = dict[str, Any] | None


def build_wheel(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    require_built()
    return str(build_meta.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str, config_settings: Settings = None, metadata_directory: str | None = None
) -> str:
    require_built()
    return str(build_meta.build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: Settings = None) -> str:
    require_built()
    return str(build_meta.build_sdist(sdist_directory, config_settings))
