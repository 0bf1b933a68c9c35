"""A kind defined outside the package, to prove that a new kind is one folder plus one
registration line: UDP echo round trips through the emulated link, small vs large probes
(`linkem-probe rtt` against `linkem-probe serve`). Its scenario may also pause linkem
mid-run (SIGSTOP) to force late releases, which the run's path audit must flag."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import Field

from longlook.binaries import find_binary
from longlook.core.kind import Kind, Measurement, Metric, RunContext
from longlook.core.registry import register
from longlook.core.spec import ArmBase, CellBase, ScenarioBase
from longlook.render.html import Section
from longlook.stacks.endpoint import SERVER_ADDR

PORT = 7100
SIZES = {"small": 64, "large": 1200}


@dataclass(frozen=True)
class EchoCell(CellBase):
    count: int = 100


class EchoScenario(ScenarioBase):
    example: ClassVar[str] = "tests/testbed/core/test_kinds_testbed.py"
    kind: Literal["udp-echo"] = "udp-echo"
    count: int = Field(default=100, ge=10)
    pause_linkem_ms: float = Field(default=0, ge=0)  # SIGSTOP linkem this long mid-run

    def cells(self) -> list[EchoCell]:
        return [
            EchoCell(id=f"link={label}", index=i, link=link, link_label=label, count=self.count)
            for i, (link, label) in enumerate(zip(self.links, self.link_labels()))
        ]

    def arm_list(self) -> list[ArmBase]:
        return [ArmBase(label=a) for a in SIZES]

    def comparisons(self) -> list[tuple[str, str]]:
        return [("small", "large")]


def _pause(pid: int, after_s: float, pause_s: float) -> None:
    time.sleep(after_s)
    os.kill(pid, signal.SIGSTOP)
    time.sleep(pause_s)
    os.kill(pid, signal.SIGCONT)


def echo_section(store, analysis) -> Section | None:
    n = len(analysis.runs)
    return Section(id="udp-echo", title="UDP echo", html=f"<p>{n} echo runs.</p>") if n else None


class UdpEcho(Kind):
    name = "udp-echo"
    scenario_model = EchoScenario
    metrics = (Metric("rtt_ms", "ms", "lower", "round-trip time"),)
    tables: ClassVar[dict[str, dict[str, str]]] = {"echo_samples": {"i": "INTEGER", "rtt_ms": "DOUBLE"}}
    sections = (echo_section,)

    def measure(self, ctx: RunContext) -> Measurement:
        probe = str(find_binary("linkem-probe"))
        server = ctx.testbed.popen(
            "server",
            [probe, "serve", "--bind", f"0.0.0.0:{PORT}", "--duration-s", "30"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            if server.stdout.readline().strip() != "ready":
                return Measurement(status="failed", error="linkem-probe serve did not start")
            pause = ctx.scenario.pause_linkem_ms
            if pause:
                threading.Thread(target=_pause, args=(ctx.testbed.linkem.pid, 0.3, pause / 1000), daemon=True).start()
            started = time.time()
            out = ctx.testbed.run(
                "client",
                [
                    probe,
                    "rtt",
                    "--target",
                    f"{SERVER_ADDR}:{PORT}",
                    "--count",
                    str(ctx.cell.count),
                    "--interval-ms",
                    "5",
                    "--size",
                    str(SIZES[ctx.arm.label]),
                    "--samples",
                ],
                timeout=30,
                check=False,
            )
        finally:
            server.terminate()
            server.wait(5)
        if out.returncode != 0:
            return Measurement(status="failed", error=out.stderr.strip()[-200:])
        doc: dict[str, Any] = json.loads(out.stdout)
        (ctx.run_dir / "rtt.json").write_text(out.stdout)
        samples = doc.get("samples_ms") or []
        return Measurement(
            status="ok",
            started_unix_ms=started * 1000,
            metrics={"rtt_ms": doc["rtt_ms"]["mean"]},
            details={"lost": doc.get("lost")},
            rows={"echo_samples": [{"i": i, "rtt_ms": x} for i, x in enumerate(samples)]},
            artifacts={"rtt": "rtt.json"},
        )


register("udp-echo", UdpEcho())
