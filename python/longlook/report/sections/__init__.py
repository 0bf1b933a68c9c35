"""Extra report sections, one module each, found automatically.

A module here defines `section(store, analysis) -> Section | None` (None = nothing to show
for this experiment, e.g. no fairness runs). Sections appear before "Parameters", ordered by
their module's ORDER (default 100). New areas add a file; nothing else changes.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass


@dataclass
class Section:
    id: str  # HTML id of the <section>
    title: str
    html: str  # trusted HTML built by the module (escape anything from data yourself)


def extra_sections(store, analysis) -> list[Section]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        make = getattr(module, "section", None)
        if make is None:
            continue
        s = make(store, analysis)
        if s is not None:
            found.append((getattr(module, "ORDER", 100), info.name, s))
    return [s for _, _, s in sorted(found, key=lambda t: (t[0], t[1]))]
