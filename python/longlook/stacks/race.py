"""The QUIC-enabled racing client (`endpoint fetch --proto race`, crates/endpoint/src/client/
race.rs): its scenario settings, its command-line flags, and what a run's fetch JSON says
about the race (metrics and details for the store).

Defaults are Chromium's: TCP waits 1.5 x the cached smoothed RTT, or 300 ms with none, when
QUIC is known to work (capped at 3 s); a QUIC handshake with nothing heard fails after 5 s; a
failed alternative service is broken for 300 s, doubled on each repeat.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# a run's protocol as the racing client reports it: every object over one protocol, or "mixed"
SERVED = ("h3", "h2", "mixed")


class RaceSettings(BaseModel):
    """`[race]` of a scenario: the racing client's constants, so an experiment can vary them.

    `initial`: what the client knows before a run with no saved state: "quic-known" (h3 learnt
    from Alt-Svc and QUIC has worked on this network: TCP waits) or "alt-svc-known" (QUIC never
    seen working here: TCP starts at once). `state`: "run" starts every run from `initial`
    (runs independent); "cell" keeps one state file per cell and arm across its rounds (broken
    marks and the cached RTT carry over, as in one browsing session)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    delay_factor: float = Field(default=1.5, ge=0, le=100)
    default_delay_ms: float = Field(default=300.0, ge=0, le=60_000)
    max_delay_ms: float = Field(default=3000.0, ge=0, le=60_000)
    quic_handshake_timeout_ms: float = Field(default=5000.0, gt=0, le=600_000)
    quic_idle_timeout_ms: float = Field(default=30_000.0, gt=0, le=600_000)
    broken_for_s: float = Field(default=300.0, ge=0, le=172_800)
    initial: Literal["quic-known", "alt-svc-known"] = "quic-known"
    state: Literal["run", "cell"] = "run"

    def argv(self, state_file: Path | None = None) -> list[str]:
        argv = [
            "--race-delay-factor",
            str(self.delay_factor),
            "--race-default-delay-ms",
            str(self.default_delay_ms),
            "--race-max-delay-ms",
            str(self.max_delay_ms),
            "--quic-handshake-timeout-ms",
            str(self.quic_handshake_timeout_ms),
            "--quic-idle-timeout-ms",
            str(self.quic_idle_timeout_ms),
            "--broken-for-s",
            str(self.broken_for_s),
            "--race-initial",
            self.initial,
        ]
        if state_file is not None:
            argv += ["--race-state", str(state_file)]
        return argv

    def state_file(self, experiment_dir: Path, cell_index: int, arm: str) -> Path | None:
        """Where a cell's arm keeps its state across rounds (None: every run starts fresh)."""
        if self.state != "cell":
            return None
        d = experiment_dir / "race-state"
        d.mkdir(parents=True, exist_ok=True)
        return d / f"cell{cell_index}-{arm}.json"


def race_measures(fetch: dict) -> tuple[dict[str, float | None], dict[str, Any]]:
    """Metrics and details of a racing run from its fetch JSON ({} and {} for other runs).

    Metrics: `time_to_fallback_ms` (t0 to the first request given to TCP; absent when TCP
    served nothing), `quic_share` (share of the bytes served over QUIC), `bytes_h3`,
    `bytes_h2`, `quic_handshake_ms`, `tcp_delay_ms` (TCP's planned wait)."""
    race = fetch.get("race")
    if not isinstance(race, dict):
        return {}, {}
    b = race.get("bytes") or {}
    h3, h2 = float(b.get("h3") or 0), float(b.get("h2") or 0)
    metrics = {
        "time_to_fallback_ms": race.get("time_to_fallback_ms"),
        "quic_share": h3 / (h3 + h2) if h3 + h2 > 0 else None,
        "bytes_h3": h3,
        "bytes_h2": h2,
        "quic_handshake_ms": race.get("quic_handshake_ms"),
        "tcp_delay_ms": race.get("tcp_delay_ms"),
    }
    served = [[o.get("path"), o.get("protocol")] for o in fetch.get("objects") or []]
    details = {
        "race": {k: v for k, v in race.items() if k not in ("state_before", "state_after")},
        "race_state_before": race.get("state_before"),
        "race_state_after": race.get("state_after"),
        "served_by": served,
    }
    return metrics, details
