"""The suite's rules under CI=true (tests/conftest.py): a skip or an xfail fails."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CASES = """
import pytest

def test_skips():
    pytest.skip("no cluster here")

@pytest.mark.skip(reason="left out")
def test_marked_skip():
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfails():
    assert False

def test_passes():
    pass
"""


@pytest.fixture
def cases(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text())
    pytester.makepyfile(test_cases=CASES)
    return pytester


def test_under_ci_a_skip_or_an_xfail_fails(
    cases: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    result = cases.runpytest("-p", "no:cacheprovider")
    # A skip at setup (a skip mark, a fixture's skip) fails as an error there.
    result.assert_outcomes(passed=1, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_skips skipped under CI=true*no cluster here*"])
    result.stdout.fnmatch_lines(["*test_xfails expected to fail under CI=true*known bug*"])
    result.stdout.fnmatch_lines(["*test_marked_skip skipped under CI=true*left out*"])


def test_outside_ci_they_skip_and_xfail(
    cases: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    result = cases.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)


MODULE_SKIPS = {
    "test_skipped_module": """
import pytest

pytest.skip("no GPU on this machine", allow_module_level=True)

def test_never_collected():
    pass
""",
    "test_importorskip_module": """
import pytest

pytest.importorskip("t9k_no_such_module")

def test_never_collected():
    pass
""",
}


@pytest.mark.parametrize("module", sorted(MODULE_SKIPS))
def test_under_ci_a_module_level_skip_fails(
    module: str, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest((Path(__file__).parents[1] / "conftest.py").read_text())
    pytester.makepyfile(
        **{module: MODULE_SKIPS[module], "test_other": "def test_passes():\n    pass\n"}
    )
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret != pytest.ExitCode.OK
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*{module}.py skipped under CI=true, where nothing may*"])
    result.stdout.no_fnmatch_line("*1 skipped*")

    monkeypatch.delenv("CI")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=1)
