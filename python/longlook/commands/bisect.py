"""`longlook bisect STACK GOOD BAD --scenario FILE`: the first release where a metric changed
(analyses/releases/bisect.py), each step a real experiment of the scenario's cell with the
releases alternating within rounds and adaptive rounds."""

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
    scenario: Path = typer.Option(..., "--scenario", help="A page-load scenario of one cell with an arm running STACK."),
    metric: Optional[str] = typer.Option(None, "--metric", help="The metric (default: the kind's first)."),
    threshold: float = typer.Option(5.0, "--threshold", min=0.1, max=1000,
                                    help="A change counts when its whole interval lies beyond +-this % of GOOD's mean; "
                                         "'the same' when within it."),
    max_rounds: int = typer.Option(30, "--max-rounds", min=6, max=1000, help="Each step's budget of rounds (adaptive, from 6)."),
    out: Path = typer.Option(Path("results/bisect"), "--out", help="One experiment directory per step goes here (resumable)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the path as JSON."),
    junit_out: Optional[Path] = typer.Option(None, "--junit", help="Write JUnit XML: one testcase per step, a failure where the metric changed."),
    link_check: bool = typer.Option(True, "--link-check/--no-link-check", help="Self-check the link before each step."),
) -> None:
    """Find the first release of STACK between GOOD and BAD where a metric changed.

    Binary search over the releases on the stack's registry: each step measures its release
    against both ends, alternating within rounds, with adaptive rounds, and compares it with
    GOOD by the scenario's test. A step that cannot decide within its budget ends the search
    as inconclusive; it never guesses. Two ends that do not differ are reported as such.
    Rerun the same command to resume. Exit 0 when found or no difference, 1 when inconclusive."""
    from ..analyses.releases.bisect import bisect, max_steps
    from ..errors import LonglookError, check_output
    from ..stacks.releases import check_release, expand

    for option, path in (("--json", json_out), ("--junit", junit_out)):
        if path is not None:
            check_output(path, option)
    good_v, bad_v = check_release(stack, good), check_release(stack, bad)
    releases = [spec.partition("@")[2] for spec in expand(f"{stack}@{good_v}..{bad_v}")]
    if len(releases) < 2:
        raise LonglookError(f"{stack}@{good_v}..{bad_v}: fewer than two releases to search",
                            hint="give two different releases, the older first")
    step_runner = _StepRunner(stack, scenario, out, metric, threshold, max_rounds, link_check)
    step_runner.check(good_v, bad_v)
    print(f"bisect {stack}: {len(releases)} releases {releases[0]}..{releases[-1]}, threshold +-{threshold:g}%, "
          f"at most {max_steps(len(releases))} steps", flush=True)
    res = bisect(stack, releases, threshold, step_runner.measure)
    for s in res.steps:
        print(f"  step {s.index}: {s.release} vs {s.against}: n {s.n[0]}/{s.n[1]}, {_n(s.change_pct, '+.1f')}% "
              f"(interval {_n(s.interval[0], '+.1f')}..{_n(s.interval[1], '+.1f')}%), p {_n(s.p, '.2g')} -> {s.verdict}")
    print(res.summary())
    if json_out is not None:
        Path(json_out).write_text(json.dumps({**{k: v for k, v in asdict(res).items() if k != "steps"},
                                              "steps": [asdict(s) for s in res.steps]}, indent=1, default=str))
    if junit_out is not None:
        Path(junit_out).write_text(_junit(res))
    if res.outcome == "inconclusive":
        raise typer.Exit(1)


