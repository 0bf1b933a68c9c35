"""The published reproduction (`longlook reproduce --publish docs/reproduction.md`): the claims
table of a finished run with what a reader needs to trust and redo it — when and on what it
was measured (dates, machine, kernel, the code's commit per session, the binaries), the wall
time the measuring really took (summed over sessions, from the stores: a run resumed the next
day does not count the night), the share of claims that ended conclusive, each "does not
hold" explained in words from the state machines its explain step wrote, and the commands that
regenerate it. Links into the results folder are left out: the folder is not published.

The claims table has one row per finding of a paper (its sentence, the paper's number, how it
is tested, ours with its interval and n, the claim's own p, the verdict, and the cells of its
figure the budget left out); only these rows are counted. Our own hypotheses, interventions and
checks of our client follow in a table of their own, then the findings only the field can
measure, and the rows of the previous registry merged into one."""

from __future__ import annotations

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path


from ...core.store import Store
from .activity import SESSION_GAP_S, active_seconds, sessions, stamps as _stamps
from .changes import Earlier, changes, read_earlier, section as changes_section
from .cpu_curve import curve_section
from .claims import OURS, PAPER
from .output import Reproduction, Row, quoted
from .registry import FIELD_ONLY, MERGED

CONCLUSIVE_GOAL = 0.8


def provenance(result: Reproduction) -> dict:
    """Per scenario: its dates, active wall time, runs and flagged runs, versions; and the
    machine this is published on."""
    scenarios, commits, versions = [], [], {}
    for s in result.scenarios:
        if not s.has_data:
            continue
        with Store.open(s.directory, read_only=True) as store:
            exp = store.experiment() or {}
            runs = store.runs_frame()
            stamps = _stamps(store)
        v = exp.get("versions") or {}
        v = json.loads(v) if isinstance(v, str) else v
        versions = versions or v
        own = list(dict.fromkeys(c for c in [v.get("commit"), *[r.get("commit") for r in v.get("resumed", [])]] if c))
        commits += [c for c in own if c not in commits]
        flagged = int(runs["audit_flagged"].fillna(False).astype(bool).sum()) if "audit_flagged" in runs else 0
        scenarios.append(
            {
                "name": s.name,
                "runs": len(runs),
                "flagged": flagged,
                "first": min(stamps) if stamps else None,
                "last": max(stamps) if stamps else None,
                "active_s": active_seconds(stamps),
                "sessions": len(sessions(stamps)),
                "commits": own,  # the commit of each session that measured it, first to last
            }
        )
    return {"scenarios": scenarios, "commits": commits, "versions": versions, "host": host()}


def host() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kib = next(
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    except (OSError, StopIteration, ValueError):
        mem_kib = 0
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "arch": platform.machine(),
    }


def _dwell_text(machine: dict) -> str:
    states = sorted(machine.get("states") or [], key=lambda s: -float(s.get("dwell_share") or 0))
    parts = [f"{s['state']} {float(s.get('dwell_share') or 0) * 100:.0f}%" for s in states[:4]]
    # congestion responses counted alike for QUIC and TCP: entries into Recovery (TCP's Loss,
    # an RTO, too); a QUIC stack's loss batches (one per ACK that declared a loss) are not
    # congestion events and would read as more of them than TCP's
    runs = int(machine.get("runs") or 0)
    entries = sum(
        int(s.get("entries") or 0) for s in machine.get("states") or [] if s.get("state") in ("Recovery", "Loss")
    )
    recoveries = f"; {entries / runs:.1f} Recovery entries per run" if runs else ""
    who = " ".join(str(x) for x in (machine.get("protocol"), machine.get("stack"), machine.get("arm")) if x)
    return f"{who} ({machine.get('runs')} runs): {', '.join(parts) or 'no states'}{recoveries}"


def _diff_text(diff: dict) -> list[str]:
    rows = [r for r in diff.get("rows", []) if r.get("status") != "same"]
    out = []
    for r in rows[:6]:
        out.append(
            f"{r['item']} {r['status']} in {diff['b']} than {diff['a']} "
            f"({float(r['mean_a']):.2f} -> {float(r['mean_b']):.2f} per run, Holm p {float(r['p_adjusted']):.2g})"
        )
    return out or [f"no transition differs between {diff['a']} and {diff['b']} at alpha {diff.get('alpha')}"]


