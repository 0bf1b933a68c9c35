"""Grey-box calibration: which values of our endpoint's knobs (maximum congestion window,
by default alone; initial window; Cubic's N-connection emulation: knobs.py) make it load
the reference's cells as fast as the reference did? optuna proposes points (an initial
design of the start point and a ladder per knob, then TPE); each proposal is a real
testbed measurement of the reference's grid. Proposals are measured two at a time, as the
two arms of one experiment, so they run back to back on the same testbed set-up.

The objective is the mean over cells of |ln(mean ours / mean reference)|: symmetric in
faster and slower, and each cell weighs the same whatever its PLT.

The verdict is drawn on fresh rounds, never on the trials': the chosen point is the one whose
samples happened to land closest to the reference, so its own samples understate the
distance (a winner's curse). One more experiment measures it again (`confirm_rounds`), and
"calibrated" means every cell's interval of the % difference (ours vs the reference, Welch,
at the reference's confidence) lies within +-`tolerance_pct`: an equivalence shown, where
"no cell differs significantly" would only be an absence of evidence (few rounds make every
point look calibrated). Calibrated (tests/calibration/test_calibrate_verdict.py): with every
cell exactly `tolerance_pct` off, "calibrated" in at most (1 - confidence) / 2 of searches."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import optuna

from ...core.stats import compare_samples, equivalent
from ...core.verdicts import verdict_producer
from ...errors import LonglookError
from .knobs import Knob, initial_points, knob_set, label, ordered, start_point
from .measure import counted, ensure_dir, run_experiment
from .reference import Reference, samples_by_cell
from .scenarios import trial_scenario

Key = tuple[tuple[str, int], ...]  # a point, hashable: sorted (option, value) pairs


def objective(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> float:
    """Mean |log ratio| of mean PLTs over the reference's cells; inf when a cell is missing."""
    logs = []
    for key, r in ref.items():
        o = ours.get(key)
        if o is None or not len(o):
            return math.inf
        logs.append(abs(math.log(float(np.mean(o)) / float(np.mean(r)))))
    return float(np.mean(logs))


def initial_design(start: int, low: int, high: int, points: int) -> list[int]:
    """The start value, then `points - 1` values evenly spread in log space over the range
    (cell midpoints), so the first batches already bracket the answer (one MACW knob)."""
    knob = Knob("macw", "max_cwnd_packets", "macw", start, low, high, True, "packets")
    return [p["max_cwnd_packets"] for p in initial_points([knob], points)]


CALIBRATED, NOT_SHOWN, NOT_CALIBRATED = "calibrated", "not shown calibrated", "not calibrated"


@verdict_producer("calibrate.search", "our endpoint's knobs match a reference: every cell within +-tolerance")
def calibration_verdict(residuals: list["Residual"]) -> str:
    """From each cell's `within` (its interval against +-tolerance, core.stats.equivalent):
    CALIBRATED when every cell's interval lies within the tolerance; NOT_CALIBRATED when
    some cell's lies wholly beyond it; else NOT_SHOWN (an interval straddles a bound, or a
    cell could not be compared)."""
    if not residuals:
        return NOT_SHOWN
    if any(r.within is False for r in residuals):
        return NOT_CALIBRATED
    return CALIBRATED if all(r.within is True for r in residuals) else NOT_SHOWN


def calibration_text(residuals: list["Residual"], tolerance_pct: float) -> str:
    v = calibration_verdict(residuals)
    if v == CALIBRATED:
        return f"calibrated: every cell within +-{tolerance_pct:g}% of the reference"
    if v == NOT_CALIBRATED:
        off = ", ".join(r.cell for r in residuals if r.within is False)
        return f"not calibrated: {off} differ from the reference by more than {tolerance_pct:g}%"
    open_ = ", ".join(r.cell for r in residuals if r.within is None) or "no cell"
    return (
        f"not shown calibrated: the interval of {open_} reaches past +-{tolerance_pct:g}% "
        "(more --confirm-rounds narrow it)"
    )


