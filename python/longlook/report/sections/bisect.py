"""The page of a bisect (`longlook bisect` writes it beside its JSON): the whole path, each
release each step measured with its mean and 95% interval, the midpoint of the step's ends,
the verdict and its error rate; and at each change found, what `states diff` finds between
the release before and the one after, listed as the Releases section lists it. Not a section
of an experiment's report (a bisect spans one experiment per step): no `section` here."""

from __future__ import annotations

import math
from html import escape

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ...analyses.compare.page import render_page  # noqa: E402
from ...render.figures import to_svg  # noqa: E402
from ...render.html import Section  # noqa: E402
from ...render.palette import MUTED, SERIES  # noqa: E402
from .releases import change_item  # noqa: E402


def _n(x: float, fmt: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def path_figure(res, metric_label: str) -> str:
    """Each step's releases (mean, 95% interval), side by side per step; a dashed segment at
    the midpoint of its ends; a vertical line at each change found."""
    x_of = {r: i for i, r in enumerate(res.releases)}
    fig, ax = plt.subplots(figsize=(2.0 + 0.5 * len(res.releases), 3.2))
    width = 0.5 / max(1, len(res.steps))
    for k, s in enumerate(res.steps):
        color = SERIES[k % len(SERIES)]
        dx = -0.25 + width * (k + 0.5)
        xs = [x_of[p.release] + dx for p in s.points]
        means = [p.mean for p in s.points]
        err = [
            [0 if math.isnan(p.low) else p.mean - p.low for p in s.points],
            [0 if math.isnan(p.high) else p.high - p.mean for p in s.points],
        ]
        ax.errorbar(xs, means, yerr=err, fmt="o", ms=3.5, lw=1.0, capsize=2, color=color, label=f"step {k}")
        if len(s.points) == 3 and not any(math.isnan(m) for m in (means[0], means[2])):
            ax.plot([xs[0], xs[2]], [(means[0] + means[2]) / 2] * 2, ls=":", lw=0.9, color=color)
        ax.annotate(
            s.verdict,
            (x_of[s.release] + dx, means[-2 if len(means) == 3 else -1]),
            fontsize=6,
            color=color,
            xytext=(3, 3),
            textcoords="offset points",
        )
    for c in res.changes:
        ax.axvline(x_of[c.after] - 0.5, color=MUTED, ls="--", lw=1.0)
    ax.set_xticks(range(len(res.releases)))
    ax.set_xticklabels(res.releases, fontsize=6, rotation=45, ha="right")
    ax.set_ylabel(metric_label, fontsize=7)
    ax.tick_params(labelsize=7)
    ax.grid(axis="y", color=MUTED, alpha=0.3, lw=0.5)
    ax.legend(fontsize=6, frameon=False, loc="best")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout(pad=0.5)
    return to_svg(fig, "bisect-path")


def _interval(c: float, lo: float, hi: float) -> str:
    return f"{_n(c, '+.1f')}% ({_n(lo, '+.1f')}..{_n(hi, '+.1f')}%)"


def path_table(res) -> str:
    rows = []
    for s in res.steps:
        measured = "<br>".join(
            f"{escape(p.release)}: {_n(p.mean, ',.1f')} ({_n(p.low, ',.1f')}..{_n(p.high, ',.1f')}), "
            f"n {p.n} of {escape(p.completion)}"
            for p in s.points
        )
        vs_high = _interval(s.change_vs_high_pct, *s.interval_vs_high) if s.index else ""
        verdict = escape(s.verdict) + (f"<br><span class=note>{escape(s.reason)}</span>" if s.reason else "")
        rows.append(
            f"<tr><td class=num>{s.index}</td><td>{escape(s.release)}</td>"
            f"<td>{escape(s.ends[0])}..{escape(s.ends[1])}</td>"
            f"<td class=num>{s.rounds} ({', '.join(map(str, s.looks))})</td><td class=nowrap>{measured}</td>"
            f"<td class='num nowrap'>{_interval(s.change_pct, *s.interval)}</td>"
            f"<td class='num nowrap'>{vs_high}</td><td class=num>{_n(s.midpoint_pct, '+.1f')}%</td>"
            f"<td class=num>{_n(s.confidence, '.2%')}</td><td>{verdict}</td>"
            f"<td class=num>{_n(s.alpha * len(s.looks) if s.looks else math.nan, '.2g')}</td></tr>"
        )
    head = (
        "<tr><th>step</th><th>release</th><th>range</th><th>rounds (looks)</th>"
        "<th>measured: mean (95% interval), counted of tried</th><th>vs low end</th><th>vs high end</th>"
        "<th>midpoint vs low end</th><th>confidence</th><th>verdict</th><th>each claim wrong at most</th></tr>"
    )
    return (
        f"<div class=scroll><table class=data id=bisect-steps><thead>{head}</thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def bisect_page(res, diffs: dict[int, list], metric_label: str = "") -> str:
    """The whole page: `diffs` maps a change's index in res.changes to its states diffs."""
    note = (
        f"<p class=note>Each step measures its releases alternating within rounds and decides at the "
        f"first of its looks whose test decides; the changes are the metric's own (release against "
        f"end, + = up), with intervals at the step's confidence. A release is placed against "
        f"{escape(res.margin_text())}. Each claim of a step is wrong at most {res.step_alpha:.3g}; "
        f"the path names a wrong release at most {res.error_bound():.3g} of the time.</p>"
    )
    path = Section("path", "The path", note + path_figure(res, metric_label) + path_table(res))
    items = []
    for i, c in enumerate(res.changes):
        share = (
            ""
            if math.isnan(c.share_low)
            else f", carrying {c.share:.0%} of the change ({c.share_low:.0%}..{c.share_high:.0%})"
        )
        size = f"{_interval(c.change_pct, *c.interval)} at {_n(c.confidence, '.2%')}{share} (step {c.step})"
        items.append(change_item(c.before, c.after, size, diffs.get(i, [])))
    unplaced = "".join(
        f"<li>{escape(lo)}..{escape(hi)}: not placed ({escape(why)})</li>" for lo, hi, why in res.unplaced
    )
    changes = Section(
        "changes",
        "Where it changed",
        f"<ul>{''.join(items)}{unplaced}</ul>" if items or unplaced else "<p>No change.</p>",
    )
    summary = [
        ("releases", ", ".join(res.releases)),
        ("outcome", res.outcome),
        ("alpha", f"{res.alpha:g} (each claim of a step {res.step_alpha:.3g})"),
        (
            "steps",
            f"{len(res.steps)} of at most {res.max_steps()} for one change, {sum(s.rounds for s in res.steps)} rounds",
        ),
    ]
    return render_page(f"bisect {res.stack} {res.good}..{res.bad}", res.summary(), summary, [path, changes])
