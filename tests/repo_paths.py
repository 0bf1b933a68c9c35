"""Where the tests find the repository's files, wherever in tests/ they live: ROOT is the
repository (scenarios/, link-profiles/, docs/), DATA the recorded inputs in tests/data."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
