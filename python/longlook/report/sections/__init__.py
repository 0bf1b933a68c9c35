"""The report's sections beyond the shell: first the experiment's kind's own (its
`Kind.sections`, in the kind's folder), then every other section, one module each here and
one registration line below, in the order they appear on the page.

A section is a function `(store, analysis) -> Section | None` (render.html.Section; None =
nothing to show for this experiment), registered as "module:section".
"""

from __future__ import annotations

from ...lookup import Registry
from ...render.html import Section

SECTIONS: Registry = Registry("report section")
SECTIONS.register("racing", "longlook.report.sections.racing:section")  # right after the kind's own
SECTIONS.register("intervention", "longlook.report.sections.intervention:section")  # beside racing
SECTIONS.register("releases", "longlook.report.sections.releases:section")  # a sweep's main result
SECTIONS.register("adaptive_rounds", "longlook.report.sections.adaptive_rounds:section")
SECTIONS.register("client_cpu", "longlook.report.sections.client_cpu:section")
SECTIONS.register("party_cpu", "longlook.report.sections.party_cpu:section")  # after the client's CPU
SECTIONS.register("queue", "longlook.report.sections.queue:section")
SECTIONS.register("ecn", "longlook.report.sections.ecn:section")  # after the queue it marks
SECTIONS.register("path_changes", "longlook.report.sections.path_changes:section")  # beside the queue
SECTIONS.register("migration", "longlook.report.sections.migration:section")  # after the path changes
SECTIONS.register("stacks", "longlook.report.sections.stacks:section")
SECTIONS.register("states", "longlook.report.sections.states:section")
SECTIONS.register("nodes", "longlook.report.sections.nodes:section")
SECTIONS.register("runs", "longlook.report.sections.runs:section")  # last: the drill-down


def extra_sections(store, analysis) -> list[Section]:
    own = [s for make in getattr(analysis.kind, "sections", ()) if (s := make(store, analysis)) is not None]
    return own + [s for name in SECTIONS.names() if (s := SECTIONS.get(name)(store, analysis)) is not None]
