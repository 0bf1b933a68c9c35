"""Video streaming QoE over HTTP/3 and HTTP/2 (Kakhki et al. §5, Chaudhary et al.):
a synthetic DASH clip served by our endpoint, played by a native player (our client, dash.js's
ABR rules, a simulated buffer) or by dash.js in headless Chromium; per run the Pensieve QoE
and its parts, and the B(t) and S(t) series."""

from __future__ import annotations

from typing import Any

from ...core.kind import Kind, Measurement, RunContext
from ...flowlog import GAP_LOG_INTERVAL_MS, changes_path, flow_log_size
from ...stacks.builds.install import ensure_stacks
from ...stacks.registry import require_servers
from ...stacks.builds.release_arms import recorded_versions
from ...stacks.servers import open_servers
from .delivery_gap import with_delivery_gap
from .content import VideoSpec, ensure_content, ffmpeg_version
from .measure_native import measure_native
from .mpd import Manifest, parse_manifest
from .qoe import QOE_METRICS, Playback, Sample, Stall, qoe_metrics, series_rows
from .router_bytes import with_router_bytes
from .sections import video_sections
from .spec import VideoCell, VideoScenario

REQUESTS_TABLE = {
    "path": "VARCHAR",
    "kind": "VARCHAR",
    "level": "INTEGER",
    "segment": "INTEGER",
    "status": "INTEGER",
    "bytes": "BIGINT",
    "start_s": "DOUBLE",
    "end_s": "DOUBLE",
    "protocol": "VARCHAR",
}


class Video(Kind):
    name = "video"
    scenario_model = VideoScenario
    metrics = QOE_METRICS
    tables = {"requests": REQUESTS_TABLE}
    # each run sees its link (a trace) from the start, as the papers' sessions did; the flow
    # log gives F(t), the bytes over TCP, as the router saw them (router_bytes)
    fresh_link_per_run = True
    testbed_options = {"flow_log": True}
    sections = video_sections

    def prepare(self, scenario: VideoScenario) -> dict[str, Any]:
        from pathlib import Path

        from ...stacks.builds.install import ensure_packages

        # set-up installs the video tools only when asked (scripts/setup.sh --all): the first
        # video scenario does
        ensure_packages(["ffmpeg"], "the video kind's clip")

        cache = Path(scenario.video.cache_dir).expanduser() if scenario.video.cache_dir else None
        content = ensure_content(scenario.video.spec(), cache)
        manifest = parse_manifest((content / "manifest.mpd").read_text(), str(content / "manifest.mpd"))
        # an ours@VERSION the arms name is built on first use, before the grid's first run
        ensure_stacks(self._stacks(scenario))
        require_servers([(scenario.stacks_of(a)[0], None) for a in scenario.arm_list()])
        state: dict[str, Any] = {"content": content, "manifest": manifest}
        if "dashjs" in scenario.players:
            from .dashjs import prepare_dashjs

            state.update(prepare_dashjs(content))
        return state

    def testbed_options_for(self, scenario: VideoScenario) -> dict[str, Any]:
        """Where a path changes under the sessions (a NAT, a handover), linkem's flow log every
        GAP_LOG_INTERVAL_MS: the stall each session meets is read from it (delivery_gap)."""
        if changes_path(scenario):
            return {**self.testbed_options, "flow_log_interval_ms": GAP_LOG_INTERVAL_MS}
        return dict(self.testbed_options)

    def session(self, testbed, experiment_dir):
        return open_servers(testbed, experiment_dir)

    def measure(self, ctx: RunContext) -> Measurement:
        log_from = flow_log_size(ctx.testbed) if changes_path(ctx.scenario) else None
        if ctx.cell.player == "dashjs":
            from .dashjs import measure_dashjs

            m = with_router_bytes(ctx, measure_dashjs(ctx), log_from)
        else:
            m = with_router_bytes(ctx, measure_native(ctx), log_from)
        m = with_delivery_gap(ctx, m, log_from)
        server_spec, client_spec = ctx.scenario.stacks_of(ctx.arm)  # recorded per run, as page loads do
        m.options.update(server=server_spec, client=client_spec if ctx.cell.player == "native" else "chromium")
        assignment = ctx.scenario.assignment(ctx.cell, ctx.arm, ctx.round)
        if assignment is not None:  # [intervention]: what this session was given, for the ATE
            m.details["intervention"] = assignment.as_dict()
        return m

    @staticmethod
    def _stacks(scenario: VideoScenario) -> list[str]:
        """The builds the arms run: servers, and the native player's clients."""
        native = "native" in scenario.players
        return [s for a in scenario.arm_list() for s in scenario.stacks_of(a)[: 2 if native else 1]]

    def versions(self, scenario: VideoScenario) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ffmpeg": ffmpeg_version(),
            "video_key": scenario.video.spec().key(),
            **recorded_versions(self._stacks(scenario)),
        }
        if "dashjs" in scenario.players:
            from .dashjs import dashjs_versions

            out.update(dashjs_versions())
        return out

    def progress_text(self, m) -> str:
        q, stall = m.metrics.get("qoe"), m.metrics.get("stall_s")
        return "" if q is None else f"QoE {q:.2f}, stall {stall or 0:.1f} s"


KIND = Video()

__all__ = [
    "KIND",
    "Manifest",
    "Playback",
    "Sample",
    "Stall",
    "VideoCell",
    "VideoScenario",
    "VideoSpec",
    "ensure_content",
    "parse_manifest",
    "qoe_metrics",
    "series_rows",
]
