"""The report's sections beyond the shell: first the experiment's kind's own (its
`Kind.sections`, in the kind's folder), then every other section, one module each here,
found automatically.

A section is a function `(store, analysis) -> Section | None` (render.html.Section; None =
nothing to show for this experiment). A module here defines `section` and its ORDER
(default 100; ties by module name).
"""

from __future__ import annotations

import importlib
import pkgutil

from ...render.html import Section


def extra_sections(store, analysis) -> list[Section]:
    own = [s for make in getattr(analysis.kind, "sections", ()) if (s := make(store, analysis)) is not None]
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        make = getattr(module, "section", None)
        if make is None:
            continue
        s = make(store, analysis)
        if s is not None:
            found.append((getattr(module, "ORDER", 100), info.name, s))
    return own + [s for _, _, s in sorted(found, key=lambda t: (t[0], t[1]))]
