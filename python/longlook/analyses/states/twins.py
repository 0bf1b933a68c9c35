"""Each impaired cell's unimpaired twin: the cell with the same link but for its impairments
(reordering, loss, bursty loss, jitter), the same workload and options. What an impairment
changes in the states is read against the twin (the report's states section, and the
reproduction's explanation of a claim that does not hold)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

IMPAIRMENTS = ("reorder", "loss", "gilbert_elliott", "jitter_ms")


def impaired(profile: dict) -> bool:
    """Whether a link profile (either direction) reorders, loses or jitters."""
    dirs = [profile] + [profile.get(w) or {} for w in ("up", "down")]
    return any(d.get(k) for d in dirs for k in IMPAIRMENTS)


def twin_key(profile: dict, workload: str, options: Any) -> str:
    """A cell's identity with its link impairments removed: its unimpaired twin shares it."""

    def strip(d: dict) -> dict:
        return {k: v for k, v in d.items() if k not in IMPAIRMENTS and k not in ("name", "up", "down")}

    return json.dumps(
        [strip(profile), strip(profile.get("up") or {}), strip(profile.get("down") or {}), workload, options],
        sort_keys=True,
        default=str,
    )


def twins(cells: pd.DataFrame) -> dict[str, str]:
    """{impaired cell id: its unimpaired twin's id}, impaired cells in grid order, those
    without a twin left out. `cells` as Store.cells_frame()."""
    unimpaired, pending = {}, []
    for c in cells.itertuples():
        key = twin_key(c.link_profile or {}, (c.dims or {}).get("workload", ""), c.settings)
        if impaired(c.link_profile or {}):
            pending.append((c.cell_id, key))
        else:
            unimpaired[key] = c.cell_id
    return {cid: unimpaired[key] for cid, key in pending if key in unimpaired}
