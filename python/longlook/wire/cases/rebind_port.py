"""rebind-port: a NAT gave the client a new port mid-connection; the server validated the
new path and data continued over it (paths.py)."""

from __future__ import annotations

from ..model import Capture
from . import paths, view
from .result import CaseResult


@view.measurable
def check(capture: Capture) -> CaseResult:
    return paths.judge(capture, lambda c: c.port_changed, "the client's port never changed")
