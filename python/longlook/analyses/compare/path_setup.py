"""What made the two experiments' paths, where it differs: linkem's datapath, the kernel,
the namespaces' recorded sysctls, linkem's own version. A change in any of these can move
a metric by itself, so a comparison that spans one says so beside its verdicts instead of
crediting the difference to CAND. An experiment without a recorded datapath ran on NFQUEUE
(core.store.with_datapath)."""

from __future__ import annotations

import json
from typing import Any

from ...core.store import with_datapath


def path_setup(versions: dict[str, Any] | None) -> dict[str, Any]:
    """The parts of an experiment's `versions` that made its path, flattened to names."""
    v = with_datapath(versions or {})
    testbed = v["testbed"]
    out: dict[str, Any] = {"datapath": testbed["datapath"], "kernel": v.get("kernel"), "linkem": v.get("linkem")}
    for name, value in sorted((testbed.get("sysctls") or {}).items()):
        out[f"sysctl {name}"] = value
    return out


def path_setup_differences(base_versions: dict | None, cand_versions: dict | None) -> list[dict[str, Any]]:
    """[{"part", "base", "cand"}] for every part of the path's making that differs; a part
    one side did not record (None) is not a difference."""
    return differences(path_setup(base_versions), path_setup(cand_versions), unrecorded_differs=False)


def differences(base: dict[str, Any], cand: dict[str, Any], *, unrecorded_differs: bool) -> list[dict[str, Any]]:
    """[{"part", "base", "cand"}] for every name whose values differ (compared as JSON); a
    name one side lacks (None) differs only with `unrecorded_differs`."""
    out = []
    for part in dict.fromkeys([*base, *cand]):
        bv, cv = base.get(part), cand.get(part)
        if not unrecorded_differs and (bv is None or cv is None):
            continue
        if json.dumps(bv, sort_keys=True) != json.dumps(cv, sort_keys=True):
            out.append({"part": part, "base": bv, "cand": cv})
    return out


def differences_text(differences: list[dict[str, Any]]) -> str:
    """One line for a console or a page."""
    return "; ".join(f"{d['part']} {d['base']} -> {d['cand']}" for d in differences)
