"""Grey-box calibration: which maximum congestion window makes our endpoint load the
reference's cells as fast as the reference did? optuna proposes values (an initial design
of the start value and a log-spaced ladder, then TPE); each proposal is a real testbed
measurement of the reference's grid. Proposals are measured two at a time, as the two arms
of one experiment, so they run back to back on the same testbed set-up.

The objective is the mean over cells of |ln(mean ours / mean reference)|: symmetric in
faster and slower, and each cell weighs the same whatever its PLT."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import optuna

from ...core.stats import compare_samples
from ...errors import LonglookError
from .measure import counted, ensure_dir, run_experiment
from .reference import Reference, samples_by_cell
from .scenarios import macw_label, trial_scenario

KNOB = "max_cwnd_packets"


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
    (cell midpoints), so the first batches already bracket the answer."""
    ladder = [round(math.exp(math.log(low) + (i + 0.5) / (points - 1) * math.log(high / low)))
              for i in range(points - 1)] if points > 1 else []
    return list(dict.fromkeys([start, *ladder]))


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
    verdict: str  # "inconclusive" (calibrated within the noise) or which side is faster


@dataclass
class SearchResult:
    reference: str
    reference_arm: str
    best: int
    best_objective: float
    alpha: float
    trials: list[dict[str, Any]]  # every proposal: value, objective, batch directory
    residuals: list[Residual]
    fragment: str
    files: list[Path] = field(default_factory=list)

    @property
    def calibrated(self) -> bool:
        return all(r.verdict == "inconclusive" for r in self.residuals)

    def as_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "reference_arm": self.reference_arm,
                "knobs": {KNOB: self.best}, "objective": self.best_objective,
                "alpha": self.alpha, "calibrated": self.calibrated, "trials": self.trials,
                "residuals": [r.__dict__ for r in self.residuals], "fragment": self.fragment}

    def table(self) -> str:
        lines = [f"{'trial':>5} {'MACW':>6} {'objective':>10}"]
        lines += [f"{t['number']:>5} {t['value']:>6} {t['objective']:>10.4f}" for t in self.trials]
        lines.append(f"calibrated: {KNOB} = {self.best} (mean |ln PLT ratio| {self.best_objective:.4f})")
        w = max([4, *(len(r.cell) for r in self.residuals)])
        lines.append(f"{'cell':<{w}} {'ours ms':>9} {'ref ms':>9} {'diff %':>8} {'Welch p':>8}  verdict")
        for r in self.residuals:
            lines.append(f"{r.cell:<{w}} {r.mean_ours:>9.1f} {r.mean_ref:>9.1f} {r.diff_pct:>+8.1f} "
                         f"{r.p_value:>8.3g}  {r.verdict}")
        lines.append("scenario fragment:\n" + self.fragment)
        return "\n".join(lines)


class _Measured:
    """PLT samples per MACW value, pooled over every batch that measured it."""

    def __init__(self, ref: Reference):
        self.ref = ref
        self.samples: dict[int, dict[str, list[float]]] = {}
        self.batches: dict[int, list[str]] = {}

    def add(self, out: Path, values: list[int]) -> None:
        runs = counted(out)
        for v in values:
            pool = self.samples.setdefault(v, {})
            for key, x in samples_by_cell(runs, macw_label(v)).items():
                pool.setdefault(key, []).extend(x.tolist())
            self.batches.setdefault(v, []).append(out.name)

    def arrays(self, v: int) -> dict[str, np.ndarray]:
        return {k: np.asarray(x, float) for k, x in self.samples.get(v, {}).items()}

    def objective(self, v: int) -> float:
        return objective(self.arrays(v), self.ref.samples)

    def best(self) -> int:
        return min(self.samples, key=self.objective)


def _ask_new(study: optuna.Study, dist: dict, measured: _Measured, taken: set[int],
             log: list[dict[str, Any]], tries: int = 20) -> optuna.Trial | None:
    """A trial whose value is not measured yet; values already measured are answered from
    what was measured (no traffic) and another is asked for."""
    for _ in range(tries):
        t = study.ask(dist)
        v = t.params[KNOB]
        if v in measured.samples:
            study.tell(t, measured.objective(v))
            log.append({"number": t.number, "value": v, "objective": measured.objective(v),
                        "batch": measured.batches[v][-1]})
        elif v in taken:
            study.tell(t, state=optuna.trial.TrialState.PRUNED)
        else:
            return t
    return None


