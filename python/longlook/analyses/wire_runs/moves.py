"""The interop case a run's change of path is judged by (wire.cases): a client that moved on
purpose across a handover (connection-migration: a new connection ID too); one whose OS moved
its route, or a NAT that moved it, by the passive rebinding of its address or port."""

from __future__ import annotations


def move_case(link, migration=None) -> str | None:
    """The case of a run on `link` (a linkprofile link) whose client recorded `migration`
    (its fetch's migration record: `by` "route" when its OS moved it); None for a link that
    moves no one."""
    if getattr(link, "handover", None) is not None:
        by_route = isinstance(migration, dict) and migration.get("by") == "route"
        return "rebind-addr" if by_route else "connection-migration"
    nat = getattr(link, "nat", None)
    if nat is None:
        return None
    return "rebind-addr" if getattr(nat, "rebind_to", "port") == "address" else "rebind-port"
