"""The recorded captures (tests/data/captures, SOURCE.md there) and what each should show."""

from __future__ import annotations

from repo_paths import DATA

CAPTURES = DATA / "captures"
PORT = 44433  # every recording's server port


def recorded() -> list[str]:
    """`<case>-<pass|fail>` of every recorded capture (others show one reading's detail)."""
    return sorted(p.stem for p in CAPTURES.glob("*.pcapng") if p.stem.endswith(("-pass", "-fail")))