def search(reference: Reference, out: Path, *, trials: int = 8, rounds: int = 3, start: int = 107,
           low: int | None = None, high: int | None = None, seed: int = 1,
           link_check: bool = True, progress: Callable[..., None] | None = None,
           measured_start: Path | None = None) -> SearchResult:
    """Up to `trials` measured MACW values (two per experiment, in OUT/trials/NN-...).
    `measured_start`: an experiment that measured the start value already (arm macwN)."""
    low, high = low or max(2, start // 4), high or start * 8
    if not 0 < low <= start <= high:
        raise LonglookError(f"search range {low}..{high} must hold the start value {start}",
                            hint="--low <= --start <= --high, all positive")
    if trials < 2:
        raise LonglookError("--trials: at least 2 (two values per measured experiment)")
    ensure_dir(out)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize",
                                sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=0))
    for v in initial_design(start, low, high, min(4, trials)):
        study.enqueue_trial({KNOB: v})
    dist = {KNOB: optuna.distributions.IntDistribution(low, high, log=True)}
    measured = _Measured(reference)
    if measured_start is not None:
        measured.add(measured_start, [start])
    log: list[dict[str, Any]] = []
    batch = 0
    while len(measured.samples) < trials:
        first = _ask_new(study, dist, measured, set(), log)
        if first is None:
            break  # the sampler keeps proposing measured values: nothing new to learn
        room = len(measured.samples) + 1 < trials
        second = _ask_new(study, dist, measured, {first.params[KNOB]}, log) if room else None
        pair = [first] + ([second] if second else [])
        values = [t.params[KNOB] for t in pair]
        if len(values) < 2:  # one new value: its neighbour arm re-measures the incumbent
            values.append(measured.best() if measured.samples else (high if values[0] != high else low))
        batch += 1
        name = f"{batch:02d}-" + "-".join(macw_label(v) for v in values)
        scenario = trial_scenario(reference.scenario, reference.arm, values, rounds=rounds,
                                  name=f"calibrate-{name}", seed=seed + batch)
        run_experiment(scenario, out / "trials" / name, link_check=link_check and batch == 1,
                       progress=progress)
        measured.add(out / "trials" / name, values)
        for t in pair:
            v = t.params[KNOB]
            study.tell(t, measured.objective(v))
            log.append({"number": t.number, "value": v, "objective": measured.objective(v), "batch": name})
        if progress:
            progress("trial", values=values, objectives=[measured.objective(v) for v in values])
    best = measured.best()
    return _result(reference, best, measured, log)


def _result(ref: Reference, best: int, measured: _Measured, log: list[dict]) -> SearchResult:
    st = ref.scenario.statistics
    ours = measured.arrays(best)
    residuals = []
    for key, r in ref.samples.items():
        o = ours.get(key, np.array([]))
        c = compare_samples(o, r, a_label=macw_label(best), b_label="reference", cell_id=key,
                            alpha=st.alpha, test="welch", confidence=st.confidence,
                            resamples=st.bootstrap_resamples, seed=ref.scenario.seed)
        # core.stats' % difference is positive when ours is faster; here: ours vs reference
        residuals.append(Residual(ref.labels.get(key, key), c.a.n, c.b.n, c.a.mean, c.b.mean,
                                  -c.percent_difference, -c.ci_high, -c.ci_low, c.p_value,
                                  c.verdict_text.replace(macw_label(best), "ours")))
    fragment = f"[options]\n{KNOB} = {best}   # calibrated against {ref.directory} ({ref.arm})\n"
    return SearchResult(str(ref.directory), ref.arm, best, measured.objective(best), st.alpha,
                        log, residuals, fragment)


def write(result: SearchResult, out: Path) -> list[Path]:
    js = out / "search.json"
    js.write_text(json.dumps(result.as_dict(), indent=1, default=str))
    frag = out / "calibrated.toml"
    frag.write_text(result.fragment)
    result.files = [js, frag]
    return result.files