def explanation(row: Row, out: Path) -> list[str]:
    """Words for a "does not hold": what was measured against the claim, how our test differs
    from the paper's, and the state machines of the cell against it (and its unimpaired twin)."""
    o, c = row.outcome, row.claim
    lines = [f"Measured: {o.number} (n {o.n}, p {o.p_text})" + (f"; {o.detail}" if o.detail else "") + "."]
    if c.note:
        lines.append(f"How our test differs from the paper's: {c.note}")
    target = out / "explain" / c.id
    cell = (target / "cell.txt").read_text().strip() if (target / "cell.txt").exists() else None
    states = json.loads((target / "states.json").read_text()) if (target / "states.json").exists() else None
    if states:
        lines.append(
            f"State machines of the cell against the claim ({cell}): "
            + "; ".join(_dwell_text(m) for m in states.get("machines", []))
            + "."
        )
    diff = target / "states-diff.json"
    if diff.exists():
        for d in json.loads(diff.read_text()).get("diffs", []):
            lines.append(f"Against its unimpaired twin ({d['protocol']}): " + "; ".join(_diff_text(d)) + ".")
    if not states and not diff.exists():
        lines.append(
            "No state-machine logs for this claim's cell (its scenario keeps none, or the cell had no runs "
            "with logs): explained by the numbers above only."
        )
    return lines


