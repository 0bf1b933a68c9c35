"""The QUIC matrix across releases of a stack: where the grid holds a stack at several
versions (`longlook matrix --release quic-go@v0.63.0`: the release joins the grid as its own
client row and server column, built beside the default as a release sweep builds it), each
pair of that stack with every other stack and each case, release by release, so an
interoperability regression in a pair shows as a change between two releases.

A change is read, not inferred: two releases' cells with different verdicts (passed in one,
failed in the other), each with its runs passed of runs judged. With one run per pair a
failure can be a flaky run rather than the release: the counts say how much each verdict
rests on, and `--rounds` buys more."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import LonglookError
from packaging.version import InvalidVersion

from ...stacks.builds.releases import release_key
from ...stacks.registry import resolve, split
from . import MARK, NO_RUN, UNSUPPORTED, Cell, Matrix

# verdicts that say something about the release (a pair that was not run, or that the
# adapter declares it cannot do, is no change)
JUDGED = ("passed", "failed")


@dataclass(frozen=True)
class Change:
    stack: str  # the stack's name
    role: str  # "client" (the release's client against `partner`'s server) or "server"
    partner: str
    case: str
    cells: tuple[tuple[str, Cell], ...]  # (version, cell), oldest release first


def _order(version: str) -> tuple:
    """Releases by their numbers (stacks.builds.releases.release_key); a version that is no
    release number (our workspace build) after them, by name."""
    try:
        return (0, release_key(version), "")
    except InvalidVersion:
        return (1, None, version)


def releases(m: Matrix) -> dict[str, list[tuple[str, str]]]:
    """name -> [(version, spec)] oldest first, for every stack the grid holds at two or more
    versions (the plain name is its default version)."""
    by_name: dict[str, dict[str, str]] = {}
    for spec in dict.fromkeys(m.clients + m.servers):
        name, _ = split(spec)
        try:
            version = resolve(spec).version
        except LonglookError:  # Chromium, a client that is no stack, has no releases here
            continue
        by_name.setdefault(name, {})[version] = spec
    return {
        name: sorted(versions.items(), key=lambda kv: _order(kv[0]))
        for name, versions in by_name.items()
        if len(versions) > 1
    }


def changes(m: Matrix) -> tuple[list[Change], int]:
    """Every (stack, role, partner, case) whose judged verdicts differ between the stack's
    releases, and how many such rows were compared in all. A partner is any client or server
    of the grid that is not the same stack."""
    out, compared = [], 0
    for name, versions in releases(m).items():
        family = {spec for _, spec in versions}
        for role in ("client", "server"):
            partners = [p for p in (m.servers if role == "client" else m.clients) if p not in family]
            for partner in partners:
                for case in m.cases:
                    cells = []
                    for version, spec in versions:
                        key = (spec, partner, case) if role == "client" else (partner, spec, case)
                        cells.append((version, m.cells.get(key, Cell())))
                    judged = {c.verdict for _, c in cells if c.verdict in JUDGED}
                    if not judged:
                        continue
                    compared += 1
                    if len(judged) > 1:
                        out.append(Change(name, role, partner, case, tuple(cells)))
    return out, compared


def history_markdown(m: Matrix) -> str:
    """Per stack with several releases: the rows whose verdict changed between releases (the
    release's client against a server, or a client against the release's server), each
    release's mark with runs passed/judged; then how many rows were compared without a change."""
    found, compared = changes(m)
    by_stack = releases(m)
    if not by_stack:
        return ""
    out = []
    for name, versions in by_stack.items():
        rows = [c for c in found if c.stack == name]
        out += [f"### {name}: " + ", ".join(v for v, _ in versions), ""]
        if not rows:
            out += ["No pair and case changed between these releases.", ""]
            continue
        out += ["| as | partner | case | " + " | ".join(v for v, _ in versions) + " |"]
        out.append("|---|---|---|" + "---|" * len(versions))
        for c in rows:
            marks = [
                MARK[cell.verdict] + (f" {cell.passed}/{cell.judged}" if cell.judged else "")
                if cell.verdict in MARK
                else cell.verdict
                for _, cell in c.cells
            ]
            out.append(f"| {c.role} | {c.partner} | {c.case} | " + " | ".join(marks) + " |")
        out.append("")
        evidence = [
            f"- {name}@{version} as {c.role}, {c.partner}, {c.case}: {cell.evidence}"
            for c in rows
            for version, cell in c.cells
            if cell.verdict == "failed"
        ]
        out += evidence + ([""] if evidence else [])
    n_changed = len(found)
    out.append(
        f"Rows (a release's role, partner and case) with a judged verdict in some release: {compared}; "
        f"changed between releases: {n_changed}. Pairs not run or declared unsupported "
        f"({MARK[NO_RUN]}, {MARK[UNSUPPORTED]}) are no change."
    )
    return "\n".join(out) + "\n"