def _key(point: dict[str, int]) -> Key:
    return tuple(sorted(point.items()))


@dataclass
class Residual:
    cell: str
    n_ours: int
    n_ref: int
    mean_ours: float
    mean_ref: float
    diff_pct: float  # (ours - reference) / reference * 100: positive = ours slower
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # the two-sample test's: "inconclusive" or which side is faster
    # the interval within +-tolerance (True), wholly beyond it (False), or straddling (None)
    within: bool | None = None


@dataclass
class SearchResult:
    reference: str
    reference_arm: str
    knobs: dict[str, int]  # the calibrated point: page-load option -> value
    best_objective: float
    alpha: float
    trials: list[dict[str, Any]]  # every proposal: knobs (and "value" if one), objective, batch
    residuals: list[Residual]
    fragment: str
    files: list[Path] = field(default_factory=list)
    tolerance_pct: float = 5.0
    confirmed_in: str = ""  # the experiment whose fresh rounds the residuals come from

    @property
    def best(self) -> int | dict[str, int]:
        """The calibrated value of a one-knob search; the point of a multi-knob one."""
        return next(iter(self.knobs.values())) if len(self.knobs) == 1 else self.knobs

    @property
    def calibrated(self) -> bool:
        return calibration_verdict(self.residuals) == CALIBRATED

    def verdict_text(self) -> str:
        return calibration_text(self.residuals, self.tolerance_pct)

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "reference_arm": self.reference_arm,
            "knobs": self.knobs,
            "objective": self.best_objective,
            "alpha": self.alpha,
            "calibrated": self.calibrated,
            "verdict": self.verdict_text(),
            "tolerance_pct": self.tolerance_pct,
            "confirmed_in": self.confirmed_in,
            "trials": self.trials,
            "residuals": [r.__dict__ for r in self.residuals],
            "fragment": self.fragment,
        }

    def table(self) -> str:
        names = list(self.knobs)
        lines = [f"{'trial':>5} " + " ".join(f"{n:>22}" for n in names) + f" {'objective':>10}"]
        lines += [
            f"{t['number']:>5} " + " ".join(f"{t['knobs'][n]:>22}" for n in names) + f" {t['objective']:>10.4f}"
            for t in self.trials
        ]
        knobs = ", ".join(f"{n} = {v}" for n, v in self.knobs.items())
        lines.append(f"closest: {knobs} (mean |ln PLT ratio| {self.best_objective:.4f})")
        lines.append(f"{self.verdict_text()} (fresh rounds: {self.confirmed_in or 'the trials'})")
        w = max([4, *(len(r.cell) for r in self.residuals)])
        lines.append(
            f"{'cell':<{w}} {'ours ms':>9} {'ref ms':>9} {'diff %':>8} {'interval %':>16} {'Welch p':>8}  verdict"
        )
        for r in self.residuals:
            ci = f"[{r.ci_low:+.1f}, {r.ci_high:+.1f}]"
            lines.append(
                f"{r.cell:<{w}} {r.mean_ours:>9.1f} {r.mean_ref:>9.1f} {r.diff_pct:>+8.1f} {ci:>16} "
                f"{r.p_value:>8.3g}  {r.verdict}"
            )
        lines.append("scenario fragment:\n" + self.fragment)
        return "\n".join(lines)


class _Measured:
    """PLT samples per point, pooled over every batch that measured it."""

    def __init__(self, ref: Reference):
        self.ref = ref
        self.samples: dict[Key, dict[str, list[float]]] = {}
        self.batches: dict[Key, list[str]] = {}

    def add(self, out: Path, points: list[dict[str, int]]) -> None:
        runs = counted(out)
        for p in points:
            pool = self.samples.setdefault(_key(p), {})
            for key, x in samples_by_cell(runs, label(p)).items():
                pool.setdefault(key, []).extend(x.tolist())
            self.batches.setdefault(_key(p), []).append(out.name)

    def arrays(self, p: dict[str, int]) -> dict[str, np.ndarray]:
        return {k: np.asarray(x, float) for k, x in self.samples.get(_key(p), {}).items()}

    def objective(self, p: dict[str, int]) -> float:
        return objective(self.arrays(p), self.ref.samples)

    def best(self) -> dict[str, int]:
        return ordered(dict(min(self.samples, key=lambda k: self.objective(dict(k)))))


