"""The reproduction report: one row per claim (paper, where, the paper's sentence and number,
how it is tested, ours with its interval, n and p, verdict, the cells of its figure the budget
left out, the Mininet reproduction's verdict, links that explain a "does not hold"), as HTML
(render's templates and stylesheet), Markdown and JSON. The papers' findings are counted; our
own rows (kind OURS) are shown in a table of their own and not counted; findings only the
field can measure are listed."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ...render.html import environment
from .claims import OURS, PAPER, Claim
from .drift import RoundDrift
from .registry import FIELD_ONLY, MERGED
from .outcome import Outcome
from .scenarios import ScenarioRun

VERDICT_CLASS = {"holds": "holds", "does not hold": "fails", "inconclusive": "unclear", "not run": "notrun"}


@dataclass
class Row:
    claim: Claim
    outcome: Outcome
    scenario: ScenarioRun | None
    links: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict:
        c = self.claim
        return {
            "id": c.id,
            "paper": c.paper,
            "where": c.where,
            "statement": c.statement,
            "quote": c.quote,
            "quote_in": c.quote_in,
            "kind": c.kind,
            "also": [{"paper": a.paper, "where": a.where, "quote": a.quote, "number": a.number} for a in c.also],
            "missing": c.missing,
            "paper_number": c.paper_number,
            "scenario": c.scenario,
            "reads": c.reads(),
            "mininet": c.mininet,
            "note": c.note,
            **self.outcome.as_dict(),
            "experiment": str(self.scenario.directory) if self.scenario else None,
            "explain": [{"title": t, "path": p} for t, p in self.links],
        }


@dataclass
class Reproduction:
    budget: str
    out: Path
    rows: list[Row]
    scenarios: list[ScenarioRun]
    wall_s: float
    started: str
    include_flagged: bool = False  # runs the path audit flagged were counted
    drift: RoundDrift | None = None  # do the stores' runs drift across rounds

    def counts(self, kind: str = PAPER) -> dict[str, int]:
        """Verdicts of the papers' findings (`kind` OURS: of our own rows, never counted with them)."""
        out: dict[str, int] = {}
        for r in self.rows:
            if r.claim.kind == kind:
                out[r.outcome.verdict] = out.get(r.outcome.verdict, 0) + 1
        return out

    def as_dict(self) -> dict:
        return {
            "budget": self.budget,
            "out": str(self.out),
            "started": self.started,
            "wall_s": round(self.wall_s, 1),
            "counts": self.counts(),
            "counts_ours": self.counts(OURS),
            "field_only": [
                {
                    "id": f.id,
                    "paper": f.paper,
                    "where": f.where,
                    "quote": f.quote,
                    "number": f.paper_number,
                    "why": f.why,
                }
                for f in FIELD_ONLY
            ],
            "merged": MERGED,
            "include_flagged": self.include_flagged,
            "scenarios": [s.as_dict() for s in self.scenarios],
            "drift": self.drift.as_dict() if self.drift else None,
            "claims": [r.as_dict() for r in self.rows],
        }

    def markdown(self) -> str:
        def cell(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        papers = sum(r.claim.kind == PAPER for r in self.rows)
        lines = [
            f"# longlook reproduce --budget {self.budget}",
            "",
            f"{papers} findings of the papers: "
            + ", ".join(f"{k} {v}" for k, v in self.counts().items())
            + (
                f"; {len(self.rows) - papers} of ours (not counted): "
                + ", ".join(f"{k} {v}" for k, v in self.counts(OURS).items())
                if len(self.rows) > papers
                else ""
            )
            + f"; wall {self.wall_s / 60:.1f} min"
            + (
                "; **runs flagged by their path audit are counted** (--include-flagged)" if self.include_flagged else ""
            ),
            "",
            "| claim | paper | where | statement | the paper says | paper's number | tested as | ours | cells "
            "| n | p | verdict | would need | Mininet | explained by |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sorted(self.rows, key=lambda r: r.claim.kind != PAPER):
            o, c = r.outcome, r.claim
            ours = o.number if o.verdict != "not run" else f"not run: {o.detail}"
            links = ", ".join(f"[{t}]({p})" if p else t for t, p in r.links)
            lines.append(
                "| "
                + " | ".join(
                    cell(x)
                    for x in (
                        c.id + (" (ours, not counted)" if c.kind == OURS else ""),
                        c.paper + "".join(f"; also {a.paper}" for a in c.also),
                        c.where,
                        c.statement,
                        quoted(c),
                        c.paper_number,
                        c.reads(),
                        ours,
                        o.coverage or "-",
                        o.n,
                        o.p_text,
                        o.verdict,
                        o.needs or "-",
                        c.mininet or "-",
                        links or "-",
                    )
                )
                + " |"
            )
        lines += ["", "Field-only findings (not tested, not counted):", ""]
        lines += [f"- {f.id} ({f.paper}, {f.where}): {f.paper_number}; {f.why}" for f in FIELD_ONLY]
        lines += ["", "| scenario | status | wall | detail |", "|---|---|---|---|"]
        lines += [f"| {s.name} | {s.status} | {s.wall_s:.0f} s | {cell(s.detail)} |" for s in self.scenarios]
        if self.drift:
            lines += [
                "",
                "Do runs drift across rounds (every test above takes rounds as independent, unless widened below)?",
                "",
            ]
            lines += self.drift.markdown()
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        return (
            environment()
            .get_template("reproduce.html.j2")
            .render(
                r=self,
                paper_rows=[row for row in self.rows if row.claim.kind == PAPER],
                our_rows=[row for row in self.rows if row.claim.kind == OURS],
                ours_kind=OURS,
                field_only=FIELD_ONLY,
                merged=MERGED,
                quoted=quoted,
                classes=VERDICT_CLASS,
                generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            )
        )

    def write(self) -> list[Path]:
        self.out.mkdir(parents=True, exist_ok=True)
        files = [
            (self.out / "reproduction.html", self.html()),
            (self.out / "reproduction.md", self.markdown()),
            (self.out / "reproduction.json", json.dumps(self.as_dict(), indent=1, default=str) + "\n"),
        ]
        for path, text in files:
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text)
            tmp.replace(path)
        return [p for p, _ in files]


def quoted(c: Claim) -> str:
    """The paper's sentence as the row shows it, with the other papers making the same finding."""
    own = f"\u201c{c.quote}\u201d" + (f" (quoted in {c.quote_in})" if c.quote_in else "") if c.quote else "-"
    return own + "".join(f"; {a.paper}, {a.where}: \u201c{a.quote}\u201d ({a.number})" for a in c.also)
