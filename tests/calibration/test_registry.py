"""Every verdict producer of longlook has a calibration entry, and every entry calibrates a
producer that exists: a new verdict without its null fails here."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import longlook
from longlook.core.verdicts import registered

from .harness import ENTRIES


def _import_all(package) -> None:
    """Import every module of longlook. A stack's own program (its client or server, run by
    the stack's interpreter, e.g. aioquic's) may need a library longlook does not have: such
    a module draws no verdict and is skipped; any other import error fails."""
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=lambda name: None):
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as e:
            if not (info.name.startswith("longlook.stacks.") and e.name and not e.name.startswith("longlook")):
                raise


def _entries() -> dict[str, list[str]]:
    here = Path(__file__).parent
    for f in sorted(here.glob("test_*.py")):
        importlib.import_module(f"{__package__}.{f.stem}")
    return ENTRIES


def test_every_producer_has_an_entry_and_every_entry_a_producer():
    _import_all(longlook)
    producers = registered()
    entries = _entries()
    missing = sorted(set(producers) - set(entries))
    stale = sorted(set(entries) - set(producers))
    assert not missing, "verdict producers without a null-calibration entry: " + ", ".join(
        f"{m} ({producers[m]})" for m in missing
    )
    assert not stale, "calibration entries of no registered producer: " + ", ".join(
        f"{s} ({', '.join(entries[s])})" for s in stale
    )
    assert len(producers) >= 15, sorted(producers)
