"""The tests' layout keeps its split honest (tests/README.md): a test under tests/unit starts
no testbed, every test under tests/testbed is marked as one (so `-m "not testbed"` selects
exactly tests/unit and tests/calibration), no test file is left at tests/ top level, and
every folder of the two trees is a package. Read from the sources, not from a collection."""

from __future__ import annotations

import ast
from pathlib import Path

from repo_paths import TESTS

MARKS = ("needs_testbed", "mark.testbed")


def _test_files(tree: str) -> list[Path]:
    return sorted((TESTS / tree).rglob("test_*.py"))


def _marked(node: ast.expr) -> bool:
    return any(m in ast.unparse(node) for m in MARKS)


def _is_test(node: ast.stmt) -> bool:
    """A function pytest collects as a test: named test*, and no fixture (e.g. `testbed`)."""
    return (
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
        and not any("fixture" in ast.unparse(d) for d in node.decorator_list)
    )


def _tests(module: ast.Module):
    """Every test function of a module, with the decorators that apply to it (its class's too)."""
    for node in module.body:
        if _is_test(node):
            yield node, node.decorator_list
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if _is_test(item):
                    yield item, node.decorator_list + item.decorator_list


def _module_marked(module: ast.Module) -> bool:
    return any(
        isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
        and _marked(node.value)
        for node in module.body
    )


def _unit_uses(path: Path) -> list[int]:
    """Lines of a module that import needs_testbed or mark a test (or the module) as a testbed one."""
    module = ast.parse(path.read_text())
    lines = [
        node.lineno
        for node in ast.walk(module)
        if (isinstance(node, ast.ImportFrom) and any(a.name == "needs_testbed" for a in node.names))
        or (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and any(map(_marked, node.decorator_list))
        )
    ]
    return lines + [0] * _module_marked(module)


def _unmarked(path: Path) -> list[str]:
    """The tests of a module that are not marked as testbed tests (none if the module is)."""
    module = ast.parse(path.read_text())
    if _module_marked(module):
        return []
    tests = list(_tests(module))
    if not tests:
        return ["(no test)"]
    return [f.name for f, decorators in tests if not any(map(_marked, decorators))]


def test_unit_tests_start_no_testbed_and_every_testbed_test_is_marked():
    unit, testbed = _test_files("unit"), _test_files("testbed")
    assert unit and testbed
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == [], "test files go under tests/unit or tests/testbed"
    wrong = {str(p.relative_to(TESTS)): lines for p in unit if (lines := _unit_uses(p))}
    assert not wrong, f"testbed tests under tests/unit (move them to tests/testbed): {wrong}"
    unmarked = {str(p.relative_to(TESTS)): names for p in testbed if (names := _unmarked(p))}
    assert not unmarked, f"tests under tests/testbed without @needs_testbed (unit tests go to tests/unit): {unmarked}"
    folders = [TESTS / "unit", TESTS / "testbed"] + [
        d for tree in ("unit", "testbed") for d in (TESTS / tree).rglob("*") if d.is_dir() and d.name != "__pycache__"
    ]
    assert [str(d.relative_to(TESTS)) for d in folders if not (d / "__init__.py").is_file()] == [], (
        "every folder of tests/unit and tests/testbed is a package (tests/README.md)"
    )
