"""The pages' scripts, built files: ``frontend/src/<page>.js`` in the
repository, bundled with the npm packages locked in
``frontend/package-lock.json`` into ``static/<page>.js`` by ``make
console-assets``, before the package is installed or built. They ship inside
the package, so the console loads nothing from elsewhere at run time (a
cluster without a way out serves it whole).

A console whose scripts were not built would serve pages that do nothing, so
:func:`script` refuses to name a missing one, and so does the build backend
(:mod:`t9k_operator.console.build_backend`) for a wheel without them.
"""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).parent / "static"
SCRIPTS = ("chart", "gpus", "job", "jobs", "new")
"""The pages' scripts: ``frontend/src``'s entry points, one per page."""
STYLES = ("chart",)
"""The style sheets the build writes too: the CSS a script imports (uPlot's)."""

BUILD = "make console-assets"


class NotBuilt(RuntimeError):
    """The console's scripts are missing from ``static/``."""


def missing(static: Path = STATIC) -> list[str]:
    """The built files (:data:`SCRIPTS`, :data:`STYLES`) missing from ``static``."""
    built = [f"{name}.js" for name in SCRIPTS] + [f"{name}.css" for name in STYLES]
    return [file for file in built if not (static / file).is_file()]


def require_built(static: Path = STATIC) -> None:
    """Raise :class:`NotBuilt`, naming the command that builds them, unless
    every script is in ``static``."""
    absent = missing(static)
    if absent:
        raise NotBuilt(
            f"the console's scripts are not built: {', '.join(absent)} missing from {static}; "
            f"run `{BUILD}` in the repository (npm ci, then esbuild's bundle of frontend/src)"
        )


def script(name: str) -> str:
    """The address of page script ``name``, which must be built."""
    if name not in SCRIPTS:
        raise ValueError(f"{name!r} is not one of the console's scripts {SCRIPTS}")
    require_built()
    return f"/static/{name}.js"


def style(name: str) -> str:
    """The address of style sheet ``name``: a file of ``static/``, built when
    it is one of :data:`STYLES`."""
    if name in STYLES:
        require_built()
    return f"/static/{name}.css"
