"""What moved each verdict against the last published table. The page being replaced is read
back (its tables are this module's own output, one row per claim), and each claim whose
verdict differs says what differs beside it: the criterion it is tested by, the cells it
reads (a budget's corner or the whole figure), its n, or only our number (the data). A
verdict that changed with nothing else named changed with the measurements alone.

Read from the markdown rather than a second file, so that any page published so far, from a
clean clone, is the baseline."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .claims import OURS, PAPER, Claim
from .registry import CLAIMS, MERGED

TABLES = {"## Claims of the papers": PAPER, "## Our own hypotheses": OURS}
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_BUDGET = re.compile(r"^# .*`--budget (\w+)`")
_GENERATED = re.compile(r"^Generated (\d{4}-\d\d-\d\d \d\d:\d\d UTC)")


@dataclass(frozen=True)
class Earlier:
    """An earlier published page: its budget, when it was made, and its rows by claim id."""

    budget: str
    generated: str
    rows: dict[str, dict[str, str]]


@dataclass(frozen=True)
class Change:
    claim: str
    kind: str
    before: str  # the earlier verdict, "" when the claim had no row
    now: str
    moved_by: list[str]  # what differs besides the verdict, in words


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") and not inner.endswith("\\|") else inner
    return [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(inner)]


def read_earlier(path: Path) -> Earlier | None:
    """The rows of the page at `path`; None when there is none or it has no claims table."""
    if not path.is_file():
        return None
    budget, generated, rows = "", "", {}
    header: list[str] | None = None
    kind = None
    for line in path.read_text().splitlines():
        if m := _BUDGET.match(line):
            budget = m.group(1)
        elif m := _GENERATED.match(line):
            generated = m.group(1)
        if line.startswith("## "):
            kind = next((k for prefix, k in TABLES.items() if line.startswith(prefix)), None)
            header = None
            continue
        if kind is None or not line.startswith("|"):
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        row = dict(zip(header, cells))
        row["verdict"] = row.get("verdict", "").strip("*")
        row["kind"] = kind
        rows[row.get("claim", "")] = row
    return Earlier(budget, generated, rows) if rows else None


def _moved(before: dict[str, str], now: dict[str, str]) -> list[str]:
    said = []
    for key, what in (("tested as", "the criterion"), ("cells", "the cells"), ("n", "n")):
        if before.get(key, "") != now.get(key, ""):
            said.append(f"{what}: {before.get(key) or '-'} -> {now.get(key) or '-'}")
    if not said:
        said.append(f"the data alone: {before.get('ours') or '-'} -> {now.get('ours') or '-'}")
    return said


def changes(earlier: Earlier, rows: list[tuple[Claim, dict[str, str]]]) -> list[Change]:
    """Each claim (with its row as the table prints it) whose verdict differs from the earlier
    page's, or that the earlier page did not have; and each earlier row no claim carries now
    (merged into another row, or dropped)."""
    out, seen = [], set()
    for claim, now in rows:
        old_ids = [claim.id, *(old for old, new in MERGED.items() if new == claim.id)]
        before = next((earlier.rows[i] for i in old_ids if i in earlier.rows), None)
        seen.update(old_ids)
        if before is None:
            out.append(Change(claim.id, claim.kind, "", now["verdict"], ["a new row"]))
        elif before["verdict"] != now["verdict"] or before.get("kind") != claim.kind:
            moved = _moved(before, now)
            if before.get("kind") != claim.kind:
                moved.insert(0, f"moved from the {before.get('kind')} table to the {claim.kind} one")
            out.append(Change(claim.id, claim.kind, before["verdict"], now["verdict"], moved))
    registered = {c.id for c in CLAIMS}
    for old_id, before in earlier.rows.items():
        if old_id not in seen and old_id not in registered:
            where = f"merged into {MERGED[old_id]}" if old_id in MERGED else "no longer a row"
            out.append(Change(old_id, before.get("kind", PAPER), before["verdict"], "", [where]))
    return out


def section(earlier: Earlier | None, found: list[Change], kept: int) -> list[str]:
    """The page's section on what changed; nothing when there was no earlier page."""
    if earlier is None:
        return []
    lines = [
        "## Changes against the last published table",
        "",
        f"The page this one replaced: `--budget {earlier.budget or '?'}`, generated {earlier.generated or '?'}. "
        f"{kept} claim(s) kept their verdict; {len(found)} changed, appeared or went. Beside each, what "
        "differs between the two rows besides the verdict: its criterion, its cells, its n, or the data alone.",
        "",
    ]
    if not found:
        return lines + ["No verdict changed.", ""]
    lines += ["| claim | table | before | now | what moved it |", "|---|---|---|---|---|"]
    for c in found:
        moved = "; ".join(m.replace("|", "\\|") for m in c.moved_by)
        lines.append(f"| {c.claim} | {c.kind} | {c.before or '-'} | {c.now or '-'} | {moved} |")
    return lines + [""]
