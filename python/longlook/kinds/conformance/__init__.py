"""Conformance: each QUIC stack's congestion control held against the Linux kernel's
implementation of the same algorithm (Mishra et al., IMC'23), and each of its parameters
against the specifications (RFC 9002, RFC 9438, RFC 9406, RFC 9000). Per cell (stack x
congestion control x bottleneck) and round: the stack alone, the kernel alone, both at once,
and the stack's fingerprint runs (a multiplexed page, a resumed connection).
Every run stores each flow's envelope (throughput and queueing delay per bin, both at the
router) as series, the stack's share beside the kernel, and a `conformance` row per flow and
parameter."""

from __future__ import annotations

from ...core.kind import Kind, Measurement, RunContext
from ...stacks.base import OURS
from ...stacks.builds.install import ensure_stacks
from ...stacks.registry import require_servers, split, versions_of
from ...stacks.servers import open_servers
from .fingerprint_run import FINGERPRINT_ARM, measure_fingerprint
from .measure import CONFORMANCE_METRICS, CONFORMANCE_TABLE, FINGERPRINT_TABLE, measure
from .sections import conformance_section
from .spec import ConformanceCell, ConformanceScenario, StackEntry


class Conformance(Kind):
    name = "conformance"
    scenario_model = ConformanceScenario
    metrics = CONFORMANCE_METRICS
    metric_free_arms = frozenset({FINGERPRINT_ARM})
    tables = {"conformance": CONFORMANCE_TABLE, "fingerprint": FINGERPRINT_TABLE}
    fresh_link_per_run = True
    testbed_options = {"flow_log": True}
    sections = (conformance_section,)

    def prepare(self, scenario: ConformanceScenario) -> dict:
        """Every stack installed (the first time a scenario names it, as the page-load kind
        does) and offering its congestion controls, before the first run."""
        ensure_stacks([e.stack for e in scenario.stacks])
        require_servers([(c.stack, None if split(c.stack)[0] == OURS else c.cc) for c in scenario.cells()])
        return {"versions": versions_of([e.stack for e in scenario.stacks])}

    def session(self, testbed, experiment_dir):
        return open_servers(testbed, experiment_dir)

    def versions(self, scenario: ConformanceScenario) -> dict:
        return versions_of([e.stack for e in scenario.stacks])

    def measure(self, ctx: RunContext) -> Measurement:
        return measure_fingerprint(ctx) if ctx.arm.label == FINGERPRINT_ARM else measure(ctx)

    def progress_text(self, m) -> str:
        mbit, share = m.metrics.get("mbit"), m.metrics.get("share")
        text = "" if mbit is None else f"{mbit:.1f} Mbit/s"
        return text + (f", share {share:.2f}" if share is not None else "")


KIND = Conformance()

__all__ = ["KIND", "ConformanceCell", "ConformanceScenario", "StackEntry"]