def _entry(number: int, point: dict[str, int], objective_: float, batch: str) -> dict[str, Any]:
    """One line of the trial log; "value" too when one knob is searched (the MACW search's
    historical shape)."""
    one = {"value": next(iter(point.values()))} if len(point) == 1 else {}
    return {
        "number": number,
        "knobs": dict(point),
        "label": label(point),
        **one,
        "objective": objective_,
        "batch": batch,
    }


def _ask_new(
    study: optuna.Study, dist: dict, measured: _Measured, taken: set[Key], log: list[dict[str, Any]], tries: int = 20
) -> optuna.Trial | None:
    """A trial whose point is not measured yet; points already measured are answered from
    what was measured (no traffic) and another is asked for."""
    for _ in range(tries):
        t = study.ask(dist)
        p = ordered(t.params)
        if _key(p) in measured.samples:
            study.tell(t, measured.objective(p))
            log.append(_entry(t.number, p, measured.objective(p), measured.batches[_key(p)][-1]))
        elif _key(p) in taken:
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
        else:
            return t
    return None


def search(
    reference: Reference,
    out: Path,
    *,
    trials: int = 8,
    rounds: int = 3,
    start: int = 107,
    low: int | None = None,
    high: int | None = None,
    seed: int = 1,
    link_check: bool = True,
    progress: Callable[..., None] | None = None,
    measured_start: Path | None = None,
    knobs: list[Knob] | None = None,
    tolerance_pct: float = 5.0,
    confirm_rounds: int | None = None,
) -> SearchResult:
    """Up to `trials` measured points (two per experiment, in OUT/trials/NN-...), then the
    closest measured again in OUT/confirm/ (`confirm_rounds`, default `rounds`) for the
    verdict. `knobs`: what to search (knobs.knob_set); default MACW alone over start,
    low..high. `measured_start`: an experiment that measured the start point already."""
    knobs = knobs or knob_set(["macw"], start=start, low=low, high=high)
    if trials < 2:
        raise LonglookError("--trials: at least 2 (two points per measured experiment)")
    if not (isinstance(tolerance_pct, (int, float)) and 0 < tolerance_pct <= 100):
        raise LonglookError(f"--tolerance: a % between 0 and 100, got {tolerance_pct!r}")
    confirm_rounds = rounds if confirm_rounds is None else confirm_rounds
    if confirm_rounds < 2:
        raise LonglookError("--confirm-rounds: at least 2 (an interval needs two runs a side)")
    # the trial arms must make a valid scenario (e.g. n_conn needs the reference arm's Cubic):
    # one clear error now rather than after the first measurement
    trial_scenario(
        reference.scenario,
        reference.arm,
        [start_point(knobs), _corner(knobs, start_point(knobs))],
        rounds=2,
        name="calibrate-check",
    )
    ensure_dir(out)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=0))
    for p in initial_points(knobs, min(4, trials)):
        study.enqueue_trial(p)
    dist = {k.option: optuna.distributions.IntDistribution(k.low, k.high, log=k.log) for k in knobs}
    measured = _Measured(reference)
    if measured_start is not None:
        measured.add(measured_start, [start_point(knobs)])
    log: list[dict[str, Any]] = []
    batch = 0
    while len(measured.samples) < trials:
        first = _ask_new(study, dist, measured, set(), log)
        if first is None:
            break  # the sampler keeps proposing measured points: nothing new to learn
        room = len(measured.samples) + 1 < trials
        second = _ask_new(study, dist, measured, {_key(first.params)}, log) if room else None
        pair = [first] + ([second] if second else [])
        points = [ordered(t.params) for t in pair]
        if len(points) < 2:  # one new point: its neighbour arm re-measures the incumbent
            points.append(measured.best() if measured.samples else _corner(knobs, points[0]))
        batch += 1
        name = f"{batch:02d}-" + "-".join(label(p) for p in points)
        scenario = trial_scenario(
            reference.scenario, reference.arm, points, rounds=rounds, name=f"calibrate-{name}", seed=seed + batch
        )
        run_experiment(scenario, out / "trials" / name, link_check=link_check and batch == 1, progress=progress)
        measured.add(out / "trials" / name, points)
        for t, p in zip(pair, points):
            study.tell(t, measured.objective(p))
            log.append(_entry(t.number, p, measured.objective(p), name))
        if progress:
            progress("trial", values=[label(p) for p in points], objectives=[measured.objective(p) for p in points])
    best = measured.best()
    confirmed = _confirm(reference, out, best, measured, knobs, confirm_rounds, seed + batch + 1, progress)
    return _result(reference, best, measured, log, confirmed, tolerance_pct)


