"""connection-migration: the client moved to a new address or port on purpose, and did it
as RFC 9000 9.5 asks: on the new path it uses a connection ID the server issued in a
NEW_CONNECTION_ID frame, never the one of the old path (which would let an observer link the
two paths). The server validated the new path and data continued over it (paths.py). A NAT
rebinding keeps the DCID, so it does not pass."""

from __future__ import annotations

from ..model import Capture
from . import paths, view
from .result import CaseResult, failed, passed


def new_dcid(conn: Capture, change: paths.Change, validated: CaseResult) -> CaseResult:
    if not change.new_dcid or change.new_dcid == change.old_dcid:
        return failed(f"{change}, still with the old path's DCID {change.new_dcid or '(none)'}")
    if change.new_dcid not in paths.issued(conn):
        return failed(f"{change} with DCID {change.new_dcid}, which no NEW_CONNECTION_ID from the server issued")
    return passed(f"{validated.evidence}; DCID {change.old_dcid} -> {change.new_dcid}, issued by NEW_CONNECTION_ID")


@view.measurable
def check(capture: Capture) -> CaseResult:
    return paths.judge(capture, lambda c: True, "", extra=new_dcid)
