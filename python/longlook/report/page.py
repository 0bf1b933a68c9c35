"""The report's page: the shell (header, heatmaps, distributions, link checks, exclusions,
versions) around the sections (report.sections), rendered from the store alone."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import pandas as pd
from markupsafe import Markup

from ..core.experiment_stats import Analysis, analyse, better_word
from ..core.stats import CellComparison, Test
from ..core.status import completion, counted_mask, exclusion_reason
from ..core.store import Store
from ..errors import LonglookError
from ..render.figures import distribution_grid
from ..render.html import environment, fmt
from ..render.layout import DIM_TITLES, Layout, choose_layout, format_dim, sort_values
from ..render.names import display_name
from ..render.palette import FULL_AT_PERCENT, cell_colors, legend_stops
from .sections import extra_sections
from .sections.runs import artifact_links


# ---------------------------------------------------------------- heatmap model


@dataclass
class HeatCell:
    comparison: CellComparison
    background: str
    color: str

    @property
    def css_class(self) -> str:
        return f"verdict-{self.comparison.verdict.value.replace('_', '-')}"

    @property
    def diff_text(self) -> str:
        d = self.comparison.percent_difference
        if math.isnan(d):
            return "n/a"
        return "0.0%" if abs(d) < 0.05 else f"{d:+.1f}%"  # no "-0.0%"

    @property
    def p_text(self) -> str:
        c = self.comparison
        p = c.p_adjusted
        if math.isnan(p):
            return "p n/a"
        name = "p_adj" if c.holm else "p"
        if p < 0.001:
            return f"{name}<0.001"
        # two significant digits below 0.1, so 0.0098 never reads as alpha = 0.01
        return f"{name}={p:.2g}" if p < 0.1 else f"{name}={p:.3f}"

    @property
    def n_text(self) -> str:
        return f"n={self.comparison.a.n}/{self.comparison.b.n}"

    @property
    def title(self) -> str:
        c = self.comparison
        ci = "" if math.isnan(c.ci_low) else f", {c.confidence:.0%} CI [{c.ci_low:+.1f}%, {c.ci_high:+.1f}%]"
        return (
            f"{c.cell_id}\n{c.verdict_text}: {self.diff_text}{ci}, {self.p_text}, "
            f"n {display_name(c.a.label)}={c.a.n}, {display_name(c.b.label)}={c.b.n}"
        )


@dataclass
class Heatmap:
    id: str
    pair: tuple[str, str]
    facet_title: str
    row_dim: str | None
    col_dim: str | None
    row_labels: list[str]
    col_labels: list[str]
    rows: list[list[HeatCell | None]]
    cell_ids: list[list[str | None]] = field(default_factory=list)

    @property
    def a_name(self) -> str:
        return display_name(self.pair[0])

    @property
    def b_name(self) -> str:
        return display_name(self.pair[1])


@dataclass
class Facet:
    """One combination of the non-axis dimensions: its cells on a row x column grid."""

    index: int
    title: str
    row_values: list[Any]
    col_values: list[Any]
    grid: list[list[str | None]]  # cell ids


def _facets(cells: pd.DataFrame, layout: Layout) -> list[Facet]:
    dims = list(cells["dims"])
    ids = list(cells["cell_id"])
    fvals = [sort_values(f, [d.get(f) for d in dims]) for f in layout.facets]
    facets = []
    for combo in itertools.product(*fvals) if layout.facets else [()]:
        members = [(cid, d) for cid, d in zip(ids, dims) if all(d.get(f) == v for f, v in zip(layout.facets, combo))]
        if not members:
            continue
        rvals = sort_values(layout.row, [d.get(layout.row) for _, d in members]) if layout.row else [None]
        cvals = sort_values(layout.col, [d.get(layout.col) for _, d in members]) if layout.col else [None]
        grid: list[list[str | None]] = [[None] * len(cvals) for _ in rvals]
        for cid, d in members:
            r = rvals.index(d.get(layout.row)) if layout.row else 0
            c = cvals.index(d.get(layout.col)) if layout.col else 0
            grid[r][c] = cid
        title = ", ".join(f"{DIM_TITLES.get(f, f)} = {format_dim(f, v)}" for f, v in zip(layout.facets, combo))
        facets.append(Facet(len(facets), title, rvals, cvals, grid))
    return facets


def _heatmaps(
    facets: list[Facet],
    layout: Layout,
    pairs: Sequence[tuple[str, str]],
    by_key: dict[tuple[str, str, str], CellComparison],
) -> list[Heatmap]:
    maps = []
    for pi, pair in enumerate(pairs):
        for f in facets:
            rows = []
            for grid_row in f.grid:
                row: list[HeatCell | None] = []
                for cid in grid_row:
                    comp = by_key.get((cid, *pair)) if cid else None
                    if comp is None:
                        row.append(None)
                        continue
                    bg, fg = cell_colors(comp.verdict, comp.percent_difference)
                    row.append(HeatCell(comp, bg, fg))
                rows.append(row)
            maps.append(
                Heatmap(
                    id=f"heatmap-{pi}-{f.index}",
                    pair=pair,
                    facet_title=f.title,
                    row_dim=layout.row,
                    col_dim=layout.col,
                    row_labels=[format_dim(layout.row, v) for v in f.row_values],
                    col_labels=[format_dim(layout.col, v) for v in f.col_values],
                    rows=rows,
                    cell_ids=f.grid,
                )
            )
    return maps


# ---------------------------------------------------------------- other sections


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix or "value": d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(_flatten(v, key) if isinstance(v, dict) else {key: v})
    return out


def _check_lines(configured: Any, measured: Any) -> list[dict[str, Any]]:
    """Quantities of one link check. `measured` is either linkcheck's result (a "rows" list
    of direction/quantity/unit/measured/expected/low/high/ok/note) or any dict, shown
    flattened next to the same keys of `configured`."""
    if isinstance(measured, dict) and isinstance(measured.get("rows"), list):
        out = []
        for r in measured["rows"]:
            low, high = r.get("low"), r.get("high")
            band = "" if low is None and high is None else f"{fmt(low)} .. {fmt(high)}"
            unit = f" {r['unit']}" if r.get("unit") else ""
            out.append(
                {
                    "key": f"{r.get('direction', '')} {r.get('quantity', '')}".strip(),
                    "configured": fmt(r.get("expected")) + (unit if r.get("expected") is not None else ""),
                    "measured": fmt(r.get("measured")) + unit,
                    "band": band,
                    "ok": r.get("ok"),
                    "note": r.get("note") or "",
                }
            )
        return out
    conf, meas = _flatten(configured or {}), _flatten(measured or {})
    return [
        {"key": k, "configured": fmt(conf.get(k)), "measured": fmt(meas.get(k)), "band": "", "ok": None, "note": ""}
        for k in dict.fromkeys([*conf, *meas])
    ]


def _link_check_rows(checks: pd.DataFrame) -> list[dict[str, Any]]:
    """One table row per profile and quantity: configured (expected) next to measured."""
    rows = []
    for _, chk in checks.iterrows():
        lines = _check_lines(chk["configured"], chk["measured"]) or [
            {"key": "", "configured": "", "measured": "", "band": "", "ok": None, "note": ""}
        ]
        for i, line in enumerate(lines):
            rows.append(
                {
                    **line,
                    "profile": chk["profile_name"],
                    "span": len(lines),
                    "first": i == 0,
                    "passed": bool(chk["passed"]),
                    "detail": chk["detail"] if isinstance(chk["detail"], str) else "",
                }
            )
    return rows


# ---------------------------------------------------------------- assembly


def _distributions(an: Analysis, facets: list[Facet], layout: Layout) -> list[dict[str, str]]:
    """One small-multiples figure per facet, panels placed like the heatmap's cells."""
    arms = [a.label for a in an.scenario.arm_list()] if an.scenario else list(dict.fromkeys(an.runs.get("arm", [])))
    good = an.counted()
    name = an.metric.name
    values = {k: g[name].to_numpy() for k, g in good.groupby(["cell_id", "arm"])} if not good.empty else {}
    out = []
    for f in facets:
        panels = [[({a: values.get((cid, a), []) for a in arms} if cid else None) for cid in row] for row in f.grid]
        svg = distribution_grid(
            panels,
            arms,
            [format_dim(layout.row, v) for v in f.row_values],
            [format_dim(layout.col, v) for v in f.col_values],
            element_id=f"distributions-{f.index}",
            metric_label=f"{an.metric.name.removesuffix('_ms')} ({an.metric.unit})",
        )
        out.append({"title": f.title, "svg": svg})
    return out