class _StepRunner:
    def __init__(self, stack, scenario, out, metric, threshold, max_rounds, link_check):
        self.stack, self.scenario, self.out = stack, Path(scenario), Path(out)
        self.metric, self.threshold, self.max_rounds, self.link_check = metric, threshold, max_rounds, link_check

    def _load(self, releases: list[str]):
        from ..core.spec import load_scenario

        rounds = {"min": 6, "max": self.max_rounds, "target_halfwidth_pct": self.threshold / 2}
        if self.metric:
            rounds["metric"] = self.metric
        return load_scenario(self.scenario, {"versions": [f"{self.stack}@{v}" for v in releases],
                                             "rounds": rounds})

    def check(self, good: str, bad: str) -> None:
        """One cell, and one arm family running the stack: else one clear error, before any run."""
        from ..errors import LonglookError

        sc = self._load([good, bad])  # the ends as arms (one arm alone is no comparison)
        if len(sc.cells()) != 1:
            raise LonglookError(f"--scenario {self.scenario}: bisect measures one cell, it has {len(sc.cells())}",
                                hint="narrow the scenario to the one cell (link x workload x options) to search")

    def measure(self, step: int, releases: list[str]):
        from ..analyses.releases import swept_arms
        from ..core.execute import Runner
        from ..core.store import DB_FILE
        from ..errors import LonglookError

        sc = self._load(releases)
        if len(swept_arms(sc)) != 1:
            raise LonglookError(f"--scenario {self.scenario}: bisect needs exactly one arm running {self.stack}, "
                                f"found {len(swept_arms(sc))}", hint=f"give one [[arms]] entry server or client = \"{self.stack}\"")
        directory = self.out / f"step-{step}-{releases[1] if len(releases) == 3 else 'ends'}"
        print(f"step {step}: {', '.join(releases)} -> {directory}", flush=True)
        Runner(sc, directory, resume=(directory / DB_FILE).exists(), link_check=self.link_check).run()
        return compare_step(directory, sc, releases, self.metric), str(directory)


def compare_step(directory: Path, sc, releases: list[str], metric: str | None = None) -> dict:
    """A step's experiment read back: {(release, end): the comparison of release against end}
    for each release and each end, over the counted runs, by the scenario's test."""
    from ..analyses.releases import swept_arms
    from ..core.analysis import analyse
    from ..core.stats import compare_samples
    from ..core.store import Store

    with Store.open(directory, read_only=True) as store:
        an = analyse(store)
    m = an.kind.metric(metric) if metric else an.metric
    runs = an.counted(m.name)
    label = {v: lab for lab, v in next(iter(swept_arms(sc).values()))}
    values = {v: runs[runs["arm"] == label[v]][m.name].dropna().to_numpy(float) for v in releases}
    st = sc.statistics
    out = {}
    for r in releases:
        for end in (releases[0], releases[-1]):
            if r != end:
                out[(r, end)] = compare_samples(values[r], values[end], a_label=r, b_label=end, alpha=st.alpha,
                                                test=st.test, confidence=st.confidence, metric=m.name,
                                                lower_is_better=m.lower_is_better)
    return out


def _junit(res) -> str:
    suite = ET.Element("testsuite", name=f"longlook bisect {res.stack} {res.good}..{res.bad}",
                       tests=str(len(res.steps)), failures=str(sum(s.verdict == "different" for s in res.steps)),
                       errors="0", skipped=str(sum(s.verdict == "inconclusive" for s in res.steps)))
    for s in res.steps:
        case = ET.SubElement(suite, "testcase", classname=f"{res.stack}", name=f"step {s.index}: {s.release} vs {s.against}")
        text = (f"n {s.n[0]}/{s.n[1]}, {_n(s.change_pct, '+.1f')}%, interval {_n(s.interval[0], '+.1f')}.."
                f"{_n(s.interval[1], '+.1f')}%, p {_n(s.p, '.2g')}")
        if s.verdict == "different":
            ET.SubElement(case, "failure", message=f"changed: {text}", type="changed").text = text
        elif s.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message=f"inconclusive: {text}")
        else:
            ET.SubElement(case, "system-out").text = f"same: {text}"
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="outcome", value=res.summary())
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode")


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect_command)
