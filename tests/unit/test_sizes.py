"""Sizes a maintainer can read in one sitting: no module over
:data:`MODULE` lines, no class over :data:`CLASS`, no function over
:data:`FUNCTION`, in the operator, ``hack/`` and the tests' helpers (every
module of ``tests/`` but the tests themselves).
Nothing is over them: what grows past one is split by concern.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE, CLASS, FUNCTION = 400, 250, 60


def _measured(root: Path) -> Iterator[tuple[str, int, int]]:
    """(place, lines, the limit) of every module, class and function measured."""
    for path in _modules(root):
        rel = path.relative_to(root).as_posix()
        source = path.read_text()
        yield rel, len(source.splitlines()), MODULE
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                limit = CLASS if isinstance(node, ast.ClassDef) else FUNCTION
                yield f"{rel}:{node.name}", node.end_lineno - node.lineno + 1, limit


def _modules(root: Path) -> Iterator[Path]:
    for top in ("t9k_operator", "hack"):
        yield from sorted((root / top).rglob("*.py"))
    for path in sorted((root / "tests").rglob("*.py")):
        if not path.name.startswith("test_"):
            yield path


def _over(root: Path = ROOT) -> dict[str, int]:
    over: dict[str, int] = {}
    for place, lines, limit in _measured(root):
        if lines > limit:
            over[place] = max(lines, over.get(place, 0))
    return over


def test_nothing_is_over_the_limits() -> None:
    assert not _over(), (
        f"over the limits (module {MODULE}, class {CLASS}, function {FUNCTION} lines), "
        f"split by concern: {_over()}"
    )


def test_the_measure_finds_each_kind_of_excess_and_spares_the_tests(tmp_path: Path) -> None:
    (tmp_path / "hack").mkdir()
    (tmp_path / "t9k_operator").mkdir()
    (tmp_path / "tests").mkdir()
    long_body = "".join(f"        x{i} = {i}\n" for i in range(60))  # 61 lines with its def
    (tmp_path / "t9k_operator" / "a.py").write_text(f"class A:\n    def long(self):\n{long_body}")
    (tmp_path / "hack" / "b.py").write_text("pass\n" * 401)
    (tmp_path / "tests" / "helper.py").write_text("class Big:\n" + "    x = 1\n" * 250)
    (tmp_path / "tests" / "test_big.py").write_text("pass\n" * 1000)
    (tmp_path / "tests" / "fits.py").write_text("def f():\n" + "    pass\n" * 59)
    assert _over(tmp_path) == {
        "t9k_operator/a.py:long": 61,
        "hack/b.py": 401,
        "tests/helper.py:Big": 251,
    }