def _counts(an: Analysis) -> dict[str, Any]:
    """The header's numbers: runs by status, n per arm and per cell, verdicts."""
    runs = an.runs
    good = an.counted() if not runs.empty else runs
    per_cell_n = [min(c.a.n, c.b.n) for c in an.comparisons]
    verdicts: dict[str, int] = {}
    for c in an.comparisons:
        verdicts[c.verdict_text] = verdicts.get(c.verdict_text, 0) + 1
    zero_rtt = {}
    if not good.empty and "zero_rtt_attempted" in good and good["zero_rtt_attempted"].fillna(False).astype(bool).any():
        for arm, g in good.groupby("arm", sort=False):
            tried = g["zero_rtt_attempted"].astype(bool)
            zero_rtt[arm] = (int((tried & g["zero_rtt_accepted"].astype(bool)).sum()), int(tried.sum()), len(g))
    return {
        "n_runs": len(runs),
        "n_usable": len(good),
        "n_cells": len(an.cells),
        "zero_rtt": zero_rtt,
        "status_counts": runs["status"].value_counts().to_dict() if not runs.empty else {},
        "n_per_arm": good.groupby("arm").size().to_dict() if not good.empty else {},
        "n_min": min(per_cell_n, default=0),
        "n_max": max(per_cell_n, default=0),
        "verdict_counts": verdicts,
    }


def _free(an: Analysis) -> frozenset[str]:
    return getattr(an.kind, "metric_free_arms", frozenset())


