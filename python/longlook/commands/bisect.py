"""`longlook bisect STACK GOOD BAD --scenario FILE`: the release(s) where a metric changed
(analyses/releases/bisect.py), each step a real experiment of the scenario's cell with the
releases alternating within rounds, stopping at the rounds its plan says (sides.py)."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import typer


def _n(x: float, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def bisect_command(
    stack: str = typer.Argument(..., help="The stack whose releases are searched, e.g. quic-go."),
    good: str = typer.Argument(..., help="A release with the old behaviour, e.g. v0.57.0."),
    bad: str = typer.Argument(..., help="A later release with the new behaviour."),
    scenario: Path = typer.Option(..., "--scenario", help="A scenario of one cell with an arm running STACK."),
    metric: Optional[str] = typer.Option(None, "--metric", help="The metric (default: the kind's first)."),
    threshold: Optional[float] = typer.Option(
        None,
        "--threshold",
        min=0.1,
        max=1000,
        help="An absolute margin in %: a release is like an end when its interval lies within +-this % of it, "
        "and the ends do not differ within it. Default: the margin the ends imply (a release is placed "
        "against the midpoint of its range's ends), and ends within +-5% do not differ.",
    ),
    alpha: Optional[float] = typer.Option(
        None,
        "--alpha",
        min=1e-6,
        max=0.5,
        help="The chance of naming a wrong release (split over the steps); default: the scenario's [statistics] alpha.",
    ),
    min_rounds: int = typer.Option(6, "--min-rounds", min=3, max=1000, help="The fewest rounds of a step."),
    max_rounds: int = typer.Option(30, "--max-rounds", min=3, max=1000, help="Each step's budget of rounds."),
    out: Path = typer.Option(
        Path("results/bisect"),
        "--out",
        help="One experiment directory per step, and bisect.json / bisect.html, go here (resumable).",
    ),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the path as JSON here."),
    junit_out: Optional[Path] = typer.Option(
        None, "--junit", help="Write JUnit XML: one testcase per step, a failure where the release differs from GOOD."
    ),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check", help="Self-check the link before each step."),
) -> None:
    """Find the release(s) of STACK between GOOD and BAD where a metric changed.

    Step 0 measures GOOD against BAD until their difference is decided (looks at 6, 12, 24 ...
    rounds). Each later step measures the middle release of a range with both of the range's
    ends, alternating within rounds, for the rounds planned from the previous step, and places
    it: like GOOD, like BAD, or in between (a second change: both sides are searched). A step
    that cannot decide leaves its range unplaced, said so; it never guesses. Rerun the same
    command to resume. Exit 0 when every change is placed or the ends do not differ, 1 when
    something stayed inconclusive."""
    from ..analyses.releases.bisect import INCONCLUSIVE, bisect, max_steps
    from ..errors import LonglookError, check_output
    from ..stacks.builds.releases import check_release, expand

    for option, path in (("--json", json_out), ("--junit", junit_out)):
        if path is not None:
            check_output(path, option)
    if min_rounds > max_rounds:
        raise LonglookError(
            f"--min-rounds {min_rounds} exceeds --max-rounds {max_rounds}",
            hint="give a budget at least as large as the fewest rounds",
        )
    good_v, bad_v = check_release(stack, good), check_release(stack, bad)
    releases = [spec.partition("@")[2] for spec in expand(f"{stack}@{good_v}..{bad_v}")]
    if len(releases) < 2:
        raise LonglookError(
            f"{stack}@{good_v}..{bad_v}: fewer than two releases to search",
            hint="give two different releases, the older first",
        )
    step_runner = _StepRunner(stack, scenario, out, metric, max_rounds, link_check)
    sc = step_runner.check(good_v, bad_v)
    alpha = sc.statistics.alpha if alpha is None else alpha
    margin = "the midpoint of each range's ends" if threshold is None else f"+-{threshold:g}% of an end"
    print(
        f"bisect {stack}: {len(releases)} releases {releases[0]}..{releases[-1]}, each placed against {margin}; "
        f"one change is found in at most {max_steps(len(releases))} steps and named wrongly at most "
        f"{alpha:g} of the time",
        flush=True,
    )
    res = bisect(
        stack,
        releases,
        step_runner.measure,
        alpha=alpha,
        threshold_pct=threshold,
        min_rounds=min_rounds,
        max_rounds=max_rounds,
    )
    for s in res.steps:
        print(step_line(s))
    print(res.summary())
    doc = result_json(res)
    diffs = step_runner.state_diffs(res)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bisect.json").write_text(json.dumps(doc, indent=1))
    if json_out is not None:
        Path(json_out).write_text(json.dumps(doc, indent=1))
    from ..report.sections.bisect import bisect_page

    (out / "bisect.html").write_text(bisect_page(res, diffs, step_runner.metric_label))
    print(f"the path: {out / 'bisect.html'} and {out / 'bisect.json'}")
    if junit_out is not None:
        Path(junit_out).write_text(junit(res))
    if res.outcome == INCONCLUSIVE:
        raise typer.Exit(1)


def step_line(s) -> str:
    """One step in one line, every change the metric's own (release against end), inside its
    interval."""
    conf = f"{s.confidence:.2%} interval" if not math.isnan(s.confidence) else "interval"
    ns = "/".join(str(n) for n in s.n)
    looks = f"looks at {', '.join(map(str, s.looks))}" if s.looks else "no look"
    head = f"  step {s.index}: {s.release}"
    if s.index == 0:
        head += f" vs {s.ends[0]}, {s.rounds} rounds ({looks}), n {ns}: "
        body = (
            f"{_n(s.change_pct, '+.1f')}% ({conf} {_n(s.interval[0], '+.1f')}..{_n(s.interval[1], '+.1f')}%), "
            f"p {_n(s.p, '.2g')}"
        )
    else:
        head += f" in {s.ends[0]}..{s.ends[1]}, {s.rounds} rounds ({looks}), n {ns}: "
        body = (
            f"vs {s.ends[0]} {_n(s.change_pct, '+.1f')}% ({_n(s.interval[0], '+.1f')}..{_n(s.interval[1], '+.1f')}%), "
            f"vs {s.ends[1]} {_n(s.change_vs_high_pct, '+.1f')}% ({_n(s.interval_vs_high[0], '+.1f')}.."
            f"{_n(s.interval_vs_high[1], '+.1f')}%), {conf}s; the ends' midpoint {_n(s.midpoint_pct, '+.1f')}%"
        )
    tail = f" -> {s.verdict}" + (f" ({s.reason})" if s.reason else "")
    if not math.isnan(s.alpha):
        tail += f"; each claim wrong at most {s.alpha * len(s.looks):.3g}"
    return head + body + tail


def _clean(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):  # a numpy scalar
        return _clean(x.item())
    return x


def result_json(res) -> dict:
    """The path as JSON: every change in the metric's own convention (release against end,
    + = the metric went up) with its interval in the same convention; nan as null."""
    doc = {k: v for k, v in asdict(res).items() if k not in ("steps", "changes")}
    doc.update(
        summary=res.summary(),
        max_steps=res.max_steps(),
        error_bound=res.error_bound(),
        first_changed=res.first_changed,
        convention="change_pct = (mean of release - mean of end) / "
        "|mean of end| * 100, the metric's own change; intervals at each step's confidence",
        changes=[asdict(c) for c in res.changes],
        steps=[{**asdict(s), "against": s.against} for s in res.steps],
    )
    return _clean(doc)


def step_experiment(scenario, directory, *, plan, arms, metric, **kw):
    """A step's experiment: the core Runner with its stopping rule replaced by the step's
    (sides.decide), asked after every round from the store like adaptive rounds, so a
    resumed step stops where it would have. (Made here, on call: the CLI does not import the
    execution loop before a command needs it.)"""
    from ..analyses.releases.sides import decide
    from ..core.execute import Runner

    class StepExperiment(Runner):
        def _needs_more_rounds(self, store, cell) -> bool:
            runs = store.runs_frame()
            return not decide(step_runs(runs[runs["cell_id"] == cell.id], self.scenario, arms, metric), plan).done

    return StepExperiment(scenario, directory, **kw)


def step_runs(runs, sc, arms: dict[str, str], metric):
    """The step's StepRuns from its runs: those that count (core.status), with a failed round
    counted as an outcome where the scenario says so (core.stats), else left out and visible
    in each release's completion."""
    from ..analyses.releases.sides import runs_of_step
    from ..core.stats import with_failures_as_outcomes
    from ..core.status import counted_runs

    counted = counted_runs(runs, metric.name, exclude_flagged=sc.fidelity.exclude_flagged)
    if sc.statistics.failures == "outcome" and len(runs):
        value = metric.failure_value(sc.timeout_s) if getattr(sc, "timeout_s", None) else None
        if value is not None:
            counted = with_failures_as_outcomes(runs, counted, metric.name, value)
    return runs_of_step(
        runs,
        counted,
        arms,
        metric.name,
        lower_is_better=metric.lower_is_better,
        test=sc.statistics.test,
        survivorship_alpha=sc.statistics.survivorship_alpha,
    )