def _confirm(
    ref: Reference,
    out: Path,
    best: dict[str, int],
    measured: _Measured,
    knobs: list[Knob],
    rounds: int,
    seed: int,
    progress: Callable[..., None] | None,
) -> tuple[str, dict[str, np.ndarray]]:
    """The closest point measured again (beside the runner-up, so the experiment has its two
    arms): (the experiment's name, the best point's fresh samples per cell)."""
    others = sorted((dict(k) for k in measured.samples if k != _key(best)), key=measured.objective)
    runner_up = others[0] if others else _corner(knobs, best)
    name = f"confirm-{label(best)}"
    scenario = trial_scenario(ref.scenario, ref.arm, [best, runner_up], rounds=rounds, name=name, seed=seed)
    run_experiment(scenario, out / "confirm" / name, link_check=False, progress=progress)
    fresh = _Measured(ref)
    fresh.add(out / "confirm" / name, [best])
    return name, fresh.arrays(best)


def _corner(knobs: list[Knob], other: dict[str, int]) -> dict[str, int]:
    """Every knob at its high end, or its low end if that is `other`."""
    high = {k.option: k.high for k in knobs}
    return high if high != other else {k.option: k.low for k in knobs}


def _result(
    ref: Reference,
    best: dict[str, int],
    measured: _Measured,
    log: list[dict],
    confirmed: tuple[str, dict[str, np.ndarray]],
    tolerance_pct: float,
) -> SearchResult:
    st = ref.scenario.statistics
    name, ours = confirmed
    residuals = []
    for key, r in ref.samples.items():
        o = ours.get(key, np.array([]))
        c = compare_samples(
            o,
            r,
            a_label=label(best),
            b_label="reference",
            cell_id=key,
            metric="plt_ms",
            alpha=st.alpha,
            test="welch",
            confidence=st.confidence,
        )
        # core.stats' % difference is positive when ours is faster; here: ours vs reference
        residuals.append(
            Residual(
                ref.labels.get(key, key),
                c.a.n,
                c.b.n,
                c.a.mean,
                c.b.mean,
                -c.percent_difference,
                -c.ci_high,
                -c.ci_low,
                c.p_value,
                c.verdict_text.replace(label(best), "ours"),
                equivalent(c, tolerance_pct),
            )
        )
    fragment = f"[options]   # {calibration_verdict(residuals)} against {ref.directory} ({ref.arm})\n" + "".join(
        f"{option} = {value}\n" for option, value in best.items()
    )
    return SearchResult(
        str(ref.directory),
        ref.arm,
        best,
        measured.objective(best),
        st.alpha,
        log,
        residuals,
        fragment,
        tolerance_pct=tolerance_pct,
        confirmed_in=name,
    )


def write(result: SearchResult, out: Path) -> list[Path]:
    js = out / "search.json"
    js.write_text(json.dumps(result.as_dict(), indent=1, default=str))
    frag = out / "calibrated.toml"
    frag.write_text(result.fragment)
    result.files = [js, frag]
    return result.files
