"""The console's scripts are built files (make console-assets): one per page
entry in frontend/src, and a console or a package build without them stops,
naming the command that builds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from t9k_operator.console import assets, layout

FRONTEND = Path(__file__).parents[3] / "frontend"


def test_every_page_entry_of_the_npm_build_is_a_script_the_console_knows() -> None:
    entries = sorted(p.stem for p in (FRONTEND / "src").glob("*.js"))
    assert entries == sorted(assets.SCRIPTS)


def test_the_built_scripts_are_in_the_package_and_minified() -> None:
    assert assets.missing() == []
    for name in assets.SCRIPTS:
        built = (assets.STATIC / f"{name}.js").read_text()
        assert built.startswith("(()=>{") and "import " not in built
    # uPlot's style sheet, beside the chart's script that imports it.
    assert ".uplot" in (assets.STATIC / "chart.css").read_text()


def test_a_missing_script_stops_the_console_and_names_the_build(tmp_path: Path) -> None:
    (tmp_path / "jobs.js").write_text("")
    assert "jobs.js" not in assets.missing(tmp_path)
    with pytest.raises(assets.NotBuilt, match=r"job\.js.*make console-assets"):
        assets.require_built(tmp_path)


def test_a_page_names_only_the_consoles_scripts() -> None:
    with pytest.raises(ValueError, match="not one of the console's scripts"):
        layout.page("jobs", "Jobs", scripts=["nowhere"])
