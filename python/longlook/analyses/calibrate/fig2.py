"""Kakhki Fig. 2 as a command: the same 10 MB download over QUIC with an untuned (107
packets) and a tuned (430) maximum congestion window, where the time goes, and how many
times longer the untuned server takes (the paper: about twice)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from ...core.stats import compare_samples
from .figure import save, split_figure
from .measure import counted, ensure_dir, run_experiment
from .scenarios import fig2_scenario, macw_label
from .split import PHASES, Ratio, phase_means, ratio_of_means

PAPER_RATIO = 2.0  # Kakhki §4.1: "takes twice as long"
EXPERIMENT = "experiment"


@dataclass
class Fig2:
    macws: list[int]
    rows: list[dict[str, Any]]  # per MACW: n, phase means, PLT mean and sd
    ratio: Ratio  # mean PLT of the smallest MACW / that of the largest
    p_value: float  # Welch, the same two samples
    params: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "figure": "Kakhki IMC'17 Fig. 2",
            "params": self.params,
            "macws": self.macws,
            "configurations": self.rows,
            "plt_ratio": self.ratio.as_dict(),
            "ratio_of": f"mean PLT {macw_label(min(self.macws))} / {macw_label(max(self.macws))}",
            "welch_p": self.p_value,
            "paper_ratio": PAPER_RATIO,
        }

    def table(self) -> str:
        head = f"{'MACW':>6} {'n':>3} {'handshake':>10} {'wait':>8} {'receive':>9} {'PLT':>9} {'sd':>7}"
        lines = [head]
        for r in self.rows:
            lines.append(
                f"{r['macw']:>6} {r['n']:>3} {r['handshake_ms']:>8.1f}ms {r['wait_ms']:>6.1f}ms "
                f"{r['receive_ms']:>7.1f}ms {r['plt_ms']:>7.1f}ms {_f(r['plt_sd']):>7}"
            )
        lines.append(
            f"PLT ratio MACW {min(self.macws)} / {max(self.macws)}: {self.ratio.text()}; "
            f"Welch p = {self.p_value:.2g}; paper ≈ {PAPER_RATIO:g}x"
        )
        return "\n".join(lines)


def _f(x: float) -> str:
    return "-" if x is None or math.isnan(x) else f"{x:.1f}"


def analyse(experiment: Path, macws: Sequence[int], *, confidence: float = 0.95) -> Fig2:
    """The split and the ratio from a finished fig2 experiment directory."""
    runs = counted(experiment)
    labels = [macw_label(m) for m in macws]
    means = phase_means(runs[runs["arm"].isin(labels)]).set_index("arm").reindex(labels)
    rows = [
        {
            "macw": m,
            "n": int(means.at[lab, "n"]) if not math.isnan(means.at[lab, "n"]) else 0,
            **{k: float(means.at[lab, k]) for k in (*PHASES, "plt_ms", "plt_sd")},
        }
        for m, lab in zip(macws, labels)
    ]
    small, large = macw_label(min(macws)), macw_label(max(macws))
    plt_of = {lab: runs.loc[runs["arm"] == lab, "plt_ms"].to_numpy(float) for lab in labels}
    ratio = ratio_of_means(plt_of[small], plt_of[large], confidence=confidence)
    p = compare_samples(plt_of[small], plt_of[large], a_label=small, b_label=large, metric="plt_ms").p_value
    return Fig2(list(macws), rows, ratio, p)


def write(result: Fig2, out: Path) -> list[Path]:
    labels = [f"MACW {m}" for m in result.macws]
    means = pd.DataFrame(result.rows)
    title = (
        f"{result.params.get('size', '')} at {result.params.get('rate_mbit', '')} Mbit/s: "
        f"PLT ratio {result.ratio.text()}"
    )
    svg = save(split_figure(means, labels, title), out / "fig2.svg")
    js = out / "fig2.json"
    js.write_text(json.dumps(result.as_dict(), indent=1, default=str))
    result.files = [svg, js]
    return result.files


def run_fig2(
    out: Path,
    *,
    rounds: int = 10,
    macws: Sequence[int] = (107, 430),
    size: str = "10m",
    rate_mbit: float = 100.0,
    rtt_ms: float = 36.0,
    buffer_bytes: int = 30000,
    seed: int = 1,
    link_check: bool = True,
    progress: Callable[..., None] | None = None,
) -> Fig2:
    """Measure (into OUT/experiment, resumed when present), then analyse and write
    OUT/fig2.svg and OUT/fig2.json."""
    scenario = fig2_scenario(
        macws=macws, rounds=rounds, size=size, rate_mbit=rate_mbit, rtt_ms=rtt_ms, buffer_bytes=buffer_bytes, seed=seed
    )
    ensure_dir(out)
    run_experiment(scenario, out / EXPERIMENT, link_check=link_check, progress=progress)
    st = scenario.statistics
    result = analyse(out / EXPERIMENT, macws, confidence=st.confidence)
    result.params = {
        "size": size,
        "rate_mbit": rate_mbit,
        "rtt_ms": rtt_ms,
        "buffer_bytes": buffer_bytes,
        "rounds": rounds,
        "protocol": "h3",
        "experiment": str(out / EXPERIMENT),
    }
    write(result, out)
    return result