def _completion(an: Analysis) -> dict[tuple[str, str], str]:
    """(cell, arm) -> "counted/tried" rounds: how often each arm finished, beside its metric."""
    done = completion(an.runs, an.metric.name, exclude_flagged=an.exclude_flagged, metric_free_arms=_free(an))
    return {(c, a): f"{k}/{n}" for c, a, n, k in done[["cell_id", "arm", "rounds", "counted"]].itertuples(index=False)}


def _excluded_rows(an: Analysis, directory: Path) -> list[dict[str, Any]]:
    runs = an.runs
    if runs.empty:
        return []
    left_out = runs[
        ~counted_mask(
            runs, an.metric.name if an.pairs else None, exclude_flagged=an.exclude_flagged, metric_free_arms=_free(an)
        )
    ]
    return [
        {
            "run_id": r["run_id"],
            "cell_id": r["cell_id"],
            "round": r["round"],
            "arm": r["arm"],
            "attempt": r["attempt"],
            "status": r["status"],
            "reason": exclusion_reason(r, an.metric.name, exclude_flagged=an.exclude_flagged),
            "files": Markup(artifact_links(r["artifacts"], directory)),
        }
        for _, r in left_out.iterrows()
    ]


def _fidelity(runs: pd.DataFrame) -> dict[str, Any]:
    """The audits of all runs in a few numbers (core.audit)."""
    if runs.empty:
        return {
            "audited": 0,
            "flagged": 0,
            "late_releases": 0,
            "released": 0,
            "runs_with_late": 0,
            "max_late": None,
            "kernel_drops": None,
            "stalls": 0,
            "runs_with_stalls": 0,
            "max_stall": None,
        }
    audited = runs["audit_released"].notna()
    num = lambda c: pd.to_numeric(runs[c], errors="coerce")  # noqa: E731
    return {
        "audited": int(audited.sum()),
        "flagged": int(runs["audit_flagged"].fillna(False).astype(bool).sum()),
        "late_releases": int(num("audit_late_releases").fillna(0).sum()),
        "released": int(num("audit_released").fillna(0).sum()),
        "runs_with_late": int((num("audit_late_releases") > 0).sum()),
        "max_late": num("audit_max_release_late_ms").max(),
        "kernel_drops": num("audit_kernel_queue_drops").sum(min_count=1),
        "stalls": int(num("audit_stalls").fillna(0).sum()),
        "runs_with_stalls": int((num("audit_stalls") > 0).sum()),
        "max_stall": num("audit_max_stall_ms").max(),
    }


def render_report(
    store: Store, *, test: Test | None = None, alpha: float | None = None, holm: bool | None = None
) -> str:
    """The report's HTML. test/alpha/holm override the scenario's [statistics]."""
    an = analyse(store, test=test, alpha=alpha, holm=holm)
    layout = choose_layout(list(an.cells["dims"]))
    facets = _facets(an.cells, layout)
    by_key = {(c.cell_id, *c.pair): c for c in an.comparisons}
    checks = store.link_checks_frame()
    names = [display_name(x) for x in an.pairs[0]] if an.pairs else ["A", "B"]
    return (
        environment()
        .get_template("report.html.j2")
        .render(
            exp=an.experiment,
            scenario=an.scenario,
            stats=an.statistics,
            pairs=an.pairs,
            comparisons=an.comparisons,
            **_counts(an),
            metric=an.metric,
            better_word=better_word(an.metric),
            exclude_flagged=an.exclude_flagged,
            fidelity=_fidelity(an.runs),
            fidelity_limits=an.fidelity,
            dim_titles=DIM_TITLES,
            heatmaps=_heatmaps(facets, layout, an.pairs, by_key),
            legend=legend_stops(*names),
            full_at=FULL_AT_PERCENT,
            distributions=_distributions(an, facets, layout),
            link_checks=_link_check_rows(checks),
            failed_checks=list(dict.fromkeys(checks.loc[~checks["passed"].astype(bool), "profile_name"])),
            excluded=_excluded_rows(an, Path(store.directory)),
            completion=_completion(an),
            versions_json=json.dumps(an.experiment.get("versions") or {}, indent=2, sort_keys=True, default=str),
            scenario_toml=an.experiment.get("scenario_toml") or "",
            extra_sections=extra_sections(store, an),
            generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        )
    )


def build_report(
    directory: str | Path,
    out: str | Path | None = None,
    *,
    test: Test | None = None,
    alpha: float | None = None,
    holm: bool | None = None,
) -> Path:
    """Write the report (default DIR/report.html) and return its path."""
    directory = Path(directory)
    with Store.open(directory, read_only=True) as store:
        html = render_report(store, test=test, alpha=alpha, holm=holm)
    out = Path(out) if out else directory / "report.html"
    tmp = out.with_suffix(out.suffix + ".tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(html)
        tmp.replace(out)  # never leave half a report
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise LonglookError(
            f"cannot write the report to {out}: {e.strerror}", hint="give a writable path with --out"
        ) from None
    return out
