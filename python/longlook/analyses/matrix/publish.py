"""The matrix on a published page (`longlook matrix --out DIR --no-run --publish docs/matrix.md`).
The page keeps its own prose; its generated part, between two marker lines, is replaced by
this run's: when and on what each scenario ran (its dates, active wall time, arms, runs ok,
failed and flagged by their path audit, the code's commits, the implementations' versions, the
machine), then the grids `longlook matrix` writes to DIR/matrix.md, one heading level down.
What a run showed, said in words, stays the page's: a person writes it."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path

from ...core.store import Store
from ...errors import LonglookError
from ..reproduce.activity import active_seconds, sessions, stamps as _stamps
from ..reproduce.publish import host

BEGIN = "<!-- longlook matrix --publish: generated from here -->"
END = "<!-- longlook matrix --publish: generated up to here -->"
# the scenarios `longlook matrix` runs into DIR, in the order it runs them, and their names here
INTEROP = ("experiment", "interoperability")


def scenario_folders(out: Path) -> list[tuple[str, Path]]:
    """(name, folder) of each scenario DIR holds a run of: the interoperability grid, the
    moves, then each performance grid by rate (and its `-why` runs)."""
    found = [(INTEROP[1], out / INTEROP[0]), ("rebinding", out / "rebinding"), ("migration", out / "migration")]

    def rate(p: Path) -> float:
        return float(p.name.split("-")[1])

    perf = sorted((p for p in out.glob("perf-*") if p.is_dir()), key=lambda p: (rate(p), p.name))
    found += [(p.name, p) for p in perf]
    return [(name, folder) for name, folder in found if (folder / "longlook.duckdb").is_file()]


def scenario_row(name: str, folder: Path) -> dict:
    with Store.open(folder, read_only=True) as store:
        runs = store.runs_frame()
        aside = store.set_aside_frame()
        exp = store.experiment() or {}
        stamps = _stamps(store)
    versions = exp.get("versions") or {}
    versions = json.loads(versions) if isinstance(versions, str) else versions
    commits = [versions.get("commit"), *[r.get("commit") for r in versions.get("resumed", [])]]
    ok = int((runs["status"] == "ok").sum()) if len(runs) else 0
    return {
        "name": name,
        "arms": int(runs["arm"].nunique()) if len(runs) else 0,
        "runs": len(runs),
        "ok": ok,
        "not_ok": len(runs) - ok,
        "flagged": int(runs["audit_flagged"].fillna(False).astype(bool).sum()) if "audit_flagged" in runs else 0,
        "sessions": sessions(stamps),
        "active_s": active_seconds(stamps),
        "commits": list(dict.fromkeys(c for c in commits if c)),
        "versions": versions,
        # failed runs set aside to run again (`longlook again`): how many, and why
        "set_aside": {str(k): int(n) for k, n in aside.groupby("set_aside_because").size().items()},
    }


def _when(spans: list[tuple[datetime, datetime]]) -> str:
    def span(a: datetime, b: datetime) -> str:
        end = b.strftime("%H:%M") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M")
        return f"{a:%Y-%m-%d %H:%M}-{end}"

    return ", ".join(span(a, b) for a, b in spans) or "-"


def _stacks(versions: dict) -> dict:
    """Every stack an experiment ran, including those a resumed session added (a release that
    joined the matrix later: recorded as a change of the experiment's stacks)."""
    stacks = dict(versions.get("stacks") or {})
    for resumed in versions.get("resumed") or []:
        stacks.update(((resumed.get("changed") or {}).get("stacks") or {}).get("now") or {})
    return stacks


def provenance_markdown(rows: list[dict], command: str, now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    lines = [
        f"Generated {now:%Y-%m-%d %H:%M} UTC by",
        "",
        f"    {command}",
        "",
        "from the results of a real run. Times are UTC; wall time is summed over the sessions that",
        "measured (a scenario resumed the next day does not count the night).",
        "",
        "| scenario | arms | runs | ok | not ok | flagged | measured | sessions | wall |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['arms']} | {r['runs']} | {r['ok']} | {r['not_ok']} | {r['flagged']} "
            f"| {_when(r['sessions'])} | {len(r['sessions'])} | {r['active_s'] / 60:.1f} min |"
        )
    for r in rows:
        for why, n in (r.get("set_aside") or {}).items():
            lines += ["", f"{r['name']}: {n} failed runs set aside and run again (`longlook again`): {why}"]
    first = rows[0]["versions"] if rows else {}
    stacks = {k: v for r in rows for k, v in _stacks(r["versions"]).items()}
    if stacks:
        lines += ["", "Implementations: " + "; ".join(sorted(stacks.values())) + "."]
    ours = [first.get(k) for k in ("endpoint", "linkem") if first.get(k)]
    if ours:
        lines += ["", "Ours: " + ", ".join(ours) + "."]
    commits = list(dict.fromkeys(c for r in rows for c in r["commits"]))
    if commits:
        lines += ["", "Code: commit " + ", ".join(commits) + " (each session's, first to last)."]
    h = host()
    lines += [
        "",
        f"Published on: {h['cpu']}, {h['cores']} vCPUs, {h['memory_gib']} GiB, kernel {h['kernel']} ({h['arch']}); "
        "each session's kernel is in its store.",
    ]
    return "\n".join(lines) + "\n"


def demote(text: str) -> str:
    """The matrix's markdown one heading level down, its title line left out (the page has its own)."""
    out = []
    for i, line in enumerate(text.splitlines()):
        if i == 0 and line.startswith("# "):
            continue
        out.append("#" + line if re.match(r"#+ ", line) else line)
    return "\n".join(out).strip("\n") + "\n"


def generated_part(out: Path, matrix_text: str, command: str, now: datetime | None = None) -> str:
    rows = [scenario_row(name, folder) for name, folder in scenario_folders(out)]
    return provenance_markdown(rows, command, now) + "\n" + demote(matrix_text)


def place(target: Path) -> tuple[str, str] | None:
    """The page's text before its generated part and after it (None: no page yet). A page
    without both markers, in order, is one clear error: where the grids go is the page's
    choice."""
    if not target.exists():
        return None
    page = target.read_text()
    begin, end = page.find(BEGIN), page.find(END)
    if begin < 0 or end < begin:
        raise LonglookError(
            f"{target}: no place for the generated matrix (its two marker lines, in order)",
            hint=f"put the lines `{BEGIN}` and `{END}` where the grids go",
        )
    return page[:begin], page[end + len(END) :].lstrip("\n")


def publish(target: Path, part: str) -> None:
    """Write `part` between the page's markers (a new page: the part alone, with them)."""
    block = f"{BEGIN}\n\n{part.strip()}\n\n{END}\n"
    around = place(target)
    if around is None:
        target.write_text("# The QUIC matrix\n\n" + block)
        return
    before, after = around
    target.write_text(before + block + ("\n" + after if after else ""))
