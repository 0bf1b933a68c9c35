"""What two experiments' scenarios set outside their cells, where it differs: the name,
rounds, retries, the run timeout, the seed, [statistics], [fidelity], [testbed] and
[capture]. None of these is a cell parameter (matching.py pairs cells without them), yet
each can move a verdict: a shorter timeout censors slow runs, looser fidelity limits keep
runs the other side flagged, pinned CPUs change who competes with linkem. A comparison
that spans one says so beside its verdicts, as it does for the path's making
(path_setup.py)."""

from __future__ import annotations

from typing import Any

from ...core.spec import ScenarioBase
from .matching import flatten
from .path_setup import differences

# the cells carry these (matching.py), and a description is prose
NOT_COMMON = frozenset({"kind", "description", "links", "client_cpu"})


def common_fields(scenario: ScenarioBase) -> dict[str, Any]:
    """The scenario's fields shared by every kind and outside its cells, flattened to
    dotted names (`fidelity.max_stall_ms`)."""
    dumped = scenario.model_dump(mode="json")
    fields = {k: dumped[k] for k in ScenarioBase.model_fields if k not in NOT_COMMON and k in dumped}
    return flatten(fields)


def common_field_differences(base: ScenarioBase, cand: ScenarioBase) -> list[dict[str, Any]]:
    """[{"part", "base", "cand"}] for every common field whose values differ."""
    return differences(common_fields(base), common_fields(cand), unrecorded_differs=True)
