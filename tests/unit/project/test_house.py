"""Rules of the house that import-linter's contract types cannot say: nothing imports the
package root (its `__init__` only re-exports; a module importing it would import the whole
package's start-up and hide a cycle), checked on grimp's import graph, import-linter's own."""

from __future__ import annotations

import grimp


def test_nothing_imports_the_package_root():
    graph = grimp.build_graph("longlook")
    importers = sorted(graph.find_modules_that_directly_import("longlook"))
    assert importers == [], f"import the module that holds it instead (e.g. longlook.versions): {importers}"
