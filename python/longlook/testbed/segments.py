"""A path through the proxy namespace as two emulated segments, and their series.

    client ── link A ── proxy ── link B ── server

Each segment is a full link profile run by its own linkem (router: A, router2: B). The
profile a scenario's cell carries is their series, what the whole path measures end to end:
per direction, the slower rate, the delays added, and loss 1 - (1 - a)(1 - b). The link
self-check holds the path against it, and labels and heatmap axes use it, so a proxied cell
and a plain one with the same end-to-end numbers read alike.

Scenario syntax (`[[links]]`): fields at the entry's top level apply to both segments (and
sweep jointly), `link_a`/`link_b` tables hold each segment's own (and may sweep too):

    [[links]]
    rate_mbit = 20
    loss = [0.0, 0.01]        # on each segment
    link_a = { rtt_ms = 25 }  # client - proxy
    link_b = { rtt_ms = 25 }  # proxy - server
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from ..linkprofile import Direction, LinkProfile
from ..units import short_number

SEGMENT_KEYS = ("link_a", "link_b")
# settings whose series is not a single profile's (left out rather than made up)
_NOT_IN_SEGMENTS = ("trace", "jitter_ms", "jitter_distribution", "gilbert_elliott", "reorder", "middlebox")


def is_segmented(entry: Any) -> bool:
    return isinstance(entry, dict) and any(k in entry for k in SEGMENT_KEYS)


def series(a: LinkProfile, b: LinkProfile, name: str = "link") -> LinkProfile:
    """The end-to-end profile of segments `a` then `b` (up = client -> server)."""
    dirs = {}
    for which in ("up", "down"):
        da, db = a.resolved(which), b.resolved(which)
        la, lb = a.expected_loss(which), b.expected_loss(which)
        same_buffer = (da.buffer_bytes, da.buffer_packets) == (db.buffer_bytes, db.buffer_packets)
        dirs[which] = Direction(
            rate_mbit=min(da.rate_mbit, db.rate_mbit),
            delay_ms=(da.delay_ms or 0.0) + (db.delay_ms or 0.0),
            loss=1 - (1 - la) * (1 - lb),
            buffer_bytes=da.buffer_bytes if same_buffer else None,
            buffer_packets=da.buffer_packets if same_buffer else None,
        )
    return LinkProfile(
        name=name,
        up=dirs["up"],
        down=dirs["down"],
        segments=(a.model_copy(update={"name": "link_a"}), b.model_copy(update={"name": "link_b"})),
    )


def expand_segmented(entry: dict, where: str, expand: Callable[[Any, str], list[LinkProfile]]) -> list[LinkProfile]:
    """One `[[links]]` entry with segments -> series profiles, one per combination of its
    top-level lists x link_a's x link_b's. `expand(table, where)` expands one segment's
    table (core.links, the same sweep and checks as any link)."""
    missing = [k for k in SEGMENT_KEYS if not isinstance(entry.get(k), dict)]
    if missing:
        raise ValueError(
            f"{where}: a path through the proxy needs both segments, link_a (client-proxy) "
            f"and link_b (proxy-server); {' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
            f"missing or not a table"
        )
    name = entry.get("name", "link")
    common = {k: v for k, v in entry.items() if k not in (*SEGMENT_KEYS, "name")}
    lists = {k: v for k, v in common.items() if isinstance(v, list)}
    out = []
    for combo in itertools.product(*lists.values()):
        shared = {**common, **dict(zip(lists, combo))}
        segs = []
        for key in SEGMENT_KEYS:
            own = entry[key]
            merged = {**shared, **own}
            # a segment's own delay replaces the shared rtt_ms shorthand and vice versa
            if "delay_ms" in own:
                merged.pop("rtt_ms", None)
            if "rtt_ms" in own:
                merged.pop("delay_ms", None)
            bad = [k for k in _NOT_IN_SEGMENTS if k in merged]
            bad += [
                f"{d}.{k}"
                for d in ("up", "down")
                if isinstance(merged.get(d), dict)
                for k in _NOT_IN_SEGMENTS
                if k in merged[d]
            ]  # one direction's trace, too
            if bad:
                raise ValueError(
                    f"{where}.{key}.{bad[0]}: not supported on a proxy segment "
                    f"(its end-to-end series would not be one link profile)"
                )
            segs.append(expand(merged, f"{where}.{key}"))
        out += [series(a, b, name) for a, b in itertools.product(*segs)]
    return out


def segments_label(p: LinkProfile) -> str:
    """How the path is split, for the link's label: `seg=25ms+25ms` (loss per segment added
    when any: `seg=25ms@0.01+25ms@0.01`)."""
    parts = []
    for s in p.segments or ():
        text = f"{short_number(s.rtt_ms())}ms"
        loss = s.expected_loss("down")
        parts.append(text + (f"@{short_number(loss)}" if loss else ""))
    return "seg=" + "+".join(parts)
