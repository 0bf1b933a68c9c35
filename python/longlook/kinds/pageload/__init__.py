"""Page loads (Kakhki et al. §3-5): per cell, each arm fetches a page of N objects (or one bulk
object) back to back with the others; the page load time is compared per cell."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Iterator

from ...core.kind import Kind, Measurement, RunContext
from ...stacks.builds.install import ensure_chromium, ensure_stacks
from ...stacks.registry import client_fetcher, require_servers
from ...stacks.builds.release_arms import recorded_versions
from ...stacks.servers import open_servers
from .proxied import proxies
from ...flowlog import GAP_LOG_INTERVAL_MS, changes_path
from .measure import (
    OBJECTS_TABLE,
    PAGE_LOAD_METRICS,
    fetch_status,
    from_fetch,
    measure,
    record_from_fetch,
)
from .proxy_section import proxy_section
from .sections import clients_section
from .spec import Arm, Cell, CellOptions, OptionGrid, RunOptions, Scenario, Workload


class PageLoad(Kind):
    name = "pageload"
    scenario_model = Scenario
    metrics = PAGE_LOAD_METRICS
    tables = {"objects": OBJECTS_TABLE}
    sections = (clients_section, proxy_section)

    def testbed_options_for(self, scenario: Scenario) -> dict[str, Any]:
        """Where a path changes under the runs (a NAT, a handover), linkem's flow log every
        GAP_LOG_INTERVAL_MS: the stall each client meets is read from it (measure.delivery_gap),
        whichever client and protocol."""
        if changes_path(scenario):
            return {**self.testbed_options, "flow_log": True, "flow_log_interval_ms": GAP_LOG_INTERVAL_MS}
        return dict(self.testbed_options)

    def prepare(self, scenario: Scenario) -> dict[str, Any]:
        # one fetch function per client the arms use; a missing Chromium stops it here
        clients = dict.fromkeys(a.client or scenario.client for a in scenario.arms)
        servers = [a.server or scenario.server for a in scenario.arms]
        # a QUIC stack the scenario names is installed the first time it is named (set-up
        # installs none unless asked: scripts/setup.sh --all-stacks)
        ensure_stacks([*servers, *clients])
        if any(c.startswith("chromium") for c in clients):  # Debian's browser, on first use too
            ensure_chromium()
        # and every QUIC stack's server installed, with the congestion control asked for
        require_servers([(a.server or scenario.server, a.server_cc) for a in scenario.arms])
        return {
            "fetchers": {
                c: client_fetcher(c, chromium_netlog=scenario.chromium_netlog, logs=scenario.client_logs)
                for c in clients
            }
        }

    @contextlib.contextmanager
    def session(self, testbed, experiment_dir: Path) -> Iterator[dict[str, Any]]:
        """The servers of every stack the arms name, and the cell's proxies."""
        with open_servers(testbed, experiment_dir) as shared:
            yield {**shared, "proxies": proxies(testbed, experiment_dir, shared["servers"].cert_dir / "cert.pem")}

    def versions(self, scenario: Scenario) -> dict[str, Any]:
        """The exact version of every QUIC stack the arms run (server or client)."""
        return recorded_versions(
            n for a in scenario.arms for n in (a.server or scenario.server, a.client or scenario.client)
        )

    def measure(self, ctx: RunContext) -> Measurement:
        return measure(ctx)


KIND = PageLoad()

__all__ = [
    "KIND",
    "Arm",
    "Cell",
    "CellOptions",
    "OptionGrid",
    "PageLoad",
    "RunOptions",
    "Scenario",
    "Workload",
    "fetch_status",
    "from_fetch",
    "record_from_fetch",
]