class _StepRunner:
    def __init__(self, stack, scenario, out, metric, max_rounds, link_check):
        self.stack, self.scenario, self.out = stack, Path(scenario), Path(out)
        self.metric, self.max_rounds, self.link_check = metric, max_rounds, link_check
        self.metric_label = metric or ""
        self.cell_id = ""

    def _load(self, releases: list[str]):
        from ..core.spec import load_scenario

        # a fixed budget: the step stops earlier when its look decides (_StepExperiment)
        return load_scenario(
            self.scenario, {"versions": [f"{self.stack}@{v}" for v in releases], "rounds": self.max_rounds}
        )

    def check(self, good: str, bad: str):
        """One cell, and one arm family running the stack: else one clear error, before any run."""
        from ..errors import LonglookError

        sc = self._load([good, bad])  # the ends as arms (one arm alone is no comparison)
        if len(sc.cells()) != 1:
            raise LonglookError(
                f"--scenario {self.scenario}: bisect measures one cell, it has {len(sc.cells())}",
                hint="narrow the scenario to the one cell (link x workload x options) to search",
            )
        self._arms(sc)
        self._metric(sc)
        return sc

    def _arms(self, sc) -> dict[str, str]:
        from ..analyses.releases import swept_arms
        from ..errors import LonglookError

        families = swept_arms(sc)
        if len(families) != 1:
            raise LonglookError(
                f"--scenario {self.scenario}: bisect needs exactly one arm running {self.stack}, found {len(families)}",
                hint=f'give one [[arms]] entry server or client = "{self.stack}"',
            )
        return {v: label for label, v in next(iter(families.values()))}

    def _metric(self, sc):
        from ..core.registry import get_kind
        from ..errors import LonglookError

        kind = get_kind(sc.kind)
        try:
            m = kind.metric(self.metric) if self.metric else kind.primary_metric
        except KeyError:
            raise LonglookError(
                f"--metric {self.metric}: the {sc.kind} kind has no such metric",
                hint="its metrics: " + ", ".join(x.name for x in kind.metrics),
            ) from None
        if m is None:
            raise LonglookError(f"the {sc.kind} kind declares no metric to bisect on", hint="give --metric")
        self.metric_label = f"{m.name} ({m.unit})" if getattr(m, "unit", "") else m.name
        return m

    def measure(self, step: int, releases: list[str], plan):
        from ..analyses.releases.sides import decide
        from ..core.store import DB_FILE

        sc = self._load(releases)
        label = self._arms(sc)
        arms = {r: label[r] for r in releases}
        metric = self._metric(sc)
        self.cell_id = sc.cells()[0].id
        directory = self.out / f"step-{step}-{releases[1] if len(releases) == 3 else 'ends'}"
        exists = (directory / DB_FILE).exists()
        if not (exists and decide(self._read(directory, sc, arms, metric), plan).done):
            print(f"step {step}: {', '.join(releases)} -> {directory}", flush=True)
            summary = step_experiment(
                sc, directory, plan=plan, arms=arms, metric=metric, resume=exists, link_check=self.link_check
            ).run()
            if summary.interrupted:
                print(f"interrupted in step {step}: every finished run is stored; rerun the same command to resume")
                raise typer.Exit(128 + (summary.signal or 2))
        return self._read(directory, sc, arms, metric), str(directory)

    def _read(self, directory: Path, sc, arms, metric):
        from ..core.store import Store

        with Store.open(directory, read_only=True) as store:
            runs = store.runs_frame()
        return step_runs(runs, sc, arms, metric)

    def state_diffs(self, res) -> dict[int, list]:
        """At each change, what `states diff` finds between the two releases, from the step
        that measured both (none for a kind without one connection's trace, e.g. fairness)."""
        from ..analyses.releases.history import release_states_diff
        from ..errors import LonglookError

        out = {}
        for i, c in enumerate(res.changes):
            step = res.steps[c.step]
            sc = self._load([step.ends[0], *([step.release] if step.index else []), step.ends[1]])
            if sc.kind == "fairness":
                continue
            label = self._arms(sc)
            try:
                out[i] = release_states_diff(
                    step.directory, sc.cells()[0].id, (label[c.before], c.before), (label[c.after], c.after)
                )
            except (LonglookError, OSError, ValueError) as e:
                print(f"no states diff at {c.before} -> {c.after}: {e}")
        return out


