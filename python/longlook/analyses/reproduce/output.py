"""The reproduction report: one row per claim (paper, where, statement, the paper's number,
ours with n and p, verdict, the Mininet reproduction's verdict, links that explain a "does
not hold"), as HTML (render's templates and stylesheet), Markdown and JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ...render.html import environment
from .claims import Claim
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

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.outcome.verdict] = out.get(r.outcome.verdict, 0) + 1
        return out

    def as_dict(self) -> dict:
        return {
            "budget": self.budget,
            "out": str(self.out),
            "started": self.started,
            "wall_s": round(self.wall_s, 1),
            "counts": self.counts(),
            "include_flagged": self.include_flagged,
            "scenarios": [s.as_dict() for s in self.scenarios],
            "claims": [r.as_dict() for r in self.rows],
        }

    def markdown(self) -> str:
        def cell(s: str) -> str:
            return s.replace("|", "\\|").replace("\n", " ")

        lines = [
            f"# longlook reproduce --budget {self.budget}",
            "",
            f"{len(self.rows)} claims: "
            + ", ".join(f"{k} {v}" for k, v in self.counts().items())
            + f"; wall {self.wall_s / 60:.1f} min"
            + (
                "; **runs flagged by their path audit are counted** (--include-flagged)" if self.include_flagged else ""
            ),
            "",
            "| claim | paper | where | statement | paper's number | ours | n | p | verdict "
            "| would need | Mininet | explained by |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            o, c = r.outcome, r.claim
            ours = o.number if o.verdict != "not run" else f"not run: {o.detail}"
            links = ", ".join(f"[{t}]({p})" if p else t for t, p in r.links)
            lines.append(
                "| "
                + " | ".join(
                    cell(x)
                    for x in (
                        c.id,
                        c.paper,
                        c.where,
                        c.statement,
                        c.paper_number,
                        ours,
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
        lines += ["", "| scenario | status | wall | detail |", "|---|---|---|---|"]
        lines += [f"| {s.name} | {s.status} | {s.wall_s:.0f} s | {cell(s.detail)} |" for s in self.scenarios]
        return "\n".join(lines) + "\n"

    def html(self) -> str:
        return (
            environment()
            .get_template("reproduce.html.j2")
            .render(
                r=self,
                rows=self.rows,
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
