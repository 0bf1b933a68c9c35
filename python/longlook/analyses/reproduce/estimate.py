"""The wall time a budget will take, printed before it starts: per scenario, its grid's run
count (core.spec: cells x rounds x arms) times the wall time per run measured in earlier
stores of the same scenario (any budget: DIR/<scenario>/ and its sibling result folders),
their whole wall (set-up, link checks, retries, harness) divided by their runs, scaled by the
kind's model below when that store ran other lengths (20 s flows measured, 30 s asked). A
scenario never measured here gets that model as a stated assumption (page load 3 s, plus its
bytes at the cell's rate when that is over a second; a
fairness run its flows' duration + 8 s; a video session 1.5 x the clip + 15 s)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...core.spec import load_scenario
from ...core.store import DB_FILE, Store
from .activity import active_seconds, stamps
from .claims import ShippedScenario


@dataclass
class ScenarioEstimate:
    name: str
    runs: int
    s_per_run: float
    measured_from: str  # the store it was measured in, or "assumed: ..."

    @property
    def wall_s(self) -> float:
        return self.runs * self.s_per_run


def _assumed(sc) -> tuple[float, str]:
    kind = getattr(sc, "kind", "pageload")
    if kind == "fairness":
        return float(sc.duration_s) + 8.0, "assumed: flow duration + 8 s"
    if kind == "video":
        return 1.5 * sc.video.duration_s + 15.0, "assumed: 1.5 x clip + 15 s"
    transfer = _mean_transfer_s(sc)
    if transfer > 1.0:  # large downloads: their bytes at each cell's rate dominate
        return 3.0 + transfer, "assumed: 3 s + the workload's bytes at the cell's rate"
    return 3.0, "assumed: 3 s per page load"


def _mean_transfer_s(sc) -> float:
    """A page load's bytes at its cell's downlink rate, averaged over the cells (0 when the
    scenario has no such cells: a trace, another kind)."""
    times = []
    for cell in sc.cells():
        workload, link = getattr(cell, "workload", None), getattr(cell, "link", None)
        rate = link.resolved("down").rate_mbit if link is not None else None
        if workload is None or not rate:
            continue
        times.append(workload.total_bytes * 8 / (rate * 1e6))
    return sum(times) / len(times) if times else 0.0


def measured_s_per_run(name: str, places: list[Path]) -> tuple[float, str, object] | None:
    """Wall per run of the first finished store of scenario `name` among `places`, with the
    scenario that store ran. The wall is the time the experiment was active: one resumed
    hours later is not that many hours long (activity.active_seconds)."""
    for place in places:
        d = place / name
        if not (d / DB_FILE).exists():
            continue
        try:
            with Store.open(d, read_only=True) as store:
                finished = (store.experiment() or {}).get("ended_at") is not None
                wall = active_seconds(stamps(store))
                n = int(store.sql("SELECT count(*) AS n FROM runs")["n"].iloc[0])
                ran = store.scenario()
        except Exception:  # noqa: BLE001 - an unreadable store only means: not measured there
            continue
        if finished and wall and n:
            return float(wall) / n, str(d), ran
    return None


def estimate(scenarios: list[ShippedScenario], budget: str, out: Path) -> list[ScenarioEstimate]:
    places = (
        [out, *sorted(p for p in out.parent.glob("*") if p.is_dir() and p != out)] if out.parent.exists() else [out]
    )
    rows = []
    for shipped in scenarios:
        sc = load_scenario(shipped.path, shipped.overrides(budget))
        got = measured_s_per_run(sc.name, places)
        if got:
            s_per_run, source, ran = got
            scale = _assumed(sc)[0] / _assumed(ran)[0]
            if abs(scale - 1) > 1e-9:
                s_per_run, source = s_per_run * scale, f"{source}, x{scale:.2f} for other lengths"
        else:
            s_per_run, source = _assumed(sc)
        rows.append(ScenarioEstimate(sc.name, sc.total_runs(), s_per_run, source))
    return rows


def describe(rows: list[ScenarioEstimate]) -> str:
    total = sum(r.wall_s for r in rows)
    measured = sum(not r.measured_from.startswith("assumed") for r in rows)
    lines = [
        f"estimated wall time {total / 3600:.1f} h for {sum(r.runs for r in rows):,} runs "
        f"({measured} of {len(rows)} scenarios timed from earlier runs here):"
    ]
    lines += [
        f"  {r.name:30} {r.runs:5} runs x {r.s_per_run:6.1f} s = {r.wall_s / 60:6.1f} min  ({r.measured_from})"
        for r in rows
    ]
    return "\n".join(lines)