def junit(res) -> str:
    """One testcase per step: a failure where the release placed differs from GOOD (the
    ends differ, like BAD, a second change), skipped where unclear; the text in the metric's
    own convention."""
    from ..analyses.releases.bisect import SIDE_OF

    differs = [s for s in res.steps if SIDE_OF.get(s.verdict) in ("BAD", "both")]
    suite = ET.Element(
        "testsuite",
        name=f"longlook bisect {res.stack} {res.good}..{res.bad}",
        tests=str(len(res.steps)),
        failures=str(len(differs)),
        errors="0",
        skipped=str(sum(s.verdict == "unclear" for s in res.steps)),
    )
    for s in res.steps:
        name = f"step {s.index}: {s.release} vs {s.ends[0]}" + (f" and {s.ends[1]}" if s.index else "")
        case = ET.SubElement(suite, "testcase", classname=f"{res.stack}", name=name)
        text = step_line(s).strip()
        if s in differs:
            ET.SubElement(case, "failure", message=f"{s.verdict}: {text}", type=s.verdict.replace(" ", "_")).text = text
        elif s.verdict == "unclear":
            ET.SubElement(case, "skipped", message=f"unclear: {text}")
        else:
            ET.SubElement(case, "system-out").text = f"{s.verdict}: {text}"
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="outcome", value=res.summary())
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode")


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect_command)
