"""`[capture]` of any scenario: what each run keeps beyond its measurement, for debugging.

    [capture]
    pcap = "off"        # "headers" | "full": the router's packet log of both directions
                        # (linkem --pcap), the first 128 bytes or whole packets
    max_mb = 50         # per run: packets past this size are counted, not written
    keylog = false      # true: TLS secrets (NSS key log) of the run's client and servers

The files sit in the run's directory (`capture.pcap`, `keys.log`) and are artifacts of the
run like its qlogs; their sizes are recorded with the run (details["capture"]). With a pcap,
linkem is restarted before each run so that each file holds that run alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

PCAP_FILE = "capture.pcap"
PCAP_FILE_B = "capture-b.pcap"  # segment B's router (proxy topology)
KEYLOG_FILE = "keys.log"
# bytes of each packet linkem copies: "headers" = IP + TCP/UDP headers and the start of the
# payload (linkem's default); "full" = a whole packet of the testbed's 1500-byte MTU
SNAP_BYTES = {"headers": 128, "full": 1500}
PCAP_RECORD_OVERHEAD = 16  # a pcap record's header


class Capture(BaseModel):
    """What each run captures (all off by default: they cost disk, not time)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    pcap: Literal["off", "headers", "full"] = "off"
    # a run's pcap stops growing here (linkem --pcap-max-bytes); the run says so. Below
    # 0.1 MB a pcap holds a handshake at most.
    max_mb: float = Field(default=50.0, ge=0.1, le=100_000)
    keylog: bool = False

    @model_validator(mode="after")
    def _max_mb_needs_a_pcap(self) -> "Capture":
        if "max_mb" in self.model_fields_set and self.pcap == "off":
            raise ValueError('max_mb: a limit of the pcap, and pcap is "off"; set pcap = "headers" or "full"')
        return self

    @property
    def on(self) -> bool:
        return self.pcap != "off" or self.keylog

    @property
    def snap_bytes(self) -> int | None:
        return SNAP_BYTES.get(self.pcap)

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 1_000_000)

    def linkem_args(self, path: Path) -> list[str]:
        """linkem's command-line flags for a pcap at `path` (none when off)."""
        if self.pcap == "off":
            return []
        return ["--pcap", str(path), "--copy-bytes", str(self.snap_bytes), "--pcap-max-bytes", str(self.max_bytes)]

    def keylog_path(self, run_dir: Path) -> Path | None:
        """Where the run's client writes its key log, None when off."""
        return run_dir / KEYLOG_FILE if self.keylog else None


def capture_sizes(run_dir: Path, capture: Capture) -> dict[str, int | bool]:
    """What the run captured, in bytes per file (absent files are left out), and whether
    the pcap reached its cap (`pcap_capped`: later packets were not written)."""
    out: dict[str, int | bool] = {}
    for key, name in (("pcap_bytes", PCAP_FILE), ("pcap_b_bytes", PCAP_FILE_B), ("keylog_bytes", KEYLOG_FILE)):
        f = run_dir / name
        if f.is_file():
            out[key] = f.stat().st_size
    if capture.pcap != "off" and "pcap_bytes" in out:
        room = PCAP_RECORD_OVERHEAD + (capture.snap_bytes or 0)
        out["pcap_capped"] = int(out["pcap_bytes"]) + room > capture.max_bytes
    return out


def capture_artifacts(run_dir: Path) -> dict[str, str]:
    """The run's capture files as artifacts (name -> file in the run directory)."""
    names = {"pcap": PCAP_FILE, "pcap_b": PCAP_FILE_B, "keylog": KEYLOG_FILE}
    return {k: v for k, v in names.items() if (run_dir / v).is_file()}


class RunCapture:
    """The router's pcap around one run: linkem restarted before it writing the run's file,
    and again after it without one (linkem buffers its pcap: the file is whole once that
    linkem stopped). `restart()` restarts linkem on the run's link."""

    def __init__(self, capture: Capture, testbed, run_dir: Path, restart):
        self.capture, self.testbed, self.run_dir, self.restart = capture, testbed, run_dir, restart

    @property
    def restarts_link(self) -> bool:
        return self.capture.pcap != "off"

    def begin(self) -> None:
        if self.restarts_link:
            self.testbed.set_pcap(self.run_dir / PCAP_FILE, self.capture.snap_bytes, self.capture.max_bytes)
            self.restart()

    def end(self) -> None:
        """After the run's audit read linkem's stats."""
        if self.restarts_link:
            self.testbed.set_pcap(None)
            self.restart()

    def abandon(self) -> None:
        """The run was cut short (an error, Ctrl-C): no restart now, and none later writes
        into this run's file."""
        if self.restarts_link:
            self.testbed.set_pcap(None)

    def record(self) -> tuple[dict[str, str], dict]:
        """(artifacts relative to the run directory, details["capture"]) of the run."""
        if not self.capture.on:
            return {}, {}
        return capture_artifacts(self.run_dir), {"capture": capture_sizes(self.run_dir, self.capture)}
