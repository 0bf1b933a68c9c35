"""One run as stored: where it belongs in the grid, how it ended, what it measured, and its
path audit. Built by the executor from a kind's Measurement; the store's one writer commits
it, whichever executor ran it."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .kind import Measurement
from .status import Status


def new_run_id() -> str:
    """Sortable by time and unique across the nodes of a cluster (64 random bits): also the
    name of the run's artifact directory."""
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S%f}-{secrets.token_hex(8)}"


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str
    cell_id: str
    round: int = Field(ge=0)
    position: int = Field(ge=0)  # 0-based place in the round's order
    arm: str
    attempt: int = Field(default=1, ge=1)
    status: Status
    error: str | None = None
    protocol_requested: str | None = None
    protocol_negotiated: str | None = None
    started_at: datetime | None = None
    duration_s: float | None = None
    options: dict[str, Any] = {}  # effective run settings (protocol, cc, 0-RTT, ...)
    artifacts: dict[str, str] = {}  # name -> path relative to the experiment directory
    metrics: dict[str, float | None] = {}  # numbers for the statistics
    details: dict[str, Any] = {}  # other per-run values of the kind
    audit: dict[str, Any] = {}  # core.audit.Audit.as_dict()
    series: list[dict[str, Any]] = []  # {name, key, t_s, value}
    rows: dict[str, list[dict[str, Any]]] = {}  # the kind's tables

    @property
    def flagged(self) -> bool:
        return bool(self.audit.get("flagged"))

    @classmethod
    def of(
        cls,
        m: Measurement,
        *,
        run_id: str,
        cell_id: str,
        round: int,
        position: int,
        arm: str,
        attempt: int = 1,
        duration_s: float | None = None,
        artifacts: dict[str, str] | None = None,
        audit: dict[str, Any] | None = None,
    ) -> "RunRecord":
        """A kind's Measurement at its place in the grid (artifacts relative to the
        experiment directory, replacing the measurement's run-relative ones)."""
        started_at = datetime.fromtimestamp(m.started_unix_ms / 1000, timezone.utc) if m.started_unix_ms else None
        return cls(
            run_id=run_id,
            cell_id=cell_id,
            round=round,
            position=position,
            arm=arm,
            attempt=attempt,
            status=m.status,
            error=m.error,
            protocol_requested=m.protocol_requested,
            protocol_negotiated=m.protocol_negotiated,
            started_at=started_at,
            duration_s=duration_s,
            options=m.options,
            artifacts=m.artifacts if artifacts is None else artifacts,
            metrics=m.metrics,
            details=m.details,
            audit=audit or {},
            series=m.series,
            rows=m.rows,
        )