def _fmt_time(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%d %H:%M UTC") if t else "-"


def publish_markdown(result: Reproduction, command: str, earlier: Earlier | None = None) -> str:
    prov = provenance(result)
    scen = prov["scenarios"]
    active = sum(s["active_s"] for s in scen)
    counts = result.counts()
    judged = sum(counts.values())
    conclusive = counts.get("holds", 0) + counts.get("does not hold", 0)
    with_needs = sum(
        1 for r in result.rows if r.claim.kind == PAPER and r.outcome.verdict == "inconclusive" and r.outcome.needs
    )
    ours = result.counts(OURS)
    first = min((s["first"] for s in scen if s["first"]), default=None)
    last = max((s["last"] for s in scen if s["last"]), default=None)
    v, h = prov["versions"], prov["host"]
    stacks = {
        k: val
        for k, val in v.items()
        if k
        not in (
            "longlook",
            "commit",
            "python",
            "kernel",
            "machine",
            "packages",
            "endpoint",
            "linkem",
            "testbed",
            "resumed",
        )
    }
    lines = [
        f"# Reproduction of the papers' claims: `--budget {result.budget}`",
        "",
        f"Generated {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by `{command}` from the results of a "
        f"real run. **{conclusive} of {judged} findings of the papers conclusive "
        f"({conclusive / max(judged, 1):.0%}; goal >= {CONCLUSIVE_GOAL:.0%})**: "
        + ", ".join(f"{k} {n}" for k, n in counts.items())
        + (f"; {with_needs} inconclusive claim(s) say the rounds they would need" if with_needs else "")
        + (
            f". Not counted: {sum(ours.values())} rows of ours ("
            + ", ".join(f"{k} {n}" for k, n in ours.items())
            + f"), {len(FIELD_ONLY)} findings only the field can measure."
            if ours
            else f". Not counted: {len(FIELD_ONLY)} findings only the field can measure."
        ),
        "",
        "## Provenance",
        "",
        f"- measured {_fmt_time(first)} to {_fmt_time(last)}; **wall time {active / 3600:.2f} h** of measuring "
        f"(summed over sessions, gaps over {SESSION_GAP_S // 60} min left out), "
        f"{sum(s['runs'] for s in scen):,} runs, {sum(s['flagged'] for s in scen)} flagged by their path audit"
        + (" and counted (--include-flagged)" if result.include_flagged else " and not counted"),
        f"- machine: {h['cpu']}, {h['cores']} vCPUs, {h['memory_gib']} GiB, kernel {h['kernel']} ({h['arch']})"
        + (f"; the runs' kernel: {v.get('kernel')}" if v.get("kernel") and v.get("kernel") != h["kernel"] else ""),
        f"- code: longlook {v.get('longlook', '?')}, commit(s) {', '.join(prov['commits']) or 'not recorded'}; "
        f"endpoint {v.get('endpoint', '?')}; linkem {v.get('linkem', '?')}; Python {v.get('python', '?')}",
    ]
    if stacks:
        lines.append(
            "- what the first experiment ran beyond the core: "
            + "; ".join(
                f"{k} {json.dumps(val, default=str) if not isinstance(val, str) else val}" for k, val in stacks.items()
            )
        )
    lines += ["", "| scenario | runs | flagged | sessions | wall | commits |", "|---|---|---|---|---|---|"]
    lines += [
        f"| {s['name']} | {s['runs']} | {s['flagged']} | {s['sessions']} | {s['active_s'] / 60:.1f} min | "
        f"{', '.join(_short_commit(c) for c in s.get('commits', [])) or '-'} |"
        for s in scen
    ]
    lines += [
        "",
        "## Claims of the papers",
        "",
        "One row per finding, as the paper states it; p is the claim's own test (the one whose smallness "
        "makes it hold), and a claim tested on fewer cells than its figure has names the cells its budget "
        "left out.",
        "",
        _table(result, PAPER),
        "",
    ]
    if any(r.claim.kind == OURS for r in result.rows):
        lines += [
            "## Our own hypotheses, interventions and checks (not counted)",
            "",
            _table(result, OURS),
            "",
        ]
    if earlier is not None:
        rows = [(r.claim, table_row(r)) for r in result.rows]
        found = changes(earlier, rows)
        moved = {c.claim for c in found}
        lines += changes_section(earlier, found, sum(1 for c, _ in rows if c.id not in moved))
    lines += curve_section(result.scenarios)
    lines += ["## Findings only the field can measure (not tested)", ""]
    lines += [
        f"- **{f.id}** ({f.paper}, {f.where}): \u201c{f.quote}\u201d ({f.paper_number}). Not tested: {f.why}."
        for f in FIELD_ONLY
    ]
    lines += ["", "## One finding, one row", ""]
    lines += [f"- {old} is in {new} (the same finding, both papers named)." for old, new in MERGED.items()]
    if result.drift:
        lines += [
            "",
            "## Do runs drift across rounds?",
            "",
            "Every test above takes a cell's rounds as independent draws. If consecutive rounds were alike (a "
            "machine warming up, load that comes and goes), intervals would be too narrow. The lag-1 "
            "autocorrelation of each cell's series, in round order, is pooled over the experiments and tested "
            "against the same rounds shuffled:",
            "",
            *result.drift.markdown(),
        ]
    lines += ["", "## Why the claims that do not hold do not", ""]
    failing = [r for r in result.rows if r.outcome.verdict == "does not hold"]
    for r in failing:
        lines += [
            f"### {r.claim.id} ({r.claim.paper}, {r.claim.where})",
            "",
            f"> {quoted(r.claim) if r.claim.quote else r.claim.statement} (paper: {r.claim.paper_number})",
            "",
            f"Tested as: {r.claim.statement} ({r.claim.reads()})",
            "",
        ]
        lines += [f"- {t}" for t in explanation(r, result.out)] + [""]
    if not failing:
        lines += ["Every conclusive claim holds.", ""]
    lines += [
        "## Regenerate",
        "",
        "```sh",
        f"longlook reproduce --budget {result.budget} -o results/reproduce-{result.budget}"
        "   # resumable: rerun after an interruption",
        f"longlook reproduce --budget {result.budget} -o results/reproduce-{result.budget} --no-run "
        f"--publish docs/reproduction.md",
        "```",
        "",
    ]
    return "\n".join(lines)


def _short_commit(commit: str) -> str:
    """`d461ff655edb...+dirty` -> `d461ff655e+dirty`: enough to find it in the history."""
    base, dirty, _ = commit.partition("+")
    return base[:10] + (f"+{_}" if dirty else "")


COLUMNS = (
    "claim", "paper", "where", "the paper says", "paper's number", "tested as", "ours", "cells", "n", "p",
    "verdict", "would need", "measured by",
)  # fmt: skip


def table_row(r: Row) -> dict[str, str]:
    """A claim's row as the table prints it, column by column (the verdict without its bold)."""
    o, c = r.outcome, r.claim
    ours = o.number if o.verdict != "not run" else f"not run: {o.detail}"
    values = (
        c.id,
        c.paper + "".join(f"; also {a.paper}" for a in c.also),
        c.where,
        quoted(c) if c.quote or c.also else c.statement,
        c.paper_number,
        c.reads(),
        ours,
        o.coverage or "-",
        o.n,
        o.p_text,
        o.verdict,
        o.needs or "-",
        c.scenario,  # its sessions' commits are in the provenance table
    )
    return {k: str(v).replace("\n", " ") for k, v in zip(COLUMNS, values)}


def _table(result: Reproduction, kind: str = PAPER) -> str:
    def cell(key: str, s: str) -> str:
        s = s.replace("|", "\\|")
        return f"**{s}**" if key == "verdict" else s

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in result.rows:
        if r.claim.kind == kind:
            lines.append("| " + " | ".join(cell(k, v) for k, v in table_row(r).items()) + " |")
    return "\n".join(lines)


def publish(result: Reproduction, path: Path, command: str) -> Path:
    """Write the page to `path`; the page it replaces, if any, is the baseline its changes
    section is told against."""
    earlier = read_earlier(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(publish_markdown(result, command, earlier))
    tmp.replace(path)
    return path


__all__ = ["active_seconds", "sessions", "explanation", "provenance", "publish", "publish_markdown"]
