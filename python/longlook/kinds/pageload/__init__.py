"""Page loads (Kakhki et al. §3-5): per cell, each arm fetches a page of N objects (or one bulk
object) back to back with the others; the page load time is compared per cell."""

from __future__ import annotations

from typing import Any

from ...core.kind import Kind, Measurement, RunContext
from ...stacks.clients import fetcher
from .measure import (OBJECTS_TABLE, PAGE_LOAD_METRICS, fetch_status, from_fetch, measure,
                      record_from_fetch)
from .sections import clients_section
from .spec import Arm, Cell, CellOptions, OptionGrid, RunOptions, Scenario, Workload


class PageLoad(Kind):
    name = "pageload"
    scenario_model = Scenario
    metrics = PAGE_LOAD_METRICS
    tables = {"objects": OBJECTS_TABLE}
    sections = (clients_section,)

    def prepare(self, scenario: Scenario) -> dict[str, Any]:
        # one fetch function per client the arms use; a missing Chromium stops it here
        clients = dict.fromkeys(a.client or scenario.client for a in scenario.arms)
        return {"fetchers": {c: fetcher(c, chromium_netlog=scenario.chromium_netlog) for c in clients}}

    def measure(self, ctx: RunContext) -> Measurement:
        return measure(ctx)


KIND = PageLoad()

__all__ = ["KIND", "Arm", "Cell", "CellOptions", "OptionGrid", "PageLoad", "RunOptions",
           "Scenario", "Workload", "fetch_status", "from_fetch", "record_from_fetch"]
