"""rebind-addr: a NAT gave the client a new address mid-connection; the server validated
the new path and data continued over it (paths.py)."""

from __future__ import annotations

from ..model import Capture
from . import paths, view
from .result import CaseResult


@view.measurable
def check(capture: Capture) -> CaseResult:
    return paths.judge(capture, lambda c: c.addr_changed, "the client's address never changed")
